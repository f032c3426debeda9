"""Where points get evaluated: in-process, a local process pool, or a Dask cluster.

Every executor has the same ``map(fn, items)``: it yields one ``Outcome`` per item
in completion order, carrying the item's index, the result or the error text
``"<ExceptionType>: message"``, and the seconds the call took. A failing item
never stops the others. The callable is shipped to each worker once (a pool
initializer, a Dask broadcast), not once per point.
"""

from __future__ import annotations

import ctypes
import importlib
import multiprocessing
import os
import signal
import sys
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import Any

from dse.errors import UserError

EXECUTOR_NAMES = ("serial", "local", "dask", "tcp://HOST:PORT")

Task = Callable[[Any], Any] | str  # a callable, or "package.module:attribute" naming one


@dataclass
class Outcome:
    """The result of one item: ``value`` when it worked, ``error`` when it raised."""

    index: int
    value: Any = None
    error: str | None = None
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.error is None


def resolve_task(task: Task) -> Callable[[Any], Any]:
    """A callable, or the callable a ``"module:attr"`` string names."""
    if callable(task):
        return task
    module_name, _, attribute = str(task).partition(":")
    if not attribute:
        raise ValueError(f"task name must be 'module:attribute', got {task!r}")
    target: Any = importlib.import_module(module_name)
    for part in attribute.split("."):
        target = getattr(target, part)
    return target


