"""Run directories after the fact: regenerate a report from the store, list runs.

A run directory holds ``store.sqlite`` (the truth) and files derived from it; both
commands here read the store and never evaluate anything.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dse.errors import UserError

STORE_FILE = "store.sqlite"


def _open_store(run_dir: Path):
    from dse.store import Store

    if not (run_dir / STORE_FILE).is_file():
        raise UserError(
            f"{run_dir} is not a run directory (no {STORE_FILE}); give a directory written by `dse explore`",
            where=str(run_dir),
        )
    return Store.open(run_dir)


def _spec_of(run_dir: Path, meta: dict[str, str]):
    """The spec the run used, parsed from the store with its original path (so relative model paths resolve)."""
    from dse.spec import parse_spec

    text = meta.get("spec_yaml", "")
    if not text:
        raise UserError(f"the store in {run_dir} records no spec; re-run `dse explore` on it", where=str(run_dir))
    path = meta.get("spec_path") or str(run_dir / "spec.yaml")
    return parse_spec(text, path=path)


def rebuild_report(run_dir: Path) -> Path:
    """Regenerate every derived file (points, front, hypervolume, report.html) from the run's store."""
    from dse.explore import finish_run

    run_dir = Path(run_dir)
    with _open_store(run_dir) as store:
        spec = _spec_of(run_dir, store.meta())
        report, *_ = finish_run(run_dir, spec, store, spec.design_space(), ["report regenerated from the store"])
    if report is None:
        raise UserError(f"no report could be written in {run_dir}", where=str(run_dir))
    return report


def list_runs(root: Path) -> list[dict[str, Any]]:
    """One row per run directory under ``root`` (itself included): spec name, points, failures, front, status."""
    import pandas as pd

    root = Path(root)
    if not root.exists():
        return []
    rows = []
    for store_file in sorted(root.rglob(STORE_FILE)):
        run_dir = store_file.parent
        with _open_store(run_dir) as store:
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
