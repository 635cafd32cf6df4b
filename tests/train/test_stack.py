from __future__ import annotations

import copy
import dataclasses
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from nasflow.sampling import FairSampler
from nasflow.train import NonFiniteLossError, supernet_step, warmup_cosine
from nasflow.train.stack import LAYER_SPECS, LAYERS, ActivationMeter, Schedule, Stack
from nasflow.train.stack._accumulation import AdaptiveAccumulation, adaptive_k, schedule_factor
from nasflow.train.stack._config import LayerSpec
from nasflow.train.stack._gate import largest_micro_batch, measured_step_bytes
from tests._spaces import tiny_mnist1d


def _plain_net(seed: int = 0) -> nn.Module:
    """A network without batch norm, so split batches give exactly the same gradients."""
    torch.manual_seed(seed)
    return nn.Sequential(
        nn.Conv1d(1, 4, 3, padding=1), nn.ReLU(), nn.Flatten(), nn.Linear(4 * 40, 10)
    )


def _batch(n: int = 16, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, 1, 40, generator=g), torch.randint(0, 10, (n,), generator=g)


def _same(a: nn.Module, b: nn.Module) -> bool:
    return all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters(), strict=True))


def test_stack_off_is_exactly_the_hand_written_step() -> None:
    net = tiny_mnist1d().build(tiny_mnist1d().sample(np.random.default_rng(0)))
    a, b = copy.deepcopy(net), copy.deepcopy(net)
    opt_a = torch.optim.AdamW(a.parameters(), lr=1e-2, weight_decay=0.1)
    opt_b = torch.optim.AdamW(b.parameters(), lr=1e-2, weight_decay=0.1)
    step = Stack().build(b, opt_b)
    assert step.model is b and step.layers == [] and not step.scaler.is_enabled()
    for i in range(3):
        x, y = _batch(seed=i)
        loss = F.cross_entropy(a(x), y)
        opt_a.zero_grad(set_to_none=True)
        loss.backward()
        opt_a.step()
        assert step(x, y) == loss.item()
    assert _same(a, b) and step.optimizer_steps == 3


def test_stack_off_on_a_supernet_is_exactly_supernet_step() -> None:
    space = tiny_mnist1d()
    torch.manual_seed(0)
    sn = space.supernet()
    other = copy.deepcopy(sn)
    opt, opt2 = torch.optim.SGD(sn.parameters(), 0.1), torch.optim.SGD(other.parameters(), 0.1)
    step = Stack().build(other, opt2)
    sampler = FairSampler(space, 0)
    for s in range(2):
        x, y = _batch(seed=s)
        assert step(x, y, sampler.paths(s)) == pytest.approx(
            supernet_step(sn, sampler.paths(s), x, y, opt), rel=1e-6
        )
    assert _same(sn, other)


def test_accumulating_k_batches_is_one_step_on_their_union_at_k_times_the_lr() -> None:
    # The linear scaling rule: k batches of b at lr*k == one batch of k*b at lr*k.
    a, b = _plain_net(), _plain_net()
    opt_a = torch.optim.SGD(a.parameters(), lr=0.2)
    step = Stack(accumulation=2).build(b, torch.optim.SGD(b.parameters(), lr=0.1))
    (x1, y1), (x2, y2) = _batch(8, 1), _batch(8, 2)
    F.cross_entropy(a(torch.cat([x1, x2])), torch.cat([y1, y2])).backward()
    opt_a.step()
    step(x1, y1)
    assert step.optimizer_steps == 0  # half-way through the accumulation
    step(x2, y2)
    assert step.optimizer_steps == 1 and step.ks == [2]
    for p, q in zip(a.parameters(), b.parameters(), strict=True):
        torch.testing.assert_close(p, q, rtol=1e-5, atol=1e-6)
    assert step.optimizer.param_groups[0]["lr"] == 0.1  # restored after the step


def test_micro_batches_give_the_full_batch_gradient() -> None:
    a, b = _plain_net(), _plain_net()
    x, y = _batch(10)
    Stack().build(a, torch.optim.SGD(a.parameters(), lr=0.5))(x, y)
    Stack(micro_batch=3).build(b, torch.optim.SGD(b.parameters(), lr=0.5))(x, y)
    for p, q in zip(a.parameters(), b.parameters(), strict=True):
        torch.testing.assert_close(p, q, rtol=1e-5, atol=1e-6)


def test_a_flushed_partial_step_uses_its_own_batches_for_the_lr() -> None:
    a, b = _plain_net(), _plain_net()
    x, y = _batch(8)
    Stack().build(a, torch.optim.SGD(a.parameters(), lr=0.1))(x, y)
    step = Stack(accumulation=4).build(b, torch.optim.SGD(b.parameters(), lr=0.1))
    step(x, y)
    assert step.flush() and not step.flush()
    assert step.ks == [1]
    for p, q in zip(a.parameters(), b.parameters(), strict=True):
        torch.testing.assert_close(p, q, rtol=1e-5, atol=1e-6)


