"""Zero-cost proxies: synflow and NWOT against answers worked out by hand, on every space the
suite uses, and the record's fallback when a proxy fails."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pytest
import torch
from torch import nn

from nasflow._logging import lines_to
from nasflow.errors import ConfigError
from nasflow.proxies import nwot, rank_last, synflow, zero_cost_scores
from nasflow.proxies._errors import ProxyError
from nasflow.proxies._nwot import hamming_kernel, is_activation
from nasflow.search_spaces.cifar_cnn import CIFARCNNSpace
from nasflow.search_spaces.gpt2 import GPT2Space
from nasflow.search_spaces.mnist1d import MNIST1DFrontSpace
from nasflow.space import Arch, SearchSpace, value_choice

W1 = [[1.0, -2.0], [0.0, 3.0], [-1.0, 1.0]]  # (3, 2)
W2 = [[2.0, -1.0, 1.0]]  # (1, 3)


def _linear(weight: list[list[float]], bias: list[float] | None = None) -> nn.Linear:
    w = torch.tensor(weight)
    layer = nn.Linear(w.shape[1], w.shape[0], bias=bias is not None)
    with torch.no_grad():
        layer.weight.copy_(w)
        if bias is not None:
            layer.bias.copy_(torch.tensor(bias))
    return layer


def _hooks(net: nn.Module) -> int:
    return sum(len(m._forward_hooks) + len(m._forward_pre_hooks) for m in net.modules())


# ---------------------------------------------------------------------------- synflow
def test_synflow_of_a_two_layer_net_is_worked_out_by_hand() -> None:
    """With positive weights and a ones input, R = |W2| |W1| 1 = 2*3 + 1*3 + 1*2 = 11; each
    layer's sum of theta * dR/dtheta is R (R is linear in each layer), so the score is 2R.
    The batch norm in between (scale -5) is the identity, as the reference code's copy
    without batch norm; the ReLU passes positive values."""
    bn = nn.BatchNorm1d(3)
    with torch.no_grad():
        bn.weight.fill_(-5.0)
    net = nn.Sequential(_linear(W1), bn, nn.ReLU(), _linear(W2))
    assert synflow(net, torch.randn(4, 2)) == pytest.approx(22.0, rel=1e-12)


def test_synflow_scores_weights_not_biases() -> None:
    """A bias adds to R but is not scored: layer 1 scores |W2||W1|1 = 11, layer 2 scores
    |W2| (|W1|1 + |b1|) = 11 + 2*1 + 1*2 + 1*0.5 = 15.5; total 26.5."""
    net = nn.Sequential(_linear(W1, bias=[-1.0, 2.0, 0.5]), nn.ReLU(), _linear(W2))
    assert synflow(net, torch.randn(4, 2)) == pytest.approx(26.5, rel=1e-12)


def test_synflow_leaves_the_network_as_it_was() -> None:
    net = nn.Sequential(_linear(W1), nn.BatchNorm1d(3), nn.ReLU(), _linear(W2)).train()
    before = {k: v.clone() for k, v in net.state_dict().items()}
    synflow(net, torch.randn(4, 2))
    after = net.state_dict()
    assert all(torch.equal(before[k], after[k]) for k in before)
    assert net.training and next(net.parameters()).dtype == torch.float32
    assert _hooks(net) == 0 and all(p.grad is None for p in net.parameters())


def test_synflow_feeds_token_models_ones_at_the_embeddings_output() -> None:
    """Two embeddings summed (token and position, as GPT-2) make an all-ones input to the
    linear layer: R = T * (|3| + |-4|) = 5 * 7; the one scored layer gives R."""

    class Tokens(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.wte, self.wpe = nn.Embedding(9, 2), nn.Embedding(5, 2)
            self.head = _linear([[3.0, -4.0]])

        def forward(self, ids: torch.Tensor) -> torch.Tensor:
            pos = torch.arange(ids.shape[1])
            return self.head(self.wte(ids) + self.wpe(pos))  # (B, T, 2) -> (B, T, 1)

    ids = torch.randint(0, 9, (3, 5))
    assert synflow(Tokens(), ids) == pytest.approx(35.0, rel=1e-12)
    with pytest.raises(ProxyError, match=r"no nn\.Embedding"):
        synflow(nn.Sequential(nn.Flatten(), nn.Linear(5, 1)), ids)


def test_synflow_bypasses_layer_norms_without_which_a_transformer_scores_zero(
    monkeypatch,
) -> None:
    """Every linear layer of GPT-2 reads a layer norm's output; on a constant input a layer
    norm returns its bias (0 at initialisation), so without the bypass every score is 0."""
    from nasflow.proxies import _synflow

    space = GPT2Space(vocab_size=11, block_size=8, n_layer=(2,), n_embd=(8,), n_head=(2,))
    net = space.build(Arch({"n_layer": 2, "n_embd": 8, "n_head": 2, "mlp_ratio": 2}))
    ids = torch.randint(0, 11, (4, 8))
    assert math.isfinite(synflow(net, ids)) and synflow(net, ids) > 0
    monkeypatch.setattr(_synflow, "NORMS", (nn.modules.batchnorm._BatchNorm,))
    assert synflow(net, ids) == 0.0


# ---------------------------------------------------------------------------- NWOT
def test_nwot_is_the_log_determinant_of_the_hamming_kernel_of_the_codes() -> None:
    """Codes 101, 001, 111: Hamming distances 1, 1, 2, so K = [[3,2,2],[2,3,1],[2,1,3]]
    and det K = 3*8 - 2*4 + 2*(-4) = 8. A GELU reads the same signs as a ReLU."""
    x = torch.tensor([[0.5, -1.0, 2.0], [-0.5, -2.0, 1.0], [1.0, 3.0, 0.1]])
    expected = torch.tensor(
        [[3.0, 2.0, 2.0], [2.0, 3.0, 1.0], [2.0, 1.0, 3.0]], dtype=torch.float64
    )
    assert torch.equal(hamming_kernel(x > 0), expected)
    assert nwot(nn.Sequential(nn.ReLU()), x) == pytest.approx(math.log(8.0), rel=1e-12)
    assert nwot(nn.Sequential(nn.GELU()), x) == pytest.approx(math.log(8.0), rel=1e-12)
    # Two activation layers add their kernels: 2K, det 2^3 * 8.
    twice = nwot(nn.Sequential(nn.ReLU(), nn.ReLU()), x)
    assert twice == pytest.approx(math.log(64.0), rel=1e-12)


def test_nwot_is_minus_infinity_where_two_inputs_share_every_code() -> None:
    x = torch.tensor([[0.5, -1.0], [0.2, -3.0], [-1.0, 1.0]])
    assert nwot(nn.Sequential(nn.ReLU()), x) == -math.inf


def test_nwot_runs_a_copy_in_train_mode_and_leaves_no_hook() -> None:
    with torch.random.fork_rng():
        torch.manual_seed(0)
        net = nn.Sequential(nn.Linear(3, 32), nn.BatchNorm1d(32), nn.ReLU()).eval()
        x = torch.randn(6, 3)
    stats = net[1].running_mean.clone()
    score = nwot(net, x)
    assert math.isfinite(score)
    assert not net.training and torch.equal(net[1].running_mean, stats) and _hooks(net) == 0
    with pytest.raises(ProxyError, match="no activation"):
        nwot(nn.Linear(3, 4), torch.randn(6, 3))


def test_hugging_face_activations_are_read() -> None:
    from transformers.activations import ACT2FN

    assert is_activation(ACT2FN["gelu_new"]) and not is_activation(nn.Linear(2, 2))


# ---------------------------------------------------------------------------- entry point
def _some(space: SearchSpace, n: int) -> list[Arch]:
    rng = np.random.default_rng(0)
    return [space.sample(rng) for _ in range(n)]


@pytest.mark.parametrize(
    ("space", "x"),
    [
        (MNIST1DFrontSpace(base_channels=8), torch.randn(16, 1, 40)),
        (CIFARCNNSpace(base_channels=8, image_size=8), torch.randn(16, 3, 8, 8)),
        (
            GPT2Space(vocab_size=13, block_size=8, n_embd=(8, 16), n_head=(2,)),
            torch.randint(0, 13, (16, 8)),
        ),
    ],
    ids=["mnist1d", "cifar_cnn", "gpt2"],
)
def test_every_suite_space_gets_finite_scores_reproducible_from_the_seed(space, x) -> None:
    archs = _some(space, 3)
    state = torch.random.get_rng_state()
    first = zero_cost_scores(space, archs, (x, None), seed=3)
    assert torch.equal(torch.random.get_rng_state(), state)  # the caller's state is kept
    again = zero_cost_scores(space, archs, x, seed=3)
    assert first.values == again.values and not first.failures
    assert all(math.isfinite(v) for vs in first.values.values() for v in vs)
    assert first.proxies == ("synflow", "nwot") and first.batch_size == 16
    assert set(first.seconds) == {"build", "synflow", "nwot"}
    other = zero_cost_scores(space, archs, x, proxies=("synflow",), seed=4)
    assert other.values["synflow"] != first.values["synflow"]  # another initialisation


class _Kinds(SearchSpace):
    """One choice: a network that NWOT can score, one without activations, one whose
    output is NaN."""

    def __init__(self) -> None:
        super().__init__([value_choice("kind", ["relu", "linear", "nan"])], name="kinds")

    def supernet(self) -> nn.Module:  # pragma: no cover - never trained
        raise NotImplementedError

    def build(self, arch: Mapping[str, Any]) -> nn.Module:
        layers = {
            "relu": [nn.Linear(3, 64), nn.ReLU()],
            "linear": [nn.Linear(3, 64)],
            "nan": [nn.Linear(3, 64), _NaN(), nn.ReLU()],
        }[arch["kind"]]
        return nn.Sequential(*layers)


class _NaN(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * math.nan


def test_a_failed_proxy_is_one_line_and_ranks_last() -> None:
    space = _Kinds()
    archs = [Arch({"kind": k}) for k in ("relu", "linear", "nan", "relu")]
    lines: list[str] = []
    x = torch.randn(5, 3, generator=torch.Generator().manual_seed(0))
    with lines_to(lines.append):
        scores = zero_cost_scores(space, archs, x)
    failed = {(f.proxy, f.index) for f in scores.failures}
    assert failed == {("nwot", 1), ("nwot", 2), ("synflow", 2)}
    assert lines == scores.lines() and len(lines) == 3
    assert "no activation modules" in lines[0] and "ranked below every" in lines[0]
    assert math.isnan(scores.values["nwot"][1])
    ranked = scores.ranking("nwot")
    assert ranked[1] == ranked[2] < min(ranked[0], ranked[3])
    assert scores.ranking("synflow")[2] < min(scores.values["synflow"][i] for i in (0, 1, 3))


def test_rank_last_puts_every_non_finite_score_below_every_finite_one() -> None:
    assert rank_last([2.0, None, -3.0, math.nan, math.inf]) == [2.0, -7.0, -3.0, -7.0, -7.0]
    assert rank_last([1e300, math.nan]) == [1e300, -1.0]  # no score below 0: -1
    assert rank_last([math.nan, None]) == [-1.0, -1.0]


def test_bad_arguments_are_one_clear_error() -> None:
    space = _Kinds()
    with pytest.raises(ConfigError, match=r"among \['nwot', 'synflow'\], got \['snip'\]"):
        zero_cost_scores(space, [], torch.randn(2, 3), proxies=("snip",))
    with pytest.raises(ConfigError, match="batch must be an input tensor"):
        zero_cost_scores(space, [], [])
    scores = zero_cost_scores(space, [Arch({"kind": "relu"})], torch.randn(2, 3))
    with pytest.raises(ConfigError, match="'jacob_cov' was not computed"):
        scores.ranking("jacob_cov")
