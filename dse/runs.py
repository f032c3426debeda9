"""Run directories after the fact: regenerate a report from the store, list runs.

Both commands read the store (through ``dse.rundir``) and never evaluate anything.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from dse.context import RunContext
from dse.errors import UserError
from dse.finish import finish_run
from dse.rundir import STORE_FILE, open_run, open_store


def rebuild_report(run_dir: Path) -> Path:
    """Regenerate every derived file (points, front, hypervolume, report.html) from the run's store."""
    run_dir = Path(run_dir)
    with open_run(run_dir) as (store, spec):
        report, *_ = finish_run(run_dir, RunContext.of(spec), store, ["report regenerated from the store"])
    if report is None:
        raise UserError(f"no report could be written in {run_dir}", where=str(run_dir))
    return report


def list_runs(root: Path) -> list[dict[str, Any]]:
    """One row per run directory under ``root`` (itself included): spec name, points, failures, front, status."""
    root = Path(root)
    if not root.exists():
        return []
    rows = []
    for store_file in sorted(root.rglob(STORE_FILE)):
        run_dir = store_file.parent
        with open_store(run_dir) as store:
            meta = store.meta()
            records = store.records()
        front = 0
        pareto_csv = run_dir / "pareto.csv"
        if pareto_csv.is_file():
            try:
                front = len(pd.read_csv(pareto_csv))
            except (pd.errors.EmptyDataError, OSError):
                front = 0
        rows.append(
            {
                "dir": run_dir,
                "spec": meta.get("spec_name", "?"),
                "points": len(records),
                "failed": sum(1 for r in records if not r.ok),
                "front": front,
                "status": meta.get("status", "?"),
            }
        )
    return rows
