"""dse beside AccelForge on one layer: the dse design equivalent to an AccelForge digital architecture, priced with
AccelForge's own per-action energies, energy and action counts per component and tensor side by side.

Run: ``python benchmarks/accelforge_compare.py --arch ARCH.yaml --result RESULT.json`` (e.g. from
``../shared/data/accelforge``: ``--arch arches/tpu_v4i.yaml --result results/tpu_v4i_gemm512_energy.json``);
this module is its library (``main``).

How the design is built, generically from RESULT.json's ``evaluated_arch`` (the YAML is checked to list the same
components): the first memory is DRAM; the memories above the first spatial container are the on-chip SRAMs
(their spatial fan-out, e.g. TPU v4i's 4 cores, multiplies the arrays); the container's fan-outs are the array's
rows and columns; the memories below it are the PE's registers or scratchpads; the compute is the MAC. Which
memory keeps which tensor comes from RESULT.json's action counts; the workload's ``renames`` say which tensor is the
input (ifmap), the weight (filter) and the output (ofmap). The prices are a per-action table
(``hwmodels.catalogs.actions.ActionTable``) made of AccelForge's energies: each tensor's SRAM is the innermost
on-chip memory keeping it (outer ones add their write and read to each fill), its PE register the PE memory keeping
it (none: 0). AccelForge counts partial sums at the data width and no PE-to-PE transfers, so the design takes
``acc_bits`` = the data width and a zero forwarding price. Several arrays are one dse array of the summed PEs (side
by side or stacked); the dse mapping is the lowest-energy of the dataflows (ws/os/is) x mappers (fold: SCALE-Sim's,
cpsat: the optimal tiling), and the output says which.

The last line is always ``total energy: dse X uJ, AccelForge Y uJ, error Z %`` (Z = dse / AccelForge - 1).
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import math
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import yaml

from dse.graph import Graph, GraphBuilder
from hwmodels.catalogs.actions import ROLES, ActionTable, action_table, register_table
from hwmodels.catalogs.tech import Sourced
from hwmodels.systolic.cost import gemm_cost
from hwmodels.systolic.model import SystolicModel, fold_streams
from mappers.payloads import FoldPlan, TiledPlan
from mappers.systolic.cpsat import CpSatMapper
from mappers.systolic.fold import SystolicFoldMapper
from templates.systolic import SystolicTemplate

PE_ROLE = {"ifmap": "input", "filter": "weight", "ofmap": "psum"}
WORKLOAD_ROLE = {"input": "ifmap", "weight": "filter", "output": "ofmap"}
MAPPERS = ("fold", "cpsat")
DATAFLOWS = ("ws", "os", "is")
REPORT_OVER = 0.10  # a row differing by more than this gets its reason
STAGING = "staging"  # dse's SRAM of a tensor AccelForge keeps in no on-chip buffer (priced 0: a pass-through)
BYPASS = (
    "AccelForge's mapping keeps it in no on-chip buffer (DRAM streams into the PE memory), so dse's SRAM for it "
    "is a pass-through priced 0"
)


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
    """The levels of an AccelForge digital architecture whose compute is one or several 2-D MAC arrays."""
    levels = [_level(e) for e in evaluated]
    missing = [lv.name for lv in levels if lv.name not in yaml_names]
    if missing:
        raise CompareError(f"{where}: evaluated_arch has {', '.join(missing)}, which the --arch YAML does not list")
    containers = [i for i, lv in enumerate(levels) if lv.kind == "Container" and lv.fanout]
    computes = [lv for lv in levels if lv.kind == "Compute"]
    if not containers or len(computes) != 1 or levels[0].kind != "Memory":
        raise CompareError(f"{where}: not a DRAM -> buffers -> PE array -> one MAC architecture")
    pe = containers[0]
    fan = levels[pe].fanout
    rows, cols = fan[0], math.prod(fan[1:]) if len(fan) > 1 else 1
    above = [lv for lv in levels[1:pe] if lv.kind == "Memory"]
    below = [lv for lv in levels[pe + 1 :] if lv.kind == "Memory"]
    extra = [lv.name for lv in levels[pe + 1 :] if lv.kind == "Container" and lv.fanout]
    if extra:
        raise CompareError(f"{where}: a second spatial level inside the PE array ({', '.join(extra)})")
    arrays = math.prod(f for lv in above for f in lv.fanout) or 1
    return Hierarchy(levels[0], tuple(above), tuple(below), computes[0], rows, cols, arrays)


@dataclass(frozen=True)
class Workload:
    kind: str  # 'matmul' (m, k, n) or 'conv' (n, c, m, p, q, r)
    dims: dict[str, int]
    tensors: dict[str, str]  # dse role ('ifmap' | 'filter' | 'ofmap') -> AccelForge tensor name
    bits: int
    label: str

    @property
    def splits(self) -> dict[str, str]:
        """Dimension the arrays may share out -> the role every array then needs whole (broadcast)."""
        return {"m": "filter", "n": "ifmap"} if self.kind == "matmul" else {"p": "filter", "m": "ifmap"}

    def graph(self, split: str | None = None, parts: int = 1) -> Graph:
        """The layer, or one array's share of it when ``parts`` arrays split dimension ``split``."""
        d = dict(self.dims)
        if split is not None:
            d[split] = math.ceil(d[split] / parts)
        b = GraphBuilder("layer")
        if self.kind == "matmul":
            b.linear(b.input("x", (d["m"], d["k"])), d["n"], name="layer", bias=False)
        else:
            x = b.input("x", (d["n"], d["c"], d["p"], d["q"]))
            b.conv(x, d["m"], d["r"], pad=d["r"] // 2, name="layer", bias=False)
        return b.build()


_TENSOR = re.compile(r"(\w+)\[([^\]]*)\]")


def read_workload(path: Path) -> Workload:
    """A one-einsum AccelForge workload: a matmul Y[m, n] = X[m, k] * W[k, n] or a conv with sliding windows."""
    spec = read_yaml(path).get("workload") or {}
    einsums = spec.get("einsums") or []
    if len(einsums) != 1:
        raise CompareError(f"{path}: expected one einsum, found {len(einsums)}")
    e = einsums[0]
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
    if windowed:  # conv: input dims 'H: p + r'
        c = next(r for r in wgt if r in inp)
        kernel = [r for r in wgt if r not in inp and r not in out]
        k_out = next(r for r in wgt if r in out)
        p, q = (w.split(":")[1].split("+")[0].strip() for w in windowed)
        if len(kernel) != 2 or size[kernel[0]] != size[kernel[1]]:
            raise CompareError(f"{path}: only square kernels are compared")
        dims = {"n": size.get("n", 1), "c": size[c], "m": size[k_out], "p": size[p], "q": size[q]}
        dims["r"] = size[kernel[0]]
        label = f"conv {dims['c']}->{dims['m']} {dims['p']}x{dims['q']} k{dims['r']}"
        return Workload("conv", dims, roles, bits, label)
    contracted = [r for r in inp if r in wgt and r not in out]
    dims = {
        "m": math.prod(size[r] for r in inp if r not in contracted),
        "k": math.prod(size[r] for r in contracted),
        "n": math.prod(size[r] for r in wgt if r not in contracted),
    }
    return Workload("matmul", dims, roles, bits, f"matmul {dims['m']}x{dims['k']} x {dims['k']}x{dims['n']}")


def workload_path(result: dict, result_path: Path, given: Path | None) -> Path:
    if given is not None:
        return given
    name = Path(str(result.get("workload_yaml", ""))).name
    for folder in (result_path.parent.parent / "workloads", result_path.parent):
        if name and (folder / name).is_file():
            return folder / name
    raise CompareError(f"{result_path}: workload {name or '?'} not found next to it; give --workload")


# --------------------------------------------------------------------------------------------------
# The dse design
# --------------------------------------------------------------------------------------------------
def placement(result: dict, hier: Hierarchy, wl: Workload) -> dict[str, list[Level]]:
    """Per role, the levels (outermost first) where AccelForge's run keeps its tensor (any action counted)."""
    held: dict[str, set[str]] = {}
    for key in result["actions_per_component_tensor_action"]:
        comp, tensor, _ = key.split("|")
        held.setdefault(tensor, set()).add(comp)
    levels = (*hier.onchip, *hier.pe_mems)
    return {role: [lv for lv in levels if lv.name in held.get(t, ())] for role, t in wl.tensors.items()}


def price_table(name: str, hier: Hierarchy, where: dict[str, list[Level]], bits: int) -> ActionTable:
    """AccelForge's per-bit energies as a dse action table (module docstring)."""
    src = f"AccelForge evaluated_arch of {name}"
    actions: dict[str, Sourced] = {
        "mac": Sourced(hier.mac.read_pj, "pJ", f"{src}: {hier.mac.name} compute"),
        "vector_op": Sourced(hier.mac.read_pj, "pJ", f"{src}: no vector unit; priced as one MAC"),
        "dram_read": Sourced(hier.dram.read_pj, "pJ/bit", f"{src}: {hier.dram.name} read"),
        "dram_write": Sourced(hier.dram.write_pj, "pJ/bit", f"{src}: {hier.dram.name} write"),
        "pe_forward": Sourced(0.0, "pJ/bit", f"{src}: AccelForge has no PE-to-PE transfer energy"),
    }
    for role in ROLES:
        chip = [lv for lv in where[role] if lv in hier.onchip]
        if not chip:  # AccelForge streams it from DRAM into the PE memory: dse's SRAM for it is a pass-through
            for rw in ("read", "write"):
                actions[f"sram_{rw}_{role}"] = Sourced(0.0, "pJ/bit", f"{src}: {BYPASS}")
        else:
            inner, outer = chip[-1], chip[:-1]
            staged = sum(lv.read_pj + lv.write_pj for lv in outer)
            how = f"{inner.name}" + (f" (+ {', '.join(lv.name for lv in outer)} on each fill)" if outer else "")
            actions[f"sram_read_{role}"] = Sourced(inner.read_pj, "pJ/bit", f"{src}: {how} read")
            actions[f"sram_write_{role}"] = Sourced(inner.write_pj + staged, "pJ/bit", f"{src}: {how} write")
        pe = [lv for lv in where[role] if lv in hier.pe_mems]
        for rw in ("read", "write"):
            value = (pe[-1].read_pj if rw == "read" else pe[-1].write_pj) if pe else 0.0
            what = pe[-1].name if pe else "no PE memory keeps it"
            actions[f"pe_{rw}_{PE_ROLE[role]}"] = Sourced(value, "pJ/bit", f"{src}: {what} {rw}")
    pes = hier.rows * hier.cols * hier.arrays
    leak = hier.dram.leak_w + sum(lv.leak_w for lv in hier.onchip) * hier.arrays
    leak += (sum(lv.leak_w for lv in hier.pe_mems) + hier.mac.leak_w) * pes
    digest = hashlib.sha1(json.dumps(sorted((k, v.value) for k, v in actions.items())).encode()).hexdigest()[:8]
    table = ActionTable(
        name=f"af-{name}-{digest}".lower().replace("_", "-"),
        description=f"AccelForge per-action energies of {name}",
        bits=bits,
        area_tech="asic-45nm",
        actions=actions,
        leakage_w=Sourced(leak, "W", f"{src}: sum of leak_power over every instance"),
    )
    return action_table(table.name) or register_table(table)


def chip_levels(role: str, hier: Hierarchy, where: dict[str, list[Level]]) -> list[Level]:
    """The on-chip memories keeping ``role``'s tensor, outermost first (none: the outermost one stages it)."""
    return [lv for lv in where[role] if lv in hier.onchip] or [hier.onchip[0]]


def shared_levels(hier: Hierarchy) -> tuple[Level, ...]:
    """On-chip memories above the arrays' fan-out: one instance every array reads."""
    fanned = next((i for i, lv in enumerate(hier.onchip) if lv.fanout), len(hier.onchip))
    return hier.onchip[:fanned] if hier.arrays > 1 else ()


def sram_point(hier: Hierarchy, where: dict[str, list[Level]]) -> dict:
    """Each role's SRAM: the innermost on-chip memory keeping it (one instance), shared equally by the roles it
    keeps; one memory keeping all three is a unified scratchpad."""
    inner = {role: chip_levels(role, hier, where)[-1] for role in ROLES}
    if len({lv.name for lv in inner.values()}) == 1:
        return {"scratchpad": "unified", "sram_kib": max(3.0, inner["ifmap"].size_bits / 8 / 1024)}
    share = {lv.name: sum(1 for r in ROLES if inner[r] is lv) for lv in inner.values()}
    return {f"{role}_sram_kib": max(1.0, lv.size_bits / 8 / 1024 / share[lv.name]) for role, lv in inner.items()}


@dataclass(frozen=True)
class Candidate:
    mapper: str
    dataflow: str
    split: str | None  # the dimension the arrays share out (None: one array)
    point: dict
    arch: object
    mapping: object
    metrics: object
    energy_uj: float  # the whole design: arrays x one array's energy, less the fills a shared buffer serves once
    counts: dict[str, float]  # 'component|tensor|action' -> bits (MAC: operations), the whole design
    saved_pj: dict[str, float]  # 'dram' | 'sram': what the shared buffer's single fetch takes off

    @property
    def label(self) -> str:
        share = f", {self.split} split" if self.split else ""
        return f"{self.point['rows']}x{self.point['cols']} {self.mapper}/{self.dataflow}{share}"


def evaluate(wl, point, split, hier, where, mapper, cpsat_s) -> Candidate:
    """One array (of ``hier.arrays``) running its share of the layer, scaled to the whole design."""
    n = hier.arrays
    arch = SystolicTemplate().instantiate(point)
    graph = wl.graph(split, n)
    m = SystolicFoldMapper() if mapper == "fold" else CpSatMapper(objective="energy", time_limit_s=cpsat_s)
    mapping = m.map(graph, arch)
    metrics = SystolicModel().evaluate(mapping, arch)
    counts = {k: v * n for k, v in dse_counts(arch, mapping, hier, where, wl).items()}
    energy = metrics.values["energy_mj"] * 1e9 * n
    broadcast = wl.splits.get(split) if split else None
    shared = [lv for lv in shared_levels(hier) if broadcast and lv in where[broadcast]]
    saved = {"dram": 0.0, "sram": 0.0}
    if shared:  # every array fetched the broadcast tensor; the shared buffer holds one copy for all of them
        t = wl.tensors[broadcast]
        extra = counts[f"{hier.dram.name}|{t}|read"] * (n - 1) / n
        saved = {"dram": extra * hier.dram.read_pj, "sram": extra * sum(lv.write_pj for lv in shared)}
        energy -= sum(saved.values())
        for key in (f"{hier.dram.name}|{t}|read", *(f"{lv.name}|{t}|write" for lv in shared)):
            counts[key] -= extra
    return Candidate(mapper, point["dataflow"], split, point, arch, mapping, metrics, energy * 1e-6, counts, saved)


def candidates(wl, hier, table, where, clock_hz, dram_gbps, mappers, dataflows, cpsat_s) -> list[Candidate]:
    splits = list(wl.splits) if hier.arrays > 1 else [None]
    shapes = dict.fromkeys([(hier.rows, hier.cols), (hier.cols, hier.rows)])  # the same PEs either way round
    out = []
    for split, (rows, cols), df in itertools.product(splits, shapes, dataflows):
        point = {
            "rows": rows,
            "cols": cols,
            "dataflow": df,
            **sram_point(hier, where),
            "dram_gbps": dram_gbps / hier.arrays,
            "freq_mhz": clock_hz / 1e6,
            "precision": f"int{wl.bits}",
            "tech": table.name,
            "acc_bits": wl.bits,
        }
        out.extend(evaluate(wl, point, split, hier, where, mapper, cpsat_s) for mapper in mappers)
    return out


# --------------------------------------------------------------------------------------------------
# Counts side by side
# --------------------------------------------------------------------------------------------------
def dse_counts(arch, mapping, hier: Hierarchy, where: dict[str, list[Level]], wl: Workload) -> dict[str, float]:
    """One array's actions in AccelForge's terms: 'component|tensor|action' -> bits (MAC: operations), the
    same accesses the model prices (``hwmodels.systolic.pricing``)."""
    plan = mapping.ops["layer"].payload
    bits, acc = wl.bits, arch.accumulator_bits
    if isinstance(plan, TiledPlan):
        gemm = plan.gemm
        streams = dict(zip(ROLES, fold_streams(gemm, arch)))
        total = sum(streams.values()) or 1.0
        array = {r: float(plan.sram_words) * v / total for r, v in streams.items()}
        moved = {role: sum(o.traffic for o in plan.operands if o.role == role) / arch.word_bytes for role in
                 ("input", "weight", "output")}  # fmt: skip
        dram = {"ifmap": moved["input"], "filter": moved["weight"], "ofmap": moved["output"]}
    else:
        gemm = mapping.ops["layer"].payload_as(FoldPlan).gemm
        cost = gemm_cost(gemm, arch)
        array = {"ifmap": cost.ifmap_sram_reads, "filter": cost.filter_sram_reads, "ofmap": cost.ofmap_sram_writes}
        streams = dict(array)
        dram = {"ifmap": cost.ifmap_dram_reads, "filter": cost.filter_dram_reads, "ofmap": cost.ofmap_dram_writes}
    macs = float(gemm.macs)
    stationary = {"ws": "filter", "is": "ifmap", "os": "ofmap"}[arch.dataflow]
    out: dict[str, float] = {f"{hier.mac.name}|None|compute": macs}
    for role in ROLES:
        t, is_out = wl.tensors[role], role == "ofmap"
        out[f"{hier.dram.name}|{t}|{'write' if is_out else 'read'}"] = dram[role] * bits
        chip = [lv for lv in where[role] if lv in hier.onchip]
        inner = chip[-1].name if chip else STAGING
        _add(out, f"{inner}|{t}|{'write' if is_out else 'read'}", array[role] * bits)
        _add(out, f"{inner}|{t}|{'read' if is_out else 'write'}", dram[role] * bits)
        for lv in chip[:-1]:
            _add(out, f"{lv.name}|{t}|read", dram[role] * bits)
            _add(out, f"{lv.name}|{t}|write", dram[role] * bits)
        pe = [lv for lv in where[role] if lv in hier.pe_mems]
        if pe:
            width = acc if is_out else bits
            loads = streams[role] * width if role == stationary else 0.0
            _add(out, f"{pe[-1].name}|{t}|read", macs * width + (loads if is_out else 0.0))
            _add(out, f"{pe[-1].name}|{t}|write", loads if role == stationary and not is_out else macs * width)
    return out


def _add(d: dict, key: str, value: float) -> None:
    d[key] = d.get(key, 0.0) + value


def level_of(key: str, hier: Hierarchy) -> Level | None:
    comp = key.split("|")[0]
    return next((lv for lv in (hier.dram, *hier.onchip, *hier.pe_mems, hier.mac) if lv.name == comp), None)


def price_of(key: str, hier: Hierarchy) -> float:
    lv = level_of(key, hier)
    return 0.0 if lv is None else (lv.write_pj if key.endswith("|write") else lv.read_pj)


def reason(key: str, ours: float, theirs: float, hier: Hierarchy, cand: Candidate, wl: Workload) -> str:
    """Why one row differs by more than 10 %."""
    _, tensor, action = key.split("|")
    lv = level_of(key, hier)
    role = next((r for r, t in wl.tensors.items() if t == tensor), None)
    more = ours > theirs
    if lv is None:
        return f"dse's staging SRAM for {tensor} ({BYPASS})"
    if lv is hier.mac:
        return "MAC count: dse pads the folds"
    padded = wl.kind == "conv" and role == "ifmap" and not more and (lv is hier.dram or action == "write")
    if padded:
        return "AccelForge's conv workload is the padded input (H = P + R - 1); dse pads on chip"
    if wl.kind == "conv" and role == "ifmap" and lv in hier.onchip and action == "read" and more:
        return "conv lowered to im2col (SCALE-Sim): each input word is read from the SRAM once per window it is in"
    if lv is hier.dram:
        who = "dse's" if more else "AccelForge's"
        return f"mapping: {who} loop order re-fetches {tensor} from DRAM (dse: {cand.mapper}, {cand.dataflow})"
    if lv in hier.pe_mems:
        if role == "ofmap":
            return "partial sums: AccelForge spills and re-reads some across its spatial k reduction; dse adds in place"
        if action == "write":
            return (
                f"PE fills: dse ({cand.dataflow}) writes a moving operand into the next PE every MAC, AccelForge's "
                "scratchpad keeps it for several MACs"
                if more
                else "PE fills: AccelForge refills its scratchpad per tile; dse loads a stationary word once per fold"
            )
        return "PE reads: one per MAC in both; the MAC counts differ"
    if theirs == 0:
        return f"AccelForge's mapping bypasses {lv.name} for {tensor}; dse stages every operand in an SRAM"
    if role == "ofmap" and cand.dataflow == "os":
        return "partial sums: dse (os) keeps them in the PEs, one write per output; AccelForge spills them per k tile"
    if role == "ofmap":
        return (
            "partial sums: SCALE-Sim's fold writes one per row fold (K / rows) and no read-back; AccelForge reads "
            "and writes them per k tile"
        )
    if not more and hier.arrays > 1:
        return f"each of AccelForge's {hier.arrays} arrays reads its own copy per tile; dse's split shares differ"
    return "mapping: on-chip reuse differs (fold: the streamed operand is re-read per fold of the other)"


def compare(args: argparse.Namespace) -> int:
    result_path, arch_path = Path(args.result), Path(args.arch)
    try:
        result = json.loads(result_path.read_text())
    except (OSError, ValueError) as err:
        raise CompareError(f"{result_path}: cannot read ({err})") from None
    arch_yaml = read_yaml(arch_path)
    yaml_names = [n.get("name") for n in (arch_yaml.get("arch") or {}).get("nodes") or () if isinstance(n, dict)]
    for key in ("evaluated_arch", "actions_per_component_tensor_action", "energy_per_component_action_J", "energy_J"):
        if key not in result:
            raise CompareError(f"{result_path}: no {key!r} (not an AccelForge run of scripts/af_run.py)")
    hier = hierarchy(result["evaluated_arch"], yaml_names, str(result_path))
    wl = read_workload(workload_path(result, result_path, Path(args.workload) if args.workload else None))
    where = placement(result, hier, wl)
    table = price_table(arch_path.stem, hier, where, wl.bits)
    clock = float((result.get("peak_assumed") or {}).get("clock_Hz") or 1e9)
    mappers = MAPPERS if args.mapper == "best" else (args.mapper,)
    dataflows = DATAFLOWS if args.dataflow == "best" else (args.dataflow,)
    cands = candidates(wl, hier, table, where, clock, _dram_gbps(result, hier), mappers, dataflows, args.cpsat_s)
    best = min(cands, key=lambda c: c.energy_uj)
    af_total = float(result["energy_J"]) * 1e6
    p = best.point
    sram = (
        f"unified {p['sram_kib']:g} KiB"
        if "sram_kib" in p
        else f"ifmap/filter/ofmap {p['ifmap_sram_kib']:g}/{p['filter_sram_kib']:g}/{p['ofmap_sram_kib']:g} KiB"
    )
    print(f"AccelForge architecture {arch_path.name}: {hier.arrays} x {hier.rows}x{hier.cols} MACs; layer {wl.label}")
    print(f"AccelForge mapping: {result.get('mapping_str', '?').strip().replace(chr(10), ' | ')}")
    arrays = f"{hier.arrays} x " if hier.arrays > 1 else ""
    print(
        f"dse design: {arrays}systolic {p['rows']}x{p['cols']}, dataflow {best.dataflow}, mapper {best.mapper}"
        f"{f', the arrays split {best.split}' if best.split else ''}; SRAM {sram}; acc_bits {wl.bits} (AccelForge "
        f"counts partial sums at the data width); tech {table.name} (AccelForge's per-action energies)"
    )
    if hier.arrays > 1:
        print(
            f"  dse energy = {hier.arrays} x one array's (model) - the DRAM fetches and buffer fills of a broadcast "
            "tensor that a shared buffer serves once"
        )
    print("  candidates (uJ, lowest chosen): " + ", ".join(f"{c.label} {c.energy_uj:.1f}" for c in cands))
    theirs = {}
    for key, count in result["actions_per_component_tensor_action"].items():
        lv = level_of(key, hier)
        if float(count) and lv is not None:
            theirs[key] = float(count) * (1.0 if lv is hier.mac else lv.bits_per_action)
    print(
        f"\n{'component|tensor|action (bits)':34s} {'dse':>11s} {'AccelForge':>11s} {'dse uJ':>8s} {'AF uJ':>8s}  diff"
    )
    for key in sorted(set(best.counts) | set(theirs)):
        a, b = best.counts.get(key, 0.0), theirs.get(key, 0.0)
        ea, eb = a * price_of(key, hier) * 1e-6, b * price_of(key, hier) * 1e-6
        if ea == 0 and eb == 0 and a == b:
            continue
        diff = f"{(a / b - 1) * 100:+5.0f}%" if b else "  new"
        why = f"  <- {reason(key, a, b, hier, best, wl)}" if abs(a - b) > REPORT_OVER * b else ""
        print(f"{key:34s} {a:11.4g} {b:11.4g} {ea:8.2f} {eb:8.2f} {diff}{why}")
    print(f"\n{'energy by part (uJ)':34s} {'dse':>11s} {'AccelForge':>11s}")
    breakdown = best.metrics.energy_breakdown_pj
    af_parts = _af_parts(result, hier)
    for part in ("mac", "pe_storage", "sram", "dram", "leakage"):
        ours = (breakdown.get(part, 0.0) * hier.arrays - best.saved_pj.get(part, 0.0)) * 1e-6
        print(f"{part:34s} {ours:11.2f} {af_parts[part]:11.2f}")
    error = (best.energy_uj / af_total - 1) * 100
    print(f"total energy: dse {best.energy_uj:.1f} uJ, AccelForge {af_total:.1f} uJ, error {error:+.1f} %")
    return 0


def _dram_gbps(result: dict, hier: Hierarchy) -> float:
    for entry in result["evaluated_arch"]:
        if entry["name"] == hier.dram.name:
            thr = [float(a.get("throughput") or 0) * float(a.get("bits_per_action") or 1) for a in entry["actions"]]
            finite = [t for t in thr if 0 < t < float("inf")]
            if finite:
                return min(finite) / 8 / 1e9
    return 1e3


def _af_parts(result: dict, hier: Hierarchy) -> dict[str, float]:
    """AccelForge's energy (uJ) in dse's parts."""
    parts = dict.fromkeys(("mac", "pe_storage", "sram", "dram", "leakage"), 0.0)
    kind = {hier.dram.name: "dram", hier.mac.name: "mac"}
    kind.update({lv.name: "sram" for lv in hier.onchip})
    kind.update({lv.name: "pe_storage" for lv in hier.pe_mems})
    for key, joules in result["energy_per_component_action_J"].items():
        comp, action = key.split("|")
        part = "leakage" if action == "leak" else kind.get(comp)
        if part:
            parts[part] += float(joules) * 1e6
    return parts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--arch", required=True, help="AccelForge architecture YAML")
    parser.add_argument("--result", required=True, help="AccelForge run (JSON with evaluated_arch and action counts)")
    parser.add_argument("--workload", help="AccelForge workload YAML (default: found from the result)")
    parser.add_argument("--mapper", choices=(*MAPPERS, "best"), default="best")
    parser.add_argument("--dataflow", choices=(*DATAFLOWS, "best"), default="best")
    parser.add_argument("--cpsat-s", type=float, default=5.0, help="CP-SAT time limit per candidate (s)")
    args = parser.parse_args(argv)
    try:
        return compare(args)
    except CompareError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
