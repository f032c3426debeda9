"""Faults and hostile run directories (issue #33): a killed explorer leaves no process behind, a damaged,
foreign or newer store and an odd run directory get one clear message, ``dse recover`` saves what is readable,
and a full disk stops a run with a message saying how to resume, leaving no half-written file.
"""

from __future__ import annotations

import signal
import time
from pathlib import Path

import psutil
import pytest
from test_interrupt import SWEEP_SPEC, dse, stored, wait_for


def still_running(processes: list[psutil.Process]) -> list[psutil.Process]:
    """Those of ``processes`` alive; a zombie (dead, not yet reaped by whoever adopted it) counts as ended."""
    alive = []
    for process in processes:
        try:
            if process.is_running() and process.status() != psutil.STATUS_ZOMBIE:
                alive.append(process)
        except psutil.NoSuchProcess:
            continue
    return alive


@pytest.mark.parametrize("executor", ["local", "dask"])
def test_sigkill_of_explore_leaves_no_process_of_the_run(tmp_path: Path, executor: str) -> None:
    """Pool workers (local pool, local Dask cluster) and the resource tracker end when the explorer is SIGKILLed."""
    spec = tmp_path / "spec.yaml"
    spec.write_text(SWEEP_SPEC)
    run = tmp_path / "run"
    explorer = dse("explore", str(spec), "-o", str(run), "-q", "--executor", executor, "--workers", "2")
    wait_for(lambda: stored(run) >= 50, explorer)
    started = psutil.Process(explorer.pid).children(recursive=True)
    assert len(started) >= 2, started  # the workers (and the resource tracker) of this run
    explorer.send_signal(signal.SIGKILL)
    explorer.communicate(timeout=30)
    deadline = time.monotonic() + 10.0
    while still_running(started) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = still_running(started)
    for process in left:  # do not leak them into the rest of the suite
        process.kill()
    assert not left, [(p.pid, p.cmdline()) for p in left]
