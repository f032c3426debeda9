"""Run the commands of the docs' tutorials, and write their real output back into the pages.

A tutorial (``docs/tutorials/*.md``) is a sequence of fenced blocks. A block opened with a title,
```` ```yaml title="tiny.yaml" ````, is a file the reader writes: it is written into the tutorial's folder
when the block is reached. A ```` ```console ```` block holds commands (lines starting ``$ ``), each followed by
its output. Every tutorial runs in a fresh folder holding a copy of ``designs/``, its commands in order.

    python tools/doc_commands.py docs/tutorials/first-exploration.md   # rerun, rewrite the outputs in place
    python tools/doc_commands.py --check docs/tutorials/*.md           # rerun, compare (what the docs test does)

``dse`` and ``python`` in a command are this interpreter (``python -m dse.cli`` for ``dse``), so the pages run
against the checked-out code. Output lines are compared with durations masked (``3.7 s`` -> ``N s``): a run's
wall time is the one thing that differs between two runs of the same spec and seed. Timestamped log lines of
libraries (Dask's worker shutdown notes) are left out of the pages.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FENCE = re.compile(r"^```(\w+)?(?:\s+title=\"([^\"]+)\")?\s*$")
DURATION = re.compile(r"\b\d+(?:\.\d+)? s\b")
LOG_LINE = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d")  # a library's timestamped log line (Dask's nanny)
ELLIPSIS = "..."  # an output line of only this stands for lines left out of the page
COMMAND_TIMEOUT_S = 600


@dataclass(frozen=True)
class Block:
    """One fenced block: its language, its title (a file to write) and its lines, and where it sits."""

    language: str
    title: str | None
    lines: tuple[str, ...]
    start: int  # index of the opening fence line
    end: int  # index of the closing fence line


@dataclass(frozen=True)
class Command:
    """A ``$ `` line of a console block and the output lines the page shows under it."""

    text: str
    shown: tuple[str, ...]


def blocks(text: str) -> list[Block]:
    """The fenced blocks of a markdown page, in order."""
    lines = text.splitlines()
    found, i = [], 0
    while i < len(lines):
        match = FENCE.match(lines[i])
        if match and lines[i] != "```":
            j = i + 1
            while j < len(lines) and lines[j] != "```":
                j += 1
            found.append(Block(match.group(1) or "", match.group(2), tuple(lines[i + 1 : j]), i, j))
            i = j + 1
        else:
            i += 1
    return found


def commands(block: Block) -> list[Command]:
    """The commands of a console block with the output the page shows for each."""
    out: list[Command] = []
    for line in block.lines:
        if line.startswith("$ "):
            out.append(Command(line[2:], ()))
        elif out:
            out[-1] = Command(out[-1].text, out[-1].shown + (line,))
    return out


def masked(line: str) -> str:
    return DURATION.sub("N s", line.rstrip())


def missing_lines(shown: tuple[str, ...], actual: str) -> list[str]:
    """The shown output lines that the actual output lacks (durations masked, ``...`` lines skipped)."""
    have = {masked(line) for line in actual.splitlines()}
    return [line for line in shown if line.strip() and line.strip() != ELLIPSIS and masked(line) not in have]


@dataclass(frozen=True)
class Ran:
    command: Command
    returncode: int
    output: str


def shims(folder: Path) -> dict[str, str]:
    """An environment whose ``dse`` and ``python`` are this interpreter, importing this checkout."""
    bin_dir = folder / ".bin"
    bin_dir.mkdir()
    (bin_dir / "dse").write_text(f'#!/bin/sh\nexec "{sys.executable}" -m dse.cli "$@"\n')
    (bin_dir / "python").write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    for shim in bin_dir.iterdir():
        shim.chmod(0o755)
    env = dict(os.environ)
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    env["COLUMNS"] = "120"
    return env


def run_page(page: Path, folder: Path) -> Iterator[tuple[Block, list[Ran]]]:
    """Run a page's blocks in ``folder``: write its titled files, run its console blocks' commands."""
    shutil.copytree(ROOT / "designs", folder / "designs")
    env = shims(folder)
    for block in blocks(page.read_text()):
        if block.title:
            (folder / block.title).parent.mkdir(parents=True, exist_ok=True)
            (folder / block.title).write_text("\n".join(block.lines) + "\n")
        elif block.language == "console":
            ran = []
            for command in commands(block):
                done = subprocess.run(
                    ["bash", "-c", command.text],
                    cwd=folder,
                    env=env,
                    capture_output=True,
                    text=True,
                    timeout=COMMAND_TIMEOUT_S,
                )
                ran.append(Ran(command, done.returncode, done.stdout + done.stderr))
            yield block, ran


def rewrite(page: Path) -> None:
    """Rerun a page and replace every console block's output with what the commands printed."""
    lines = page.read_text().splitlines()
    with tempfile.TemporaryDirectory(prefix="dse-docs-") as tmp:
        results = list(run_page(page, Path(tmp)))
    for block, ran in reversed(results):
        body = []
        for r in ran:
            if r.returncode != 0:
                raise SystemExit(f"{page}: `{r.command.text}` exited {r.returncode}:\n{r.output}")
            body.append(f"$ {r.command.text}")
            body.extend(line.rstrip() for line in r.output.rstrip("\n").splitlines() if not LOG_LINE.match(line))
        lines[block.start + 1 : block.end] = body
    page.write_text("\n".join(lines) + "\n")


def check(page: Path) -> list[str]:
    """Problems of one page: a command that failed, or a shown output line the command no longer prints."""
    problems = []
    with tempfile.TemporaryDirectory(prefix="dse-docs-") as tmp:
        for _, ran in run_page(page, Path(tmp)):
            for r in ran:
                if r.returncode != 0:
                    problems.append(f"{page.name}: `{r.command.text}` exited {r.returncode}: {r.output[-2000:]}")
                    continue
                lost = missing_lines(r.command.shown, r.output)
                if lost:
                    problems.append(
                        f"{page.name}: `{r.command.text}` no longer prints {lost[:3]}; it printed:\n{r.output[-2000:]}"
                    )
    return problems


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("pages", nargs="+", type=Path)
    parser.add_argument("--check", action="store_true", help="compare instead of rewriting")
    args = parser.parse_args()
    failed = 0
    for page in args.pages:
        if args.check:
            problems = check(page)
            failed += len(problems)
            print("\n".join(problems) or f"{page}: ok")
        else:
            rewrite(page)
            print(f"rewrote {page}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
