"""The step timer: a clock read after the device's work, and steps timed through a Stack."""

from __future__ import annotations

import time

import pytest
import torch
from torch import nn

from nasflow.train import measure_step_time
from nasflow.train.stack import Stack, StepTimer, device_clock


def _net() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))


def _batch(n: int = 12) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(1)
    return torch.randn(n, 8, generator=g), torch.randint(0, 3, (n,), generator=g)


def test_cpu_clocks_are_read_directly_and_never_synchronise() -> None:
    calls: list[torch.device] = []
    name, clock = device_clock("cpu", cpu_time=True, sync=calls.append)
    assert clock is time.thread_time and name == "thread CPU time"
    name, clock = device_clock("cpu", sync=calls.append)
    assert clock is time.perf_counter and name == "wall time"
    clock()
    assert calls == []


@pytest.mark.parametrize("device", ["cuda", "cuda:1", "mps"])
def test_an_accelerators_clock_waits_for_its_work_before_every_read(device: str) -> None:
    calls: list[torch.device] = []
    # CPU time is not an accelerator's time: the clock is wall time either way.
    name, clock = device_clock(device, cpu_time=True, sync=calls.append)
    assert name == "wall time"
    t0 = clock()
    t1 = clock()
    assert calls == [torch.device(device)] * 2 and t1 >= t0


def test_timed_steps_exclude_the_warm_up_and_train_through_the_stack() -> None:
    model = _net()
    before = [p.detach().clone() for p in model.parameters()]
    timer = StepTimer(model, device="cpu")
    seconds = timer(*_batch(), 3, warmup=2)
    assert len(seconds) == 3 and all(s > 0 for s in seconds)
    assert timer.step.optimizer_steps == 5 and timer.step.batches_seen == 5
    assert any(not torch.equal(a, b) for a, b in zip(before, model.parameters(), strict=True))
    assert timer.clock_name == "wall time"
    assert StepTimer(_net(), cpu_time=True).clock is time.thread_time


def test_a_timed_step_is_one_optimizer_step_of_k_batches_per_batch() -> None:
    timer = StepTimer(_net(), Stack(accumulation=3))
    seconds = timer(*_batch(), 2, warmup=1)
    assert len(seconds) == 2
    assert timer.step.optimizer_steps == 3 and timer.step.batches_seen == 9
    assert timer.step.ks == [3, 3, 3] and timer.step.pending == 0
    adaptive = StepTimer(_net(), Stack(accumulation="adaptive", k_max=2))
    assert len(adaptive(*_batch(), 3)) == 3
    assert adaptive.step.optimizer_steps == 3 and adaptive.step.pending == 0


def test_the_stacks_precision_runs_the_timed_forward_passes() -> None:
    seen: list[torch.dtype] = []
    model = _net()
    model[0].register_forward_hook(lambda _m, _i, out: seen.append(out.dtype))
    StepTimer(model, Stack(amp="bf16"))(*_batch(), 1)
    assert seen == [torch.bfloat16]
    seen.clear()
    StepTimer(model, Stack())(*_batch(), 1)
    assert seen == [torch.float32]


def test_measure_step_time_is_a_median_that_leaves_the_weights_alone() -> None:
    model = _net()
    before = [p.detach().clone() for p in model.parameters()]
    seconds = measure_step_time(model, *_batch(), repeats=3, warmup=1, stack=Stack(amp="bf16"))
    assert seconds > 0
    assert all(torch.equal(a, b) for a, b in zip(before, model.parameters(), strict=True))
