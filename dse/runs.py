"""Run directories after the fact: regenerate a report from the store, list runs.

Both commands read the store (through ``dse.rundir``) and never evaluate anything.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pandas as pd

from dse.context import RunContext
from dse.errors import UserError
from dse.finish import finish_run
from dse.rundir import STORE_FILE, open_run, open_store, stops_when_disk_full
from dse.store_errors import reading_store


def rebuild_report(run_dir: Path) -> Path:
    """Regenerate every derived file (points, front, hypervolume, report.html) from the run's store."""
    run_dir = Path(run_dir)
    with stops_when_disk_full(run_dir), open_run(run_dir) as (store, spec):
        report, *_ = finish_run(run_dir, RunContext.of(spec), store, ["report regenerated from the store"])
    if report is None:
        raise UserError(f"no report could be written in {run_dir}", where=str(run_dir))
    return report


def list_runs(root: Path) -> list[dict[str, Any]]:
    """One row per run directory under ``root`` (itself included): spec name, points, failures, front, status.

    A run that cannot be read (damaged or newer store, unreadable folder) is a row too, its status the reason,
    so one bad run never hides the others."""
    root = Path(root)
    if not root.exists():
        return []
    rows = []
    for run_dir, problem in sorted(find_runs(root), key=lambda found: str(found[0])):
        if problem is None:
            try:
                rows.append(run_row(run_dir))
                continue
            except UserError as err:
                problem = getattr(err, "problem", err.message)
        rows.append(
            {
                "dir": run_dir,
                "spec": "?",
                "points": "-",
                "failed": "-",
                "front": "-",
                "status": f"unreadable: {problem}",
            }
        )
    return rows


def find_runs(root: Path) -> list[tuple[Path, str | None]]:
    """Every folder under ``root`` holding a store, and every folder that could not be looked into (with why)."""
    found: list[tuple[Path, str | None]] = []

    def unreadable(error: OSError) -> None:
        found.append((Path(error.filename), f"cannot list the folder ({error.strerror})"))

    for folder, subfolders, files in os.walk(root, onerror=unreadable):
        if STORE_FILE in files or STORE_FILE in subfolders:
            found.append((Path(folder), None))
    return found


def run_row(run_dir: Path) -> dict[str, Any]:
    """The listing row of one readable run directory."""
    with open_store(run_dir) as store, reading_store(store.path):
        meta = store.meta()
        records = store.records()
    front = 0
    pareto_csv = run_dir / "pareto.csv"
    if pareto_csv.is_file():
        try:
            front = len(pd.read_csv(pareto_csv))
        except (pd.errors.EmptyDataError, pd.errors.ParserError, UnicodeDecodeError, OSError):
            front = 0
    return {
        "dir": run_dir,
        "spec": meta.get("spec_name", "?"),
        "points": len(records),
        "failed": sum(1 for r in records if not r.ok),
        "front": front,
        "status": meta.get("status", "?"),
    }
