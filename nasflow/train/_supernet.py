"""Supernet training: one optimizer step per sampler step, over all of its paths."""

from __future__ import annotations

import json
import logging
import os
import warnings
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from nasflow._checks import check_int
from nasflow._loss import flat_logits
from nasflow.data import Batches
from nasflow.errors import ConfigError
from nasflow.record import CHECKPOINT_IDENTITY, checkpoint_mismatch, supernet_identity
from nasflow.sampling import make_sampler
from nasflow.space import Arch, SearchSpace
from nasflow.supernet import Split, Supernet, split_supernet
from nasflow.train._checkpoint import (
    Progress,
    list_checkpoints,
    load_latest,
    rng_state,
    save_checkpoint,
    set_rng_state,
)
from nasflow.train._distill import Distillation, largest_path
from nasflow.train._errors import CheckpointError, NonFiniteLossError, TrainingInterrupted
from nasflow.train._loop import load_schedule_state, make_optimizer, warmup_cosine
from nasflow.train._recipe import SupernetConfig
from nasflow.train.stack import (
    GradReducer,
    Stack,
    StackStep,
    ddp_supernet_step,
    device_clock,
    is_rank_zero,
)
from nasflow.train.stack._ddp import broadcast_module, init_from_env, shard

_LOG = logging.getLogger(__name__)


class OpCounter:
    """How many times each choice value of each path choice has been trained."""

    def __init__(self, space: SearchSpace) -> None:
        self.counts: dict[str, dict[str, int]] = {
            c.label: {json.dumps(v): 0 for v in c.values} for c in space.path_choices
        }

    def update(self, paths: Iterable[Arch]) -> None:
        for path in paths:
            for label, per_value in self.counts.items():
                per_value[json.dumps(path[label])] += 1

    def as_rows(self) -> list[tuple[str, Any, int]]:
        """``(label, value, count)`` rows for reports."""
        return [
            (label, json.loads(k), n) for label, d in self.counts.items() for k, n in d.items()
        ]

    def state_dict(self) -> dict[str, dict[str, int]]:
        return {k: dict(v) for k, v in self.counts.items()}

    def load_state_dict(self, state: dict[str, dict[str, int]]) -> None:
        if set(state) != set(self.counts):
            raise ConfigError(f"op counts are for labels {sorted(state)}, not this space's")
        self.counts = {k: dict(v) for k, v in state.items()}


