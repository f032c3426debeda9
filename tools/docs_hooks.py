"""MkDocs hooks (``mkdocs.yml: hooks``): the reference pages and the report gallery, generated at build time.

Nothing in these pages is typed twice: the template parameters come from each family's ``Template.params()``
and mapper options (what ``dse params KIND`` prints), the commands from the argparse parsers, the metrics from
``hwmodels.base.METRICS``, the spec's fields from its pydantic models and the catalog sources from
``hwmodels/data/*SOURCES.md``. The gallery explores a tiny space, renders each of the report's figures alone
and screenshots it with headless Chromium; without Chromium the gallery page says so and the build goes on.

Run as a script, it writes the README's picture (the gallery's trade-off figure), a small committed PNG
because a README on a code host cannot show the docs build's output:

    python tools/docs_hooks.py --readme-picture
"""

from __future__ import annotations

import argparse
import html
import logging
import os
import re
import shutil
import subprocess
import sys
import tempfile
import types
import typing
from pathlib import Path
from typing import TYPE_CHECKING, Any

import plotly.io as pio
from pydantic import BaseModel

import dse
from dse.cli import make_parser
from dse.registry import families, mapper_option_names
from dse.spec.schema import Bound, Search, Spec, TemplateSpec, Workload, WorkloadModel
from hwmodels.base import METRICS

if TYPE_CHECKING:  # MkDocs itself is imported only when a build runs the hooks (the page tests need none of it)
    from mkdocs.config.defaults import MkDocsConfig
    from mkdocs.structure.files import Files

ROOT = Path(__file__).resolve().parent.parent
README_PICTURE = ROOT / "docs" / "assets" / "readme-pareto.png"
LOG = logging.getLogger("mkdocs.plugins.dse")
CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--hide-scrollbars",
    "--virtual-time-budget=5000",
)
SCREEN = (1100, 620)
GALLERY_SPEC: dict[str, Any] = {
    "name": "gallery-resnet18-systolic",
    "workload": {"model": "resnet18", "batch": 1, "precision": "int8"},
    "template": {
        "kind": "systolic",
        "params": {
            "rows": [16, 32, 64],
            "cols": [16, 32, 64],
            "dataflow": ["ws", "os"],
            "sram_kib": [256, 1024],
            "dram_gbps": 25.6,
            "freq_mhz": 800,
        },
    },
    "tech": "asic-28nm",
    "constraints": {"power_w": {"max": 1.5}},
    "objectives": ["min latency_ms", "min area_mm2"],
    "search": {"strategy": "grid", "seed": 0},
}
GALLERY_CAPTIONS = {
    "pareto": "**Trade-off.** Each marker is a design; red markers are the Pareto designs, joined by a step line; "
    "grey crosses violate a constraint; the star is the knee design.",
    "parallel_coordinates": "**Design space.** One line per design across its parameters and objectives; in the "
    "report, drag along an axis to filter.",
    "hypervolume": "**Search progress.** The front's hypervolume after each evaluation: when it stops rising, the "
    "search has converged.",
    "layers": "**Per-layer breakdown.** Cycles split into compute and memory stalls (top) and energy by component "
    "(bottom), layer by layer, for one Pareto design (the report's menu switches design).",
}


def md_cell(value: object) -> str:
    return str(value).replace("|", "\\|").replace("\n", " ")


