"""Runs KU Leuven's Stream (``stream-dse`` 0.0.8, ZigZag 2.x) on one ONNX workload and a core mix given as
JSON; prints one JSON line: latency (cycles), energy (pJ), seconds. Executed by the Python of a separate,
benchmark-only environment (``benchmarks/multicore_stream_compare.py`` starts it); never imported by dse.

    STREAM_PYTHON benchmarks/stream_side.py CONFIG.json

CONFIG: ``onnx`` (path), ``cores`` (list of {rows, cols, dataflow, weight_kib, act_kib}), ``mac_pj``,
``sram_pj_per_byte``, ``dram_pj_per_byte``, ``dram_bits_per_cycle``, ``link_bits_per_cycle``,
``mesh_rows``/``mesh_cols``, ``fused`` (cut layers into output rows, Stream's layer fusion, or not),
``ga_generations``, ``ga_individuals``, ``workdir``.

The cores are written the way Stream's own ``inputs/examples/hardware/cores/TPU_like.py`` writes its
cores (Stream 0.0.8 describes hardware in Python, not YAML): a MAC array whose two dimensions unroll the
loops of the core's dataflow (ws: C x K, os: OX x K, is: C x OX), a register level per operand, one weight
SRAM and one activation SRAM per core; an off-chip core for the DRAM; a 2-D mesh of links. Pooling and
element-wise ops go to a small SIMD core and a pooling core, as in Stream's quad-core examples.
"""

from __future__ import annotations

import json
import logging
import os
import pickle
import sys
import time

logging.disable(logging.WARNING)

from stream.classes.hardware.architecture.accelerator import Accelerator  # noqa: E402
from stream.classes.stages import (  # noqa: E402
    GenerateCNWorkloadHybridStage,
    InterCoreMappingStage,
    IntraCoreMappingStage,
    StreamONNXModelParserStage,
)
from stream.inputs.examples.hardware.cores.pooling import get_core as get_pooling_core  # noqa: E402
from stream.inputs.examples.hardware.cores.simd import get_core as get_simd_core  # noqa: E402
from stream.inputs.examples.hardware.nocs.mesh_2d import get_2d_mesh  # noqa: E402
from zigzag.classes.hardware.architecture.core import Core  # noqa: E402
from zigzag.classes.hardware.architecture.memory_hierarchy import MemoryHierarchy  # noqa: E402
from zigzag.classes.hardware.architecture.memory_instance import MemoryInstance  # noqa: E402
from zigzag.classes.hardware.architecture.operational_array import MultiplierArray  # noqa: E402
from zigzag.classes.hardware.architecture.operational_unit import Multiplier  # noqa: E402
from zigzag.classes.stages import MainStage  # noqa: E402

UNROLL = {"ws": ("C", "K"), "os": ("OX", "K"), "is": ("C", "OX")}


def systolic_core(core_id: int, spec: dict, cfg: dict) -> Core:
    """One core: rows x cols MACs unrolling the dataflow's loops, registers, weight and activation SRAM."""
    rows, cols = spec["rows"], spec["cols"]
    array = MultiplierArray(Multiplier([8, 8], cfg["mac_pj"], 1), {"D1": rows, "D2": cols})
    sram = cfg["sram_pj_per_byte"]
    hierarchy = MemoryHierarchy(operational_array=array)
    reg_w = MemoryInstance(name="rf_w", size=8, r_bw=8, w_bw=8, r_cost=0.0, w_cost=0.0, area=0,
                           r_port=1, w_port=1, rw_port=0, latency=1)  # fmt: skip
    reg_i = MemoryInstance(name="rf_i", size=8, r_bw=8, w_bw=8, r_cost=0.0, w_cost=0.0, area=0,
                           r_port=1, w_port=1, rw_port=0, latency=1)  # fmt: skip
    reg_o = MemoryInstance(name="rf_o", size=16, r_bw=16, w_bw=16, r_cost=0.0, w_cost=0.0, area=0,
                           r_port=2, w_port=2, rw_port=0, latency=1)  # fmt: skip
    width = 8 * max(rows, cols)  # one array edge's words per cycle
    w_sram = MemoryInstance(name="sram_w", size=int(spec["weight_kib"] * 1024 * 8), r_bw=width, w_bw=width,
                            r_cost=sram * width / 8, w_cost=sram * width / 8, area=0, r_port=1, w_port=1,
                            rw_port=0, latency=1, min_r_granularity=8, min_w_granularity=8)  # fmt: skip
    a_sram = MemoryInstance(name="sram_a", size=int(spec["act_kib"] * 1024 * 8), r_bw=width, w_bw=width,
                            r_cost=sram * width / 8, w_cost=sram * width / 8, area=0, r_port=1, w_port=1,
                            rw_port=0, latency=1, min_r_granularity=8, min_w_granularity=8)  # fmt: skip
    one = {"fh": "w_port_1", "tl": "r_port_1", "fl": None, "th": None}
    out = {"fh": "w_port_1", "tl": "r_port_1", "fl": "w_port_2", "th": "r_port_2"}
    out_top = {"fh": "w_port_1", "tl": "r_port_1", "fl": "w_port_1", "th": "r_port_1"}
    hierarchy.add_memory(memory_instance=reg_w, operands=("I2",), port_alloc=(one,), served_dimensions={(0, 0)})
    hierarchy.add_memory(memory_instance=reg_i, operands=("I1",), port_alloc=(one,), served_dimensions={(0, 0)})
    hierarchy.add_memory(memory_instance=reg_o, operands=("O",), port_alloc=(out,), served_dimensions={(0, 0)})
    hierarchy.add_memory(memory_instance=w_sram, operands=("I2",), port_alloc=(one,), served_dimensions="all")
    hierarchy.add_memory(memory_instance=a_sram, operands=("I1", "O"), port_alloc=(one, out_top),
                         served_dimensions="all")  # fmt: skip
    d1, d2 = UNROLL[spec["dataflow"]]
    dataflows = [{"D1": (d1, rows), "D2": (d2, cols)}]
    return Core(core_id, array, hierarchy, dataflows)


