"""Supernet training: one optimizer step per sampler step, over all of its paths."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from nasflow.sampling import make_sampler
from nasflow.space import Arch, SearchSpace
from nasflow.supernet import Supernet
from nasflow.train._checkpoint import CheckpointError, load_latest, save_checkpoint
from nasflow.train._loop import Batches, make_optimizer, warmup_cosine


class NonFiniteLossError(FloatingPointError):
    """A training loss was NaN or infinite."""


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
            raise ValueError(f"op counts are for labels {sorted(state)}, not this space's")
        self.counts = {k: dict(v) for k, v in state.items()}


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
        logits = supernet(x, path)
        if logits.dim() == 3:  # (B, T, V) -> (B*T, V) for language models
            loss = loss_fn(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))
        else:
            loss = loss_fn(logits, y)
        if not torch.isfinite(loss):
            optimizer.zero_grad(set_to_none=True)
            raise NonFiniteLossError(f"loss is {loss.item()} on path {path.to_json()}")
        loss.backward()
        total += float(loss.detach())
    optimizer.step()
    return total / len(paths)


@dataclass(frozen=True)
class SupernetConfig:
    """How a supernet is trained.

    Attributes:
        sampler: ``"fair"`` (FairNAS, default) or ``"uniform"`` (SPOS).
        epochs: Passes over the training split.
        batch_size: Samples per step (shared by all paths of the step).
        lr: Peak learning rate (warm-up then cosine).
        weight_decay: AdamW decoupled weight decay.
        warmup_epochs: Linear warm-up length.
        seed: Seeds initialisation, data order and path sampling.
    """

    sampler: str = "fair"
    epochs: int = 10
    batch_size: int = 64
    lr: float = 3e-3
    weight_decay: float = 1e-2
    warmup_epochs: float = 0.5
    seed: int = 0

    def __post_init__(self) -> None:
        if self.sampler not in ("fair", "uniform"):
            raise ValueError(f"sampler must be 'fair' or 'uniform', got {self.sampler!r}")
        for name in ("epochs", "batch_size"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{name} must be an int >= 1, got {v!r}")


@dataclass
class SupernetResult:
    """What supernet training produced."""

    supernet: Supernet
    op_counts: OpCounter
    epochs_done: int
    seconds: float
    losses: list[float] = field(default_factory=list)
    resumed_from: int | None = None


class SupernetTrainer:
    """Trains a space's supernet, checkpointing every epoch and resuming from the last one.

    Args:
        space: The space.
        train_set: Training split yielding ``(x, y)``.
        config: Training settings.
        checkpoint_dir: Folder for ``epoch-N.pt`` checkpoints; ``None`` keeps none.
        device: Where to train.
        log: Called with one-line progress messages.
    """

    def __init__(
        self,
        space: SearchSpace,
        train_set: torch.utils.data.Dataset,
        config: SupernetConfig | None = None,
        checkpoint_dir: os.PathLike | str | None = None,
        device: torch.device | str = "cpu",
        log: Callable[[str], None] | None = None,
    ) -> None:
        self.space = space
        self.config = config or SupernetConfig()
        self.checkpoint_dir = Path(checkpoint_dir) if checkpoint_dir is not None else None
        self.device = torch.device(device)
        self.log = log or (lambda _msg: None)
        self.batches = Batches(
            train_set, self.config.batch_size, shuffle=True, seed=self.config.seed, drop_last=True
        )
        self.sampler = make_sampler(self.config.sampler, space, self.config.seed)

    def _identity(self) -> dict[str, Any]:
        return {"space": self.space.fingerprint(), "config": asdict(self.config)}

    def fit(self, on_epoch: Callable[[int, float], None] | None = None) -> SupernetResult:
        """Train (or resume) to ``config.epochs`` epochs.

        Args:
            on_epoch: Called with ``(epoch, mean loss)`` after each epoch.
        """
        cfg = self.config
        torch.manual_seed(cfg.seed)
        supernet = self.space.supernet().to(self.device)
        optimizer = make_optimizer(supernet.parameters(), cfg.lr, cfg.weight_decay)
        steps_per_epoch = len(self.batches)
        if steps_per_epoch == 0:
            raise ValueError(f"training split has fewer samples than batch_size={cfg.batch_size}")
        scheduler = warmup_cosine(
            optimizer, cfg.epochs * steps_per_epoch, int(cfg.warmup_epochs * steps_per_epoch)
        )
        counter = OpCounter(self.space)
        start, resumed, losses = 0, None, []
        if self.checkpoint_dir is not None:
            found = load_latest(self.checkpoint_dir, on_bad=lambda e: self.log(f"skipping {e}"))
            if found is not None:
                epoch, state = found
                if state.get("identity") != json.dumps(self._identity(), sort_keys=True):
                    raise CheckpointError(
                        self.checkpoint_dir / f"epoch-{epoch}.pt",
                        "written for another space or supernet configuration",
                    )
                supernet.load_state_dict(state["model"])
                optimizer.load_state_dict(state["optimizer"])
                scheduler.load_state_dict(state["scheduler"])
                counter.load_state_dict(json.loads(state["op_counts"]))
                losses = list(state["losses"])
                start = resumed = epoch
                self.log(f"resumed supernet training from epoch {epoch}")
        t0 = time.perf_counter()
        for epoch in range(start, cfg.epochs):
            supernet.train()
            epoch_loss = 0.0
            for b, (x, y) in enumerate(self.batches.epoch(epoch)):
                step = epoch * steps_per_epoch + b
                paths = self.sampler.paths(step)
                x, y = x.to(self.device), y.to(self.device)
                epoch_loss += supernet_step(supernet, paths, x, y, optimizer)
                scheduler.step()
                counter.update(paths)
            losses.append(epoch_loss / steps_per_epoch)
            if self.checkpoint_dir is not None:
                save_checkpoint(
                    self.checkpoint_dir / f"epoch-{epoch + 1}.pt",
                    {
                        "identity": json.dumps(self._identity(), sort_keys=True),
                        "model": supernet.state_dict(),
                        "optimizer": optimizer.state_dict(),
                        "scheduler": scheduler.state_dict(),
                        "op_counts": json.dumps(counter.state_dict()),
                        "losses": losses,
                    },
                )
            self.log(f"supernet epoch {epoch + 1}/{cfg.epochs}: loss {losses[-1]:.4f}")
            if on_epoch is not None:
                on_epoch(epoch + 1, losses[-1])
        return SupernetResult(
            supernet, counter, cfg.epochs, time.perf_counter() - t0, losses, resumed
        )
