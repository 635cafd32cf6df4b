"""Training one stand-alone network: fine-tuning candidates and retraining winners.

Trainings survive a stop request (:func:`train_epochs`): checkpointed after every epoch and
when stopped (``EpochTrainer.run_epoch`` honours the stop at an optimizer-step boundary),
resumed from the newest checkpoint of the same training, so the next run loses at most
the step in flight. A checkpoint holds the training's ``identity`` (what is trained, how,
from which seed): a folder left by another training is not resumed from."""

from __future__ import annotations

import contextlib
import functools
import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from nasflow.data import Batches, batch_seed
from nasflow.errors import ConfigError, StateError
from nasflow.train._checkpoint import (
    Progress,
    list_checkpoints,
    load_latest,
    rng_state,
    save_checkpoint,
    set_rng_state,
)
from nasflow.train._errors import TrainingInterrupted
from nasflow.train._loop import (
    evaluate,
    load_schedule_state,
    make_optimizer,
    warmup_cosine,
)
from nasflow.train._recipe import TrainConfig
from nasflow.train._supernet import schedule_step
from nasflow.train.stack import Stack, device_clock

_LOG = logging.getLogger(__name__)


#: Mixed into a step's seed so that its draws (dropout) and its batch's augmentation
#: (seeded with ``batch_seed`` itself) are not the same stream.
_STEP_SALT = 0x2545F4914F6CDD1D


