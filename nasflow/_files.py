"""Atomic file writes shared by checkpoints, reports and caches; inter-process file locks."""

from __future__ import annotations

import inspect
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from filelock import FileLock

from nasflow._disk import writing
from nasflow.errors import ConfigError

#: filelock >= 4 falls back to a marker-file lock where the file system has no ``flock``; a
#: marker outlives a killed process and would lock everyone out, so that fallback is
#: refused (filelock 3.x, which the ``nni`` extra pins, raises there on its own).
_NATIVE_ONLY: dict[str, Any] = (
    {"fallback_to_soft": False}
    if "fallback_to_soft" in inspect.signature(FileLock.__init__).parameters
    else {}
)


def file_lock(path: os.PathLike | str) -> FileLock:
    """An exclusive inter-process lock on the file ``path`` (its folder is created).

    ``filelock.FileLock`` on the operating system's lock (``flock`` on Unix): held until
    released or until the process ends, however it ends. ``with file_lock(p):`` waits for
    it; ``file_lock(p).acquire(timeout=0)`` tries once and raises ``filelock.Timeout``.
    The lock file is left in place on release.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    return FileLock(path, **_NATIVE_ONLY)


def _default_mode() -> int:
    """The permission bits a plain ``open(path, "w")`` would give (``0o666`` less umask)."""
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


def atomic_write(
    path: os.PathLike | str, write: Callable[[IO[Any]], None], mode: str = "wb"
) -> Path:
    """Write a file through a temporary file in the same folder, fsync, then rename.

    A failure anywhere (an exception in ``write``, a full disk, a signal) leaves any
    previous file at ``path`` untouched and removes the temporary file. The new file gets
    the permissions an ordinary write would give (the temporary file is created 0600).

    Args:
        path: Destination.
        write: Called with the open temporary file.
        mode: ``"wb"`` or ``"w"``.

    Raises:
        ValueError: ``mode`` is not a write mode.
        WriteError: The disk is full, a file-size limit or a permission refused the write
            (one line naming ``path`` and its disk).
    """
    if mode not in ("wb", "w"):
        raise ConfigError(f"mode must be 'wb' or 'w', got {mode!r}")
    path = Path(path)
    with writing(path):
        return _atomic_write(path, write, mode)


def _atomic_write(path: Path, write: Callable[[IO[Any]], None], mode: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, mode) as f:
            write(f)
            f.flush()
            os.fchmod(f.fileno(), _default_mode())
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)  # make the rename itself durable
    finally:
        os.close(dir_fd)
    return path