def test_schedule_matches_warmup_cosine_and_scales_with_k() -> None:
    total, warm = 12, 3
    net = _plain_net()
    ref_opt = torch.optim.SGD(_plain_net().parameters(), lr=0.5)
    ref = warmup_cosine(ref_opt, total, warm)
    want = []
    for _ in range(total):
        want.append(ref_opt.param_groups[0]["lr"])
        ref_opt.step()
        ref.step()
    assert [0.5 * schedule_factor(i, total, warm) for i in range(total)] == pytest.approx(want)
    opt = torch.optim.SGD(net.parameters(), lr=0.5)
    step = Stack(accumulation=2).build(net, opt, schedule=Schedule(total, warm))
    seen = []
    opt.register_step_pre_hook(lambda o, *_: seen.append(o.param_groups[0]["lr"]))
    x, y = _batch(4)
    for _ in range(total):
        step(x, y)
    assert seen == pytest.approx([2 * want[i] for i in range(0, total, 2)])


def test_clipping_bounds_the_update() -> None:
    net = _plain_net()
    before = [p.detach().clone() for p in net.parameters()]
    step = Stack(clip_norm=1e-3).build(net, torch.optim.SGD(net.parameters(), lr=1.0))
    step(*_batch())
    moved = math.sqrt(
        sum(
            float((p.detach() - b).pow(2).sum())
            for p, b in zip(net.parameters(), before, strict=True)
        )
    )
    assert 0 < moved <= 1e-3 * (1 + 1e-5)


def test_adaptive_k_rule() -> None:
    assert adaptive_k(0.0, 1.0, 8) == 1
    assert adaptive_k(3.0, 1.0, 8) == 3
    assert adaptive_k(3.5, 1.0, 8) == 4
    assert adaptive_k(100.0, 1.0, 8) == 8
    assert adaptive_k(float("nan"), 1.0, 8) == 8


def test_adaptive_accumulation_grows_k_for_noisy_gradients_only() -> None:
    # Identical samples: every half-batch has the same gradient, zero variance: k stays 1.
    net = _plain_net()
    step = Stack(accumulation="adaptive", k_max=6).build(
        net, torch.optim.SGD(net.parameters(), lr=0.0)
    )
    x, y = _batch(1)
    for _ in range(3):
        step(x.repeat(16, 1, 1), y.repeat(16))
    assert step.ks == [1, 1, 1]
    # Random labels on random inputs: the gradient is mostly noise, so k climbs to k_max.
    net = _plain_net()
    step = Stack(accumulation="adaptive", k_max=6).build(
        net, torch.optim.SGD(net.parameters(), lr=0.0)
    )
    for i in range(12):
        step(*_batch(8, i))
    assert isinstance(step.accumulation, AdaptiveAccumulation)
    assert step.ks[0] == 1 and max(step.ks) == 6


def test_checkpointing_keeps_gradients_and_bn_statistics_and_saves_activations() -> None:
    space = tiny_mnist1d()
    torch.manual_seed(0)
    net = space.build(space.sample(np.random.default_rng(1)))
    a, b = copy.deepcopy(net), copy.deepcopy(net)
    plain = Stack().build(a, torch.optim.SGD(a.parameters(), lr=0.1))
    ckpt = Stack(checkpointing=True).build(b, torch.optim.SGD(b.parameters(), lr=0.1))
    meters = ActivationMeter(), ActivationMeter()
    for i in range(2):
        x, y = _batch(32, i)
        with meters[0].active():
            plain(x, y)
        with meters[1].active():
            ckpt(x, y)
    for p, q in zip(a.parameters(), b.parameters(), strict=True):
        torch.testing.assert_close(p, q, rtol=1e-5, atol=1e-6)
    for s, t in zip(a.buffers(), b.buffers(), strict=True):  # BN updated once per forward
        torch.testing.assert_close(s, t)
    assert meters[1].peak < 0.7 * meters[0].peak


def test_checkpointing_a_supernet_matches_supernet_step() -> None:
    space = tiny_mnist1d()
    torch.manual_seed(0)
    sn = space.supernet()
    other = copy.deepcopy(sn)
    opt = torch.optim.SGD(sn.parameters(), 0.1)
    step = Stack(checkpointing=True).build(other, torch.optim.SGD(other.parameters(), 0.1))
    paths = FairSampler(space, 0).paths(0)
    x, y = _batch()
    supernet_step(sn, paths, x, y, opt)
    step(x, y, paths)
    for p, q in zip(sn.parameters(), other.parameters(), strict=True):
        torch.testing.assert_close(p, q, rtol=1e-5, atol=1e-6)