class EpochTrainer:
    """Trains a plain network one epoch at a time (so Optuna can prune between epochs).

    Every batch goes through the speedup stack's ``StackStep``; ``Stack()`` (the default)
    is exactly ``zero_grad; loss.backward(); optimizer.step()``. The learning rate follows
    ``warmup_cosine`` per batch; with gradient accumulation the optimizer steps every ``k``
    batches at ``k`` times the current rate (linear scaling), and an epoch's last, partly
    accumulated step is taken at the epoch's end.

    Resume stays exact with accumulation: a checkpoint never holds a partly accumulated
    step. ``run_epoch`` honours a stop request only at an optimizer-step boundary (at most
    ``k - 1`` batches after the request), and epochs end with a flushed step, so
    ``state_dict()`` is always taken with no pending gradients.

    With ``seed`` every step's own draws (dropout, any other draw from the global
    generators inside the forward and backward) come from the CPU generator and the
    device's seeded with ``(seed, epoch, batch)``, inside ``torch.random.fork_rng``: a
    step draws the same masks whatever the process trained before, in whichever order
    interleaved trainings take their epochs (the fine-tuning rungs), and after a resume
    from any checkpoint; the caller's random state is left as it was. Without it (a
    training from scratch, seeded once before its network is built and trained whole) the
    steps draw from the global generators as they stand, and a checkpoint restores them.

    Args:
        model: The network (trained in place).
        train: Training split batches (``drop_last`` recommended).
        config: The recipe; the schedule spans ``config.epochs``.
        device: Where to train.
        stack: The speedup stack (``None``: ``Stack()``, plain fp32 eager).
        seed: Seeds every step's own draws (above); ``None``: the global generators.
    """

    def __init__(
        self,
        model: nn.Module,
        train: Batches,
        config: TrainConfig,
        device: torch.device | str = "cpu",
        stack: Stack | None = None,
        seed: int | None = None,
    ) -> None:
        if stack is not None and not isinstance(stack, Stack):
            raise ConfigError(f"stack must be a Stack or None, got {stack!r}")
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
            raise ConfigError(f"seed must be an int or None, got {seed!r}")
        self.model, self.train, self.config = model.to(device), train, config
        self.device = torch.device(device)
        self.seed = seed
        self.stack = stack or Stack()
        self.optimizer = make_optimizer(model.parameters(), config.lr, config.weight_decay)
        steps = len(train)
        self.scheduler = warmup_cosine(
            self.optimizer, config.epochs * steps, int(config.warmup_epochs * steps)
        )
        loss_fn = functools.partial(F.cross_entropy, label_smoothing=config.label_smoothing)
        self.stepper = self.stack.build(model, self.optimizer, self.device, loss_fn=loss_fn)
        self.epoch = 0
        self.batch = 0  # batches done in the current epoch
        self.seconds = 0.0
        self._losses: list[float] = []  # of the current epoch so far

    def step(self, x: torch.Tensor, y: torch.Tensor) -> float:
        """Train on one batch (one optimizer step, or one of ``k`` accumulated batches).

        Raises:
            NonFiniteLossError: The loss is NaN or infinite (no step is taken).
        """
        with self._drawing():
            loss = self.stepper(x, y)
        schedule_step(self.scheduler, self.stepper.pending > 0)
        return loss

    @contextlib.contextmanager
    def _drawing(self) -> Iterator[None]:
        """The step's generators seeded from ``(seed, epoch, batch)`` (``seed`` given), the
        caller's restored after: ~8 us a step on a 2-vCPU VM (process time, 20,000 forks),
        where the smallest of 40 random MNIST-1D front candidates steps in ~10 ms (one
        thread; seeded and plain steps interleaved: a difference within the noise)."""
        if self.seed is None:
            yield
            return
        # Salted: the batch's augmentation draws from batch_seed itself (Batches).
        s = batch_seed(self.seed, self.epoch, self.batch) ^ _STEP_SALT
        if self.device.type == "cuda":
            index = self.device.index
            if index is None:
                index = torch.cuda.current_device()
            with torch.random.fork_rng(devices=[index], device_type="cuda"):
                torch.default_generator.manual_seed(s)
                torch.cuda.default_generators[index].manual_seed(s)
                yield
            return
        with torch.random.fork_rng(devices=[]):  # (another accelerator's: its own, as before)
            torch.default_generator.manual_seed(s)
            yield

    def run_epoch(self, should_stop: Callable[[], bool] | None = None) -> float:
        """Train the rest of the current epoch; returns its mean loss.

        Args:
            should_stop: Polled after every step but an epoch's last; when it returns true
                the step is finished and ``TrainingInterrupted`` is raised, leaving the
                trainer consistent so ``state_dict()`` can be checkpointed. With gradient
                accumulation the request is honoured at the next optimizer-step boundary.
        """
        if self.epoch >= self.config.epochs:
            raise StateError(f"already trained the planned {self.config.epochs} epochs")
        self.model.train()
        steps = len(self.train)
        _, clock = device_clock(self.device)  # wall time after the device's work
        t0 = clock()
        stop = False
        try:
            for x, y in self.train.epoch(self.epoch, start=self.batch):
                self._losses.append(self.step(x.to(self.device), y.to(self.device)))
                self.batch += 1
                if should_stop is None or self.batch >= steps:
                    continue
                stop = stop or should_stop()
                if stop and not self.stepper.pending:
                    raise TrainingInterrupted(
                        f"training at epoch {self.epoch + 1}, batch {self.batch}"
                    )
            self.stepper.flush()  # the epoch's partly accumulated step, if any
        finally:
            self.seconds += clock() - t0
        losses, self._losses = self._losses, []
        self.epoch, self.batch = self.epoch + 1, 0
        return sum(losses) / max(1, len(losses))

    def state_dict(self) -> dict[str, Any]:
        """Everything needed to continue exactly here: weights, optimizer, schedule,
        stack counters, position, the global generators."""
        return {
            "model": self.model.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "scheduler": self.scheduler.state_dict(),
            "stack": self.stepper.state_dict(),
            "epoch": self.epoch,
            "batch": self.batch,
            "seconds": self.seconds,
            "losses": list(self._losses),
            "rng": rng_state(),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Continue from a ``state_dict()``."""
        self.model.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        load_schedule_state(self.scheduler, state["scheduler"])
        if "stack" in state:  # absent in checkpoints written before the stack existed
            self.stepper.load_state_dict(state["stack"])
        self.epoch, self.batch = int(state["epoch"]), int(state["batch"])
        self.seconds = float(state["seconds"])
        self._losses = [float(v) for v in state["losses"]]
        set_rng_state(state["rng"])


@dataclass
class TrainResult:
    """Outcome of a stand-alone training run.

    Attributes:
        val_accuracy: Validation accuracy of the trained weights.
        test_accuracy: Test accuracy of the same weights (``None``: no test split given).
        seconds: The measured training cost (training steps only).
        losses: The mean training loss of every epoch.
        val_loss: Validation mean cross-entropy of the same weights (``None`` where a
            caller built the result without it).
    """

    val_accuracy: float
    test_accuracy: float | None
    seconds: float
    losses: list[float] = field(default_factory=list)
    val_loss: float | None = None


def train_standalone(
    model: nn.Module,
    train: Batches,
    val: Batches,
    config: TrainConfig,
    test: Batches | None = None,
    device: torch.device | str = "cpu",
    on_epoch: Callable[[int, float], None] | None = None,
    stack: Stack | None = None,
    *,
    checkpoints: Path | None = None,
    identity: str = "",
    should_stop: Callable[[], bool] | None = None,
    what: str = "training",
) -> TrainResult:
    """Train ``model`` from its current weights for ``config.epochs`` epochs.

    ``seconds`` counts training steps only (the measured training cost, with ``stack``;
    a resumed training's too); evaluation is excluded. With ``checkpoints`` the training
    is checkpointed there after every epoch and when ``should_stop`` stops it, and resumes
    from there (:func:`train_epochs`: ``identity`` and ``what`` as there).

    Raises:
        TrainingInterrupted: ``should_stop`` asked to stop.
    """
    trainer = EpochTrainer(model, train, config, device, stack)
    losses = train_epochs(
        trainer,
        folder=checkpoints,
        identity=identity,
        should_stop=should_stop,
        on_epoch=on_epoch,
        what=what,
    )
    val_acc, val_loss = evaluate(model, val, device=device)
    test_acc = evaluate(model, test, device=device)[0] if test is not None else None
    return TrainResult(val_acc, test_acc, trainer.seconds, losses, val_loss)


#: Checkpoint files kept per training (the newest, and one to fall back on).
KEEP = 2


def resume(
    trainer: EpochTrainer,
    folder: Path,
    identity: str,
    what: str,
) -> list[float]:
    """Load the newest usable checkpoint of this training in ``folder`` into ``trainer``
    (saying so, to the ``nasflow`` logger); returns the mean losses of the epochs it
    finished (none: nothing to resume). Checkpoints of another training there are
    removed."""
    found = load_latest(folder, on_bad=lambda e: _LOG.warning(f"{what}: {e}"))
    if found is None:
        return []
    progress, state = found
    if state.get("identity") != identity:
        _LOG.info(
            f"{what}: the checkpoints in {str(folder)!r} are of another training; starting over"
        )
        for _, path in list_checkpoints(folder):
            path.unlink(missing_ok=True)
        return []
    trainer.load_state_dict(state["trainer"])
    _LOG.info(
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
        what: The training's name in lines and errors.

    Raises:
        TrainingInterrupted: ``should_stop`` asked to stop; the point reached was
            checkpointed in ``folder`` (when given).
    """
    end = trainer.config.epochs if until is None else until
    losses = resume(trainer, folder, identity, what) if folder is not None else []
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