def table(header: list[str], rows: list[list[object]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(md_cell(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


# -- reference pages ---------------------------------------------------------------------------------------------


def templates_page() -> str:
    """Every family's parameters and its mappers' options, from the family table."""
    parts = [
        "# Templates and their parameters\n",
        "Generated from each template's `params()` and the mappers' option declarations: what "
        "`dse params KIND` prints. A scalar in the spec fixes a parameter, a list or a range searches it.\n",
    ]
    for kind, fam in sorted(families().items()):
        parts.append(f"## `{kind}`\n")
        parts.append(f"Mappers: {', '.join(f'`{m}`' for m in fam.mappers)} (default `{fam.default_mapper}`).\n")
        rows = []
        for p in fam.template().params():
            if p.choices:
                allowed = ", ".join(map(str, p.choices))
            elif p.low is not None or p.high is not None:
                allowed = f"[{'' if p.low is None else f'{p.low:g}'}, {'' if p.high is None else f'{p.high:g}'}]"
            else:
                allowed = ""
            rows.append([f"`{p.name}`", p.type, f"`{p.default}`", allowed, p.unit, p.doc])
        parts.append(table(["parameter", "type", "default", "allowed", "unit", "meaning"], rows))
        for mapper in fam.mappers:
            options = mapper_option_names(kind, mapper)
            if options:
                parts.append(f"**Mapper `{mapper}` options** (`template.mapper_options`):\n")
                parts.append(table(["option", "type and default"], [[f"`{n}`", w] for n, w in options.items()]))
            else:
                parts.append(f"**Mapper `{mapper}`** takes no options.\n")
    return "\n".join(parts)


def subparsers(parser: argparse.ArgumentParser) -> list[tuple[str, argparse.ArgumentParser]]:
    """(command words, parser) for every sub-command, depth first."""
    found = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found.append((name, sub))
                found += [(f"{name} {inner}", p) for inner, p in subparsers(sub)]
    return found


def cli_page() -> str:
    """Every command's help, from the parsers in dse/cli.py."""
    parser = make_parser()
    helps = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help for choice in action._choices_actions}
    parts = [
        "# Command line\n",
        "Generated from the parsers in `dse/cli.py` (the same text as `dse COMMAND --help`).\n",
        table(["command", "what it does"], [[f"`dse {name}`", helps.get(name, "")] for name in helps]),
        "```text\n" + parser.format_help() + "```\n",
    ]
    for words, sub in subparsers(parser):
        sub.prog = f"dse {words}"
        parts.append(f"## `dse {words}`\n\n```text\n{sub.format_help()}```\n")
    return "\n".join(parts)


def metrics_page() -> str:
    rows = [[f"`{name}`", unit, better, doc] for name, (unit, better, doc) in METRICS.items()]
    return (
        "# Metrics\n\nGenerated from `hwmodels.base.METRICS`: every metric a design can carry, its unit and which "
        "way is better. Objectives (`min latency_ms`) and constraints (`power_w: {max: 2}`) name these; "
        "`points.parquet` has a column for each that applies, plus the energy breakdown `energy_<component>_mj`.\n\n"
        + table(["metric", "unit", "better", "meaning"], rows)
    )


def type_words(annotation: Any) -> str:
    """A field's annotation as a reader writes it (``str | None``, ``list[WorkloadModel]``)."""
    if isinstance(annotation, type) and not typing.get_args(annotation):
        return annotation.__name__
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType):
        return " | ".join(type_words(a) for a in args)
    if origin is typing.Literal:
        return " | ".join(repr(a) for a in args)
    if origin is not None:
        name = getattr(origin, "__name__", str(origin))
        return f"{name}[{', '.join(type_words(a) for a in args)}]"
    return str(annotation).replace("typing.", "")


def model_table(model: type[BaseModel]) -> str:
    rows = []
    for name, field in model.model_fields.items():
        default = "required" if field.is_required() else repr(field.get_default(call_default_factory=True))
        rows.append([f"`{name}`", f"`{type_words(field.annotation)}`", f"`{default}`", field.description or ""])
    return table(["field", "type", "default", "allowed"], rows)


def schema_page() -> str:
    parts = [
        "# Spec schema\n",
        "Generated from the pydantic models in `dse/spec/schema.py`, the ones that check every spec. "
        "`Workload` takes model options (`seq_len`, `phase`, `kv_len`, `sparsity`, ...) beside its fields; "
        "`dse models` lists each zoo model's options.\n",
    ]
    for model in (Spec, Workload, WorkloadModel, TemplateSpec, Search, Bound):
        doc = (model.__doc__ or "").strip().split("\n\n")[0]
        parts.append(f"## `{model.__name__}`\n\n{doc}\n\n{model_table(model)}")
    return "\n".join(parts)


LINK = re.compile(r"\[([^\]]+)\]\((?!https?://|#)([^)]+)\)")


def sources_page(filename: str, title: str) -> str:
    """A catalog's source list, its links into the repository kept as file names (they are not docs pages)."""
    text = (ROOT / "hwmodels" / "data" / filename).read_text()
    text = LINK.sub(lambda m: f"{m.group(1)} (`{m.group(2)}`)", text)
    return f"# {title}\n\nThe text of `hwmodels/data/{filename}`, included at build time.\n\n" + re.sub(
        r"^#(?=#* )", "##", text, flags=re.MULTILINE
    )


REFERENCE_PAGES = {
    "reference/templates.md": templates_page,
    "reference/cli.md": cli_page,
    "reference/metrics.md": metrics_page,
    "reference/spec-schema.md": schema_page,
    "reference/sources.md": lambda: sources_page("SOURCES.md", "Catalog sources"),
    "reference/gpu-sources.md": lambda: sources_page("GPU_SOURCES.md", "GPU catalog and calibration sources"),
}


# -- gallery ---------------------------------------------------------------------------------------------------


def find_chromium() -> str | None:
    for name in CHROMIUM_NAMES:
        found = shutil.which(name)
        if found:
            return found
    return None


def screenshot(chromium: str, page: Path, png: Path, profile: Path) -> bool:
    command = [
        chromium,
        *CHROMIUM_FLAGS,
        f"--user-data-dir={profile}",
        f"--window-size={SCREEN[0]},{SCREEN[1]}",
        f"--screenshot={png}",
        page.resolve().as_uri(),
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    if done.returncode != 0 or not png.is_file():
        LOG.warning("dse gallery: chromium could not screenshot %s: %s", page.name, done.stderr[-500:])
        return False
    return True


def gallery_images(work: Path) -> dict[str, bytes]:
    """Explore the gallery's tiny space, render each report figure alone and screenshot it: name -> PNG bytes."""
    chromium = find_chromium()
    if chromium is None and os.environ.get("DSE_REQUIRE_CHROMIUM"):  # CI: the gallery must be built, not skipped
        raise RuntimeError("DSE_REQUIRE_CHROMIUM is set but no chromium is on PATH; run .ci/install-chromium.sh")
    if chromium is None:
        LOG.info("dse gallery: no chromium on PATH (.ci/install-chromium.sh installs it); screenshots skipped")
        return {}
    run = dse.explore_spec(GALLERY_SPEC, work / "run")
    images = {}
    for name, figure in dse.figures(run.out_dir).items():
        figure.update_layout(width=SCREEN[0], height=SCREEN[1], margin={"t": 50})
        page = work / f"{name}.html"
        page.write_text(pio.to_html(figure, include_plotlyjs=True, full_html=True, config={"staticPlot": True}))
        png = work / f"{name}.png"
        if screenshot(chromium, page, png, work / f"profile-{name}"):
            images[name] = png.read_bytes()
    LOG.info("dse gallery: %d report figures screenshot by %s", len(images), chromium)
    return images


def gallery_page(images: dict[str, bytes]) -> str:
    spec_yaml = html.escape(str(GALLERY_SPEC))
    parts = [
        "# Report gallery\n",
        "The figures of `report.html`, each rendered by headless Chromium while these docs were built, from a "
        "36-point exploration of ResNet-18 on a systolic array (the spec of "
        "[tutorial 1](tutorials/first-exploration.md)). In the report they are interactive: hover for a design's "
        "parameters, zoom, filter.\n",
    ]
    if not images:
        parts.append(
            "!!! note\n    These docs were built without Chromium (`.ci/install-chromium.sh` installs it), "
            "so the screenshots were skipped.\n"
        )
    for name, caption in GALLERY_CAPTIONS.items():
        if name in images:
            parts.append(f"{caption}\n\n![{name}](gallery/{name}.png)\n")
    parts.append(f"<!-- gallery spec: {spec_yaml} -->\n")
    return "\n".join(parts)


# -- mkdocs events -----------------------------------------------------------------------------------------------


def on_files(files: Files, config: MkDocsConfig) -> Files:
    """Add the generated pages and images to the site (never written into docs/)."""
    from mkdocs.structure.files import File

    for path, make in REFERENCE_PAGES.items():
        files.append(File.generated(config, path, content=make()))
    with tempfile.TemporaryDirectory(prefix="dse-gallery-") as tmp:
        images = gallery_images(Path(tmp))
    files.append(File.generated(config, "gallery.md", content=gallery_page(images)))
    for name, data in images.items():
        files.append(File.generated(config, f"gallery/{name}.png", content=data))
    return files


def main() -> int:
    parser = argparse.ArgumentParser(description="MkDocs hooks of the dse docs; as a script, the README's picture")
    parser.add_argument("--readme-picture", action="store_true", help=f"write {README_PICTURE.relative_to(ROOT)}")
    args = parser.parse_args()
    if not args.readme_picture:
        parser.print_help()
        return 2
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    with tempfile.TemporaryDirectory(prefix="dse-readme-") as tmp:
        images = gallery_images(Path(tmp))
    if "pareto" not in images:
        print("no screenshot taken: headless Chromium is needed (.ci/install-chromium.sh installs it)")
        return 1
    README_PICTURE.parent.mkdir(parents=True, exist_ok=True)
    README_PICTURE.write_bytes(images["pareto"])
    print(f"wrote {README_PICTURE.relative_to(ROOT)} ({len(images['pareto']):,} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
