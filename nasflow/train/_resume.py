"""Stand-alone trainings that survive a stop request: checkpointed after every epoch and
when stopped, resumed from the newest checkpoint of the same training.

A training that a stop request ends mid-epoch (``EpochTrainer.run_epoch`` honours it at
an optimizer-step boundary) is checkpointed there, so the next run loses at most the
step in flight. The checkpoint holds the training's ``identity`` (what is trained, how,
from which seed): a folder left by another training is not resumed from.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from nasflow.train._checkpoint import Progress, list_checkpoints, load_latest, save_checkpoint
from nasflow.train._errors import TrainingInterrupted

if TYPE_CHECKING:
    from nasflow.train._standalone import EpochTrainer

#: Checkpoint files kept per training (the newest, and one to fall back on).
KEEP = 2


def resume(
    trainer: EpochTrainer,
    folder: Path,
    identity: str,
    log: Callable[[str], None],
    what: str,
) -> list[float]:
    """Load the newest usable checkpoint of this training in ``folder`` into ``trainer``
    (saying so); returns the mean losses of the epochs it finished (none: nothing to
    resume). Checkpoints of another training there are removed."""
    found = load_latest(folder, on_bad=lambda e: log(f"{what}: {e}"))
    if found is None:
        return []
    progress, state = found
    if state.get("identity") != identity:
        log(f"{what}: the checkpoints in {str(folder)!r} are of another training; starting over")
        for _, path in list_checkpoints(folder):
            path.unlink(missing_ok=True)
        return []
    trainer.load_state_dict(state["trainer"])
    log(
        f"{what}: resumed from its checkpoint at epoch {progress.epoch + 1}, "
        f"batch {progress.batch}"
    )
    return [float(v) for v in state.get("epoch_losses", [])]


def _save(trainer: EpochTrainer, folder: Path, identity: str, losses: list[float]) -> Path:
    state = {"identity": identity, "trainer": trainer.state_dict(), "epoch_losses": losses}
    path = save_checkpoint(folder / Progress(trainer.epoch, trainer.batch).filename(), state)
    for _, old in list_checkpoints(folder)[KEEP:]:
        old.unlink(missing_ok=True)
    return path


def train_epochs(
    trainer: EpochTrainer,
    until: int | None = None,
    *,
    folder: Path | None = None,
    identity: str = "",
    should_stop: Callable[[], bool] | None = None,
    on_epoch: Callable[[int, float], None] | None = None,
    log: Callable[[str], None] | None = None,
    what: str = "training",
) -> list[float]:
    """Train ``trainer`` up to epoch ``until`` (default: its planned epochs); returns the
    mean loss of every epoch, resumed ones included.

    Args:
        trainer: A fresh trainer (its weights initialised as the training starts).
        until: Stop after this many epochs (``None``: ``trainer.config.epochs``).
        folder: Where the checkpoints live (``None``: none is written or resumed from).
        identity: What is trained (a checkpoint of another identity is never resumed).
        should_stop: Polled after every step and between epochs.
        on_epoch: Called with ``(epoch, mean loss)`` after each epoch trained here.
        log: Line logger (a resumed training says where it resumed).
        what: The training's name in lines and errors.

    Raises:
        TrainingInterrupted: ``should_stop`` asked to stop; the point reached was
            checkpointed in ``folder`` (when given).
    """
    say = log or (lambda _m: None)
    end = trainer.config.epochs if until is None else until
    losses = resume(trainer, folder, identity, say, what) if folder is not None else []
    stop = should_stop or (lambda: False)
    while trainer.epoch < end:
        try:
            losses.append(trainer.run_epoch(stop))
        except TrainingInterrupted:
            path = _save(trainer, folder, identity, losses) if folder is not None else None
            where = f"epoch {trainer.epoch + 1}, batch {trainer.batch}"
            raise TrainingInterrupted(f"{what} at {where}", path) from None
        path = _save(trainer, folder, identity, losses) if folder is not None else None
        if on_epoch is not None:
            on_epoch(trainer.epoch, losses[-1])
        if trainer.epoch < end and stop():
            raise TrainingInterrupted(f"{what} after epoch {trainer.epoch}", path)
    return losses