def offchip_core(core_id: int, cfg: dict) -> Core:
    """The DRAM, as Stream's ``offchip.py`` writes it, with this run's bandwidth and energy."""
    array = MultiplierArray(Multiplier([8, 8], float("inf"), 0), {"D1": 1, "D2": 1})
    bw = int(cfg["dram_bits_per_cycle"])
    per_word = cfg["dram_pj_per_byte"] * bw / 8
    dram = MemoryInstance(name="dram", size=10**10, r_bw=bw, w_bw=bw, r_cost=per_word, w_cost=per_word, area=0,
                          r_port=0, w_port=0, rw_port=1, latency=1)  # fmt: skip
    port = {"fh": "rw_port_1", "tl": "rw_port_1", "fl": None, "th": None}
    port_o = {"fh": "rw_port_1", "tl": "rw_port_1", "fl": "rw_port_1", "th": "rw_port_1"}
    hierarchy = MemoryHierarchy(operational_array=array)
    hierarchy.add_memory(memory_instance=dram, operands=("I1", "I2", "O"), port_alloc=(port, port, port_o),
                         served_dimensions="all")  # fmt: skip
    return Core(core_id, array, hierarchy)


def main() -> None:
    cfg = json.load(open(sys.argv[1]))
    workdir = cfg["workdir"]
    os.makedirs(workdir, exist_ok=True)
    os.chdir(workdir)
    cores = [systolic_core(i, spec, cfg) for i, spec in enumerate(cfg["cores"])]
    n = len(cores)
    pooling, simd, offchip_id = get_pooling_core(id=n), get_simd_core(id=n + 1), n + 2
    graph = get_2d_mesh(cores, cfg["mesh_rows"], cfg["mesh_cols"], int(cfg["link_bits_per_cycle"]), 0,
                        pooling, simd, offchip_core(offchip_id, cfg))  # fmt: skip
    accelerator = Accelerator("mix", graph, offchip_core_id=offchip_id)
    compute = list(range(n))
    mapping = {"default": {"core_allocation": compute}, "Conv": {"core_allocation": compute},
               "Gemm": {"core_allocation": compute}, "MatMul": {"core_allocation": compute},
               "MaxPool": {"core_allocation": n}, "AveragePool": {"core_allocation": n},
               "GlobalAveragePool": {"core_allocation": n}, "Add": {"core_allocation": n + 1}}  # fmt: skip
    with open("mapping.pickle", "wb") as fh:
        pickle.dump(mapping, fh)
    started = time.perf_counter()
    main_stage = MainStage(
        [StreamONNXModelParserStage, GenerateCNWorkloadHybridStage, IntraCoreMappingStage, InterCoreMappingStage],
        accelerator=accelerator,
        workload_path=cfg["onnx"],
        mapping_path=os.path.abspath("mapping.pickle"),
        loma_lpf_limit=6,
        nb_ga_individuals=cfg["ga_individuals"],
        nb_ga_generations=cfg["ga_generations"],
        node_hw_performances_path=os.path.abspath("node_hw_performances.pickle"),
        plot_hof=True,  # 0.0.8 yields its answer only from this branch (it evaluates the hall of fame)
        plot_file_name=False,
        plot_full_schedule=False,
        plot_data_transfer=False,
        cn_define_mode=1,
        hint_loops=[("OY", "all")] if cfg["fused"] else [],
        scheduler_candidate_selection="memory",
        operands_to_prefetch=[],
    )
    answers = main_stage.run()
    seconds = time.perf_counter() - started
    scme = answers[0][0]
    print(json.dumps({"latency_cycles": float(scme.latency), "energy_pj": float(scme.energy), "seconds": seconds}))


if __name__ == "__main__":
    main()
