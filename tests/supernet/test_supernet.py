from __future__ import annotations

import copy

import numpy as np
import pytest
import torch
from torch import nn

from nasflow.search_spaces.mnist1d import MNIST1DSpace
from nasflow.space import SearchSpace, op_choice, value_choice
from nasflow.supernet import (
    Channels,
    ElasticBatchNorm1d,
    ElasticConv1d,
    LayerChoice,
    SuperModule,
    Supernet,
    SuperSequential,
    recalibrate_bn,
)
from tests._spaces import CellSpace, tiny_mnist1d


def _train_a_little(supernet: nn.Module, space, steps: int = 3) -> None:
    """Move BN statistics and weights away from their init so equality is not trivial."""
    opt = torch.optim.SGD(supernet.parameters(), lr=0.05)
    rng = np.random.default_rng(0)
    supernet.train()
    for _ in range(steps):
        path = space.path(space.sample(rng)) if space.hyper_choices else space.sample(rng)
        loss = supernet(torch.randn(16, 1, 40), path).logsumexp(-1).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()


@pytest.mark.slow
@pytest.mark.parametrize("make_space", [MNIST1DSpace, tiny_mnist1d, CellSpace])
def test_extract_equals_supernet_on_that_path(make_space) -> None:
    torch.manual_seed(0)
    space = make_space()
    supernet = space.supernet()
    _train_a_little(supernet, space)
    supernet.eval()
    x = torch.randn(32, 1, 40)
    rng = np.random.default_rng(123)
    for _ in range(12):
        arch = space.sample(rng)
        with torch.no_grad():
            want = supernet(x, arch)
            net = supernet.extract(arch)
            got = net(x)
        assert not net.training
        assert not any(isinstance(m, SuperModule) for m in net.modules())
        assert (got - want).abs().max().item() <= 1e-6, arch


def test_extract_copies_weights_instead_of_sharing_them() -> None:
    space = tiny_mnist1d()
    supernet = space.supernet().eval()
    arch = space.sample(0)
    net = supernet.extract(arch)
    super_ptrs = {p.data_ptr() for p in supernet.parameters()}
    assert not super_ptrs & {p.data_ptr() for p in net.parameters()}
    # Widths are materialised: the extracted net is smaller than the supernet.
    assert sum(p.numel() for p in net.parameters()) < sum(p.numel() for p in supernet.parameters())


def test_forward_keeps_no_active_path_state() -> None:
    space = tiny_mnist1d()
    supernet = space.supernet().eval()
    a, b = space.sample(1), space.sample(2)
    assert a != b
    x = torch.randn(8, 1, 40)
    with torch.no_grad():
        ya = supernet(x, a)
        supernet(x, b)
        assert torch.equal(supernet(x, a), ya)
    state = {k: v.clone() for k, v in supernet.state_dict().items()}
    with torch.no_grad():
        supernet(x, b)
    assert all(torch.equal(state[k], v) for k, v in supernet.state_dict().items())


def test_forward_rejects_a_foreign_path() -> None:
    space = tiny_mnist1d()
    supernet = space.supernet()
    arch = space.sample(0).to_dict()
    with pytest.raises(ValueError, match="'s1/l0'"):
        supernet(torch.randn(2, 1, 40), {**arch, "s1/l0": "k7_e2"})
    with pytest.raises(ValueError, match="missing label 'width'"):
        supernet(torch.randn(2, 1, 40), {k: v for k, v in arch.items() if k != "width"})


def test_elastic_batchnorm_updates_only_the_active_slice() -> None:
    ch = Channels.scaled("w", 8, (0.5, 1.0))
    bn = ElasticBatchNorm1d(ch).train()
    x = torch.randn(16, 4, 10) * 3 + 2
    bn(x, {"w": 0.5})
    assert torch.all(bn.running_mean[:4] != 0)
    assert torch.all(bn.running_mean[4:] == 0) and torch.all(bn.running_var[4:] == 1)
    ref = nn.BatchNorm1d(4).train()
    ref(x)
    torch.testing.assert_close(bn.running_mean[:4], ref.running_mean)
    torch.testing.assert_close(bn.running_var[:4], ref.running_var)


def test_recalibrate_bn_re_estimates_statistics_for_the_path() -> None:
    torch.manual_seed(0)
    space = tiny_mnist1d()
    supernet = space.supernet()
    _train_a_little(supernet, space)
    arch = space.sample(5)
    batches = [(torch.randn(32, 1, 40) * 2 + 1, torch.zeros(32)) for _ in range(6)]
    used = recalibrate_bn(supernet, batches, num_batches=4, arch=arch)
    assert used == 4 and not supernet.training
    # The statistics equal a plain average over exactly those 4 batches of this path.
    net = copy.deepcopy(supernet).extract(arch)
    for m in net.modules():
        if isinstance(m, nn.BatchNorm1d):
            m.reset_running_stats()
            m.momentum = None
    net.train()
    with torch.no_grad():
        for x, _ in batches[:4]:
            net(x)
    net.eval()
    recal = supernet.extract(arch)
    for a, b in zip(recal.modules(), net.modules(), strict=True):
        if isinstance(a, nn.BatchNorm1d):
            torch.testing.assert_close(a.running_mean, b.running_mean)
            torch.testing.assert_close(a.running_var, b.running_var)
            assert a.momentum == 0.1  # restored
    with pytest.raises(ValueError, match="num_batches"):
        recalibrate_bn(supernet, batches, 0, arch=arch)


class _LabelSpace(SearchSpace):
    """A one-layer space whose supernet can be built with mismatching labels."""

    def __init__(self, ops=("a", "b"), candidates=("a", "b"), label="layer", widths=(0.5, 1.0)):
        super().__init__(
            [op_choice("layer", ops), value_choice("width", [0.5, 1.0])], name="labels"
        )
        self.cands, self.label, self.widths = candidates, label, widths

    def supernet(self) -> Supernet:
        ch = Channels.scaled("width", 4, self.widths)
        layer = LayerChoice(self.label, {c: ElasticConv1d(ch, ch, 3) for c in self.cands})
        return Supernet(self, SuperSequential(layer))


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"label": "layr"}, r"LayerChoice\('layr'\), but space 'labels' declares no op_choice"),
        ({"candidates": ("a", "c")}, r"holds candidates \['a', 'c'\], but the space's op_choice"),
        ({"candidates": ("a",)}, r"holds candidates \['a'\]"),
        ({"widths": (1.0,)}, r"has no width for its values \[0.5\]"),
    ],
)
def test_supernet_labels_are_checked_against_the_space(kwargs, message) -> None:
    _LabelSpace().supernet()  # matching labels build
    with pytest.raises(ValueError, match=message):
        _LabelSpace(**kwargs).supernet()


def test_a_declared_op_choice_no_layer_reads_is_refused() -> None:
    class Unread(_LabelSpace):
        def __init__(self) -> None:
            SearchSpace.__init__(
                self,
                [op_choice("layer", ("a", "b")), op_choice("extra", ("x", "y"))],
                name="unread",
            )
            self.cands, self.label, self.widths = ("a", "b"), "layer", (1.0,)

        def supernet(self) -> Supernet:
            layer = LayerChoice("layer", {c: nn.Identity() for c in self.cands})
            return Supernet(self, SuperSequential(layer))

    with pytest.raises(ValueError, match="declares op_choice 'extra', but no LayerChoice"):
        Unread().supernet()
