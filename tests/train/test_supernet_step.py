from __future__ import annotations

import numpy as np
import pytest
import torch

from nasflow.sampling import FairSampler
from nasflow.space import Arch
from nasflow.supernet import LayerChoice
from nasflow.train import NonFiniteLossError, supernet_step
from nasflow.train._supernet import OpCounter
from tests._spaces import CellSpace, tiny_mnist1d


def _candidate_params(supernet, label: str, value: str) -> dict[str, torch.Tensor]:
    for m in supernet.modules():
        if isinstance(m, LayerChoice) and m.label == label:
            return dict(m.candidates[value].named_parameters())
    raise AssertionError(label)


def test_ops_on_no_path_get_no_gradient_and_no_update_with_adamw_decay() -> None:
    torch.manual_seed(0)
    space = CellSpace(with_hypers=False)
    supernet = space.supernet().train()
    opt = torch.optim.AdamW(supernet.parameters(), lr=1e-2, weight_decay=0.5)
    x, y = torch.randn(16, 1, 40), torch.randint(0, 10, (16,))
    # Step 1 trains every op (a fair step), so every op has AdamW state afterwards.
    supernet_step(supernet, FairSampler(space, 0).paths(0), x, y, opt)
    # Step 2 trains a single path that never uses 'conv3'.
    path = Arch({c.label: "conv1" for c in space.path_choices})
    before = {
        label: {
            k: v.detach().clone() for k, v in _candidate_params(supernet, label, "conv3").items()
        }
        for label in path
    }
    used_before = {
        k: v.detach().clone() for k, v in _candidate_params(supernet, "cell/1<-0", "conv1").items()
    }
    supernet_step(supernet, [path], x, y, opt)
    for label, params in before.items():
        for name, p in _candidate_params(supernet, label, "conv3").items():
            assert p.grad is None, (label, name)
            assert torch.equal(p, params[name]), (label, name)  # bit-identical: no decay drift
    moved = _candidate_params(supernet, "cell/1<-0", "conv1")
    assert any(not torch.equal(moved[k], v) for k, v in used_before.items())


def test_fair_step_trains_every_op_once_and_takes_one_optimizer_step() -> None:
    torch.manual_seed(0)
    space = tiny_mnist1d()
    supernet = space.supernet().train()
    opt = torch.optim.SGD(supernet.parameters(), lr=0.1)
    steps = []
    opt.register_step_post_hook(lambda *_: steps.append(1))
    paths = FairSampler(space, 3).paths(0)
    counter = OpCounter(space)
    x, y = torch.randn(8, 1, 40), torch.randint(0, 10, (8,))
    supernet_step(supernet, paths, x, y, opt)
    counter.update(paths)
    assert len(steps) == 1
    for label, per_value in counter.state_dict().items():
        m = len(space.choice(label).values)
        assert sum(per_value.values()) == 3
        assert all(n == 3 // m or n == -(-3 // m) for n in per_value.values())
    # Every parametrised candidate received a gradient in this one step.
    for m in supernet.modules():
        if isinstance(m, LayerChoice):
            for name, cand in m.candidates.items():
                for p in cand.parameters():
                    assert p.grad is not None and p.grad.abs().sum() > 0, (m.label, name)


def test_fair_step_gradient_is_the_sum_of_the_path_gradients() -> None:
    torch.manual_seed(0)
    space = tiny_mnist1d()
    supernet = space.supernet().train()
    paths = FairSampler(space, 0).paths(1)
    x, y = torch.randn(8, 1, 40), torch.randint(0, 10, (8,))
    want = {n: torch.zeros_like(p) for n, p in supernet.named_parameters()}
    for path in paths:
        supernet.zero_grad(set_to_none=True)
        torch.nn.functional.cross_entropy(supernet(x, path), y).backward()
        for n, p in supernet.named_parameters():
            if p.grad is not None:
                want[n] += p.grad
    opt = torch.optim.SGD(supernet.parameters(), lr=0.0)
    supernet_step(supernet, paths, x, y, opt)
    for n, p in supernet.named_parameters():
        torch.testing.assert_close(p.grad, want[n], rtol=1e-5, atol=1e-6)


def test_non_finite_loss_raises_and_takes_no_step() -> None:
    space = tiny_mnist1d()
    supernet = space.supernet()
    opt = torch.optim.SGD(supernet.parameters(), lr=0.1)
    before = {k: v.detach().clone() for k, v in supernet.named_parameters()}
    x = torch.full((4, 1, 40), float("nan"))
    with pytest.raises(NonFiniteLossError, match="nan"):
        supernet_step(
            supernet,
            [space.sample(np.random.default_rng(0))],
            x,
            torch.zeros(4, dtype=torch.long),
            opt,
        )
    after = dict(supernet.named_parameters())
    assert all(torch.equal(v, after[k]) for k, v in before.items())
