"""Published per-action energy tables a design can price itself with (``tech: tpu-v4``), and the price of the
registers inside a PE for the catalog's process nodes.

A ``tech:`` is either a process node of ``hwmodels.catalogs.tech`` (energies from Horowitz's 45 nm table
carried to the node) or one of these tables: the energies a chip's own paper gives per action (a MAC, a bit
read from or written to each memory, a bit moved into a PE register). A table names the catalog node its
areas and leakage come from (``area_tech``): a paper's energy table says nothing about area.

Every figure is a ``Sourced`` value in pJ (per operation for ``mac`` and ``vector_op``, per bit for the
rest); a table missing an action is refused with the missing names (``ActionTableError``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from hwmodels.catalogs.tech import UNVERIFIED, Sourced, TechNode, get_tech, tech_names

# Every action a table must price. ``sram_*_<role>``: the SRAM that feeds the array that role's operand
# (ifmap = inputs, filter = weights, ofmap = outputs/partial sums); ``pe_*_<role>``: the register (or
# scratchpad) inside each PE that holds it; ``pe_forward``: a bit passed to the neighbouring PE's register.
ROLES = ("ifmap", "filter", "ofmap")
PE_ROLES = ("input", "weight", "psum")
REQUIRED_ACTIONS: tuple[str, ...] = (
    "mac",
    "vector_op",
    *(f"sram_{rw}_{role}" for role in ROLES for rw in ("read", "write")),
    "dram_read",
    "dram_write",
    *(f"pe_{rw}_{role}" for role in PE_ROLES for rw in ("read", "write")),
    "pe_forward",
)


class ActionTableError(ValueError):
    """A table that cannot price a design: a missing action, or a name that is neither table nor node."""

    def __init__(self, message: str, field: str = "tech") -> None:
        super().__init__(message)
        self.field = field


@dataclass(frozen=True)
class ActionTable:
    """One chip's published per-action energies (pJ; per bit except ``mac``/``vector_op``, per operation)."""

    name: str
    description: str
    bits: int  # the operand width the MAC energy is for
    area_tech: str  # catalog node of the areas and the leakage
    actions: Mapping[str, Sourced]
    leakage_w: Sourced | None = None  # the design's static power where the source gives it (else area x density)

    def __post_init__(self) -> None:
        check_actions(self.actions, f"action table {self.name!r}")

    def pj(self, action: str) -> float:
        return self.actions[action].value

    def sources(self) -> dict[str, str]:
        return {action: s.source for action, s in self.actions.items()}


def check_actions(actions: Mapping[str, Sourced], where: str) -> None:
    """Refuse a table that leaves out an action the model charges (one message naming all of them)."""
    missing = [a for a in REQUIRED_ACTIONS if a not in actions]
    if missing:
        raise ActionTableError(f"{where} has no energy for {', '.join(missing)} (every table prices all of: "
                               f"{', '.join(REQUIRED_ACTIONS)})")  # fmt: skip
    negative = [a for a in REQUIRED_ACTIONS if not actions[a].value >= 0]
    if negative:
        raise ActionTableError(f"{where}: energy of {', '.join(negative)} must be >= 0 pJ")


# --------------------------------------------------------------------------------------------------
# TPU v4 (Jouppi et al., ISCA 2023), as AccelForge's tpu_v4i.yaml transcribes it
# --------------------------------------------------------------------------------------------------
JOUPPI_2023 = (
    "N. Jouppi et al., 'TPU v4: An Optically Reconfigurable Supercomputer for Machine Learning with Hardware "
    "Support for Embeddings', ISCA 2023, per-access energy table (7 nm), as transcribed in AccelForge 1.0.467 "
    "examples tpu_v4i.yaml"
)


def _tpu(value: float, what: str) -> Sourced:
    return Sourced(value, "pJ/bit", f"{JOUPPI_2023}: {what}")


_TPU_NO_REGISTER = (
    "0: the paper gives no PE-register energy (its MAC figure includes the PE's pipeline registers); "
    "AccelForge's tpu_v4i.yaml charges 0 as well"
)
TPU_V4 = ActionTable(
    name="tpu-v4",
    description="TPU v4 per-bit energies (ISCA 2023), int8 MACs; CMEM feeds the weights, the local buffer "
    "(VMEM) the inputs and outputs",
    bits=8,
    area_tech="asic-7nm",
    actions={
        "mac": Sourced(0.084, "pJ", f"{JOUPPI_2023}: int8 MAC"),
        "vector_op": Sourced(0.084, "pJ", f"{UNVERIFIED}: not in the table; one vector-unit op priced as one MAC"),
        "sram_read_ifmap": _tpu(0.249, "local buffer read"),
        "sram_write_ifmap": _tpu(0.293, "local buffer write"),
        "sram_read_ofmap": _tpu(0.249, "local buffer read"),
        "sram_write_ofmap": _tpu(0.293, "local buffer write"),
        "sram_read_filter": _tpu(1.88, "CMEM (on-chip memory) read"),
        "sram_write_filter": _tpu(2.36, "CMEM (on-chip memory) write"),
        "dram_read": _tpu(7.03, "HBM read, upper end of the paper's range"),
        "dram_write": _tpu(7.03, "HBM write, upper end of the paper's range"),
        **{f"pe_{rw}_{role}": _tpu(0.0, _TPU_NO_REGISTER) for role in PE_ROLES for rw in ("read", "write")},
        "pe_forward": _tpu(0.0, _TPU_NO_REGISTER),
    },
)