def describe_error(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def run_captured(fn: Callable[[Any], Any], index: int, item: Any) -> Outcome:
    """Call ``fn(item)``, timing it and turning an exception into an error Outcome."""
    start = time.perf_counter()
    try:
        value = fn(item)
    except Exception as exc:  # a failing point is data, not a crash
        return Outcome(index, error=describe_error(exc), seconds=time.perf_counter() - start)
    return Outcome(index, value=value, seconds=time.perf_counter() - start)


def default_workers() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


class Executor(ABC):
    """Runs a task over items; use as a context manager so pools and clusters are shut down."""

    name: str
    workers: int

    @abstractmethod
    def map(self, task: Task, items: Sequence[Any]) -> Iterator[Outcome]: ...

    def close(self) -> None:  # noqa: B027 - optional hook; serial has nothing to release
        """Release workers; the default has nothing to release."""

    def __enter__(self) -> Executor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class SerialExecutor(Executor):
    """In this process, one item after another (debugging, tiny spaces, deterministic timing)."""

    name = "serial"

    def __init__(self) -> None:
        self.workers = 1

    def map(self, task: Task, items: Sequence[Any]) -> Iterator[Outcome]:
        fn = resolve_task(task)
        for index, item in enumerate(items):
            yield run_captured(fn, index, item)


# -- workers die with their explorer ----------------------------------------------------

PR_SET_PDEATHSIG = 1  # linux/prctl.h
PARENT_POLL_SECONDS = 1.0


def exit_with_parent(parent_pid: int) -> None:
    """Make this worker process end when ``parent_pid`` (the explorer that started it) dies, however it died.

    A SIGKILLed explorer runs no cleanup, so its pool would otherwise live on, orphaned, holding memory.
    On Linux the kernel sends SIGKILL on the parent's death (prctl PR_SET_PDEATHSIG); everywhere a daemon
    thread also watches the parent pid, the fallback where prctl is missing. The resource tracker ends by
    itself once the explorer and every worker holding its pipe are gone.
    """
    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        except (OSError, AttributeError):  # no prctl in this libc: the watch below still ends the worker
            pass
    if os.getppid() != parent_pid:  # the explorer died before the signal was armed
        os._exit(1)
    threading.Thread(target=_watch_parent, args=(parent_pid,), name="dse-parent-watch", daemon=True).start()


def _watch_parent(parent_pid: int) -> None:
    """Poll the parent pid; an orphan is re-parented (to init or a subreaper), so a new one means it died."""
    while os.getppid() == parent_pid:
        time.sleep(PARENT_POLL_SECONDS)
    os._exit(1)


# -- local process pool ----------------------------------------------------------------

_WORKER_TASK: Callable[[Any], Any] | None = None


def _install_worker_task(task: Task, parent_pid: int | None = None) -> None:
    """Pool initializer: unpickled once per worker process, then reused for every point.

    Workers ignore Ctrl-C (the terminal sends it to the whole process group): the explorer
    process alone handles it, stores what finished and shuts the pool down. They end when the explorer dies.
    """
    global _WORKER_TASK
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if parent_pid is not None:
        exit_with_parent(parent_pid)
    _WORKER_TASK = resolve_task(task)


def _run_in_worker(index: int, item: Any) -> Outcome:
    assert _WORKER_TASK is not None, "worker started without its task"
    return run_captured(_WORKER_TASK, index, item)


class LocalExecutor(Executor):
    """A ``spawn`` process pool on this machine; a worker that dies costs only the point it was running."""

    name = "local"

    def __init__(self, workers: int | None = None):
        self.workers = workers or default_workers()
        self._pool: ProcessPoolExecutor | None = None
        self._task: Task | None = None

    def _pool_for(self, task: Task) -> ProcessPoolExecutor:
        if self._pool is None or self._task is not task:
            self.close()
            self._pool = ProcessPoolExecutor(
                max_workers=self.workers,
                mp_context=multiprocessing.get_context("spawn"),
                initializer=_install_worker_task,
                initargs=(task, os.getpid()),
            )
            self._task = task
        return self._pool

    def map(self, task: Task, items: Sequence[Any]) -> Iterator[Outcome]:
        pool = self._pool_for(task)
        pending: dict[Future[Outcome], int] = {pool.submit(_run_in_worker, i, item): i for i, item in enumerate(items)}
        orphans: list[int] = []
        while pending:
            done, _ = wait(pending, return_when=FIRST_COMPLETED)
            for future in done:
                index = pending.pop(future)
                try:
                    yield future.result()
                except BrokenProcessPool:
                    orphans.append(index)
        # A worker died (segfault, out of memory): we cannot tell which point killed it,
        # so rerun the survivors one at a time in fresh pools and blame only the culprit.
        if orphans:
            self.close()  # the broken pool
        for index in sorted(orphans):
            yield self._run_isolated(task, index, items[index])

    def _run_isolated(self, task: Task, index: int, item: Any) -> Outcome:
        pool = self._pool_for(task)
        start = time.perf_counter()
        try:
            return pool.submit(_run_in_worker, index, item).result()
        except BrokenProcessPool as exc:
            self.close()
            return Outcome(
                index, error=f"WorkerCrashed: the worker process died ({exc})", seconds=time.perf_counter() - start
            )

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
            self._task = None


# -- dask ----------------------------------------------------------------------------


def _run_with_task(task: Task, index: int, item: Any) -> Outcome:
    return run_captured(resolve_task(task), index, item)


class DaskExecutor(Executor):
    """A Dask ``LocalCluster`` (``address=None``) or an existing scheduler at ``tcp://HOST:PORT``."""

    def __init__(self, workers: int | None = None, address: str | None = None, processes: bool = True):
        try:
            from dask.distributed import Client, LocalCluster
            from distributed.diagnostics.plugin import WorkerPlugin
        except ImportError as exc:  # dask is a declared dependency; say so plainly if it is missing
            raise UserError(
                "executor 'dask' needs dask[distributed]; install it with pip install 'dask[distributed]'"
            ) from exc
        self._cluster = None
        if address:
            self.name = address
            try:
                self._client = Client(address, timeout="20s")
            except OSError as exc:
                raise UserError(
                    f"cannot reach the Dask scheduler at {address} ({exc}); start one with `dask scheduler` "
                    "or use --executor local",
                    where="--executor",
                ) from None
            self.workers = max(1, sum(self._client.nthreads().values()))
        else:
            self.name = "dask"
            self.workers = workers or default_workers()
            self._cluster = LocalCluster(
                n_workers=self.workers,
                threads_per_worker=1,
                processes=processes,
                dashboard_address=None,
            )
            self._client = Client(self._cluster)
            if processes:
                self._client.register_plugin(_exit_with_explorer_plugin(WorkerPlugin, os.getpid()), name="dse-lifeline")
        self._task: Task | None = None
        self._task_future: Any = None

    def map(self, task: Task, items: Sequence[Any]) -> Iterator[Outcome]:
        from dask.distributed import as_completed

        if self._task is not task:
            self._task_future = self._client.scatter(task, broadcast=True)  # once per worker
            self._task = task
        futures = {
            self._client.submit(_run_with_task, self._task_future, i, item, pure=False): i
            for i, item in enumerate(items)
        }
        for future in as_completed(futures):
            index = futures[future]
            try:
                yield future.result()
            except Exception as exc:  # the worker itself died (KilledWorker) or the result did not come back
                yield Outcome(index, error=describe_error(exc))
            finally:
                future.release()

    def close(self) -> None:
        self._client.close()
        if self._cluster is not None:
            self._cluster.close()


def _exit_with_explorer_plugin(base: type, explorer_pid: int) -> Any:
    """A Dask worker plugin (``base`` is distributed's WorkerPlugin) that ties each worker of a local cluster,
    restarted ones included, to the explorer: its nannies live in the explorer, so it is the workers' parent."""

    class ExitWithExplorer(base):  # type: ignore[valid-type, misc]
        def setup(self, worker: Any) -> None:
            exit_with_parent(explorer_pid)

    return ExitWithExplorer()


def make_executor(name: str | None = None, workers: int | None = None) -> Executor:
    """``serial``, ``local`` (default: a process pool over all cores), ``dask`` or ``tcp://HOST:PORT``."""
    if workers is not None and workers < 1:
        raise UserError(f"workers must be at least 1, got {workers}", where="--workers")
    choice = (name or "local").strip()
    if choice == "serial":
        return SerialExecutor()
    if choice == "local":
        return LocalExecutor(workers)
    if choice == "dask":
        return DaskExecutor(workers)
    if choice.startswith("tcp://"):
        return DaskExecutor(workers, address=choice)
    raise UserError(f"unknown executor {choice!r}; allowed: {', '.join(EXECUTOR_NAMES)}", where="--executor")