def schedule_step(scheduler: torch.optim.lr_scheduler.LRScheduler, accumulating: bool) -> None:
    """Advance a per-batch schedule; while gradients accumulate the optimizer has not
    stepped for this batch, which is intended (PyTorch's order warning is silenced)."""
    if not accumulating:
        scheduler.step()
        return
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Detected call of `lr_scheduler.step")
        scheduler.step()


def supernet_step(
    supernet: nn.Module,
    paths: Sequence[Arch],
    x: torch.Tensor,
    y: torch.Tensor,
    optimizer: torch.optim.Optimizer,
    loss_fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor] = F.cross_entropy,
) -> float:
    """Forward/backward every path on the same batch, accumulating gradients; one step.

    Gradients are *summed* over the paths as in FairNAS: each op gets the gradient of the
    one path that trained it. Parameters on no path keep ``grad = None``, so the optimizer
    skips them entirely (no weight-decay drift, no momentum update).

    Returns:
        The mean loss over the paths.

    Raises:
        NonFiniteLossError: A path's loss is NaN or infinite (no step is taken).
    """
    optimizer.zero_grad(set_to_none=True)
    total = 0.0
    for path in paths:
        loss = loss_fn(*flat_logits(supernet(x, path), y))
        if not torch.isfinite(loss):
            optimizer.zero_grad(set_to_none=True)
            raise NonFiniteLossError(f"loss is {loss.item()} on path {path.to_json()}")
        loss.backward()
        total += float(loss.detach())
    optimizer.step()
    return total / len(paths)


def distillation(space: SearchSpace, config: SupernetConfig) -> Distillation | None:
    """``config``'s in-place distillation with its teacher (the space's largest path), or
    ``None`` without one."""
    if config.distill is None:
        return None
    return Distillation(largest_path(space), config.distill_weight, config.distill_temperature)


@dataclass
class SupernetResult:
    """What supernet training produced.

    Attributes:
        seconds: Measured training seconds, summed over the runs that trained it (a
            resumed training adds its checkpoint's).
        resumed_from: Whole epochs done by the checkpoint training resumed from.
        resumed_at: Exactly where it resumed (epoch and batch), or ``None``.
    """

    supernet: Supernet
    op_counts: OpCounter
    epochs_done: int
    seconds: float
    losses: list[float] = field(default_factory=list)
    resumed_from: int | None = None
    resumed_at: Progress | None = None


class SupernetTrainer:
    """Trains a space's supernet with exact checkpoint/resume.

    A checkpoint holds the model, optimizer, scheduler, the global torch generators, the
    op counters, the stack's counters and the position in training. Paths are a pure
    function of ``(seed, step)`` and the data order of ``(seed, epoch)``, so a run resumed
    from any checkpoint (mid-epoch included) continues bit-identically on CPU.

    Every step goes through the speedup stack (``Stack()``, the default, is exactly
    ``supernet_step``). With gradient accumulation, mid-epoch checkpoints (periodic or on a
    stop request) are written at the next optimizer-step boundary, so a checkpoint never
    holds a partly accumulated step; each epoch ends with a flushed step.

    Under ``torchrun`` (``WORLD_SIZE > 1``; the process group is joined with
    ``init_from_env``, or already joined by the caller) every rank trains the same paths
    (drawn from the global step) on its contiguous shard of each global batch of
    ``config.batch_size`` samples, starting from rank 0's initial weights (broadcast), and
    gradients are all-reduced once per optimizer step: ``ddp_supernet_step`` with the plain
    stack, ``StackStep`` with a ``GradReducer`` otherwise (then the logged loss is rank 0's
    shard's). Without batch norm this is the one-process update on the global batch; with
    batch norm each rank normalises with its own shard's statistics (no ``SyncBatchNorm``),
    i.e. one process accumulating ``WORLD_SIZE`` micro-batches. Only rank 0 writes
    checkpoints and logs; ``checkpoint_dir`` must be visible to every rank (one machine or
    a shared file system) because every rank resumes from it, and ``should_stop`` must
    answer alike on every rank (``torchrun`` signals all of them).

    Args:
        space: The space.
        train_set: Training split yielding ``(x, y)``.
        config: Training settings.
        checkpoint_dir: Folder for ``epoch-N.pt`` / ``epoch-N-batch-B.pt`` checkpoints;
            ``None`` keeps none.
        device: Where to train.
        checkpoint_every: Also checkpoint every this many steps inside an epoch (0: only
            at epoch ends). Older mid-epoch files are deleted, keeping one as a fallback.
        should_stop: Polled after every step; when it returns true the trainer finishes
            that step, checkpoints and raises ``TrainingInterrupted``.
        stack: The speedup stack (``None``: ``Stack()``, plain fp32 eager).
        data_fingerprint: The training data's fingerprint (``nasflow.data.data_fingerprint``),
            recorded in the checkpoints: one trained on other data is refused.
    """

    def __init__(
        self,
        space: SearchSpace,
        train_set: torch.utils.data.Dataset,
        config: SupernetConfig | None = None,
        checkpoint_dir: os.PathLike | str | None = None,
        device: torch.device | str = "cpu",
        checkpoint_every: int = 0,
        should_stop: Callable[[], bool] | None = None,
        stack: Stack | None = None,
        data_fingerprint: str | None = None,
    ) -> None:
        self.data_fingerprint = data_fingerprint
        if stack is not None and not isinstance(stack, Stack):
            raise ConfigError(f"stack must be a Stack or None, got {stack!r}")
        check_int("checkpoint_every", checkpoint_every, 0)
        self.space = space
        self.config = config or SupernetConfig()
        self.checkpoint_dir = Path(checkpoint_dir) if checkpoint_dir is not None else None
        self.device = torch.device(device)
        self.stack = stack or Stack()
        self.rank, self.world_size = init_from_env()
        if self.config.batch_size % self.world_size:
            raise ConfigError(
                f"batch_size={self.config.batch_size} (the global batch) does not split "
                f"evenly over {self.world_size} ranks"
            )
        self.writer = is_rank_zero()  # only rank 0 writes checkpoints and logs
        # Progress lines: the ``nasflow`` logger's per-step detail (rank 0's only).
        self.log: Callable[[str], None] = _LOG.debug if self.writer else (lambda _msg: None)
        self.checkpoint_every = checkpoint_every
        self.should_stop = should_stop or (lambda: False)
        self.batches = Batches(
            train_set, self.config.batch_size, shuffle=True, seed=self.config.seed, drop_last=True
        )
        self.sampler = make_sampler(self.config.sampler, space, self.config.seed)
        #: In-place distillation (``config.distill``), its teacher path resolved.
        self.distill = distillation(space, self.config)
        self.supernet: nn.Module | None = None  # set by ``fit``: the network being trained
        #: Set where the checkpoints were written by another process while this one
        #: waited for them (a worker joining a study): ``fit`` says it loaded them. A
        #: finished supernet found otherwise is "the one an earlier run trained" (whichever
        #: process that was), never "resumed".
        self.written_by_another = False

    def _identity(self) -> str:
        # The plain stack is not recorded: it keeps older checkpoints valid.
        stack = self.stack.to_dict() if self.stack != Stack() else None
        return supernet_identity(
            self.space.fingerprint(), self.config.identity(), stack, self.data_fingerprint
        )

    def _resume(self, run: _Run) -> Progress | None:
        """Load the newest valid checkpoint into ``run``; its position, or ``None``."""
        if self.checkpoint_dir is None:
            return None
        found = load_latest(self.checkpoint_dir, on_bad=lambda e: self.log(f"skipping {e}"))
        if found is None:
            return None
        at, state = found
        path = self.checkpoint_dir / at.filename()
        why = checkpoint_mismatch(state.get(CHECKPOINT_IDENTITY), self._identity())
        if why is not None:
            raise CheckpointError(path, why)
        if state.get("split") and not is_split(run.supernet):
            self._split(run)
        run.supernet.load_state_dict(state["model"])
        run.optimizer.load_state_dict(state["optimizer"])
        load_schedule_state(run.scheduler, state["scheduler"])
        run.counter.load_state_dict(json.loads(state["op_counts"]))
        run.losses = [float(v) for v in state["losses"]]
        run.epoch_loss = float(state.get("epoch_loss", 0.0))
        run.seconds_before = float(state.get("seconds", 0.0))
        if "stack" in state and run.stepper is not None:
            run.stepper.load_state_dict(state["stack"])
        if "rng" in state:
            set_rng_state(state["rng"])
        return at

    def _save(self, run: _Run, at: Progress) -> Path | None:
        """Checkpoint ``run`` at ``at`` and delete mid-epoch files it makes redundant
        (rank 0 only; ``None`` elsewhere)."""
        if self.checkpoint_dir is None or not self.writer:
            return None
        stack_state = run.stepper.state_dict() if run.stepper is not None else {}
        path = save_checkpoint(
            self.checkpoint_dir / at.filename(),
            {
                CHECKPOINT_IDENTITY: self._identity(),
                "progress": list(at),
                "step": at.epoch * len(self.batches) + at.batch,
                "model": run.supernet.state_dict(),
                "split": self.config.split if is_split(run.supernet) else None,
                "optimizer": run.optimizer.state_dict(),
                "scheduler": run.scheduler.state_dict(),
                "rng": rng_state(),
                "op_counts": json.dumps(run.counter.state_dict()),
                "losses": list(run.losses),
                "epoch_loss": run.epoch_loss,
                "stack": stack_state,
                "seconds": run.seconds(),
            },
        )
        older = [p for p, _ in list_checkpoints(self.checkpoint_dir) if p < at and p.batch]
        # Keep the newest older mid-epoch file as a fallback unless an epoch file now is.
        for p in older[1:] if at.batch else older:
            (self.checkpoint_dir / p.filename()).unlink(missing_ok=True)
        return path

    def _split(self, run: _Run) -> None:
        """Split ``run``'s supernet on ``config.split`` in place: every sub-supernet starts
        from the shared weights and their AdamW moments; the schedule goes on where it is."""
        cfg = self.config
        assert cfg.split is not None
        shared = list(run.supernet.parameters())
        split = split_supernet(run.supernet, cfg.split).to(self.device)
        parts = len(split.body.parts)
        optimizer = make_optimizer(split.parameters(), cfg.lr, cfg.weight_decay)
        old = run.optimizer.state_dict()
        # Parameter i of the shared supernet is parameter i of every part, in order.
        n = len(shared)
        state = {
            k * n + i: {key: v.clone() if torch.is_tensor(v) else v for key, v in st.items()}
            for k in range(parts)
            for i, st in old["state"].items()
        }
        groups = [{**g, "params": list(range(parts * n))} for g in old["param_groups"]]
        optimizer.load_state_dict({"state": state, "param_groups": groups})
        steps = cfg.epochs * len(self.batches)
        scheduler = warmup_cosine(optimizer, steps, int(cfg.warmup_epochs * len(self.batches)))
        scheduler.load_state_dict(run.scheduler.state_dict())
        train_step, stepper = self._step_fn(split, optimizer)
        if stepper is not None and run.stepper is not None:
            stepper.load_state_dict(run.stepper.state_dict())
        run.supernet, run.optimizer, run.scheduler = split, optimizer, scheduler
        run.train_step, run.stepper = train_step, stepper
        self.supernet = split

    def _step_fn(
        self, supernet: Supernet, optimizer: torch.optim.Optimizer
    ) -> tuple[Callable[[torch.Tensor, torch.Tensor, Sequence[Arch]], float], StackStep | None]:
        """``(train_step(x, y, paths) -> loss, the StackStep or None)`` for this run.

        ``train_step`` takes the global batch; under DDP it trains this rank's shard.
        """
        if self.world_size == 1:
            stepper = self.stack.build(supernet, optimizer, self.device, distill=self.distill)
            return stepper, stepper
        reducer = GradReducer()
        broadcast_module(supernet)  # every rank starts from rank 0's weights
        rank, world = self.rank, self.world_size
        if self.stack == Stack() and self.distill is None:

            def plain(x: torch.Tensor, y: torch.Tensor, paths: Sequence[Arch]) -> float:
                xs, ys = shard(x, rank, world), shard(y, rank, world)
                return ddp_supernet_step(supernet, paths, xs, ys, optimizer, reducer)

            return plain, None
        stepper = self.stack.build(
            supernet, optimizer, self.device, reducer=reducer, distill=self.distill
        )

        def stacked(x: torch.Tensor, y: torch.Tensor, paths: Sequence[Arch]) -> float:
            return stepper(shard(x, rank, world), shard(y, rank, world), paths)

        return stacked, stepper

    def fit(self, on_epoch: Callable[[int, float], None] | None = None) -> SupernetResult:
        """Train (or resume) to ``config.epochs`` epochs.

        Args:
            on_epoch: Called with ``(epoch, mean loss)`` after each epoch.

        Raises:
            TrainingInterrupted: ``should_stop`` asked to stop (a checkpoint was written).
            NonFiniteLossError: A loss was NaN or infinite.
            CheckpointError: The newest valid checkpoint belongs to another configuration.
        """
        cfg = self.config
        steps_per_epoch = len(self.batches)
        if steps_per_epoch == 0:
            raise ConfigError(f"training split has fewer samples than batch_size={cfg.batch_size}")
        torch.manual_seed(cfg.seed)
        supernet = self.space.supernet().to(self.device)
        if cfg.split is not None and cfg.split_epoch == 0:  # split from the start
            supernet = split_supernet(supernet, cfg.split).to(self.device)
        self.supernet = supernet  # the network in training, for ``on_epoch`` callbacks
        optimizer = make_optimizer(supernet.parameters(), cfg.lr, cfg.weight_decay)
        scheduler = warmup_cosine(
            optimizer, cfg.epochs * steps_per_epoch, int(cfg.warmup_epochs * steps_per_epoch)
        )
        train_step, stepper = self._step_fn(supernet, optimizer)
        run = _Run(supernet, optimizer, scheduler, OpCounter(self.space), stepper=stepper)
        run.train_step = train_step
        at = self._resume(run)
        if at is not None:
            where = f"epoch {at.epoch}" + (f", batch {at.batch}" if at.batch else "")
            if at.epoch >= cfg.epochs and not at.batch:  # finished: nothing is resumed
                n = f"{cfg.epochs} epoch{'s' * (cfg.epochs != 1)}"
                by = "another process" if self.written_by_another else "an earlier run"
                self.log(f"supernet: loaded the one {by} trained ({n})")
            elif not self.written_by_another:
                self.log(f"resumed supernet training from {where}")
            else:
                self.log(
                    f"supernet: another process trained it to {where} of {cfg.epochs} and "
                    "stopped; training on from there"
                )
        start = at or Progress(0, 0)
        _, clock = device_clock(self.device)  # wall time after the device's queued work
        run.clock, run.started = clock, clock()
        stop = due = False
        for epoch in range(start.epoch, cfg.epochs):
            if epoch == cfg.split_epoch and not is_split(run.supernet):
                self._split(run)
                self.log(f"supernet split on {cfg.split!r} at epoch {epoch}")
            if run.supernet is not supernet:  # split here or at the resume
                supernet, optimizer, scheduler = run.supernet, run.optimizer, run.scheduler
                train_step, stepper = run.train_step, run.stepper
            supernet.train()
            first = start.batch if epoch == start.epoch else 0
            for b, (x, y) in enumerate(self.batches.epoch(epoch, start=first), start=first):
                step = epoch * steps_per_epoch + b
                paths = self.sampler.paths(step)
                run.epoch_loss += train_step(x.to(self.device), y.to(self.device), paths)
                schedule_step(scheduler, stepper is not None and stepper.pending > 0)
                run.counter.update(paths)
                if b + 1 == steps_per_epoch:
                    break  # the epoch checkpoint below covers this step
                stop = stop or self.should_stop()
                every = self.checkpoint_every
                due = due or bool(every and (step + 1) % every == 0)
                if stepper is not None and stepper.pending:
                    continue  # mid-accumulation: checkpoint at the step boundary
                if stop or due:
                    path = self._save(run, Progress(epoch, b + 1))
                    due = False
                if stop:
                    raise TrainingInterrupted(f"supernet training at epoch {epoch + 1}", path)
            if stepper is not None:
                stepper.flush()  # the epoch's partly accumulated step, if any
            run.losses.append(run.epoch_loss / steps_per_epoch)
            run.epoch_loss = 0.0
            path = self._save(run, Progress(epoch + 1, 0))
            self.log(f"supernet epoch {epoch + 1}/{cfg.epochs}: loss {run.losses[-1]:.4f}")
            if on_epoch is not None:
                on_epoch(epoch + 1, run.losses[-1])
            if epoch + 1 < cfg.epochs and (stop or self.should_stop()):
                raise TrainingInterrupted(f"supernet training after epoch {epoch + 1}", path)
        return SupernetResult(
            run.supernet,
            run.counter,
            cfg.epochs,
            run.seconds(),
            list(run.losses),
            at.epoch if at is not None else None,
            at,
        )


@dataclass
class _Run:
    """The mutable state of one supernet training run."""

    supernet: Supernet
    optimizer: torch.optim.Optimizer
    scheduler: torch.optim.lr_scheduler.LRScheduler
    counter: OpCounter
    losses: list[float] = field(default_factory=list)
    epoch_loss: float = 0.0
    stepper: StackStep | None = None  # None: the plain DDP step, which keeps no state
    train_step: Callable[[torch.Tensor, torch.Tensor, Sequence[Arch]], float] | None = None
    seconds_before: float = 0.0  # training seconds of the runs the checkpoint resumed
    clock: Callable[[], float] | None = None  # this run's clock (device-synchronised)
    started: float = 0.0  # ``clock()`` when this run started training

    def seconds(self) -> float:
        """Training seconds so far, over every run that trained this supernet (a resumed
        one adds its checkpoint's): a run that only loads a finished supernet adds ~0 s
        and keeps the cost of the training it loaded."""
        now = self.clock() - self.started if self.clock is not None else 0.0
        return self.seconds_before + now


def is_split(supernet: nn.Module) -> bool:
    """Whether ``supernet``'s body is split into sub-supernets (few-shot)."""
    return isinstance(getattr(supernet, "body", None), Split)
