"""The errors training raises: a non-finite loss, a stop on request, an unusable checkpoint.

They live apart from the trainers so that the step engine (``nasflow.train.stack``) and
the trainers above it import them from one place, without an import circle.
"""

from __future__ import annotations

import os
from pathlib import Path

from nasflow.errors import NasflowError


class NonFiniteLossError(NasflowError, FloatingPointError):
    """A training loss was NaN or infinite."""


class TrainingInterrupted(NasflowError):
    """Training stopped on request after finishing a step; that point was checkpointed.

    Attributes:
        checkpoint: The checkpoint written on the way out (``None`` when none is kept).
    """

    def __init__(self, what: str, checkpoint: Path | None = None) -> None:
        where = f"; checkpoint {str(checkpoint)!r}" if checkpoint is not None else ""
        super().__init__(f"stopped on request: {what}{where}")
        self.checkpoint = checkpoint


class CheckpointError(NasflowError, RuntimeError):
    """A checkpoint file is missing, truncated, corrupt or not loadable without pickle.

    Attributes:
        path: The unusable file.
    """

    def __init__(self, path: os.PathLike | str, reason: str) -> None:
        super().__init__(f"checkpoint {os.fspath(path)!r} is unusable: {reason}")
        self.path = Path(path)
