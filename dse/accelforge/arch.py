"""AccelForge's side of the comparison (``dse.accelforge``): its architecture (the levels of RESULT.json's
``evaluated_arch``, checked against the YAML) and its one-einsum workload."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace
from pathlib import Path

import yaml

from dse.graph import Graph, GraphBuilder

WORKLOAD_ROLE = {"input": "ifmap", "weight": "filter", "output": "ofmap"}


class CompareError(ValueError):
    """An input this comparison cannot read (exit 2, one message)."""


# --------------------------------------------------------------------------------------------------
# AccelForge's side: the architecture and the run
# --------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Level:
    """One AccelForge component: its per-bit read/write energies (pJ), leakage (W) and spatial fan-out."""

    name: str
    kind: str  # Memory | Container | Compute
    read_pj: float
    write_pj: float
    leak_w: float
    size_bits: float
    fanout: tuple[int, ...]
    bits_per_action: float = 1.0  # AccelForge counts this component's actions in units of this many bits


@dataclass(frozen=True)
class Hierarchy:
    dram: Level
    onchip: tuple[Level, ...]  # outermost first
    pe_mems: tuple[Level, ...]
    mac: Level
    rows: int
    cols: int
    arrays: int
    container: str = ""  # the PE array's spatial container
    axes: tuple[str, ...] = ()  # its spatial fan-outs' names (the first is the rows)
    shared: tuple[str, ...] = ()  # on-chip memories above every fan-out: one instance all arrays read
    fan_level: str = ""  # the level whose fan-out splits the shared memories among the arrays
    multicast: bool = True  # whether that fan-out may reuse a word: one shared read serves every array

    def instances(self, level: Level) -> int:
        """How many copies of an on-chip memory the design has (one shared, else one per array)."""
        return 1 if level.name in self.shared else self.arrays


def _tagged_loader() -> type:
    class Loader(yaml.SafeLoader):
        pass

    def tagged(loader: yaml.SafeLoader, suffix: str, node: yaml.Node) -> dict:
        return {"_class": suffix, **loader.construct_mapping(node, deep=True)}

    Loader.add_multi_constructor("!", tagged)
    return Loader


def read_yaml(path: Path) -> dict:
    try:
        return yaml.load(path.read_text(), Loader=_tagged_loader()) or {}  # noqa: S506 (a SafeLoader subclass)
    except (OSError, yaml.YAMLError) as err:
        raise CompareError(f"{path}: cannot read ({err})") from None


def _level(entry: dict) -> Level:
    actions = {a["name"]: a for a in entry.get("actions") or ()}

    def per_bit(name: str) -> float:
        a = actions.get(name)
        if a is None:
            return 0.0
        bits = a.get("bits_per_action")
        bits = float(bits) if isinstance(bits, (int, float)) and bits else 1.0
        return float(a["energy_J"]) * 1e12 / bits

    compute = actions.get("compute")
    read = float(compute["energy_J"]) * 1e12 if compute else per_bit("read")
    fanout = tuple(int(s["fanout"]) for s in entry.get("spatial") or ())
    size = entry.get("size")
    widths = [a.get("bits_per_action") for a in actions.values()]
    width = next((float(b) for b in widths if isinstance(b, (int, float)) and b), 1.0)
    return Level(
        name=entry["name"],
        kind=entry["type"],
        read_pj=read,
        write_pj=per_bit("write"),
        leak_w=float(entry.get("leak_power") or 0.0),
        size_bits=float(size) if isinstance(size, (int, float)) else 0.0,
        fanout=fanout,
        bits_per_action=width,
    )


def hierarchy(evaluated: list[dict], yaml_names: list[str], where: str) -> Hierarchy:
    """The levels of an AccelForge digital architecture whose compute is one or several 2-D MAC arrays.

    The PE array is the innermost spatial container (its fan-outs are the rows and columns); every fan-out
    above it (a container's, like Simba's 16 PEs, or a memory's, like TPU v4i's 4 cores) multiplies the
    arrays, and the on-chip memories above the first fan-out are one instance all arrays share."""
    levels = [_level(e) for e in evaluated]
    missing = [lv.name for lv in levels if lv.name not in yaml_names]
    if missing:
        raise CompareError(f"{where}: evaluated_arch has {', '.join(missing)}, which the --arch YAML does not list")
    containers = [i for i, lv in enumerate(levels) if lv.kind == "Container" and lv.fanout]
    computes = [i for i, lv in enumerate(levels) if lv.kind == "Compute"]
    if not containers or not computes or levels[0].kind != "Memory":
        raise CompareError(
            f"{where}: not a DRAM -> buffers -> PE array -> MAC architecture (found "
            f"{' -> '.join(f'{lv.name} ({lv.kind})' for lv in levels)})"
        )
    pe = containers[-1]
    macs = [i for i in computes if i > pe]
    if len(macs) != 1:
        raise CompareError(f"{where}: expected one compute inside the PE array {levels[pe].name}, found {len(macs)}")
    fan = levels[pe].fanout
    rows, cols = fan[0], math.prod(fan[1:]) if len(fan) > 1 else 1
    above = [lv for lv in levels[1:pe] if lv.kind == "Memory"]
    below = [lv for lv in levels[pe + 1 :] if lv.kind == "Memory"]
    arrays = math.prod(f for lv in levels[1:pe] for f in lv.fanout) or 1
    first_fan = next((i for i, lv in enumerate(levels[1:pe], 1) if lv.fanout), pe)
    shared = tuple(lv.name for lv in levels[1:first_fan] if lv.kind == "Memory") if arrays > 1 else ()
    axes = tuple(str(a.get("name", "")) for a in evaluated[pe].get("spatial") or ())
    fan_level = levels[first_fan].name if arrays > 1 else ""
    return Hierarchy(
        levels[0], tuple(above), tuple(below), levels[macs[0]], rows, cols, arrays, levels[pe].name, axes, shared,
        fan_level,
    )  # fmt: skip


def check_fanouts(arch_yaml: dict, evaluated: list[dict], where: str) -> None:
    """The YAML and RESULT.json must describe one architecture: every numeric fan-out the YAML gives a component
    is the one AccelForge evaluated (a result run on another architecture with the same component names fails)."""
    nodes = {n.get("name"): n for n in (arch_yaml.get("arch") or {}).get("nodes") or () if isinstance(n, dict)}
    for entry in evaluated:
        given = [s.get("fanout") for s in (nodes.get(entry["name"]) or {}).get("spatial") or () if isinstance(s, dict)]
        ran = [float(s["fanout"]) for s in entry.get("spatial") or ()]
        numeric = [float(f) for f in given if isinstance(f, (int, float))]
        if len(numeric) == len(given) and given and numeric != ran:
            raise CompareError(
                f"{where}: {entry['name']} fans out {ran} in the result but {numeric} in the --arch YAML; "
                "give the YAML the result was run on"
            )


def multicasts(arch_yaml: dict, hier: Hierarchy) -> Hierarchy:
    """``hier`` with ``multicast`` from the YAML: False where the arrays' fan-out says ``may_reuse: Nothing``
    (TPU v4i's cores each read their own copy), True where it may reuse (Simba's PEs share a multicast)."""
    nodes = [n for n in (arch_yaml.get("arch") or {}).get("nodes") or () if isinstance(n, dict)]
    node = next((n for n in nodes if n.get("name") == hier.fan_level), {})
    reuse = [str(s.get("may_reuse", s.get("reuse", "All"))) for s in node.get("spatial") or () if isinstance(s, dict)]
    return replace(hier, multicast=not any(r.strip().lower() == "nothing" for r in reuse))


def used_pes(result: dict, hier: Hierarchy) -> Hierarchy:
    """The PE array AccelForge's mapping uses (its ``spatial_usage`` of each fan-out): its mapper tiles by
    exact divisors and may leave PEs idle, so dse maps onto the same PEs to compare the two mappings like for
    like (the whole array's figure is printed beside)."""
    usage = result.get("spatial_usage") or {}
    share = [float(usage.get(f"spatial<SEP>{hier.container}<SEP>{axis}", 1.0)) for axis in hier.axes]
    if len(share) < 2:
        return hier
    rows = max(1, round(hier.rows * share[0]))
    cols = max(1, round(hier.cols * math.prod(share[1:])))
    return replace(hier, rows=rows, cols=cols)


@dataclass(frozen=True)
class Workload:
    kind: str  # 'matmul' (m, k, n) or 'conv' (n, c, m, p, q, r, s, sh, sw: kernel rows/cols, strides)
    dims: dict[str, int]
    tensors: dict[str, str]  # dse role ('ifmap' | 'filter' | 'ofmap') -> AccelForge tensor name
    bits: int
    label: str

    @property
    def splits(self) -> dict[str, str]:
        """Dimension the arrays may share out -> the role every array then needs whole (broadcast), or 'ofmap' for
        the reduction (each array adds a partial output over its share of it)."""
        if self.kind == "matmul":
            return {"m": "filter", "n": "ifmap", "k": "ofmap"}
        return {"p": "filter", "m": "ifmap", "c": "ofmap"}

    def graph(self, split: str | None = None, parts: int = 1) -> Graph:
        """The layer, or one array's share of it when ``parts`` arrays split dimension ``split``."""
        d = dict(self.dims)
        if split is not None:
            d[split] = math.ceil(d[split] / parts)
        b = GraphBuilder("layer")
        if self.kind == "matmul":
            b.linear(b.input("x", (d["m"], d["k"])), d["n"], name="layer", bias=False)
        else:
            # AccelForge's input is the padded map the window indexes (H = P x stride + R - stride): no padding here
            height, width = (d["p"] - 1) * d["sh"] + d["r"], (d["q"] - 1) * d["sw"] + d["s"]
            x = b.input("x", (d["n"], d["c"], height, width))
            b.conv(x, d["m"], (d["r"], d["s"]), stride=(d["sh"], d["sw"]), name="layer", bias=False)
        return b.build()


_TENSOR = re.compile(r"(\w+)\[([^\]]*)\]")
_WINDOW = re.compile(r"\s*(\w+)\s*(?:\*\s*(\d+))?\s*(?:\+\s*(\w+))?\s*")  # 'p', 'p * 2', 'p + r', 'p * 2 + r'


def _window(path: Path, expr: str) -> tuple[str, int, str | None]:
    """An input rank's window ``H: p * stride + r``: (output rank, stride, kernel rank or None for 1 x 1)."""
    m = _WINDOW.fullmatch(expr.split(":", 1)[1])
    if not m:
        raise CompareError(f"{path}: cannot read the input window {expr!r} (expected 'H: p + r' or 'H: p * 2 + r')")
    return m.group(1), int(m.group(2) or 1), m.group(3)


def read_workload(path: Path) -> Workload:
    """A one-einsum AccelForge workload: a matmul Y[m, n] = X[m, k] * W[k, n] or a conv with sliding windows."""
    spec = read_yaml(path).get("workload") or {}
    einsums = spec.get("einsums") or []
    if len(einsums) != 1:
        raise CompareError(f"{path}: expected one einsum, found {len(einsums)}")
    e = einsums[0]
    lacking = [key for key in ("einsum", "iteration_space_shape", "renames") if not e.get(key)]
    if lacking or any(role not in (e.get("renames") or {}) for role in WORKLOAD_ROLE):
        raise CompareError(
            f"{path}: the einsum needs einsum, iteration_space_shape and renames of output, input and weight"
            + (f" (missing: {', '.join(lacking)})" if lacking else "")
        )
    bits = int((spec.get("bits_per_value") or {}).get("All", 8))
    sizes = {}
    for bound in e["iteration_space_shape"]:
        m = re.fullmatch(r"\s*0\s*<=\s*(\w+)\s*<\s*(\d+)\s*", str(bound))
        if not m:
            raise CompareError(f"{path}: cannot read the bound {bound!r}")
        sizes[m.group(1)] = int(m.group(2))
    sizes.update({k: int(v) for k, v in (spec.get("rank_sizes") or {}).items()})
    found = _TENSOR.findall(e["einsum"])
    if len(found) != 3:
        raise CompareError(f"{path}: einsum {e['einsum']!r} is not out = input * weight")
    names = {role: e["renames"][role] for role in ("output", "input", "weight")}
    ranks = {t: [part.strip() for part in idx.split(",")] for t, idx in found}
    out, inp, wgt = (ranks[names[r]] for r in ("output", "input", "weight"))
    windowed = [r for r in inp if ":" in r]
    size = {k.lower(): v for k, v in sizes.items()}
    roles = {WORKLOAD_ROLE[r]: names[r] for r in names}
    if windowed:  # conv: input dims 'H: p * stride + r', 'W: q * stride + s'
        if len(windowed) != 2:
            raise CompareError(f"{path}: a conv needs two windowed input ranks (H and W), found {len(windowed)}")
        (p, sh, r), (q, sw, s) = (_window(path, w) for w in windowed)
        channels = [x for x in wgt if x in inp]
        outs = [x for x in wgt if x in out]
        if len(channels) != 1 or len(outs) != 1:
            raise CompareError(f"{path}: einsum {e['einsum']!r} is not a conv (one input and one output channel rank)")
        rank = {**size, None: 1}
        try:
            dims = {"n": size.get("n", 1), "c": size[channels[0]], "m": size[outs[0]], "p": size[p], "q": size[q]}
            dims.update(r=rank[r], s=rank[s], sh=sh, sw=sw)
        except KeyError as err:
            raise CompareError(f"{path}: rank {err} has no size in iteration_space_shape or rank_sizes") from None
        stride = f" stride {sh}" + (f"x{sw}" if sw != sh else "") if (sh, sw) != (1, 1) else ""
        label = f"conv {dims['c']}->{dims['m']} {dims['p']}x{dims['q']} k{dims['r']}x{dims['s']}{stride}"
        return Workload("conv", dims, roles, bits, label)
    contracted = [r for r in inp if r in wgt and r not in out]
    batched = [r for r in inp if r in wgt and r in out]
    if batched or not contracted:
        what = f"a batched matmul (rank {', '.join(batched)} in all three tensors)" if batched else "no reduction"
        raise CompareError(f"{path}: einsum {e['einsum']!r} is {what}; only Y[m, n] = X[m, k] * W[k, n] is compared")
    try:
        dims = {
            "m": math.prod(size[r] for r in inp if r not in contracted),
            "k": math.prod(size[r] for r in contracted),
            "n": math.prod(size[r] for r in wgt if r not in contracted),
        }
    except KeyError as err:
        raise CompareError(f"{path}: rank {err} has no size in iteration_space_shape or rank_sizes") from None
    return Workload("matmul", dims, roles, bits, f"matmul {dims['m']}x{dims['k']} x {dims['k']}x{dims['n']}")


def workload_path(result: dict, result_path: Path, given: Path | None) -> Path:
    if given is not None:
        return given
    name = Path(str(result.get("workload_yaml", ""))).name
    for folder in (result_path.parent.parent / "workloads", result_path.parent):
        if name and (folder / name).is_file():
            return folder / name
    raise CompareError(f"{result_path}: workload {name or '?'} not found next to it; give --workload")
