"""Writing output files atomically: the one helper every run, report, export, tool and model file goes through.

A reader, or a run stopped by Ctrl-C / SIGTERM half-way, sees the old file or the whole new one, never a
partial one. The module imports nothing of the project, so every layer (catalog tools included) may use it.
"""

from __future__ import annotations

import errno
import os
import secrets
import sqlite3
from collections.abc import Callable
from pathlib import Path

PARTIAL_MARK = ".partial"  # in the name of every temporary file, so a test can look for any left behind
DISK_FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})


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
