"""The compile layer: switching supernet paths must not recompile after warm-up.

The tests use the ``eager`` backend (dynamo tracing and guards, no code generation): the
recompilation behaviour is decided by dynamo's guards, whatever backend then compiles
the graph, and inductor takes about a minute per graph on a 2-core CPU.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

from nasflow.sampling import FairSampler, UniformSampler
from nasflow.search_spaces.mnist1d import MNIST1DSpace
from nasflow.train.stack import Stack
from nasflow.train.stack._compile import CompileCounter, CompiledBlocks


def _space() -> MNIST1DSpace:
    return MNIST1DSpace(
        base_channels=4, layers_per_stage=1, ops=("k3_e2", "skip"), widths=(0.5, 1.0)
    )


def _batch(seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(8, 1, 40, generator=g), torch.randint(0, 10, (8,), generator=g)


@pytest.mark.slow
def test_switching_supernet_paths_does_not_recompile_after_warm_up() -> None:
    space = _space()
    torch.manual_seed(0)
    supernet = space.supernet()
    eager = copy.deepcopy(supernet)
    step = Stack(compile=True, compile_backend="eager").build(
        supernet, torch.optim.SGD(supernet.parameters(), lr=0.05)
    )
    ref = Stack().build(eager, torch.optim.SGD(eager.parameters(), lr=0.05))
    assert isinstance(step.model, CompiledBlocks)
    x, y = _batch(0)
    for path in space.enumerate():  # warm-up: every (block, width) pair once
        assert step(x, y, [path]) == pytest.approx(ref(x, y, [path]), rel=1e-5)
    warm = step.compilations
    assert 0 < warm <= step.model.max_graphs
    fair, uniform = FairSampler(space, 3), UniformSampler(space, 4)
    for s in range(6):
        xb, yb = _batch(s + 1)
        paths = fair.paths(s) if s % 2 else uniform.paths(s)
        assert step(xb, yb, paths) == pytest.approx(ref(xb, yb, paths), rel=1e-5)
    assert step.compilations == warm
    for p, q in zip(supernet.parameters(), eager.parameters(), strict=True):
        torch.testing.assert_close(p, q, rtol=1e-4, atol=1e-6)
    # The compiled forwards are only installed during a step: extraction sees plain modules.
    net = supernet.extract(space.sample(np.random.default_rng(0)))
    assert all("forward" not in vars(m) for m in [*supernet.modules(), *net.modules()])


@pytest.mark.slow
def test_compiling_the_whole_supernet_recompiles_per_path() -> None:
    # The trap the layer avoids: guards on the path make every new path a new graph.
    space = _space()
    supernet = space.supernet()
    counter = CompileCounter("eager")
    compiled = torch.compile(supernet, backend=counter)
    x, _ = _batch(0)
    seen = []
    for path in list(space.enumerate())[:4]:
        compiled(x, path)
        seen.append(counter.compilations)
    assert seen[-1] > seen[0]


def test_a_stand_alone_network_compiles_once() -> None:
    space = _space()
    net = space.build(space.sample(np.random.default_rng(1)))
    plain = copy.deepcopy(net)
    step = Stack(compile=True, compile_backend="eager").build(
        net, torch.optim.AdamW(net.parameters(), lr=1e-2)
    )
    ref = Stack().build(plain, torch.optim.AdamW(plain.parameters(), lr=1e-2))
    for s in range(4):
        assert step(*_batch(s)) == pytest.approx(ref(*_batch(s)), rel=1e-5)
    assert step.compilations == 1
    assert set(net.state_dict()) == set(plain.state_dict())  # the original keeps its keys


def test_inductor_on_cpu_needs_a_cpp_compiler(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "")
    net = _space().build(_space().sample(np.random.default_rng(0)))
    with pytest.raises(ValueError, match="C\\+\\+ compiler"):
        Stack(compile=True).build(net, torch.optim.SGD(net.parameters(), lr=0.1), "cpu")


def test_unknown_backend_is_refused() -> None:
    with pytest.raises(ValueError, match="warp-drive"):
        CompileCounter("warp-drive")


def test_compile_with_checkpointing_is_refused_for_a_supernet() -> None:
    supernet = _space().supernet()
    with pytest.raises(ValueError, match="Supernet"):
        Stack(compile=True, checkpointing=True, compile_backend="eager").build(
            supernet, torch.optim.SGD(supernet.parameters(), lr=0.1)
        )
