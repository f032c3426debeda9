"""RDU section-mapper speed and proof: solve time, status, bound and gap per workload, before and after.

Workloads (bf16, batch 1, SN40L-like preset): GPT-2 small prefill (128 tokens) and decode (1024 cached),
BERT-base (128 tokens), and a Llama-2-7B-shaped layer stack (4 layers, decode over 1024 cached tokens).
"after" is this tree's default ``sections`` mapper (with ``--time-limit`` as its deterministic limit);
"before" is the same mapper of another checkout (``--before DIR``, e.g. ``git archive HEAD | tar -x -C DIR``)
run in a subprocess on the same pickled graphs, with its defaults. Optionally times a whole
``dse explore`` of a spec (``--explore designs/gpt2_decode_rdu.yaml``).

``--grid SPEC`` solves every point of an rdu spec's parameter grid one by one and prints the gap and time of each
(``--every K``: every K-th point only); with ``--closed-form`` it also times the surrogates' RDU closed form
(``mappers.rdu.cover``: the bound's first covers realised) on each point and prints its latency, energy
and bound against the exact mapping's, and its time per point against the exact mapper's.

Run: ``.venv/bin/python benchmarks/rdu_solver_bench.py [--before /tmp/head] [--grid SPEC [--every K]
[--closed-form]] [--explore SPEC]``
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def graphs() -> dict:
    from dse.zoo.llm import llm
    from dse.zoo.transformers import bert_base, gpt2

    return {
        "gpt2-prefill": gpt2(elem_bytes=2, phase="prefill", seq_len=128),
        "gpt2-decode": gpt2(elem_bytes=2, phase="decode", kv_len=1024),
        "bert-base": bert_base(elem_bytes=2, seq_len=128),
        "llama7b-4L-decode": llm("llama2_7b", elem_bytes=2, phase="decode", kv_len=1024, num_layers=4),
    }


def solve_all(graph_file: str, options: dict) -> dict:
    """Map every pickled graph with the ``sections`` mapper importable now; solver facts per workload."""
    from mappers.rdu.sections import RduSectionMapper
    from templates.rdu import RduTemplate

    arch = RduTemplate().instantiate({"preset": "sn40l", "precision": "bf16"})
    out = {}
    for name, graph in pickle.loads(Path(graph_file).read_bytes()).items():
        started, cpu = time.perf_counter(), time.process_time()
        solver = RduSectionMapper(**options).map(graph, arch).solver
        out[name] = {
            "ops": len(graph.ops),
            "status": solver["status"],
            "latency_us": solver["latency_ps"] / 1e6,
            "bound_us": solver["bound"] / 1e6,
            "gap": solver["gap"],
            "seconds": time.perf_counter() - started,
            "cpu_seconds": time.process_time() - cpu,
        }
    return out


def grid_summary(spec_path: str, options: dict, every: int = 1, closed_form: bool = False) -> None:
    """Solve each point of the spec's parameter grid (its workload, one process): status, gap and seconds; with
    ``closed_form`` also the closed form's time and its latency, energy and bound relative to the exact plan's."""
    import itertools

    import numpy as np
    import yaml

    from dse.session import build_graph
    from dse.spec.load import load_spec
    from hwmodels.rdu.model import RduModel
    from mappers.rdu.cover import RduCoverMapper
    from mappers.rdu.sections import RduSectionMapper, clear_cache
    from templates.rdu import RduTemplate

    spec = load_spec(spec_path)
    graph = build_graph(spec)
    params = yaml.safe_load(Path(spec_path).read_text())["template"]["params"]
    names = list(params)
    grids = [v if isinstance(v, list) else [v] for v in params.values()]
    mapper_options = {**dict(spec.template.mapper_options or {}), **options}
    print(f"\n{spec_path}: every grid point ({graph.name}, {len(graph.ops)} ops), mapper options {mapper_options}")
    gaps, seconds, cpu_seconds, statuses, closed = [], [], [], [], []
    for values in list(itertools.product(*grids))[::every]:
        point = dict(zip(names, values))
        arch = RduTemplate().instantiate(point)
        clear_cache()
        started, cpu = time.perf_counter(), time.process_time()
        mapping = RduSectionMapper(**mapper_options).map(graph, arch)
        solver = mapping.solver
        seconds.append(time.perf_counter() - started)
        cpu_seconds.append(time.process_time() - cpu)
        gaps.append(solver["gap"])
        statuses.append(solver["status"])
        shown = " ".join(f"{k}={v}" for k, v in point.items() if k != "preset")
        line = f"  {shown:<40} {solver['status']:<16} gap {solver['gap']:.4f} {seconds[-1]:6.2f} s"
        if closed_form:
            started, cpu = time.perf_counter(), time.process_time()
            cover = RduCoverMapper().map(graph, arch)
            cover_s, cover_cpu = time.perf_counter() - started, time.process_time() - cpu
            truth, estimate = RduModel().evaluate(mapping, arch), RduModel().evaluate(cover, arch)
            ratios = [estimate[m] / truth[m] for m in ("latency_ms", "energy_mj", "power_w")]
            closed.append([cover_s, *ratios, cover.solver["bound"] / solver["latency_ps"], cover_cpu])
            line += f" | closed form {cover_s:5.2f} s, latency x{ratios[0]:.4f} energy x{ratios[1]:.4f}"
        print(line)
    gaps_a, secs_a = np.array(gaps), np.array(seconds)
    print(
        f"  {len(gaps)} points: gap <= 1 % on {np.mean(gaps_a <= 0.01):.0%}, median gap {np.median(gaps_a):.4f}, "
        f"max {gaps_a.max():.4f}; seconds median {np.median(secs_a):.2f}, max {secs_a.max():.2f}, "
        f"total {secs_a.sum():.1f} (cpu {sum(cpu_seconds):.1f}: the time on an idle core)"
    )
    if closed:
        c = np.array(closed)
        print(
            f"  closed form: seconds median {np.median(c[:, 0]):.2f}, total {c[:, 0].sum():.1f} "
            f"({c[:, 0].sum() / secs_a.sum():.1%} of the exact mapper's; cpu {c[:, 5].sum():.1f}, "
            f"{c[:, 5].sum() / sum(cpu_seconds):.1%}); latency / exact: median "
            f"{np.median(c[:, 1]):.4f}, max {c[:, 1].max():.4f}, exact on {np.mean(c[:, 1] <= 1 + 1e-9):.0%}; "
            f"|energy / exact - 1| median {np.median(abs(c[:, 2] - 1)):.4f} max {abs(c[:, 2] - 1).max():.4f}; "
            f"|power / exact - 1| median {np.median(abs(c[:, 3] - 1)):.4f}; bound / exact latency median "
            f"{np.median(c[:, 4]):.4f} min {c[:, 4].min():.4f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", help="another checkout whose sections mapper is the 'before'")
    parser.add_argument("--time-limit", type=float, default=None, help="deterministic limit of 'after' (s)")
    parser.add_argument("--explore", help="also time `dse explore SPEC` (2 local workers)")
    parser.add_argument("--grid", help="also solve every grid point of an rdu SPEC's params, one by one")
    parser.add_argument("--every", type=int, default=1, help="with --grid: every K-th grid point only")
    parser.add_argument("--closed-form", action="store_true", help="with --grid: time the closed form too")
    parser.add_argument("--worker", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:  # subprocess mode: solve with the checkout on PYTHONPATH
        print(json.dumps(solve_all(args.worker[0], json.loads(args.worker[1]))))
        return
    with tempfile.TemporaryDirectory() as tmp:
        graph_file = Path(tmp) / "graphs.pkl"
        graph_file.write_bytes(pickle.dumps(graphs()))
        options = {} if args.time_limit is None else {"time_limit_s": args.time_limit}
        runs = {"after": solve_all(str(graph_file), options)}
        if args.before:
            # PYTHONPATH comes before the installed package: this script, run again, imports the other checkout
            worker = [sys.executable, str(Path(__file__).resolve()), "--worker", str(graph_file), "{}"]
            env = {**os.environ, "PYTHONPATH": args.before}
            result = subprocess.run(worker, capture_output=True, text=True, cwd=args.before, env=env)
            if result.returncode:
                sys.exit(result.stderr)
            runs["before"] = json.loads(result.stdout.strip().splitlines()[-1])
    print("RDU sections mapper, SN40L-like preset, bf16, batch 1 (latency objective)")
    header = (
        f"{'workload':<18} {'ops':>4} {'run':<6} {'status':<16} {'latency us':>11} {'bound us':>10} {'gap':>7} "
        f"{'s':>6} {'cpu s':>6}"
    )
    print(header)
    print("-" * len(header))
    for name in runs["after"]:
        for run in ("before", "after"):
            if run in runs:
                r = runs[run][name]
                print(
                    f"{name:<18} {r['ops']:>4} {run:<6} {r['status']:<16} {r['latency_us']:>11.3f} "
                    f"{r['bound_us']:>10.3f} {r['gap']:>7.4f} {r['seconds']:>6.2f} "
                    f"{r.get('cpu_seconds', float('nan')):>6.2f}"
                )
    if args.grid:
        grid_summary(args.grid, options, args.every, args.closed_form)
    if args.explore:
        with tempfile.TemporaryDirectory() as tmp:
            started = time.perf_counter()
            cmd = [sys.executable, "-m", "dse.cli", "explore", args.explore, "-o", tmp, "--workers", "2", "-q"]
            result = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
            print(
                f"\n`dse explore {args.explore}` (2 workers): {time.perf_counter() - started:.1f} s, "
                f"rc {result.returncode}"
            )


if __name__ == "__main__":
    main()
