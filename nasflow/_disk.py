"""A failed write said in one line: which file, why, and how much room its disk has left.

Writers of checkpoints, exports, reports and databases raise different things when the
disk fills up (``OSError`` with ``ENOSPC``; ``EFBIG`` past a file-size limit;
safetensors' ``SafetensorError`` "... (os error 28)"; SQLite's "database or disk is
full" through SQLAlchemy and Optuna). :func:`write_error` turns any of them into one
:class:`~nasflow.errors.WriteError` naming the path and the disk.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

from nasflow.errors import WriteError

#: Why a write failed, by ``errno``: the failures of the disk or of permissions (anything
#: else is not a :class:`WriteError`).
REASONS = {
    errno.ENOSPC: "the disk is full",
    errno.EFBIG: "the file would pass the file-size limit of this process (ulimit -f)",
    errno.EDQUOT: "the disk quota is exceeded",
    errno.EROFS: "the file system is read-only",
    errno.EACCES: "permission denied",
    errno.EPERM: "operation not permitted",
    errno.EIO: "a disk I/O error (a full disk, a file-size limit or a failing disk)",
}
#: Messages of writers that do not raise ``OSError`` (SQLite through SQLAlchemy, the
#: Rust and C++ writers), mapped to the ``errno`` they stand for.
_TEXTS = (
    (re.compile(r"os error (\d+)"), None),
    (re.compile(r"database or disk is full"), errno.ENOSPC),
    (re.compile(r"no space left on device", re.I), errno.ENOSPC),
    (re.compile(r"file too large", re.I), errno.EFBIG),
    (re.compile(r"attempt to write a readonly database"), errno.EACCES),
    (re.compile(r"disk I/O error"), errno.EIO),
)


def _size(n: float) -> str:
    for unit in ("B", "kB", "MB", "GB"):
        if n < 1000:
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} TB"


def disk_of(path: os.PathLike | str) -> str:
    """The disk holding ``path`` (a file, or a database URL) in words: its mount point and
    the room left there."""
    text = str(path)
    if text.startswith("sqlite:///"):
        text = text[len("sqlite:///") :]
    elif "://" in text:
        return "on the database server's disk"
    p = Path(os.path.abspath(text))
    while not p.exists() and p != p.parent:
        p = p.parent
    mount = p
    while not os.path.ismount(mount) and mount != mount.parent:
        mount = mount.parent
    try:
        usage = shutil.disk_usage(p)
    except OSError:
        return f"the disk mounted at {str(mount)!r}"
    return (
        f"the disk mounted at {str(mount)!r} has {_size(usage.free)} free of {_size(usage.total)}"
    )


def failure_errno(err: BaseException) -> int | None:
    """The ``errno`` of a failed write, from the exception or any it was raised from."""
    seen: set[int] = set()
    e: BaseException | None = err
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        if isinstance(e, OSError) and e.errno in REASONS:
            return e.errno
        for pattern, code in _TEXTS:
            if m := pattern.search(str(e)):
                number = code if code is not None else int(m.group(1))
                if number in REASONS:
                    return number
        e = e.__cause__ or e.__context__
    return None


def write_error(path: os.PathLike | str, err: BaseException, what: str = "") -> WriteError | None:
    """One line for a failed write of ``path`` (``what``: what it is, e.g. "the study
    database"), or ``None`` when ``err`` is not a failure of the disk or of permissions."""
    code = failure_errno(err)
    if code is None:
        return None
    reason = REASONS[code]
    text = str(path)
    if text.startswith("sqlite:///") and not text.startswith("sqlite:///file:"):
        text = text[len("sqlite:///") :]  # (a database file: named by its path)
    name = f"{what} {text!r}" if what else repr(text)
    return WriteError(f"cannot write {name}: {reason} ({disk_of(path)})", str(path), reason)


@contextlib.contextmanager
def writing(path: os.PathLike | str, what: str = "") -> Iterator[None]:
    """Turn a failure of the disk or of permissions inside the block into a
    :class:`WriteError` naming ``path`` (a ``WriteError`` already raised passes as is)."""
    try:
        yield
    except WriteError:
        raise
    except Exception as e:
        error = write_error(path, e, what)
        if error is None:
            raise
        raise error from e
