"""Atomic, pickle-free checkpoints with fallback to the newest valid one."""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch


class CheckpointError(RuntimeError):
    """A checkpoint file is missing, truncated, corrupt or not loadable without pickle."""

    def __init__(self, path: os.PathLike | str, reason: str) -> None:
        super().__init__(f"checkpoint {os.fspath(path)!r} is unusable: {reason}")
        self.path = Path(path)


def atomic_write(path: os.PathLike | str, write: Callable[[Any], None], mode: str = "wb") -> Path:
    """Write a file through a temporary file in the same folder, fsync, then rename.

    A failure anywhere leaves any previous file at ``path`` untouched.

    Args:
        path: Destination.
        write: Called with the open temporary file.
        mode: ``"wb"`` or ``"w"``.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, mode) as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)
    return path


def save_checkpoint(path: os.PathLike | str, state: dict[str, Any]) -> Path:
    """Atomically save ``state`` (tensors, numbers, strings, lists, dicts) with torch.save."""
    return atomic_write(path, lambda f: torch.save(state, f))


def load_checkpoint(path: os.PathLike | str) -> dict[str, Any]:
    """Load a checkpoint with ``weights_only=True``; never falls back to pickle.

    Raises:
        CheckpointError: The file is missing, truncated, corrupt, or needs pickle.
    """
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(path, "no such file")
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:  # torch raises several types for corrupt zips and pickles
        raise CheckpointError(path, f"{type(e).__name__}: {str(e).splitlines()[0][:200]}") from e
    if not isinstance(state, dict):
        raise CheckpointError(path, f"holds a {type(state).__name__}, expected a dict")
    return state


_EPOCH = re.compile(r"^epoch-(\d+)\.pt$")


def epoch_checkpoints(folder: os.PathLike | str) -> list[tuple[int, Path]]:
    """``(epoch, path)`` of the ``epoch-N.pt`` files in ``folder``, newest first."""
    folder = Path(folder)
    if not folder.is_dir():
        return []
    found = [(int(m.group(1)), p) for p in folder.iterdir() if (m := _EPOCH.match(p.name))]
    return sorted(found, reverse=True)


def load_latest(
    folder: os.PathLike | str, on_bad: Callable[[CheckpointError], None] | None = None
) -> tuple[int, dict[str, Any]] | None:
    """The newest loadable epoch checkpoint in ``folder``, skipping bad ones.

    Args:
        folder: Where ``epoch-N.pt`` files live.
        on_bad: Called with the typed error of each unusable file that is skipped.

    Returns:
        ``(epoch, state)``, or ``None`` when there is no valid checkpoint.
    """
    for epoch, path in epoch_checkpoints(folder):
        try:
            return epoch, load_checkpoint(path)
        except CheckpointError as e:
            if on_bad is not None:
                on_bad(e)
    return None
