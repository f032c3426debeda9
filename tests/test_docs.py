"""The docs cannot rot: every tutorial's commands run and still print what the page shows, every notebook runs.

Marked ``docs`` (``make test-docs``, run by CI; the default ``make test`` deselects it): each tutorial reruns its
commands in a fresh folder (``tools/doc_commands.py``, seconds to a minute each) and each notebook in
``examples/`` executes top to bottom in a Jupyter kernel. The fast checks of the same machinery (parsing, page
list, API names) are in tests/test_docs_pages.py and run by default.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TUTORIALS = sorted(p for p in (ROOT / "docs" / "tutorials").glob("*.md") if p.name != "index.md")
NOTEBOOKS = sorted((ROOT / "examples").glob("*.ipynb"))
NOTEBOOK_TIMEOUT_S = 900

pytestmark = pytest.mark.docs


def load_tool(name: str):
    """A script of tools/ as a module (tools/ is not a package)."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "tools" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("page", TUTORIALS, ids=lambda p: p.stem)
def test_tutorial_commands_run_and_print_what_the_page_shows(page: Path) -> None:
    problems = load_tool("doc_commands").check(page)
    assert not problems, "\n\n".join(problems)


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_runs_top_to_bottom(notebook: Path, tmp_path: Path) -> None:
    nbformat = pytest.importorskip("nbformat", reason="the docs extra: pip install -e '.[docs]'")
    nbclient = pytest.importorskip("nbclient", reason="the docs extra: pip install -e '.[docs]'")
    book = nbformat.read(notebook, as_version=4)
    client = nbclient.NotebookClient(
        book, timeout=NOTEBOOK_TIMEOUT_S, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    )
    client.execute()  # raises CellExecutionError naming the cell and the error
    errors = [o for cell in book.cells for o in cell.get("outputs", []) if o.get("output_type") == "error"]
    assert not errors
    assert list(tmp_path.glob("runs/*/store.sqlite")), "the notebook wrote no run"
