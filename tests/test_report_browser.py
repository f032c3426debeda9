"""The report in a real headless Chromium: every figure must render, and the page must not be blank.

Parsing the HTML proves the page is well formed; only a browser proves plotly.js actually drew
each figure from the inline JSON with no network. `.ci/install-chromium.sh` installs the browser.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import time
from pathlib import Path

import numpy as np
import plotly.offline
import pytest
from PIL import Image

from dse.objectives import Constraint, Objective
from dse.report import write_report
from dse.report.synthetic import SYNTHETIC_CONSTRAINTS, SYNTHETIC_OBJECTIVES, SYNTHETIC_PARAMS, synthetic_points

try:  # pytest's default rootdir import puts tests/ on sys.path; a tests package would not
    from tests.test_report import _write, synthetic_run
except ImportError:
    from test_report import _write, synthetic_run

CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
    "--virtual-time-budget=5000",
)


def find_chromium() -> str | None:
    for name in CHROMIUM_NAMES:
        found = shutil.which(name)
        if found:
            return found
    return None


CHROMIUM = find_chromium()
pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="no chromium binary on PATH; run .ci/install-chromium.sh (as root) to install it"
)


def chromium_command(page: Path, profile: Path, *extra: str) -> list[str]:
    """The headless Chromium command line that opens a local file with its own profile."""
    return [CHROMIUM, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *extra, page.resolve().as_uri()]


def run_chromium(*commands: list[str], timeout: float = 90) -> list[str]:
    """Run headless Chromium commands side by side (each its own profile); returns each stdout (the DOM for
    --dump-dom). Side by side because most of a run is the browser starting, not drawing."""
    runs = [subprocess.Popen(c, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for c in commands]
    outputs = []
    for run in runs:
        stdout, stderr = run.communicate(timeout=timeout)
        assert run.returncode == 0, f"chromium exited {run.returncode}: {stderr[-2000:]}"
        outputs.append(stdout)
    return outputs


def figure_segments(dom: str, figure_ids: list[str]) -> dict[str, tuple[str, str]]:
    """For each figure: (its opening div tag, the DOM from there to the next figure) as rendered."""
    starts = []
    for div_id in figure_ids:
        match = re.search(r'<div[^>]*\bid="' + re.escape(div_id) + r'"[^>]*>', dom)
        assert match, f"figure div {div_id} missing from the rendered DOM"
        starts.append((match.start(), match.end(), div_id))
    starts.sort()
    segments = {}
    for index, (start, tag_end, div_id) in enumerate(starts):
        end = starts[index + 1][0] if index + 1 < len(starts) else len(dom)
        segments[div_id] = (dom[start:tag_end], dom[start:end])
    return segments


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """A three-objective report (every figure kind, WebGL ones included), its DOM after scripts, and a screenshot."""
    directory = tmp_path_factory.mktemp("browser")
    objectives = [Objective("latency_ms", "min"), Objective("energy_mj", "min"), Objective("area_mm2", "min")]
    run = synthetic_run(n_points=150, objectives=objectives, constraints=[Constraint("power_w", high=12.0)])
    page = _write(directory, run, notes=["workload: resnet18, batch 1, int8", "template: systolic, asic-28nm"])
    static = page.read_text(encoding="utf-8")
    figure_ids = re.findall(r'<div id="([^"]+)" class="plotly-graph-div"', static)
    assert not re.search(r'<div id="fig-[^"]*"[^>]*js-plotly-plot', static), "the class must come from plotly.js"
    # The control: the same page without plotly.js, i.e. the text and boxes but no figure.
    control_page = directory / "control.html"
    control_page.write_text(static.replace(plotly.offline.get_plotlyjs(), "/* plotly.js left out */"), encoding="utf-8")
    shot, control_shot = directory / "report.png", directory / "control.png"
    window = "--window-size=1400,2000"
    dom, _ = run_chromium(  # one run gives both the DOM after scripts and the screenshot
        chromium_command(page, directory / "profile-page", "--dump-dom", f"--screenshot={shot}", window),
        chromium_command(control_page, directory / "profile-control", f"--screenshot={control_shot}", window),
    )
    dom = re.sub(r"<script\b.*?</script>", "", dom, flags=re.S)  # the plotly.js source itself is not the page
    return {"figure_ids": figure_ids, "dom": dom, "screenshot": shot, "control": control_shot, "run": run}


def test_every_figure_is_drawn_by_plotly(rendered: dict) -> None:
    figure_ids = rendered["figure_ids"]
    assert figure_ids == [
        "fig-pareto",
        "fig-pareto-3d",
        "fig-scatter-matrix",
        "fig-parcoords",
        "fig-hypervolume",
        "fig-front-breakdown",
        "fig-layers",
    ]
    dom = rendered["dom"]
    for div_id, (tag, segment) in figure_segments(dom, figure_ids).items():
        assert "js-plotly-plot" in tag, f"{div_id} was not turned into a plotly graph"
        assert 'class="main-svg"' in segment, f"{div_id} has no rendered SVG"
    assert len(re.findall(r'class="main-svg"', dom)) >= 2 * len(figure_ids)
    assert "WebGL is not supported" not in dom


def test_figures_carry_their_content(rendered: dict) -> None:
    segments = figure_segments(rendered["dom"], rendered["figure_ids"])
    pareto = segments["fig-pareto"][1]
    assert pareto.count('class="point"') >= int(rendered["run"]["points"]["status"].eq("ok").sum())
    assert "latency_ms [ms]" in pareto
    for webgl_figure in ("fig-pareto-3d", "fig-scatter-matrix", "fig-parcoords"):
        assert "<canvas" in segments[webgl_figure][1], f"{webgl_figure} drew no WebGL canvas"
    layers = segments["fig-layers"][1]
    assert 'class="updatemenu-header-group"' in layers or "updatemenu" in layers
    assert layers.count('class="point"') >= 4 * len(rendered["run"]["layers"][next(iter(rendered["run"]["layers"]))])


def _image_stats(png: Path) -> tuple[float, int, float]:
    """(pixel standard deviation, distinct colours, share of strongly coloured pixels)."""
    pixels = np.asarray(Image.open(png).convert("RGB"))
    assert pixels.shape == (2000, 1400, 3)
    packed = pixels.reshape(-1, 3).astype(np.uint32) @ np.array([1 << 16, 1 << 8, 1], dtype=np.uint32)
    distinct = len(np.unique(packed))
    coloured = float(np.mean(pixels.max(axis=2).astype(int) - pixels.min(axis=2) > 30))
    return float(pixels.std()), distinct, coloured


def test_screenshot_is_not_blank(rendered: dict) -> None:
    """Compared with the same page rendered without plotly.js: the figures add colours and coloured pixels."""
    spread, distinct, coloured = _image_stats(rendered["screenshot"])
    _, control_distinct, control_coloured = _image_stats(rendered["control"])
    assert spread > 20, "the page looks blank"
    assert distinct > 2 * control_distinct, f"{distinct} colours vs {control_distinct} without figures"
    assert coloured > 0.005 and coloured > 5 * control_coloured, (
        f"{coloured:.2%} coloured pixels vs {control_coloured:.2%} without figures: nothing was drawn"
    )


def test_a_million_point_report_opens_and_stays_under_25_mb(tmp_path: Path) -> None:
    """A million points through ``write_report`` (as a run's finish calls it): every figure drawn, the front as
    WebGL markers over a density image, the file under 25 MB. ``benchmarks/report_scale.py`` prints the times."""
    page = write_report(
        tmp_path / "report.html",
        synthetic_points(1_000_000),
        title="synthetic systolic grid, a million points",
        objectives=list(SYNTHETIC_OBJECTIVES),
        constraints=list(SYNTHETIC_CONSTRAINTS),
        param_names=list(SYNTHETIC_PARAMS),
        layers={},
    )
    size_mb = page.stat().st_size / 1e6
    assert size_mb < 25, f"the million-point report is {size_mb:.1f} MB"
    static = page.read_text(encoding="utf-8")
    figure_ids = re.findall(r'<div id="([^"]+)" class="plotly-graph-div"', static)
    assert figure_ids[:4] == ["fig-pareto", "fig-pareto-3d", "fig-scatter-matrix", "fig-parcoords"]
    start = time.perf_counter()
    (dom,) = run_chromium(chromium_command(page, tmp_path / "profile", "--dump-dom"), timeout=300)
    print(f"a million points: {size_mb:.1f} MB, rendered in {time.perf_counter() - start:.1f} s")
    dom = re.sub(r"<script\b.*?</script>", "", dom, flags=re.S)
    segments = figure_segments(dom, figure_ids)
    for div_id, (tag, segment) in segments.items():
        assert "js-plotly-plot" in tag, f"{div_id} was not turned into a plotly graph"
        assert 'class="main-svg"' in segment, f"{div_id} has no rendered SVG"
    for div_id in ("fig-pareto", "fig-scatter-matrix"):
        assert 'class="hm"' in segments[div_id][1], f"{div_id} drew no density image"
        assert "<canvas" in segments[div_id][1], f"{div_id} drew no WebGL markers"
    assert "WebGL is not supported" not in dom
