"""In-place distillation: the teacher runs without gradient (strict fairness holds), each
path's loss mixes the labels and the teacher's soft targets, the recipe checks its values."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from nasflow.data import MNIST1DVariant, load_mnist1d
from nasflow.sampling import FairSampler
from nasflow.space import Arch
from nasflow.train import SupernetConfig, SupernetTrainer
from nasflow.train._distill import Distillation, largest_path
from nasflow.train._supernet import OpCounter
from nasflow.train.stack import Stack
from tests._spaces import CellSpace, tiny_mnist1d
from tests.train.test_supernet_step import _candidate_params


def _n_params(space, arch: Arch) -> int:
    return sum(p.numel() for p in space.build(arch).parameters())


def test_largest_path_has_the_most_parameters_of_every_path() -> None:
    space = tiny_mnist1d()
    largest = largest_path(space)
    assert set(largest) == {c.label for c in space.path_choices}
    best = _n_params(space, largest)
    rng = np.random.default_rng(0)
    others = [space.sample(rng) for _ in range(30)]
    assert all(_n_params(space, a) < best for a in others if space.path(a) != largest)


def test_teacher_only_ops_get_no_gradient_and_no_update() -> None:
    torch.manual_seed(0)
    space = CellSpace(with_hypers=False)
    supernet = space.supernet().train()
    opt = torch.optim.AdamW(supernet.parameters(), lr=1e-2, weight_decay=0.5)
    x, y = torch.randn(16, 1, 40), torch.randint(0, 10, (16,))
    teacher = Arch({c.label: "conv3" for c in space.path_choices})
    step = Stack().build(supernet, opt, distill=Distillation(teacher, 0.5, 2.0))
    step(x, y, FairSampler(space, 0).paths(0))  # every op trained: AdamW state everywhere
    path = Arch({c.label: "conv1" for c in space.path_choices})  # never uses 'conv3'
    before = {
        label: {
            k: v.detach().clone() for k, v in _candidate_params(supernet, label, "conv3").items()
        }
        for label in path
    }
    step(x, y, [path])
    for label, params in before.items():
        for name, p in _candidate_params(supernet, label, "conv3").items():
            assert p.grad is None, (label, name)
            assert torch.equal(p, params[name]), (label, name)


def test_each_path_loss_mixes_labels_and_the_teachers_soft_targets() -> None:
    torch.manual_seed(0)
    space = tiny_mnist1d()
    supernet = space.supernet().eval()  # no batch-norm updates: both passes see one net
    x, y = torch.randn(8, 1, 40), torch.randint(0, 10, (8,))
    teacher, path = largest_path(space), FairSampler(space, 1).paths(0)[0]
    weight, t = 0.25, 3.0
    with torch.no_grad():
        soft = F.softmax(supernet(x, teacher) / t, dim=-1)
    logits = supernet(x, path)
    kl = (soft * (soft.log() - F.log_softmax(logits / t, dim=-1))).sum(-1).mean()
    want = (1 - weight) * F.cross_entropy(logits, y) + weight * t * t * kl
    want.backward()
    grads = {n: p.grad.clone() for n, p in supernet.named_parameters() if p.grad is not None}
    supernet.zero_grad(set_to_none=True)
    opt = torch.optim.SGD(supernet.parameters(), lr=0.0)
    step = Stack().build(supernet, opt, distill=Distillation(teacher, weight, t))
    loss = step(x, y, [path])
    assert loss == pytest.approx(want.item(), rel=1e-5)
    got = {n: p.grad for n, p in supernet.named_parameters() if p.grad is not None}
    assert got.keys() == grads.keys()
    for n, g in grads.items():
        torch.testing.assert_close(got[n], g, rtol=1e-4, atol=1e-6)


def test_distilled_supernet_trains_fairly_and_its_identity_names_the_distillation() -> None:
    data = load_mnist1d(variant=MNIST1DVariant(train_samples=300, test_samples=100))
    space = tiny_mnist1d()
    cfg = SupernetConfig(epochs=1, batch_size=64, distill="inplace", distill_weight=0.5)
    trainer = SupernetTrainer(space, data.train, cfg)
    assert trainer.distill is not None and trainer.distill.path == largest_path(space)
    result = trainer.fit()
    assert all(torch.isfinite(torch.tensor(result.losses)))
    counts = OpCounter(space)
    for step in range(len(trainer.batches)):
        counts.update(trainer.sampler.paths(step))
    assert result.op_counts.state_dict() == counts.state_dict()  # the fair paths only
    assert "distill" in cfg.identity() and "distill" not in SupernetConfig().identity()


@pytest.mark.parametrize(
    ("field", "value", "match"),
    [
        ("distill", "bignas", "distill must be None or one of 'inplace'"),
        ("distill_weight", 1.0, "distill_weight must be a number strictly between 0 and 1"),
        ("distill_weight", 0, "got 0"),
        ("distill_temperature", 0.0, "distill_temperature must be a finite number > 0"),
    ],
)
def test_bad_distillation_settings_name_the_value(field: str, value: object, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        SupernetConfig(**{field: value})
