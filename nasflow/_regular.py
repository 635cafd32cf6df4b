"""Opening nasflow's own files only when they are what nasflow wrote there.

A run folder (``RUNS/NAME``) holds checkpoints, winners and caches that nasflow wrote as
regular files in real folders. Anything else found there (a FIFO, whose ``open`` waits
for a writer forever; a socket or device; a symbolic link, which points at a file nasflow
did not write) is refused before it is opened, in one line naming it.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import BinaryIO

from nasflow.errors import ConfigError


class SpecialFileError(ConfigError):
    """A file or folder of nasflow's is a link, FIFO, socket or device, not what nasflow
    writes there."""


def file_kind(mode: int) -> str | None:
    """What a file of ``st_mode`` ``mode`` (from ``os.lstat``) is; ``None``: a regular file."""
    if stat.S_ISREG(mode):
        return None
    kinds = [
        (stat.S_ISLNK, "a symbolic link"),
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a FIFO (named pipe)"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
    ]
    return next((what for test, what in kinds if test(mode)), "not a regular file")


def check_regular_file(
    path: os.PathLike | str, error: type[Exception] = SpecialFileError
) -> os.stat_result:
    """``os.lstat(path)`` after checking that ``path`` is a regular file, not a link.

    Raises:
        FileNotFoundError: It does not exist.
        error: It is a directory, link, FIFO, socket or device, naming it.
    """
    st = os.lstat(path)
    kind = file_kind(st.st_mode)
    if kind is not None:
        raise error(f"{os.fspath(path)!r} is {kind}, not a regular file; refusing to open it")
    return st


def open_regular(path: os.PathLike | str, error: type[Exception] = SpecialFileError) -> BinaryIO:
    """Open ``path`` for reading only if it is a regular file: no link is followed and the
    open never blocks (checked on the opened file too, so a swap is caught).

    Raises:
        FileNotFoundError: It does not exist.
        error: It is not a regular file, or cannot be opened, naming it.
    """
    check_regular_file(path, error)
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise
    except OSError as e:
        raise error(f"cannot open {os.fspath(path)!r}: {e.strerror}") from None
    kind = file_kind(os.fstat(fd).st_mode)
    if kind is not None:
        os.close(fd)
        raise error(f"{os.fspath(path)!r} is {kind}, not a regular file; refusing to open it")
    return os.fdopen(fd, "rb")


def check_folder(
    path: os.PathLike | str, what: str, error: type[Exception] = SpecialFileError
) -> None:
    """Refuse ``path`` unless it is a real folder or absent (nasflow creates it then).

    Args:
        path: A folder nasflow writes (``RUNS/NAME/supernet``, ``RUNS/NAME/winners``...).
        what: What it holds, for the message (``"the supernet checkpoints"``).
        error: The error type raised.

    Raises:
        error: It is a symbolic link, a FIFO, a file... naming it and what to do.
    """
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    if stat.S_ISDIR(mode):
        return
    kind = file_kind(mode) or "a regular file"
    raise error(
        f"{os.fspath(path)!r} is {kind}, not a folder; nasflow keeps {what} in a real folder "
        "there: move it away and run again"
    )


#: The folders of a run folder (``nasflow.record.RunFolder``) -> what they hold.
RUN_FOLDERS = {
    "supernet": "the supernet checkpoints",
    "finetune": "the fine-tuning checkpoints",
    "ready": "the ready models",
    "winners": "the retrained winners",
}


def check_run_folders(root: os.PathLike | str, folders: dict[str, str] = RUN_FOLDERS) -> None:
    """:func:`check_folder` on each ``name: what`` inside the run folder ``root`` (which
    itself may be a link: to another disk, say)."""
    root = Path(root)
    for name, what in folders.items():
        check_folder(root / name, what)
