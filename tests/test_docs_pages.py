"""The docs' machinery, fast: the tutorial parser, the page list, the generated reference, the API's names.

The tutorials' commands and the notebooks themselves run under the ``docs`` marker (tests/test_docs.py);
here, what can break without running them: a page in the nav that nobody writes, a README over its length,
a link into docs/ that points nowhere, an API name shadowed by a module of the same name.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

import dse
from tests.test_docs import ROOT, TUTORIALS, load_tool

doc_commands = load_tool("doc_commands")


def test_parser_reads_files_commands_and_shown_output() -> None:
    page = '# t\n\n```yaml title="a.yaml"\nname: x\n```\n\n```console\n$ dse validate a.yaml\nok\n...\n$ ls\n```\n'
    blocks = doc_commands.blocks(page)
    assert [(b.language, b.title) for b in blocks] == [("yaml", "a.yaml"), ("console", None)]
    assert blocks[0].lines == ("name: x",)
    commands = doc_commands.commands(blocks[1])
    assert [(c.text, c.shown) for c in commands] == [("dse validate a.yaml", ("ok", "...")), ("ls", ())]


def test_shown_output_is_compared_with_durations_masked() -> None:
    shown = ("x: 36 points, 8 on the front, 16.1 s", "...", "wrote a.csv")
    assert doc_commands.missing_lines(shown, "x: 36 points, 8 on the front, 3 s\nwrote a.csv\n") == []
    assert doc_commands.missing_lines(shown, "x: 36 points, 7 on the front, 3.0 s\nwrote a.csv\n") == [shown[0]]


def test_every_tutorial_has_commands_and_shows_their_output() -> None:
    assert len(TUTORIALS) >= 6
    for page in TUTORIALS:
        console = [b for b in doc_commands.blocks(page.read_text()) if b.language == "console"]
        commands = [c for b in console for c in doc_commands.commands(b)]
        assert commands, f"{page.name} has no command to run"
        assert any(c.shown for c in commands), f"{page.name} shows no output"


def nav_pages(entries: list) -> list[str]:
    pages = []
    for entry in entries:
        value = next(iter(entry.values())) if isinstance(entry, dict) else entry
        pages += nav_pages(value) if isinstance(value, list) else [value]
    return pages


def test_every_page_in_the_nav_is_written_or_generated() -> None:
    hooks = load_tool("docs_hooks")
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    generated = set(hooks.REFERENCE_PAGES) | {"gallery.md"}
    missing = [p for p in nav_pages(config["nav"]) if p not in generated and not (ROOT / "docs" / p).is_file()]
    assert not missing
    written = {str(p.relative_to(ROOT / "docs")) for p in (ROOT / "docs").rglob("*.md")}
    assert not written - set(nav_pages(config["nav"])), "pages outside the nav"


def test_generated_reference_names_every_family_metric_and_command() -> None:
    hooks = load_tool("docs_hooks")
    templates, metrics, cli = hooks.templates_page(), hooks.metrics_page(), hooks.cli_page()
    for kind, family in hooks.families().items():
        assert f"## `{kind}`" in templates
        assert all(f"`{p.name}`" in templates for p in family.template().params())
    assert all(f"`{name}` | {unit} |" in metrics for name, (unit, *_) in hooks.METRICS.items())
    for words in ("explore", "evaluate", "compare", "export", "surrogate train"):
        assert f"## `dse {words}`" in cli
    assert "`max_grid`" in hooks.schema_page()


def test_readme_is_a_landing_page_whose_links_resolve() -> None:
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= 150
    assert "make test " in text and "make demo" in text
    links = re.findall(r"\]\(((?:docs|examples)/[^)#]+)", text)
    assert links and not [link for link in links if not (ROOT / link).exists()]


def test_api_names_are_never_shadowed_by_a_module() -> None:
    """Importing ``dse.X`` sets the attribute ``dse.X`` to the module: an API name equal to a module's name
    would turn into that module once anything imported it (``dse.explore`` is a module)."""
    modules = {module.name for module in pkgutil.iter_modules(dse.__path__)}
    assert not modules & set(dse.API_NAMES)
    api = importlib.import_module("dse.api")  # imports most of dse's modules
    assert set(dse.API_NAMES) == set(api.__all__)
    assert all(getattr(dse, name) is getattr(api, name) for name in dse.API_NAMES)


def test_import_dse_stays_light() -> None:
    code = "import sys, dse; assert dse.__version__; print(sorted({'numpy', 'pandas', 'dse.api'} & set(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert done.stdout.strip() == "[]"


def test_the_python_api_gives_the_run_the_command_line_gives(tmp_path: Path) -> None:
    """explore -> DataFrames and figures; one design evaluated alone has the metrics its explored row has."""
    spec = dse.spec_from_dict(
        {
            "name": "api-check",
            "workload": {"model": "jet_mlp", "batch": 1, "precision": "int8"},
            "template": {"kind": "systolic", "params": {"rows": [8, 16], "cols": 8, "dataflow": ["ws", "os"]}},
            "objectives": ["min latency_ms", "min area_mm2"],
        }
    )
    run = dse.explore_spec(spec, tmp_path / "run")
    assert len(run.points) == 4 and run.points["pareto"].sum() == len(run.pareto) >= 1
    assert run.report is not None and run.report.is_file()
    again = dse.load_run(tmp_path / "run")
    assert sorted(again.points["point_id"]) == sorted(run.points["point_id"])
    assert {"pareto", "parallel_coordinates", "hypervolume"} <= set(dse.figures(tmp_path / "run"))
    row = run.points.iloc[0]
    design = dse.evaluate_design(spec, {"rows": int(row["rows"]), "dataflow": row["dataflow"]})
    assert design.metrics["latency_ms"] == pytest.approx(row["latency_ms"], rel=1e-12)
    assert len(design.layers) == len(dse.workload_graph(spec)[0].ops)
