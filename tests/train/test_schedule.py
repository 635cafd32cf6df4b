"""``warmup_cosine`` (PyTorch's LinearLR + CosineAnnealingLR) against the former LambdaLR."""

from __future__ import annotations

import math

import pytest
import torch

from nasflow.train import load_checkpoint, save_checkpoint, warmup_cosine
from nasflow.train._loop import load_schedule_state

CASES = [(1, 0), (2, 1), (5, 0), (12, 3), (40, 4), (100, 99), (100, 250), (300, 30)]


def _former(optimizer: torch.optim.Optimizer, total_steps: int, warmup_steps: int):
    """``warmup_cosine`` before it used PyTorch's schedulers, verbatim."""
    total = max(1, total_steps)
    warm = min(max(0, warmup_steps), total - 1)

    def factor(step: int) -> float:
        if step < warm:
            return (step + 1) / (warm + 1)
        progress = min(1.0, (step - warm) / max(1, total - warm))
        return 0.5 * (1.0 + math.cos(math.pi * progress))

    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)


def _optimizer(lr: float = 0.3) -> torch.optim.Optimizer:
    return torch.optim.SGD([torch.nn.Parameter(torch.zeros(2))], lr=lr)


def _rates(opt: torch.optim.Optimizer, sched, steps: int) -> list[float]:
    out = []
    for _ in range(steps):
        out.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    return out


@pytest.mark.parametrize(("total", "warm"), CASES)
def test_the_per_step_rates_are_the_former_ones(total: int, warm: int) -> None:
    new_opt, old_opt = _optimizer(), _optimizer()
    new = _rates(new_opt, warmup_cosine(new_opt, total, warm), total)
    old = _rates(old_opt, _former(old_opt, total, warm), total)
    assert new == pytest.approx(old, rel=1e-12, abs=1e-15)
    assert new_opt.param_groups[0]["lr"] == pytest.approx(0.0, abs=1e-15)  # after the last


@pytest.mark.parametrize(("total", "warm", "at"), [(40, 4, 2), (40, 4, 17), (30, 0, 9)])
def test_a_checkpoint_resumes_the_same_rates(tmp_path, total: int, warm: int, at: int) -> None:
    opt = _optimizer()
    sched = warmup_cosine(opt, total, warm)
    _rates(opt, sched, at)
    path = save_checkpoint(tmp_path / "c.pt", {"scheduler": sched.state_dict()})
    rest = _rates(opt, sched, total - at)
    fresh_opt = _optimizer()
    fresh = warmup_cosine(fresh_opt, total, warm)
    load_schedule_state(fresh, load_checkpoint(path)["scheduler"])  # weights_only load
    fresh_opt.param_groups[0]["lr"] = rest[0]  # what the optimizer's own state restores
    assert _rates(fresh_opt, fresh, total - at) == pytest.approx(rest, rel=1e-12, abs=1e-15)


def test_a_checkpoint_of_the_former_lambdalr_resumes_the_same_rates(tmp_path) -> None:
    total, warm, at = 40, 4, 11
    old_opt = _optimizer()
    old = _former(old_opt, total, warm)
    _rates(old_opt, old, at)
    path = save_checkpoint(tmp_path / "c.pt", {"scheduler": old.state_dict()})
    want = _rates(old_opt, old, total - at)
    opt = _optimizer()
    sched = warmup_cosine(opt, total, warm)
    load_schedule_state(sched, load_checkpoint(path)["scheduler"])
    assert sched.last_epoch == at
    assert _rates(opt, sched, total - at) == pytest.approx(want, rel=1e-12, abs=1e-15)
