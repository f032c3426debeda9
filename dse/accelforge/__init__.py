"""dse beside AccelForge on one layer: the dse design equivalent to an AccelForge digital architecture, priced with
AccelForge's own per-action energies, energy and action counts per component and tensor side by side.

Run: ``python benchmarks/accelforge_compare.py --arch ARCH.yaml --result RESULT.json`` (e.g. from
``../shared/data/accelforge``: ``--arch arches/tpu_v4i.yaml --result results/tpu_v4i_gemm512_energy.json``);
this module is its library (``main``).

How the design is built, generically from RESULT.json's ``evaluated_arch`` (the YAML is checked to list the same
components; ``dse.accelforge.arch.hierarchy``): the first memory is DRAM; the innermost spatial container is the PE
array (its fan-outs are the rows and columns) and every fan-out above it multiplies the arrays (TPU v4i's 4 cores
under their local buffers, Simba's 16 PEs with buffers of their own); the memories between DRAM and the PE array
are the on-chip SRAMs, those above the first fan-out one instance all arrays share; the memories inside the PE
array are its registers or scratchpads; the compute inside it is the MAC. Which memory keeps which tensor comes
from RESULT.json's action counts; the workload's ``renames`` say which tensor is the input (ifmap), the weight
(filter) and the output (ofmap). The prices are a per-action table (``hwmodels.catalogs.actions.ActionTable``)
made of AccelForge's energies: each tensor's SRAM is the innermost on-chip memory keeping it (the outer ones add
their write and read to each fill or drain), its PE register the PE memory keeping it (none: 0), and that memory's
size over the data width is the PE's scratchpad depth (``pe_weight_words``, ``pe_input_words``, ``pe_psum_words``:
the reuse inside the PE, ``hwmodels.systolic.pricing.pe_reuse``). AccelForge counts partial sums at the data width
and no PE-to-PE transfers, so the design takes ``acc_bits`` = the data width and a zero forwarding price; its
buffers hold one copy of each tile, so the CP-SAT tiler runs single-buffered (``double_buffer=False``).

Several arrays: dse evaluates one array on its share of the layer and scales it, the arrays splitting a dimension
whose other operand every array then needs whole (a broadcast: fetched from DRAM and filled into a shared buffer
once, and read from it once where the fan-out may reuse, ``multicasts``) or the reduction (each array adds its
partial outputs in a shared buffer keeping the output; one drain to DRAM). The dataflows tried are those whose two
spatial axes reuse what the array's fan-outs may (the YAML's ``reuse:``: Eyeriss' weight + output is dse's is, TPU
v4i's input + output is ws); the array is the PEs AccelForge's mapping uses (``spatial_usage``: its mapper tiles by
exact divisors, so it may leave PEs idle; the whole array's figure is printed beside); the dse mapping is the
lowest-energy of those splits x dataflows x mappers (fold: SCALE-Sim's, cpsat: the optimal tiling), and the output
says which.

The last line is always ``total energy: dse X uJ, AccelForge Y uJ, error Z %`` (Z = dse / AccelForge - 1).
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import sys
from dataclasses import dataclass
from pathlib import Path

from dse.accelforge.arch import (
    CompareError,
    Hierarchy,
    Level,
    Workload,
    check_fanouts,
    hierarchy,
    multicasts,
    read_workload,
    read_yaml,
    used_pes,
    workload_path,
)
from hwmodels.catalogs.actions import ROLES, ActionTable, action_table, register_table
from hwmodels.catalogs.tech import Sourced
from hwmodels.systolic.compute import folds, spatial_dims
from hwmodels.systolic.cost import gemm_cost
from hwmodels.systolic.model import SystolicModel, fold_streams
from hwmodels.systolic.pricing import conv_window, design_prices, pe_reuse
from mappers.payloads import FoldPlan, TiledPlan
from mappers.systolic.cpsat import CpSatMapper
from mappers.systolic.fold import SystolicFoldMapper
from templates.systolic import SystolicTemplate

PE_ROLE = {"ifmap": "input", "filter": "weight", "ofmap": "psum"}
STATIONARY = {"ws": "filter", "is": "ifmap", "os": "ofmap"}
MAPPERS = ("fold", "cpsat")
DATAFLOWS = ("ws", "os", "is")
REPORT_OVER = 0.10  # a row differing by more than this gets its reason
STAGING = "staging"  # dse's SRAM of a tensor AccelForge keeps in no on-chip buffer (priced 0: a pass-through)
BYPASS = (
    "AccelForge's mapping keeps it in no on-chip buffer (DRAM streams into the PE memory), so dse's SRAM for it "
    "is a pass-through priced 0"
)


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
            # the outer levels stage what moves between DRAM and the inner one: an input's fill is the inner
            # SRAM's write, an output's drain its read (its writes are the array's partial sums)
            staged = sum(lv.read_pj + lv.write_pj for lv in outer)
            moves = "drain" if role == "ofmap" else "fill"
            how = f"{inner.name}" + (f" (+ {', '.join(lv.name for lv in outer)} on each {moves})" if outer else "")
            read, write = (staged, 0.0) if role == "ofmap" else (0.0, staged)
            actions[f"sram_read_{role}"] = Sourced(inner.read_pj + read, "pJ/bit", f"{src}: {how} read")
            actions[f"sram_write_{role}"] = Sourced(inner.write_pj + write, "pJ/bit", f"{src}: {how} write")
        pe = [lv for lv in where[role] if lv in hier.pe_mems]
        for rw in ("read", "write"):
            value = (pe[-1].read_pj if rw == "read" else pe[-1].write_pj) if pe else 0.0
            what = pe[-1].name if pe else "no PE memory keeps it"
            actions[f"pe_{rw}_{PE_ROLE[role]}"] = Sourced(value, "pJ/bit", f"{src}: {what} {rw}")
    pes = hier.rows * hier.cols * hier.arrays
    leak = hier.dram.leak_w + sum(lv.leak_w * hier.instances(lv) for lv in hier.onchip)
    leak += (sum(lv.leak_w for lv in hier.pe_mems) + hier.mac.leak_w) * pes
    leak /= hier.arrays  # the table prices one array, which evaluate() scales by the arrays
    digest = hashlib.sha1(json.dumps(sorted((k, v.value) for k, v in actions.items())).encode()).hexdigest()[:8]
    table = ActionTable(
        name=f"af-{name}-{digest}".lower().replace("_", "-"),
        description=f"AccelForge per-action energies of {name}",
        bits=bits,
        area_tech="asic-45nm",
        actions=actions,
        leakage_w=Sourced(leak, "W", f"{src}: sum of leak_power over every instance, per array"),
    )
    return action_table(table.name) or register_table(table)


def chip_levels(role: str, hier: Hierarchy, where: dict[str, list[Level]]) -> list[Level]:
    """The on-chip memories keeping ``role``'s tensor, outermost first (none: the outermost one stages it)."""
    return [lv for lv in where[role] if lv in hier.onchip] or [hier.onchip[0]]


