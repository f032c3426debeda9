"""Multi-socket RDU nodes: the one-socket view the section mapper solves, and the link time it adds.

Why a view: with ``tensor`` parallelism every op is split over the S sockets (Megatron style: column-split then
row-split weights), so a section runs on S x the PCUs, PMUs, SRAM and on-chip bandwidth, reads S x the HBM and
DDR bandwidth and holds S x their capacity; the section problem of that aggregate socket is the node's. The
link adds a ring all-reduce, 2 (S-1)/S x bytes / link + 2 (S-1) hops, after every weighted matmul whose
output feeds a residual add (attention out-projection, FFN down-projection), and an all-gather of the
vocabulary-split logits. With ``pipeline`` parallelism consecutive layers sit on consecutive sockets: a token
still passes through every op on one socket's compute, so only the HBM/DDR *capacity* aggregates (SRAM stays
one socket's: conservative, the sections of each stage could use their own), the activation crosses S-1
links, and S micro-batches in flight give S x the throughput of one.

The link time does not depend on the section plan, so it is added after the mapper's optimum; its energy is every
byte moved over the links at the catalog's per-bit price (``LINK_ENERGY_PJ_PER_BIT``).
"""

from __future__ import annotations

from dataclasses import replace

from dse.graph import Graph, OpKind
from templates.rdu import RduArch


def node_view(arch: RduArch) -> RduArch:
    """The single-socket arch whose section problem is the node's (``arch`` itself for one socket)."""
    s = arch.sockets
    if s == 1:
        return arch
    if arch.parallelism == "pipeline":
        return replace(arch, sockets=1, hbm_gb=arch.hbm_gb * s, ddr_gb=arch.ddr_gb * s)
    return replace(
        arch,
        sockets=1,
        pcus=arch.pcus * s,
        pmus=arch.pmus * s,
        noc_gbps=arch.noc_gbps * s,
        hbm_gb=arch.hbm_gb * s,
        hbm_gbps=arch.hbm_gbps * s,
        ddr_gb=arch.ddr_gb * s,
        ddr_gbps=arch.ddr_gbps * s,
    )


def _hop_ps(arch: RduArch, nbytes: float) -> float:
    return nbytes / (arch.link_gbps * 1e9) * 1e12 + arch.link_latency_us * 1e6


def link_ps(graph: Graph, arch: RduArch) -> tuple[float, dict[str, float]]:
    """Picoseconds of socket-to-socket traffic per graph run, and its parts (all-reduce, all-gather, hops)."""
    parts = {name: ps for name, (ps, _) in _link_parts(graph, arch).items()}
    return sum(parts.values()), parts


def link_bytes(graph: Graph, arch: RduArch) -> float:
    """Bytes that cross socket-to-socket links per graph run, summed over every socket (what the link's energy
    is paid on): a ring all-reduce moves 2 (S-1) x the tensor, an all-gather (S-1) x, pipeline hops (S-1) x."""
    return sum(nbytes for _, nbytes in _link_parts(graph, arch).values())


def _link_parts(graph: Graph, arch: RduArch) -> dict[str, tuple[float, float]]:
    """Per kind of link traffic: (picoseconds on the critical path, bytes moved over all links)."""
    s = arch.sockets
    if s == 1:
        return {}
    if arch.parallelism == "pipeline":
        nbytes = graph.tensors[graph.ops[0].inputs[0]].nbytes
        return {"pipeline_hops": ((s - 1) * _hop_ps(arch, nbytes), (s - 1) * nbytes)}
    consumers = graph.consumers()
    kinds = {op.name: op for op in graph.ops}
    reduce = [0.0, 0.0]
    gather = [0.0, 0.0]
    for op in graph.ops:
        if op.kind is not OpKind.MATMUL or not op.weights:
            continue
        out = op.outputs[0]
        nbytes = graph.tensors[out].nbytes
        users = [kinds[c] for c in consumers.get(out, []) if c in kinds]
        if any(
            u.kind is OpKind.ELEMENTWISE and u.attrs.get("arity") == 2 and u.attrs.get("fn") == "add" for u in users
        ):
            ring = 2 * (s - 1) / s * nbytes / (arch.link_gbps * 1e9) * 1e12
            reduce[0] += ring + 2 * (s - 1) * arch.link_latency_us * 1e6
            reduce[1] += 2 * (s - 1) * nbytes
        elif not users:  # a graph output split over the sockets (the LM head's logits): gathered
            gather[0] += (s - 1) / s * nbytes / (arch.link_gbps * 1e9) * 1e12 + (s - 1) * arch.link_latency_us * 1e6
            gather[1] += (s - 1) * nbytes
    return {"allreduce": (reduce[0], reduce[1]), "allgather": (gather[0], gather[1])}


def throughput_factor(arch: RduArch) -> int:
    """Graph runs in flight at once: S micro-batches through an S-stage pipeline, else one."""
    return arch.sockets if arch.parallelism == "pipeline" else 1
