"""The step timer: seconds of training steps through a ``Stack``, on a synchronised clock.

Every timing of training work in nasflow reads its clock here: the cost model's op table
and calibration steps, ``cost="measure"``, and the stack's harness. A clock read on an
accelerator first waits for the device's queued work (``synchronize``), so a GPU's
kernels are timed, not their launches. On a CPU there is nothing to wait for, and the
clock is either wall time or, where a shared machine's load must not count (the cost
table), the calling thread's CPU time.
"""

from __future__ import annotations

import copy
import statistics
import time
from collections.abc import Callable

import torch
from torch import nn

from nasflow.train._loop import make_optimizer
from nasflow.train.stack._config import Stack

#: Clock names (``device_clock``), as recorded with the cost table.
THREAD_CPU, WALL = "thread CPU time", "wall time"


def synchronize(device: torch.device) -> None:
    """Wait until ``device`` has finished its queued work (CUDA, MPS; nothing on a CPU)."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    elif device.type == "mps":
        torch.mps.synchronize()


def device_clock(
    device: torch.device | str,
    *,
    cpu_time: bool = False,
    sync: Callable[[torch.device], None] = synchronize,
) -> tuple[str, Callable[[], float]]:
    """``(name, clock)``: a clock whose every read comes after the device's queued work.

    Args:
        device: What runs the timed work.
        cpu_time: On a CPU device, the calling thread's CPU time (a loaded machine steals
            wall time from a thread, not the CPU time it gets) instead of wall time.
            Elsewhere the clock is wall time either way: a GPU's work is not the host
            thread's CPU time.
        sync: Waits for a device's work (``synchronize``); never called on a CPU.
    """
    dev = torch.device(device)
    if dev.type == "cpu":
        return (THREAD_CPU, time.thread_time) if cpu_time else (WALL, time.perf_counter)

    def clock() -> float:
        sync(dev)
        return time.perf_counter()

    return WALL, clock


class StepTimer:
    """Times training steps of one network through a speedup stack.

    The network trains (in place) with AdamW (learning rate 1e-3, no weight decay) through
    ``stack.build``: autocast, accumulation, compile and the other layers as the stack
    says. A timed step is one optimizer step, ``k`` batches with accumulation ``k``; its
    figure is seconds per batch, so that a step time times the number of batches is a
    training cost.

    Args:
        model: The network (moved to ``device``; trained in place).
        stack: The speedup stack (``None``: ``Stack()``, plain fp32 eager).
        device: Where to train.
        cpu_time: Time with the thread's CPU time on a CPU (see ``device_clock``).
        sync: Waits for a device's work (see ``device_clock``).
    """

    def __init__(
        self,
        model: nn.Module,
        stack: Stack | None = None,
        device: torch.device | str = "cpu",
        *,
        cpu_time: bool = False,
        sync: Callable[[torch.device], None] = synchronize,
    ) -> None:
        self.device = torch.device(device)
        self.stack = stack or Stack()
        self.clock_name, self.clock = device_clock(self.device, cpu_time=cpu_time, sync=sync)
        self.model = model.to(self.device).train()
        optimizer = make_optimizer(self.model.parameters(), 1e-3, 0.0)
        self.step = self.stack.build(self.model, optimizer, self.device)
        acc = self.stack.accumulation
        self._max_batches = self.stack.k_max if acc == "adaptive" else int(acc)

    def __call__(
        self, x: torch.Tensor, y: torch.Tensor, steps: int = 1, *, warmup: int = 0
    ) -> list[float]:
        """Seconds per batch of each of ``steps`` timed steps on the batch ``(x, y)``,
        after ``warmup`` untimed ones."""
        x, y = x.to(self.device), y.to(self.device)
        for _ in range(warmup):
            self._timed(x, y)
        return [self._timed(x, y) for _ in range(steps)]

    def _timed(self, x: torch.Tensor, y: torch.Tensor) -> float:
        taken, seen = self.step.optimizer_steps, self.step.batches_seen
        t0 = self.clock()
        for _ in range(self._max_batches):  # a step takes at most k (or k_max) batches
            self.step(x, y)
            if self.step.optimizer_steps > taken:
                break
        return (self.clock() - t0) / (self.step.batches_seen - seen)


def measure_step_time(
    model: nn.Module,
    x: torch.Tensor,
    y: torch.Tensor,
    repeats: int = 5,
    warmup: int = 2,
    *,
    stack: Stack | None = None,
) -> float:
    """Median wall seconds of one training step of ``model`` through ``stack`` (see
    ``StepTimer``) on the batch ``(x, y)``, on ``x``'s device.

    The model is trained on a deep copy so its weights are untouched.
    """
    timer = StepTimer(copy.deepcopy(model), stack, x.device)
    return statistics.median(timer(x, y, repeats, warmup=warmup))
