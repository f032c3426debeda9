"""A run directory: ``store.sqlite`` (the truth) plus files derived from it.

``open_run`` is how every command that reads a finished or running run gets at its store and the
spec it was explored with, so relative model paths resolve as they did when it ran.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from dse.errors import UserError
from dse.spec import Spec, parse_spec
from dse.store import STORE_FILE, Store, check_run_directory, reading_store

__all__ = ["STORE_FILE", "open_run", "open_store", "spec_of"]


def open_store(run_dir: Path) -> Store:
    """The store of an existing run directory; a UserError naming the directory when there is none, or when
    it or its store cannot be read (``dse.store.StoreUnreadable``)."""
    run_dir = Path(run_dir)
    check_run_directory(run_dir)
    if not (run_dir / STORE_FILE).is_file():
        raise UserError(
            f"{run_dir} is not a run directory (no {STORE_FILE}); give a directory written by `dse explore`",
            where=str(run_dir),
        )
    return Store.open(run_dir)


def spec_of(run_dir: Path, meta: dict[str, str]) -> Spec:
    """The spec the run used, parsed from the store with its original path (so relative model paths resolve)."""
    text = meta.get("spec_yaml", "")
    if not text:
        raise UserError(f"the store in {run_dir} records no spec; re-run `dse explore` on it", where=str(run_dir))
    path = meta.get("spec_path") or str(Path(run_dir) / "spec.yaml")
    return parse_spec(text, path=path)


@contextmanager
def open_run(run_dir: Path) -> Iterator[tuple[Store, Spec]]:
    """(store, spec) of an existing run directory; the store closes when the block ends."""
    with open_store(run_dir) as store, reading_store(store.path):
        yield store, spec_of(Path(run_dir), store.meta())
