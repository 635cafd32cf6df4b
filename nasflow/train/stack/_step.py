"""``StackStep``: one training step through the speedup stack, called once per batch."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from typing import TYPE_CHECKING, Any, Protocol

import torch
from torch import nn

from nasflow._loss import flat_logits
from nasflow.errors import ConfigError, StateError
from nasflow.space import Arch
from nasflow.supernet import SuperModule
from nasflow.train._errors import NonFiniteLossError
from nasflow.train.stack._accumulation import Schedule, make_accumulation
from nasflow.train.stack._base import StackLayer
from nasflow.train.stack._compile import Compile
from nasflow.train.stack._precision import MixedPrecision

if TYPE_CHECKING:
    from nasflow.train._distill import Distillation
    from nasflow.train.stack._ddp import GradReducer


class StackSettings(Protocol):
    """What a :class:`StackStep` reads of its ``Stack`` (``nasflow.train.stack.Stack``
    builds steps through ``Stack.build``; the step does not import it back)."""

    accumulation: int | str
    compile: bool
    checkpointing: bool
    clip_norm: float | None
    k_max: int
    noise_target: float
    micro_batch: int | None

    def layers(self) -> list[StackLayer]: ...


def _chunks(x: torch.Tensor, y: torch.Tensor, size: int) -> list[tuple[torch.Tensor, ...]]:
    return list(zip(x.split(size), y.split(size), strict=True))


class StackStep:
    """Trains ``model`` one batch per call; the optimizer steps every ``k`` batches.

    Each call runs the forward pass (of every path, for a supernet) under the layers'
    contexts, back-propagates a loss weighted so that the summed gradient of a step is the
    mean over its samples (summed over paths, as in FairNAS), and after ``k`` batches
    unscales, reduces across ranks (when a ``GradReducer`` is given), clips, sets the
    learning rate (schedule times the linear-scaling factor ``k``) and steps. With
    ``Stack()`` this is exactly ``zero_grad; loss.backward(); optimizer.step()``.

    Attributes:
        module: The original network: save and evaluate this one.
        model: What forward passes run on (wrapped by the layers; shares parameters).
        batches_seen: Batches trained so far (the schedule's clock).
        optimizer_steps: Optimizer steps taken.
        ks: ``k`` of every optimizer step taken.

    Args:
        stack: The layer settings.
        model: Network (or supernet, then pass ``paths`` to each call).
        optimizer: Its optimizer; each group's current ``lr`` is the base rate.
        device: Where the batches live.
        schedule: Warm-up + cosine over batches; ``None`` leaves the rates to the caller
            (the linear scaling by ``k`` is still applied during each step).
        loss_fn: ``loss_fn(logits, targets)``; 3-d logits are flattened (language models).
        reducer: Averages gradients across DDP ranks once per optimizer step.
        distill: For a supernet: each unit of the batch first runs ``distill.path``
            without gradient (under the layers' forward contexts), and every path's loss
            is ``distill.loss`` against its logits (``nasflow.train._distill.Distillation``).
    """

    def __init__(
        self,
        stack: StackSettings,
        model: nn.Module,
        optimizer: torch.optim.Optimizer,
        device: torch.device | str,
        schedule: Schedule | None,
        loss_fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
        reducer: GradReducer | None = None,
        distill: Distillation | None = None,
    ) -> None:
        self.stack, self.module, self.optimizer = stack, model, optimizer
        self.distill = distill
        self.device = torch.device(device)
        if stack.compile and stack.checkpointing and isinstance(model, SuperModule):
            # The per-block compiled forward is gone when backward recomputes a segment.
            raise ConfigError(
                "compile=True with checkpointing=True is supported for stand-alone networks, "
                f"not for a {type(model).__name__}; switch one of them off for the supernet"
            )
        self.layers = stack.layers()
        for layer in self.layers:
            layer.check(self.device)
        net = model
        for layer in self.layers:
            net = layer.wrap(net)
        self.model = net
        amp = next((m for m in self.layers if isinstance(m, MixedPrecision)), None)
        self.scaler = (
            amp.scaler() if amp else torch.amp.GradScaler(self.device.type, enabled=False)
        )
        self.accumulation = make_accumulation(stack.accumulation, stack.k_max, stack.noise_target)
        self.schedule, self.loss_fn, self.reducer = schedule, loss_fn, reducer
        self.params = [p for g in optimizer.param_groups for p in g["params"]]
        self.base_lrs = [g["lr"] for g in optimizer.param_groups]
        self.batches_seen = self.optimizer_steps = 0
        self.ks: list[int] = []
        self._pending = 0  # batches accumulated into the current step
        self._k = 1
        self._first_batch = 0
        self._expected = self._samples = 0
        self._loss_sum = 0.0
        self._bad = False
        self._unit_sq = 0.0  # sum of squared norms of per-unit mean gradients
        self._units = 0

    @property
    def pending(self) -> int:
        """Batches accumulated into the optimizer step not taken yet (0 at a step boundary,
        the only place a checkpoint holds no partial gradients)."""
        return self._pending

    @property
    def compilations(self) -> int:
        """Graphs compiled so far by the compile layer (0 without it)."""
        return sum(m.compilations for m in self.layers if isinstance(m, Compile))

    # ------------------------------------------------------------------ per batch
    def __call__(
        self, x: torch.Tensor, y: torch.Tensor, paths: Sequence[Arch] | None = None
    ) -> float:
        """Train on one batch (every path of ``paths`` for a supernet).

        Returns:
            The batch's mean loss (averaged over paths).

        Raises:
            NonFiniteLossError: A loss was NaN or infinite; the step's gradients are
                dropped and no optimizer step is taken.
        """
        with ExitStack() as ctx:
            for layer in self.layers:
                ctx.enter_context(layer.step_context())
            if self._pending == 0:
                self._begin(len(x))
            loss = self._accumulate(x, y, paths)
            self._pending += 1
            self.batches_seen += 1
            if self._pending >= self._k:
                self._finish()
        return loss

    def flush(self) -> bool:
        """Step on a partly accumulated step (end of an epoch); whether it stepped."""
        if self._pending == 0:
            return False
        with ExitStack() as ctx:
            for layer in self.layers:
                ctx.enter_context(layer.step_context())
            self._finish()
        return True

    def _begin(self, batch_size: int) -> None:
        self.optimizer.zero_grad(set_to_none=True)
        self._k = self.accumulation.k
        self._first_batch = self.batches_seen
        self._expected = self._k * batch_size
        self._samples, self._loss_sum, self._bad = 0, 0.0, False
        self._unit_sq, self._units = 0.0, 0

    def _units_of(self, x: torch.Tensor, y: torch.Tensor) -> list[tuple[torch.Tensor, ...]]:
        size = self.stack.micro_batch or len(x)
        if self.accumulation.needs_stats and self._k == 1 and size >= len(x) and len(x) >= 2:
            size = math.ceil(len(x) / 2)  # two half-batches give a variance estimate
        return [(x, y)] if size >= len(x) else _chunks(x, y, size)

    def _forward_loss(
        self,
        x: torch.Tensor,
        y: torch.Tensor,
        path: Arch | None,
        teacher: torch.Tensor | None = None,
    ) -> torch.Tensor:
        with ExitStack() as ctx:
            for layer in self.layers:
                ctx.enter_context(layer.forward_context())
            logits = self.model(x) if path is None else self.model(x, path)
            flat, targets = flat_logits(logits, y)
            hard = self.loss_fn(flat, targets)
            if teacher is None or self.distill is None:
                return hard
            return self.distill.loss(flat, teacher, hard)

    def _teacher(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor | None:
        """The teacher path's flattened logits on ``x``, without gradient (``None``: no
        distillation)."""
        if self.distill is None:
            return None
        with torch.no_grad(), ExitStack() as ctx:
            for layer in self.layers:
                ctx.enter_context(layer.forward_context())
            return flat_logits(self.model(x, self.distill.path), y)[0].detach()

    def _accumulate(self, x: torch.Tensor, y: torch.Tensor, paths: Sequence[Arch] | None) -> float:
        stats = self.accumulation.needs_stats
        plist: Sequence[Arch | None] = paths if paths is not None else [None]
        total = mean = 0.0  # loss x samples; per-sample mean (exactly the loss, one unit)
        for xu, yu in self._units_of(x, y):
            before = self._grads() if stats else None
            weight = len(xu) / self._expected
            teacher = self._teacher(xu, yu) if paths is not None else None
            for path in plist:
                loss = self._forward_loss(xu, yu, path, teacher)
                value = float(loss.detach())
                if not math.isfinite(value):
                    if self.reducer is None:
                        self._drop()
                        where = "" if path is None else f" on path {path.to_json()}"
                        raise NonFiniteLossError(f"loss is {value}{where}")
                    self._bad = True  # every rank must still reach the all-reduce
                    continue
                self.scaler.scale(loss if weight == 1.0 else loss * weight).backward()
                total += value * len(xu)
                mean += value if len(xu) == len(x) else value * len(xu) / len(x)
            if before is not None:
                self._record_unit(before, self._expected / len(xu))
        self._samples += len(x)
        self._loss_sum += total
        return mean / len(plist)

    def _grads(self) -> list[torch.Tensor | None]:
        return [p.grad.clone() if p.grad is not None else None for p in self.params]

    def _record_unit(self, before: list[torch.Tensor | None], scale: float) -> None:
        """Add the squared norm of one unit's mean gradient (the change since ``before``)."""
        sq = 0.0
        for p, b in zip(self.params, before, strict=True):
            if p.grad is not None:
                d = p.grad if b is None else p.grad - b
                sq += float(d.float().pow(2).sum())
        self._unit_sq += sq * scale**2
        self._units += 1

    def _drop(self) -> None:
        self.optimizer.zero_grad(set_to_none=True)
        self._pending = 0

    # ------------------------------------------------------------------ per optimizer step
    def _finish(self) -> None:
        self._k = self._pending  # fewer than planned after a flush: scale the LR by those
        if self._samples != self._expected:  # a short step (epoch end): renormalise
            fix = self._expected / self._samples
            for p in self.params:
                if p.grad is not None:
                    p.grad.mul_(fix)
        units, unit_sq = self._units, self._unit_sq
        if self.reducer is not None:
            extras = [self._loss_sum, float(self._samples), float(self._bad), unit_sq, units]
            _, _, bad, unit_sq, units = self.reducer.reduce(self.params, extras)
            if bad:
                self._drop()
                raise NonFiniteLossError("a rank's loss was not finite in this step")
        self.scaler.unscale_(self.optimizer)
        if self.accumulation.needs_stats and units >= 2:
            self._observe(unit_sq, round(units))
        if self.stack.clip_norm is not None:
            torch.nn.utils.clip_grad_norm_(self.params, self.stack.clip_norm)
        self._step_optimizer()
        self.ks.append(self._k)
        self.optimizer_steps += 1
        self._pending = 0

    def _observe(self, unit_sq: float, units: int) -> None:
        """Per-batch gradient variance and squared mean-gradient norm -> adaptive k."""
        scale = float(self.scaler.get_scale()) if self.scaler.is_enabled() else 1.0
        grads = [p.grad for p in self.params if p.grad is not None]
        mean_sq = sum(float(g.float().pow(2).sum()) for g in grads)
        unit_sq /= scale**2
        unit_var = max(0.0, (unit_sq - units * mean_sq) / (units - 1))
        batch_var = unit_var * self._k / units  # a unit holds k/units of a batch's samples
        signal = max(0.0, mean_sq - unit_var / units)  # unbiased |G|^2
        self.accumulation.observe(batch_var, signal)

    def _step_optimizer(self) -> None:
        groups = self.optimizer.param_groups
        if self.schedule is not None:
            f = self.schedule.factor(self._first_batch)
            for g, base in zip(groups, self.base_lrs, strict=True):
                g["lr"] = base * f * self._k
            self.scaler.step(self.optimizer)
        elif self._k != 1:
            saved = [g["lr"] for g in groups]
            for g in groups:
                g["lr"] *= self._k
            self.scaler.step(self.optimizer)
            for g, lr in zip(groups, saved, strict=True):
                g["lr"] = lr
        else:
            self.scaler.step(self.optimizer)
        self.scaler.update()

    # ------------------------------------------------------------------ resume
    def state_dict(self) -> dict[str, Any]:
        """Counters, loss-scaler and adaptive-accumulation state (the model and optimizer
        are saved separately). Take it at a step boundary (``pending == 0``): gradients of
        a partly accumulated step are not part of it.

        Raises:
            RuntimeError: Batches are accumulated into an unfinished optimizer step.
        """
        if self._pending:
            raise StateError(
                f"state_dict() with {self._pending} batches accumulated into an unfinished "
                "optimizer step; checkpoint at a step boundary or flush() first"
            )
        return {
            "batches_seen": self.batches_seen,
            "optimizer_steps": self.optimizer_steps,
            "ks": list(self.ks),
            "scaler": self.scaler.state_dict(),
            "accumulation": self.accumulation.state_dict(),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.batches_seen = int(state["batches_seen"])
        self.optimizer_steps = int(state["optimizer_steps"])
        self.ks = list(state["ks"])
        if state["scaler"]:
            self.scaler.load_state_dict(state["scaler"])
        self.accumulation.load_state_dict(state.get("accumulation", {}))
