"""A test-only plug-in mapper: the systolic fold mapper, failing on the points its options pick.

Registered through ``dse.registry.register_mapper`` as ``faulty`` (sitecustomize.py does it in every process
when ``DSE_FAULT_PLUGIN`` is set). Its options pick points by their array shape; ``injected_fault`` is the one
rule, so a test knows which point must have failed and why:

- ``raise_rows_every``: rows divisible by it raise an unexpected exception (a mapper bug);
- ``hog_cols_every``: cols divisible by it exceed a memory limit (the worker lowers its own RLIMIT_AS, then
  asks for more than it allows, as a point whose mapping explodes would);
- ``crash_sum_every``: rows + cols divisible by it kill their worker process (SIGKILL, as the kernel's
  out-of-memory killer does). Only with a worker pool: in the explorer's own process it would kill the run.
"""

from __future__ import annotations

import os
import resource
import signal
from dataclasses import dataclass

import numpy as np

from dse.graph import Graph
from dse.registry import register_mapper
from mappers.base import Mapping
from mappers.systolic.fold import SystolicFoldMapper
from templates.systolic import SystolicArch

NAME = "faulty"
KIND = "systolic"
MEMORY_HEADROOM = 512 << 20  # what the worker may still map once limited: enough for ordinary points
HOG = 4 << 30  # what an exploding point asks for
RAISED = "RuntimeError: injected mapper fault"
OUT_OF_MEMORY = "MemoryError"
CRASHED = "WorkerCrashed"


@dataclass
class FaultyMapper(SystolicFoldMapper):
    """The fold mapper, failing as ``injected_fault`` says."""

    name: str = NAME
    raise_rows_every: int = 0
    hog_cols_every: int = 0
    crash_sum_every: int = 0

    def map(self, graph: Graph, arch: SystolicArch) -> Mapping:
        fault = injected_fault(arch.rows, arch.cols, self.raise_rows_every, self.hog_cols_every, self.crash_sum_every)
        if fault == RAISED:
            raise RuntimeError(f"injected mapper fault on a {arch.rows}x{arch.cols} array")
        if fault == OUT_OF_MEMORY:
            limit_memory()
            np.ones(HOG, dtype=np.uint8)  # MemoryError under the limit
        if fault == CRASHED:
            os.kill(os.getpid(), signal.SIGKILL)
        return super().map(graph, arch)


def injected_fault(
    rows: int, cols: int, raise_rows_every: int, hog_cols_every: int, crash_sum_every: int
) -> str | None:
    """The start of the failure reason a point of this shape gets, or None when it evaluates normally."""
    if raise_rows_every and rows % raise_rows_every == 0:
        return RAISED
    if hog_cols_every and cols % hog_cols_every == 0:
        return OUT_OF_MEMORY
    if crash_sum_every and (rows + cols) % crash_sum_every == 0:
        return CRASHED
    return None


def limit_memory() -> None:
    """Lower this process's address-space limit to what it maps now plus a headroom (once; a limit only falls)."""
    with open("/proc/self/statm") as statm:
        mapped = int(statm.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    wanted = mapped + MEMORY_HEADROOM
    if soft == resource.RLIM_INFINITY or soft > wanted:
        resource.setrlimit(resource.RLIMIT_AS, (wanted, hard))


def register() -> None:
    register_mapper(KIND, NAME, FaultyMapper)
