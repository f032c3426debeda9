"""Hand-made spec, space and evaluator for the explorer tests.

The evaluator is a closed-form function of the point (bigger arrays: faster but
larger and hungrier), so tests know every answer without the hardware models.
It is importable by pool workers and by a subprocess sweep
(``python -m explore_fixtures OUT ...`` with this folder as the working directory),
which the SIGKILL test kills mid-run. Set ``DSE_TEST_EVAL_LOG`` to make every
evaluation append the point as one JSON line, ``DSE_TEST_EVAL_DELAY`` (seconds)
to slow each evaluation down.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dse.objectives import Constraint, Objective
from dse.space import DesignSpace, Dimension
from hwmodels.base import LayerMetrics, Metrics

EVAL_LOG_ENV = "DSE_TEST_EVAL_LOG"
EVAL_DELAY_ENV = "DSE_TEST_EVAL_DELAY"


@dataclass
class FakeSearch:
    strategy: str = "grid"
    budget: int | None = None
    seed: int = 0
    population: int | None = None


@dataclass
class FakeSpec:
    """The slice of ``dse.spec.Spec`` the explorer reads."""

    name: str = "toy-systolic"
    search: FakeSearch = field(default_factory=FakeSearch)
    objectives: list[Objective] = field(
        default_factory=lambda: [Objective("latency_ms", "min"), Objective("energy_mj", "min")]
    )
    constraints: list[Constraint] = field(default_factory=lambda: [Constraint("area_mm2", high=12.0)])
    fingerprint: str = "toy-fingerprint-v1"
    evaluator: str = "analytical"
    path: Path = Path("<string>")
    baselines: list[str] = field(default_factory=list)

    def objective_list(self) -> list[Objective]:
        return list(self.objectives)

    def constraint_list(self) -> list[Constraint]:
        return list(self.constraints)

    def evaluation_fingerprint(self) -> str:
        return self.fingerprint

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "objectives": [str(o) for o in self.objectives],
            "constraints": {c.metric: {"max": c.high} for c in self.constraints},
            "search": {"strategy": self.search.strategy, "budget": self.search.budget, "seed": self.search.seed},
        }


def toy_space() -> DesignSpace:
    """4 x 3 x 2 x 6 = 144 grid points, with a categorical, an int log range and a fixed param."""
    return DesignSpace(
        (
            Dimension("rows", "int", values=(4, 8, 16, 32)),
            Dimension("cols", "int", values=(4, 8, 16)),
            Dimension("dataflow", "str", values=("ws", "os")),
            Dimension("sram_kib", "int", low=16, high=512, log=True),
            Dimension("freq_mhz", "int", values=(500,)),
        )
    )


def toy_metrics(point: dict[str, Any]) -> dict[str, float]:
    """Closed-form metrics: latency falls with array size and SRAM, energy and area rise with them."""
    macs = point["rows"] * point["cols"]
    sram = point["sram_kib"]
    penalty = 1.0 if point["dataflow"] == "ws" else 1.3
    latency_ms = penalty * 1e3 / (macs * point["freq_mhz"]) * 50 + 8.0 / sram
    area_mm2 = 0.01 * macs + 0.01 * sram
    energy_mj = 0.02 * math.sqrt(macs) + 0.004 * math.sqrt(sram) + 0.1 * latency_ms
    return {"latency_ms": latency_ms, "energy_mj": energy_mj, "area_mm2": area_mm2, "power_w": energy_mj / latency_ms}


@dataclass
class ToyEvaluator:
    """``evaluator(point) -> Metrics``; raises ValueError when ``point[fail_param] == fail_value``."""

    fail_param: str | None = None
    fail_value: Any = None

    def __call__(self, point: dict[str, Any]) -> Metrics:
        log = os.environ.get(EVAL_LOG_ENV)
        if log:
            line = json.dumps(point, sort_keys=True) + "\n"
            fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                os.write(fd, line.encode())  # one write: lines from parallel workers never interleave
            finally:
                os.close(fd)
        delay = float(os.environ.get(EVAL_DELAY_ENV, "0") or 0)
        if delay:
            time.sleep(delay)
        if self.fail_param is not None and point.get(self.fail_param) == self.fail_value:
            raise ValueError(f"{self.fail_param}={self.fail_value!r} is not supported by the toy model")
        values = toy_metrics(point)
        layers = [
            LayerMetrics(
                layer=name,
                kind="conv",
                cycles=values["latency_ms"] * share * 1e3,
                compute_cycles=values["latency_ms"] * share * 800,
                stall_cycles=values["latency_ms"] * share * 200,
                macs=1000 * (i + 1),
                utilization=0.5 + 0.1 * i,
                dram_read_bytes=1024.0 * (i + 1),
                dram_write_bytes=512.0,
                energy_breakdown_pj={"mac": 10.0 * (i + 1), "sram": 5.0},
            )
            for i, (name, share) in enumerate([("conv1", 0.4), ("conv2", 0.6)])
        ]
        return Metrics(values=values, energy_breakdown_pj={"mac": 30.0, "sram": 10.0}, layers=layers)


def read_eval_log(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def main(argv: list[str] | None = None) -> int:
    """A sweep in a subprocess, as the CLI would run it (used by the SIGKILL resume test)."""
    import explore_fixtures as fixtures  # the importable module, not __main__, so workers can unpickle it

    from dse.explore import explore

    parser = argparse.ArgumentParser()
    parser.add_argument("out", type=Path)
    parser.add_argument("--strategy", default="random")
    parser.add_argument("--budget", type=int, default=60)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--executor", default="serial")
    parser.add_argument("--workers", type=int, default=None)
    args = parser.parse_args(argv)
    spec = fixtures.FakeSpec(search=fixtures.FakeSearch(args.strategy, args.budget, args.seed))
    result = explore(
        spec,
        args.out,
        fixtures.ToyEvaluator(),
        executor=args.executor,
        workers=args.workers,
        progress=False,
        space=fixtures.toy_space(),
    )
    print(json.dumps({"evaluated": result.evaluated, "reused": result.reused, "points": len(result.points)}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