def test_bf16_autocast_runs_on_cpu_and_halves_saved_activations() -> None:
    net = tiny_mnist1d().build(tiny_mnist1d().sample(np.random.default_rng(0)))
    a, b = copy.deepcopy(net), copy.deepcopy(net)
    meters = ActivationMeter(), ActivationMeter()
    x, y = _batch(32)
    with meters[0].active():
        fp32 = Stack().build(a, torch.optim.SGD(a.parameters(), 0.1))(x, y)
    with meters[1].active():
        bf16 = Stack(amp="bf16").build(b, torch.optim.SGD(b.parameters(), 0.1))(x, y)
    assert bf16 == pytest.approx(fp32, rel=0.05)
    assert meters[1].peak < 0.75 * meters[0].peak
    assert all(p.dtype == torch.float32 for p in b.parameters())


def test_non_finite_loss_raises_and_leaves_the_weights() -> None:
    net = _plain_net()
    before = copy.deepcopy(net)
    step = Stack(accumulation=2).build(net, torch.optim.SGD(net.parameters(), lr=0.1))
    step(*_batch())
    with pytest.raises(NonFiniteLossError, match="nan"):
        step(torch.full((4, 1, 40), float("nan")), torch.zeros(4, dtype=torch.long))
    assert _same(net, before) and step.optimizer_steps == 0
    assert all(p.grad is None for p in net.parameters())


def test_fp16_is_refused_on_cpu() -> None:
    net = _plain_net()
    with pytest.raises(ValueError, match=r"fp16.*cpu"):
        Stack(amp="fp16").build(net, torch.optim.SGD(net.parameters(), 0.1), "cpu")


@pytest.mark.parametrize(
    ("kwargs", "bad"),
    [
        ({"amp": "fp8"}, "fp8"),
        ({"accumulation": 0}, "0"),
        ({"accumulation": "sometimes"}, "sometimes"),
        ({"compile": "yes"}, "yes"),
        ({"clip_norm": -1.0}, "-1.0"),
        ({"k_max": 0}, "0"),
        ({"micro_batch": 0}, "0"),
        ({"threads": 0}, "0"),
        ({"noise_target": float("inf")}, "inf"),
    ],
)
def test_bad_settings_are_refused_naming_the_value(kwargs: dict, bad: str) -> None:
    with pytest.raises(ValueError, match=bad):
        Stack(**kwargs)


def test_enabled_layers_and_round_trip() -> None:
    assert Stack().enabled == ()
    s = Stack().with_layers(LAYERS)
    assert s.enabled == LAYERS and s.amp == "bf16" and s.accumulation == 2
    assert Stack.from_dict(s.to_dict()) == s
    with pytest.raises(ValueError, match="warp"):
        Stack().with_layers(["warp"])
    with pytest.raises(ValueError, match="turbo"):
        Stack.from_dict({"turbo": True})
    assert [type(x).__name__ for x in s.layers()] == [
        "FlushDenormal",
        "Threads",
        "MixedPrecision",
        "Checkpointing",
        "Compile",
    ]


@pytest.mark.parametrize("spec", LAYER_SPECS, ids=lambda spec: spec.name)
def test_each_layer_is_declared_once_and_switches_alone(spec: LayerSpec) -> None:
    off = {f.name: f.default for f in dataclasses.fields(Stack)}
    assert spec.name in off and spec.valid(off[spec.name]) and spec.valid(spec.on)
    alone = Stack().with_layers([spec.name])
    assert alone.enabled == (spec.name,) and getattr(alone, spec.name) == spec.on
    built = alone.layers()
    assert [x.name for x in built] == ([spec.name] if spec.build is not None else [])
    with pytest.raises(ValueError, match=f"{spec.name} must be"):
        Stack(**{spec.name: "bogus"})


def test_threads_and_denormal_layers_hold_only_during_the_step() -> None:
    net = _plain_net()
    seen = []
    net.register_forward_hook(lambda *_: seen.append(torch.get_num_threads()))
    before = torch.get_num_threads()
    want = 1 if before > 1 else 2
    step = Stack(threads=want, denormal=True).build(net, torch.optim.SGD(net.parameters(), 0.1))
    step(*_batch())
    assert seen == [want] and torch.get_num_threads() == before
    assert torch.tensor([1e-40]).mul(1.0).item() != 0.0  # denormals are back on


def test_memory_fit_picks_the_largest_micro_batch_within_budget() -> None:
    assert largest_micro_batch(64, 1000.0, lambda m: 100.0 + 10.0 * m) == 64
    assert largest_micro_batch(64, 500.0, lambda m: 100.0 + 10.0 * m) == 40
    with pytest.raises(ValueError, match="one sample"):
        largest_micro_batch(64, 50.0, lambda m: 100.0 + 10.0 * m)
    with pytest.raises(ValueError, match="-1"):
        largest_micro_batch(64, -1, lambda m: 1.0)
    net = _plain_net()
    x, y = _batch(1)
    bytes_for = measured_step_bytes(net, x[0], y[0])
    assert bytes_for(1) < bytes_for(8) < bytes_for(32)
    m = largest_micro_batch(32, bytes_for(10), bytes_for)
    assert m == 10 and Stack(micro_batch=m).micro_batch == 10