def shared_levels(hier: Hierarchy) -> tuple[Level, ...]:
    """On-chip memories above the arrays' fan-out: one instance every array reads."""
    return tuple(lv for lv in hier.onchip if lv.name in hier.shared)


def sram_point(hier: Hierarchy, where: dict[str, list[Level]]) -> dict:
    """Each role's SRAM: the innermost on-chip memory keeping it (one instance), shared equally by the roles it
    keeps; one memory keeping all three is a unified scratchpad."""
    inner = {role: chip_levels(role, hier, where)[-1] for role in ROLES}
    if len({lv.name for lv in inner.values()}) == 1:
        return {"scratchpad": "unified", "sram_kib": max(3.0, inner["ifmap"].size_bits / 8 / 1024)}
    share = {lv.name: sum(1 for r in ROLES if inner[r] is lv) for lv in inner.values()}
    return {f"{role}_sram_kib": max(1.0, lv.size_bits / 8 / 1024 / share[lv.name]) for role, lv in inner.items()}


def pe_words(hier: Hierarchy, where: dict[str, list[Level]], bits: int) -> dict[str, int]:
    """Each role's per-PE scratchpad depth in words: the PE memory keeping its tensor (size / data width), or a
    register (1) where none does."""
    out = {}
    for role in ROLES:
        pe = [lv for lv in where[role] if lv in hier.pe_mems]
        out[f"pe_{PE_ROLE[role]}_words"] = max(1, int(pe[-1].size_bits // bits)) if pe else 1
    return out


# which operand each dataflow's two spatial axes reuse (broadcast or reduce): ws rows K (output), cols N (input)
DATAFLOW_REUSE = {"ws": {"output", "input"}, "os": {"weight", "input"}, "is": {"output", "weight"}}


def allowed_dataflows(arch_yaml: dict, hier: Hierarchy, wl: Workload) -> tuple[str, ...]:
    """The dataflows whose spatial axes reuse what the PE array's fan-outs may reuse (YAML ``reuse:``; none
    given: every dataflow), so dse maps the layer onto the array the way AccelForge's architecture allows."""
    nodes = [n for n in (arch_yaml.get("arch") or {}).get("nodes") or () if isinstance(n, dict)]
    container = next((n for n in nodes if n.get("name") == hier.container), {})
    names = {t: WORKLOAD_ROLE_NAME[r] for r, t in wl.tensors.items()}
    reuse = set()
    for axis in container.get("spatial") or ():
        value = str(axis.get("reuse") or "")
        reuse.add(names.get(value, value.lower()))
    reuse &= {"input", "weight", "output"}
    return tuple(df for df in DATAFLOWS if reuse <= DATAFLOW_REUSE[df]) or DATAFLOWS


WORKLOAD_ROLE_NAME = {"ifmap": "input", "filter": "weight", "ofmap": "output"}


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
    saved_pj: dict[str, float]  # 'dram' | 'sram' | 'leakage': what the shared buffer's single fetch takes off
    groups: tuple[float, float]  # (a, b): row and column folds one pass covers from the PE scratchpads

    @property
    def label(self) -> str:
        share = f", {self.split} split" if self.split else ""
        return f"{self.point['rows']}x{self.point['cols']} {self.mapper}/{self.dataflow}{share}"


def evaluate(wl, point, split, hier, where, mapper, cpsat_s) -> Candidate:
    """One array (of ``hier.arrays``) running its share of the layer, scaled to the whole design."""
    n = hier.arrays
    arch = SystolicTemplate().instantiate(point)
    graph = wl.graph(split, n)
    # AccelForge's buffers hold one copy of each tile (no double-buffering), so the tiler does the same
    single = CpSatMapper(objective="energy", time_limit_s=cpsat_s, double_buffer=False)
    m = SystolicFoldMapper() if mapper == "fold" else single
    mapping = m.map(graph, arch)
    metrics = SystolicModel().evaluate(mapping, arch)
    one, groups = dse_counts(arch, mapping, hier, where, wl)
    counts = {k: v * n for k, v in one.items()}
    energy = metrics.values["energy_mj"] * 1e9 * n
    broadcast = wl.splits.get(split) if split else None
    shared = [lv for lv in shared_levels(hier) if broadcast and lv in where[broadcast]]
    saved = {"dram": 0.0, "sram": 0.0}
    extra = 0.0  # DRAM bits the shared buffer saves
    if broadcast == "ofmap":  # a reduction split: the partial outputs add up in the shared buffer, one drain to DRAM
        # (each array's drain is still a write and a read of it: the sum's read-modify-write, the last read the drain)
        t = wl.tensors["ofmap"]
        extra = counts[f"{hier.dram.name}|{t}|write"] * (n - 1) / n
        saved = {"dram": extra * hier.dram.write_pj, "sram": 0.0}
        energy -= saved["dram"]
        counts[f"{hier.dram.name}|{t}|write"] -= extra
    elif shared:  # every array fetched the broadcast tensor; the shared buffer holds one copy for all of them
        # and, where the fan-out may reuse (``multicasts``), sends each word it reads to every array in one read
        t = wl.tensors[broadcast]
        extra = counts[f"{hier.dram.name}|{t}|read"] * (n - 1) / n
        actions = ("write", "read") if hier.multicast else ("write",)
        per_bit = sum(lv.write_pj + (lv.read_pj if hier.multicast else 0.0) for lv in shared)
        saved = {"dram": extra * hier.dram.read_pj, "sram": extra * per_bit}
        energy -= sum(saved.values())
        staged = (f"{lv.name}|{t}|{rw}" for lv in shared for rw in actions)
        for key in (f"{hier.dram.name}|{t}|read", *staged):
            counts[key] -= extra
    if extra:  # each array streamed those bits at its 1/n share of the DRAM bandwidth; the design moves them once
        bits_per_s = point["dram_gbps"] * n * 8e9
        leak = metrics.energy_breakdown_pj.get("leakage", 0.0) * n
        saved["leakage"] = min(design_prices(arch).leakage_w * n * extra / bits_per_s * 1e12, leak * (n - 1) / n)
        energy -= saved["leakage"]
    energy_uj = energy * 1e-6
    return Candidate(mapper, point["dataflow"], split, point, arch, mapping, metrics, energy_uj, counts, saved, groups)


def candidates(wl, hier, table, where, clock_hz, dram_gbps, mappers, dataflows, cpsat_s) -> list[Candidate]:
    # a reduction split needs a shared buffer keeping the output to add the partial outputs in
    reducible = any(lv in where["ofmap"] for lv in shared_levels(hier))
    splits = [s for s, role in wl.splits.items() if role != "ofmap" or reducible] if hier.arrays > 1 else [None]
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
            **pe_words(hier, where, wl.bits),
        }
        out.extend(evaluate(wl, point, split, hier, where, mapper, cpsat_s) for mapper in mappers)
    return out


# --------------------------------------------------------------------------------------------------
# Counts side by side
# --------------------------------------------------------------------------------------------------
def dse_counts(arch, mapping, hier: Hierarchy, where: dict[str, list[Level]], wl: Workload) -> tuple[dict, tuple]:
    """One array's actions in AccelForge's terms: 'component|tensor|action' -> bits (MAC: operations), the
    same accesses the model prices (``hwmodels.systolic.pricing``), and the scratchpads' (a, b) fold groups."""
    plan = mapping.ops["layer"].payload
    bits, acc = wl.bits, arch.accumulator_bits
    if isinstance(plan, TiledPlan):
        gemm = plan.gemm
        streams = dict(zip(ROLES, fold_streams(gemm, arch)))
        total = sum(streams.values()) or 1.0
        array = {r: float(plan.sram_words) * v / total for r, v in streams.items()}
        moved = {role: sum(o.traffic for o in plan.operands if o.role == role) / arch.word_bytes for role in
                 ("input", "weight", "output")}  # fmt: skip
        # an operand kept whole on chip (resident) moves no tile traffic; its one read is in the plan's total
        once = plan.dram_read_bytes - sum(o.traffic for o in plan.operands if o.role != "output")
        resident = next((o.role for o in plan.operands if o.resident and o.role != "output"), None)
        if resident is not None:
            moved[resident] += max(0.0, once) / arch.word_bytes
        dram = {"ifmap": moved["input"], "filter": moved["weight"], "ofmap": moved["output"]}
    else:
        gemm = mapping.ops["layer"].payload_as(FoldPlan).gemm
        cost = gemm_cost(gemm, arch)
        array = {"ifmap": cost.ifmap_sram_reads, "filter": cost.filter_sram_reads, "ofmap": cost.ofmap_sram_writes}
        streams = dict(array)
        dram = {"ifmap": cost.ifmap_dram_reads, "filter": cost.filter_dram_reads, "ofmap": cost.ofmap_dram_writes}
    macs = float(gemm.macs)
    sr, sc, _ = spatial_dims(gemm, arch.dataflow)
    rf, cf = folds(sr, sc, arch.rows, arch.cols)
    words = (arch.pe_weight_words, arch.pe_input_words, arch.pe_psum_words)
    fold = tuple(streams[r] for r in ROLES)
    reuse = pe_reuse(arch.dataflow, rf, cf, words, fold, conv_window(gemm))
    left = dict(zip(ROLES, reuse.streams(*fold)))
    array = {r: array[r] * left[r] / streams[r] if streams[r] else array[r] for r in ROLES}
    once = dict(zip(ROLES, reuse.moving_per_mac))
    stationary = STATIONARY[arch.dataflow]
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
            moving = macs * width * (1.0 if is_out else once[role])
            _add(out, f"{pe[-1].name}|{t}|write", loads if role == stationary and not is_out else moving)
    return out, (float(reuse.a), float(reuse.b))


def _add(d: dict, key: str, value: float) -> None:
    d[key] = d.get(key, 0.0) + value


def level_of(key: str, hier: Hierarchy) -> Level | None:
    comp = key.split("|")[0]
    return next((lv for lv in (hier.dram, *hier.onchip, *hier.pe_mems, hier.mac) if lv.name == comp), None)


def price_of(key: str, hier: Hierarchy) -> float:
    lv = level_of(key, hier)
    return 0.0 if lv is None else (lv.write_pj if key.endswith("|write") else lv.read_pj)


def reason(key: str, ours: float, theirs: float, hier: Hierarchy, cand: Candidate, wl: Workload, kept=None) -> str:
    """Why one row differs by more than 10 % (``kept``: ``placement``'s levels per role)."""
    _, tensor, action = key.split("|")
    lv = level_of(key, hier)
    role = next((r for r, t in wl.tensors.items() if t == tensor), None)
    more = ours > theirs
    if lv is None:
        return f"dse's staging SRAM for {tensor} ({BYPASS})"
    if lv is hier.mac:
        return "MAC count: dse pads the folds"
    if wl.kind == "conv" and role == "ifmap" and lv in hier.onchip and action == "read" and more:
        return "conv lowered to im2col (SCALE-Sim): each input word is read from the SRAM once per window it is in"
    chip = [c for c in (kept or {}).get(role, ()) if c in hier.onchip]
    if lv is hier.dram and role == "ofmap" and more and len(chip) > 1:
        inner = chip[-1]
        return (
            f"partial sums: dse's template has one on-chip level per operand, its ofmap SRAM is {inner.name} "
            f"({inner.size_bits / 8192:g} KiB), and what does not fit it drains to DRAM and returns; AccelForge "
            f"also keeps them in {', '.join(c.name for c in chip[:-1])}"
        )
    if lv is hier.dram:
        who = "dse's" if more else "AccelForge's"
        return f"mapping: {who} loop order re-fetches {tensor} from DRAM (dse: {cand.mapper}, {cand.dataflow})"
    a, b = (f"{g:g}" for g in cand.groups)
    if role == "ofmap" and lv.name in hier.shared and cand.split and wl.splits[cand.split] == "ofmap":
        return (
            f"partial sums: dse's {hier.arrays} arrays split the reduction {cand.split} and add their partial outputs "
            f"in {lv.name} (a write and a read each); AccelForge reduces across its PEs spatially (no on-chip "
            "network or buffer access is counted)"
        )
    if lv in hier.pe_mems:
        if role == "ofmap":
            return "partial sums: AccelForge spills and re-reads some across its spatial k reduction; dse adds in place"
        if action == "write" and role == STATIONARY[cand.dataflow]:
            return (
                "PE fills: dse loads each stationary word once per pass of its mapping; AccelForge's keeps them longer"
                if more
                else "PE fills: AccelForge refills its scratchpad per tile; dse loads a stationary word once per pass"
            )
        if action == "write":
            return (
                f"PE fills: dse ({cand.dataflow}) writes a moving word once for the {b} column folds its scratchpad "
                f"covers; AccelForge's mapping keeps it for {'fewer' if more else 'more'} MACs"
            )
        return "PE reads: one per MAC in both; the MAC counts differ"
    if theirs == 0:
        return f"AccelForge's mapping bypasses {lv.name} for {tensor}; dse stages every operand in an SRAM"
    if role == "ofmap" and cand.dataflow == "os":
        return "partial sums: dse (os) keeps them in the PEs, one write per output; AccelForge spills them per k tile"
    if role == "ofmap" and action == "read":
        return (
            "partial sums: dse (SCALE-Sim's convention) charges no read-back of the partial sums it writes per "
            "pass, only the drain to DRAM; AccelForge reads each back per k tile"
        )
    if role == "ofmap":
        return (
            f"partial sums: dse writes them once per pass of {a} row folds (the PE scratchpads keep the rest); "
            "AccelForge once per k tile of its mapping"
        )
    if not more and hier.arrays > 1:
        return f"each of AccelForge's {hier.arrays} arrays reads its own copy per tile; dse's split shares differ"
    if action == "write":
        return "mapping: the two mappings fill this buffer from DRAM a different number of times"
    if role == STATIONARY[cand.dataflow]:
        window = " (a conv's input row once per sliding window of the taps a PE keeps)" if wl.kind == "conv" else ""
        return (
            f"mapping: dse loads the stationary {tensor} into the PEs once per pass{window}; AccelForge's mapping "
            f"re-reads it {'less' if more else 'more'} often"
        )
    return (
        f"mapping: dse re-reads the streamed operand once per pass of {b} column folds (the PE scratchpads keep "
        f"a x b = {a} x {b} words of the stationary one); AccelForge's divisor tiling re-reads it "
        f"{'less' if more else 'more'} often"
    )


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
    check_fanouts(arch_yaml, result["evaluated_arch"], str(result_path))
    hier = multicasts(arch_yaml, hierarchy(result["evaluated_arch"], yaml_names, str(result_path)))
    wl = read_workload(workload_path(result, result_path, Path(args.workload) if args.workload else None))
    where = placement(result, hier, wl)
    table = price_table(arch_path.stem, hier, where, wl.bits)
    clock = clock_hz(result, hier)
    mappers = MAPPERS if args.mapper == "best" else (args.mapper,)
    dataflows = allowed_dataflows(arch_yaml, hier, wl) if args.dataflow == "best" else (args.dataflow,)
    dram_gbps = _dram_gbps(result, hier)
    used = used_pes(result, hier)
    cands = candidates(wl, used, table, where, clock, dram_gbps, mappers, dataflows, args.cpsat_s)
    best = min(cands, key=lambda c: c.energy_uj)
    whole = None
    if (used.rows, used.cols) != (hier.rows, hier.cols):
        cands_all = candidates(wl, hier, table, where, clock, dram_gbps, mappers, dataflows, args.cpsat_s)
        whole = min(cands_all, key=lambda c: c.energy_uj)
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
            f"  dse energy = {hier.arrays} x one array's (model) - the DRAM fetches and buffer fills "
            f"{'and reads ' if hier.multicast else ''}of a broadcast tensor that a shared buffer fetches once"
            f"{' and multicasts' if hier.multicast else ' (each array reads its own copy: may_reuse Nothing)'}; "
            "or, when the arrays split the reduction, the partial outputs' drains to DRAM but one (they add up in "
            "the shared buffer)"
        )
    print("  candidates (uJ, lowest chosen): " + ", ".join(f"{c.label} {c.energy_uj:.1f}" for c in cands))
    pe_depth = ", ".join(f"{r} {p[f'pe_{r}_words']}" for r in ("weight", "input", "psum"))
    print(f"  per-PE scratchpad words (AccelForge's PE memories / data width): {pe_depth}")
    print(f"  dataflows AccelForge's spatial fan-outs allow (their reuse): {', '.join(dataflows)}")
    if whole is not None:
        print(
            f"  AccelForge's mapping uses {used.rows}x{used.cols} of the {hier.rows}x{hier.cols} PEs (its mapper "
            f"tiles by exact divisors); dse maps onto the same PEs. On all of them dse gives {whole.energy_uj:.1f} uJ "
            f"({(whole.energy_uj / (float(result['energy_J']) * 1e6) - 1) * 100:+.1f} %, {whole.label})"
        )
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
        why = f"  <- {reason(key, a, b, hier, best, wl, where)}" if abs(a - b) > REPORT_OVER * b else ""
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


def clock_hz(result: dict, hier: Hierarchy) -> float:
    """The clock of AccelForge's run: the one scripts/af_run.py records for the bundled arches it knows, else
    the MAC's compute throughput (one operation a cycle), else 1 GHz."""
    known = (result.get("peak_assumed") or {}).get("clock_Hz")
    if known:
        return float(known)
    for entry in result["evaluated_arch"]:
        if entry["name"] == hier.mac.name:
            rates = [float(a.get("throughput") or 0) for a in entry.get("actions") or () if a["name"] == "compute"]
            finite = [r for r in rates if 0 < r < float("inf")]
            if finite:
                return finite[0]
    return 1e9


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
