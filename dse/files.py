"""Writing output files atomically: the one helper every run, report, export, tool and model file goes through.

A reader, or a run stopped by Ctrl-C / SIGTERM half-way, sees the old file or the whole new one, never a
partial one. The module imports nothing of the project, so every layer (catalog tools included) may use it.
"""

from __future__ import annotations

import errno
import os
import re
import secrets
import sqlite3
from collections.abc import Callable
from pathlib import Path

PARTIAL_MARK = ".partial"  # in the name of every temporary file, so a test can look for any left behind
DISK_FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})
# the temporary name atomic_write gives: .NAME.PID-HEX.partialSUFFIX
TEMPORARY_NAME = re.compile(rf"^\..+\.(?P<pid>\d+)-[0-9a-f]{{12}}{re.escape(PARTIAL_MARK)}")


def is_disk_full(exc: BaseException) -> bool:
    """An OSError for no space left (or over quota), or SQLite's 'database or disk is full'."""
    if isinstance(exc, OSError):  # some writers (pyarrow) raise an OSError with the text but no errno
        return exc.errno in DISK_FULL_ERRNOS or "No space left on device" in str(exc)
    return isinstance(exc, sqlite3.OperationalError) and "disk is full" in str(exc)


def atomic_write(path: str | Path, write: Callable[[Path], object]) -> Path:
    """Call ``write(temporary)`` on a hidden file beside ``path``, then rename it onto ``path``.

    The rename is atomic within a folder; an interrupted or failed write removes its temporary file and
    leaves the old ``path`` as it was. The temporary file keeps ``path``'s extension, so writers that pick a
    format or a compression from the name (pandas, joblib) write what they would write to ``path``.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_temporaries(path.parent)
    # named before anything exists on disk, so a signal at any moment is inside the try that removes it
    temporary = path.with_name(f".{path.name}.{os.getpid()}-{secrets.token_hex(6)}{PARTIAL_MARK}{path.suffix}")
    try:
        write(temporary)
        os.chmod(temporary, 0o644)  # output files are meant to be shared, whatever the umask
        os.replace(temporary, path)
    except BaseException as exc:
        temporary.unlink(missing_ok=True)
        if is_disk_full(exc):  # name the file the user knows, not the temporary one
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path)) from exc
        raise
    return path


def atomic_write_text(path: str | Path, text: str, encoding: str = "utf-8") -> Path:
    """``atomic_write`` of a text file."""
    return atomic_write(path, lambda temporary: temporary.write_text(text, encoding=encoding))


def remove_stale_temporaries(folder: Path) -> list[Path]:
    """Remove the temporary files that a writer killed outright (SIGKILL, power loss) left in ``folder``.

    No handler runs on SIGKILL, so its hidden ``.partial`` file stays; the next write into the folder removes
    every one whose process is gone (a live writer's file, this process's included, is left alone)."""
    removed = []
    for entry in os.scandir(folder):
        match = TEMPORARY_NAME.match(entry.name)
        if match and not process_alive(int(match["pid"])):
            Path(entry.path).unlink(missing_ok=True)
            removed.append(Path(entry.path))
    return removed


def process_alive(pid: int) -> bool:
    """Whether a process with this id exists (one of another user counts as alive)."""
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
