"""The report of a large run: file size, build seconds and headless-Chromium render seconds at 100k and 1M points.

The points frame is ``dse.report.synthetic.synthetic_points`` (the columns ``dse.finish`` hands the report,
from a toy model), written by ``write_report`` as a run's finish writes it. Render seconds are the wall time of
``chromium --headless --dump-dom`` on the page less the same on an empty page (the browser starting), the
median of ``--repeat`` runs; "ready" is the page's own clock (``performance.now()``) when the script after the
last figure runs, i.e. loading, parsing plotly.js and drawing every figure, without the browser's start. The
1,000-point report (below the report's threshold, every design a marker) is the reference. Target: under
25 MB and a few seconds at 1,000,000 points.

    python benchmarks/report_scale.py [--points 1000 100000 1000000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from dse.report import write_report
from dse.report.synthetic import SYNTHETIC_CONSTRAINTS, SYNTHETIC_OBJECTIVES, SYNTHETIC_PARAMS, synthetic_points

CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking")


READY_MARK = "<script>document.body.setAttribute('data-ready-ms', performance.now().toFixed(0));</script></body>"


def chromium_seconds(chromium: str, page: Path, profile: Path) -> tuple[float, float]:
    """(wall, ready) seconds of one headless Chromium that loads ``page``, runs its scripts and dumps the DOM."""
    start = time.perf_counter()
    done = subprocess.run(
        [chromium, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", "--dump-dom", page.resolve().as_uri()],
        capture_output=True,
        text=True,
        timeout=600,
    )
    seconds = time.perf_counter() - start
    ready = re.search(r'data-ready-ms="(\d+)"', done.stdout)
    if done.returncode != 0 or not ready:
        raise SystemExit(f"chromium failed on {page.name}: {done.stderr[-800:]}")
    return seconds, int(ready.group(1)) / 1e3


def median_seconds(chromium: str, page: Path, directory: Path, repeat: int) -> tuple[float, float]:
    """Median (wall, ready) seconds over ``repeat`` runs, each with a fresh profile."""
    timed = page.with_name(f"{page.stem}-timed.html")
    timed.write_text(page.read_text(encoding="utf-8").replace("</body>", READY_MARK), encoding="utf-8")
    runs = [chromium_seconds(chromium, timed, directory / f"profile-{page.stem}-{i}") for i in range(repeat)]
    return statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--points", type=int, nargs="+", default=[1_000, 100_000, 1_000_000])
    parser.add_argument("--repeat", type=int, default=3, help="Chromium runs per page (the median is printed)")
    args = parser.parse_args()
    chromium = next(filter(None, map(shutil.which, ("chromium", "chromium-browser", "google-chrome"))), None)
    print(f"report at scale on {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}; chromium: {chromium or 'absent'}")
    print("(render: Chromium's time on the page less its time on an empty page, the median of --repeat runs)")
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        blank = directory / "blank.html"
        blank.write_text("<!DOCTYPE html><html><body>blank</body></html>\n", encoding="utf-8")
        startup = median_seconds(chromium, blank, directory, args.repeat) if chromium else (0.0, 0.0)
        for count in args.points:
            points = synthetic_points(count)
            page = directory / f"report-{count}.html"
            start = time.perf_counter()
            write_report(
                page,
                points,
                title=f"synthetic systolic grid, {count:,} points",
                objectives=list(SYNTHETIC_OBJECTIVES),
                constraints=list(SYNTHETIC_CONSTRAINTS),
                param_names=list(SYNTHETIC_PARAMS),
                layers={},
            )
            build = time.perf_counter() - start
            line = f"{count:>9,} points: {page.stat().st_size / 1e6:6.1f} MB, built in {build:5.1f} s"
            if chromium:
                wall, ready = median_seconds(chromium, page, directory, args.repeat)
                line += f", rendered in {wall - startup[0]:5.1f} s ({ready:4.1f} s to ready)"
            print(line, flush=True)
        if chromium:
            print(f"Chromium on an empty page: {startup[0]:.1f} s ({startup[1]:.1f} s to ready)")


if __name__ == "__main__":
    main()
