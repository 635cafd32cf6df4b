"""``recalibrate_bn`` (on ``torch.optim.swa_utils.update_bn``) against the former loop."""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any

import pytest
import torch
from torch import nn
from torch.nn.modules.batchnorm import _BatchNorm

from nasflow.supernet import recalibrate_bn
from nasflow.supernet._base import call
from tests._spaces import tiny_mnist1d
from tests.supernet.test_supernet import _train_a_little


@torch.no_grad()
def _former_recalibrate_bn(
    model: nn.Module, batches: Iterable[Any], num_batches: int, arch: Mapping[str, Any]
) -> int:
    """The hand-written loop ``recalibrate_bn`` was before it called ``update_bn``."""
    bns = [m for m in model.modules() if isinstance(m, _BatchNorm)]
    saved = [(m, m.momentum) for m in bns]
    for m in bns:
        m.reset_running_stats()
        m.momentum = None
    model.train()
    used = 0
    for batch in batches:
        if used >= num_batches:
            break
        call(model, batch[0], arch)
        used += 1
    for m, momentum in saved:
        m.momentum = momentum
    model.eval()
    return used


def test_statistics_are_bit_identical_to_the_former_loop() -> None:
    torch.manual_seed(0)
    space = tiny_mnist1d()
    supernet = space.supernet()
    _train_a_little(supernet, space)
    batches = [(torch.randn(32, 1, 40) * 2 + 1, torch.zeros(32)) for _ in range(6)]
    for seed in range(3):
        arch = space.sample(seed)
        new, old = copy.deepcopy(supernet), copy.deepcopy(supernet)
        assert recalibrate_bn(new, iter(batches), 4, arch=arch) == 4
        assert _former_recalibrate_bn(old, iter(batches), 4, arch) == 4
        assert not new.training
        for (name, a), (_, b) in zip(
            new.state_dict().items(), old.state_dict().items(), strict=True
        ):
            assert torch.equal(a, b), name
        # Fewer batches than asked: all of them are used and counted.
        assert recalibrate_bn(new, batches[:2], 4, arch=arch) == 2


def test_momenta_are_restored_when_a_forward_pass_raises() -> None:
    net = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4, momentum=0.3))
    with pytest.raises(RuntimeError):
        recalibrate_bn(net, [torch.randn(8, 3), torch.randn(8, 5)], 2)
    assert net[1].momentum == 0.3 and not net.training
    with pytest.raises(ValueError, match="no batches"):
        recalibrate_bn(net, [], 2)


def test_a_network_without_batch_norm_runs_no_batch() -> None:
    net = nn.Sequential(nn.Linear(3, 4), nn.LayerNorm(4))
    before = copy.deepcopy(net.state_dict())
    assert recalibrate_bn(net, [torch.randn(8, 3)], 2) == 0
    assert all(torch.equal(v, before[k]) for k, v in net.state_dict().items())
