"""The files of a run under ``--runs`` (:class:`RunFolder`) and the stored-study mismatch error."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from nasflow.errors import NasflowError


class StudyMismatchError(NasflowError, ValueError):
    """A stored study was created for another space, objectives or directions."""


# ---------------------------------------------------------------------- run folder
@dataclass(frozen=True)
class RunFolder:
    """The files of one study's run: ``RUNS/NAME`` (``root``) and what lies in it.

    Attributes:
        root: The run's folder.
    """

    root: Path

    @classmethod
    def of(cls, runs: os.PathLike | str, name: str) -> RunFolder:
        """``RUNS/NAME``."""
        return cls(Path(runs) / name)

    @property
    def database(self) -> Path:
        """The default SQLite study file."""
        return self.root / "study.db"

    @property
    def supernet(self) -> Path:
        """Phase 1's supernet checkpoints."""
        return self.root / "supernet"

    @property
    def supernet_lock(self) -> Path:
        """Held while one worker trains the supernet (the others wait)."""
        return self.root / "supernet.lock"

    @property
    def stack_lock(self) -> Path:
        """Held while one worker calibrates the speedup stack."""
        return self.root / "stack.lock"

    @property
    def finetune(self) -> Path:
        """Phase 2's fine-tuning checkpoints, one folder per trial."""
        return self.root / "finetune"

    @property
    def ready(self) -> Path:
        """The fine-tuning phase's ready models, one ``trial-N`` folder each."""
        return self.root / "ready"

    @property
    def winners(self) -> Path:
        """Phase 3's retrained winners, one ``trial-N`` folder each."""
        return self.root / "winners"

    def winner(self, number: int) -> Path:
        """Where trial ``number``'s retrained weights and their record live."""
        return self.winners / f"trial-{number}"

    def retraining(self, number: int) -> Path:
        """The checkpoints of trial ``number``'s from-scratch training in progress (a
        winner's or an anchor's; removed once its weights are saved)."""
        return self.root / "retraining" / f"trial-{number}"

    @property
    def trust(self) -> Path:
        """The trust probe's progress (removed once its record is in the study)."""
        return self.root / "trust"

    @property
    def report(self) -> Path:
        """The default ``nasflow report`` file."""
        return self.root / "report.html"