# --------------------------------------------------------------------------------------------------
# Eyeriss (Chen et al., ISCA 2016 / JSSC 2017): energies normalised to one 16-bit MAC
# --------------------------------------------------------------------------------------------------
CHEN_2016 = (
    "Y.-H. Chen, J. Emer, V. Sze, 'Eyeriss: A Spatial Architecture for Energy-Efficient Dataflow for "
    "Convolutional Neural Networks', ISCA 2016, Table IV normalised energy per 16-bit access (65 nm): "
    "RF 1x, PE-to-PE 2x, global buffer 6x, DRAM 200x of one MAC"
)
EYERISS_MAC = Sourced(
    1.2814,
    "pJ",
    "AccelForge 1.0.467 hwcomponents AladdinIntMAC at 65 nm, 8-bit multiplier and 16-bit adder "
    "(components_eyeriss.txt): the absolute MAC the normalised table is scaled by",
)


def _eyeriss(multiple: float, what: str) -> Sourced:
    """``multiple`` MACs per 16-bit access, per bit."""
    return EYERISS_MAC.derived(multiple / 16, f"{CHEN_2016}: {what} = {multiple:g}x MAC per 16-bit word", "pJ/bit")


EYERISS_65NM = ActionTable(
    name="eyeriss-65nm",
    description="Eyeriss normalised energies (ISCA 2016) scaled by a 65 nm 8x16-bit MAC",
    bits=8,
    area_tech="asic-65nm",
    actions={
        "mac": EYERISS_MAC,
        "vector_op": EYERISS_MAC.derived(1.0, f"{UNVERIFIED}: no vector unit in Eyeriss; priced as one MAC"),
        **{f"sram_{rw}_{role}": _eyeriss(6.0, "global buffer") for role in ROLES for rw in ("read", "write")},
        "dram_read": _eyeriss(200.0, "DRAM"),
        "dram_write": _eyeriss(200.0, "DRAM"),
        **{f"pe_{rw}_{role}": _eyeriss(1.0, "RF") for role in PE_ROLES for rw in ("read", "write")},
        "pe_forward": _eyeriss(2.0, "PE-to-PE (array)"),
    },
)

TABLES: dict[str, ActionTable] = {t.name: t for t in (TPU_V4, EYERISS_65NM)}


def register_table(table: ActionTable) -> ActionTable:
    """Make ``table`` selectable by its name (a tool that builds a table from another model's per-action
    energies, such as ``benchmarks/accelforge_compare.py``); a name of the catalog or a different table
    under the same name is refused."""
    known = TABLES.get(table.name)
    if table.name in tech_names() or (known is not None and known != table):
        raise ActionTableError(f"a technology called {table.name!r} already exists")
    TABLES[table.name] = table
    return table


def table_names() -> list[str]:
    return list(TABLES)


def price_names() -> list[str]:
    """Every name a ``tech:`` accepts: the catalog's nodes, then the published tables."""
    return [*tech_names(), *table_names()]


def action_table(name: str) -> ActionTable | None:
    """The published table called ``name`` (case and '_' forgiven), or None when it names a process node."""
    return TABLES.get(str(name).strip().lower().replace("_", "-"))


def check_price_name(name: str) -> None:
    """Refuse a ``tech:`` that is neither a catalog node (aliases such as '28nm' included) nor a table."""
    if action_table(name) is not None:
        return
    try:
        get_tech(name)
    except (KeyError, ValueError, TypeError):
        raise ActionTableError(f"unknown technology {name!r}; choose one of: {', '.join(price_names())}") from None


def area_node(name: str) -> TechNode:
    """The catalog node that prices ``name``'s area and leakage (a table's ``area_tech``)."""
    table = action_table(name)
    return get_tech(table.area_tech if table is not None else name)


# --------------------------------------------------------------------------------------------------
# PE registers for the catalog's nodes
# --------------------------------------------------------------------------------------------------
REGISTER_BIT_VS_ADDER_BIT = Sourced(
    2.0,
    "x",
    f"{UNVERIFIED}: a pipeline flip-flop written with new data costs about two full-adder bits of switched "
    "capacitance (clock + master/slave latches); the catalog's int8 add divided by 8, times this",
)


def register_write_pj_per_bit(node: TechNode) -> float:
    """One bit written into a PE's pipeline register at ``node`` (reading a flip-flop is the consumer's wire)."""
    return REGISTER_BIT_VS_ADDER_BIT.value * node.int8_add_pj.value / 8
