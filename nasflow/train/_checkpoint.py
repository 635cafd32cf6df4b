"""Atomic, pickle-free, checksummed checkpoints with fallback to the newest valid one.

A checkpoint is a ``torch.save`` zip holding a dict of tensors, numbers, strings, lists and
dicts, loaded only with ``weights_only=True``. ``save_checkpoint`` adds a SHA-256 digest of
the content under ``DIGEST_KEY``; ``load_checkpoint`` checks it, because the zip reader
notices a truncated file but not flipped bytes inside a tensor.

Files in a checkpoint folder are named ``epoch-N.pt`` (after ``N`` whole epochs) and
``epoch-N-batch-B.pt`` (``B`` batches into epoch ``N + 1``), so their order is their name.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import torch

from nasflow._files import atomic_write
from nasflow._regular import SpecialFileError, open_regular
from nasflow.errors import ConfigError
from nasflow.record import DIGEST_KEY
from nasflow.train._errors import CheckpointError


def _digest(state: Any) -> str:
    """SHA-256 of a nested state: tensors by dtype, shape and bytes; other leaves as JSON."""
    h = hashlib.sha256()

    def feed(x: Any) -> None:
        if isinstance(x, torch.Tensor):
            t = x.detach().cpu().contiguous()
            h.update(f"T{t.dtype}{tuple(t.shape)}".encode())
            h.update(t.reshape(-1).view(torch.uint8).numpy().tobytes())  # (N,) raw bytes
        elif isinstance(x, dict):
            h.update(f"D{len(x)}".encode())
            for k in sorted(x, key=repr):
                h.update(repr(k).encode())
                feed(x[k])
        elif isinstance(x, (list, tuple)):
            h.update(f"L{len(x)}".encode())
            for v in x:
                feed(v)
        else:
            h.update(json.dumps(x).encode())

    feed(state)
    return h.hexdigest()


def save_checkpoint(path: os.PathLike | str, state: dict[str, Any]) -> Path:
    """Atomically save ``state`` (tensors, numbers, strings, lists, dicts) with its digest.

    Raises:
        ValueError: ``state`` is not a dict or uses the reserved key ``DIGEST_KEY``.
    """
    if not isinstance(state, dict):
        raise ConfigError(f"a checkpoint state must be a dict, got {type(state).__name__}")
    if DIGEST_KEY in state:
        raise ConfigError(f"{DIGEST_KEY!r} is reserved for the checkpoint's digest")
    buffer = io.BytesIO()
    torch.save({**state, DIGEST_KEY: _digest(state)}, buffer)
    # Written in one call, so a full disk surfaces as the OSError (ENOSPC/EFBIG) itself;
    # torch's zip writer would turn it into a RuntimeError about a file position.
    return atomic_write(path, lambda f: f.write(buffer.getbuffer()))


def load_checkpoint(path: os.PathLike | str) -> dict[str, Any]:
    """Load a checkpoint with ``weights_only=True`` and check its digest; never unpickles.

    Files written without a digest (by plain ``torch.save``) load unchecked.

    Raises:
        CheckpointError: The file is missing, not a regular file (a link, a FIFO...),
            truncated, corrupt, or needs pickle.
    """
    path = Path(path)
    try:
        f = open_regular(path)
    except FileNotFoundError:
        raise CheckpointError(path, "no such file") from None
    except SpecialFileError as e:  # a FIFO would block the open; a link is not ours
        raise CheckpointError(path, str(e).split(" is ", 1)[-1]) from None
    try:
        with f:
            state = torch.load(f, map_location="cpu", weights_only=True)
    except Exception as e:  # torch raises several types for corrupt zips and pickles
        first = (str(e).strip().splitlines() or [""])[0][:200]
        raise CheckpointError(path, f"{type(e).__name__}: {first}") from e
    if not isinstance(state, dict):
        raise CheckpointError(path, f"holds a {type(state).__name__}, expected a dict")
    digest = state.pop(DIGEST_KEY, None)
    if digest is not None and digest != _digest(state):
        raise CheckpointError(path, "content does not match its SHA-256 digest (corrupt)")
    return state


class Progress(NamedTuple):
    """Where a checkpoint was taken: ``batch`` batches into the epoch after ``epoch``."""

    epoch: int
    batch: int = 0

    def filename(self) -> str:
        if self.batch == 0:
            return f"epoch-{self.epoch}.pt"
        return f"epoch-{self.epoch}-batch-{self.batch}.pt"


_NAME = re.compile(r"^epoch-(\d+)(?:-batch-(\d+))?\.pt$")


def list_checkpoints(folder: os.PathLike | str) -> list[tuple[Progress, Path]]:
    """``(progress, path)`` of the checkpoint files in ``folder``, newest first."""
    folder = Path(folder)
    if not folder.is_dir():
        return []
    found = [
        (Progress(int(m.group(1)), int(m.group(2) or 0)), p)
        for p in folder.iterdir()
        if (m := _NAME.match(p.name))
    ]
    return sorted(found, reverse=True)


def epoch_checkpoints(folder: os.PathLike | str) -> list[tuple[int, Path]]:
    """``(epoch, path)`` of the whole-epoch ``epoch-N.pt`` files in ``folder``, newest first."""
    return [(p.epoch, path) for p, path in list_checkpoints(folder) if p.batch == 0]


def load_latest(
    folder: os.PathLike | str, on_bad: Callable[[CheckpointError], None] | None = None
) -> tuple[Progress, dict[str, Any]] | None:
    """The newest loadable checkpoint in ``folder``, skipping (and reporting) bad ones.

    Args:
        folder: Where the checkpoint files live.
        on_bad: Called with the typed error of each unusable file that is skipped.

    Returns:
        ``(progress, state)``, or ``None`` when there is no valid checkpoint.
    """
    for progress, path in list_checkpoints(folder):
        try:
            return progress, load_checkpoint(path)
        except CheckpointError as e:
            if on_bad is not None:
                on_bad(e)
    return None


def rng_state() -> dict[str, Any]:
    """The global torch generators' states (CPU, and CUDA when present)."""
    state: dict[str, Any] = {"cpu": torch.get_rng_state()}
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    """Restore what ``rng_state`` returned."""
    torch.set_rng_state(state["cpu"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])
