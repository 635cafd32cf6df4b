"""Two gloo ranks on CPU train a supernet exactly like one process on the global batch."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
import torch.distributed as dist
from torch import nn

from nasflow.sampling import FairSampler, UniformSampler
from nasflow.space import SearchSpace, op_choice
from nasflow.supernet import LayerChoice, Supernet, SuperSequential
from nasflow.train import supernet_step
from nasflow.train.stack import GradReducer, Stack, ddp_supernet_step, launch
from nasflow.train.stack._ddp import broadcast_module, shard
from tests._spaces import tiny_mnist1d

WORLD = 2
GLOBAL_BATCH = 16
OPS = ("conv3", "conv5", "skip")


class NoBNSpace(SearchSpace):
    """Two searchable conv layers without batch norm (batch statistics differ per rank)."""

    def __init__(self) -> None:
        super().__init__([op_choice(f"l{i}", OPS) for i in range(2)], name="test-no-bn")

    def supernet(self) -> Supernet:
        def op(name: str) -> nn.Module:
            if name == "skip":
                return nn.Identity()
            k = int(name[-1])
            return nn.Sequential(nn.Conv1d(4, 4, k, padding=k // 2), nn.Tanh())

        layers = [nn.Conv1d(1, 4, 3, padding=1)]
        layers += [LayerChoice(f"l{i}", {o: op(o) for o in OPS}) for i in range(2)]
        layers += [nn.Flatten(), nn.Linear(4 * 40, 10)]  # (B, 4, 40) -> (B, 160) -> (B, 10)
        return Supernet(self, SuperSequential(*layers))


def _schedule(space: SearchSpace) -> list[list]:
    """Two fair steps, then a uniform one (which leaves most ops without a gradient)."""
    fair, uniform = FairSampler(space, 7), UniformSampler(space, 7)
    return [fair.paths(0), fair.paths(1), uniform.paths(2)]


def _global_batch(step: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(100 + step)
    return torch.randn(GLOBAL_BATCH, 1, 40, generator=g), torch.randint(
        0, 10, (GLOBAL_BATCH,), generator=g
    )


def _fresh(space: SearchSpace) -> nn.Module:
    torch.manual_seed(0)
    return space.supernet()


def _worker(rank: int, world: int, out: str) -> None:
    calls: list[int] = []
    real = dist.all_reduce

    def counting(*args, **kwargs):  # instruments the real collective
        calls.append(1)
        return real(*args, **kwargs)

    dist.all_reduce = counting
    space = NoBNSpace()
    torch.manual_seed(rank)  # different weights per rank until the broadcast
    supernet = space.supernet()
    broadcast_module(supernet)
    opt = torch.optim.AdamW(supernet.parameters(), lr=1e-2, weight_decay=0.1)
    reducer = GradReducer()
    record = {"paths": [], "losses": [], "allreduce_per_step": []}
    for step, paths in enumerate(_schedule(space)):
        x, y = _global_batch(step)
        before = len(calls)
        loss = ddp_supernet_step(
            supernet, paths, shard(x, rank, world), shard(y, rank, world), opt, reducer
        )
        record["allreduce_per_step"].append(len(calls) - before)
        record["paths"].append([p.to_json() for p in paths])
        record["losses"].append(loss)
    record["no_grad"] = [n for n, p in supernet.named_parameters() if p.grad is None]
    torch.save(supernet.state_dict(), Path(out) / f"rank{rank}.pt")
    # With batch norm: W ranks == one process accumulating W micro-batches (StackStep).
    bn_space = tiny_mnist1d()
    bn = _fresh(bn_space)
    bn_opt = torch.optim.SGD(bn.parameters(), lr=0.1)
    step = Stack().build(bn, bn_opt, reducer=reducer)
    paths = FairSampler(bn_space, 1).paths(0)
    x, y = _global_batch(9)
    step(shard(x, rank, world), shard(y, rank, world), paths)
    torch.save(bn.state_dict(), Path(out) / f"bn{rank}.pt")
    record["reducer_calls"] = reducer.calls
    (Path(out) / f"rank{rank}.json").write_text(json.dumps(record))


@pytest.mark.slow
def test_two_gloo_ranks_match_one_process_with_the_global_batch(tmp_path: Path) -> None:
    launch(_worker, WORLD, args=(str(tmp_path),), backend="gloo")
    records = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in range(WORLD)]
    states = [torch.load(tmp_path / f"rank{r}.pt", weights_only=True) for r in range(WORLD)]

    # The single-process reference: the same schedule on the global batch.
    space = NoBNSpace()
    ref = _fresh(space)  # rank 0's initial weights, which the broadcast gave every rank
    opt = torch.optim.AdamW(ref.parameters(), lr=1e-2, weight_decay=0.1)
    ref_losses = []
    for step, paths in enumerate(_schedule(space)):
        ref_losses.append(supernet_step(ref, paths, *_global_batch(step), opt))

    for rec, state in zip(records, states, strict=True):
        assert rec["paths"] == records[0]["paths"]  # identical paths on every rank
        assert rec["allreduce_per_step"] == [1, 1, 1]  # one all-reduce per (fair) step
        assert rec["reducer_calls"] == 4  # three supernet steps + one StackStep
        for got, want in zip(rec["losses"], ref_losses, strict=True):
            assert abs(got - want) <= 1e-5
        for name, value in ref.state_dict().items():
            torch.testing.assert_close(state[name], value, rtol=0, atol=1e-5)
        # The last (uniform) step left the unused ops without gradients on every rank.
        assert rec["no_grad"] == [n for n, p in ref.named_parameters() if p.grad is None]
        assert rec["no_grad"]

    bn_space = tiny_mnist1d()
    bn = _fresh(bn_space)
    acc = Stack(micro_batch=GLOBAL_BATCH // WORLD).build(bn, torch.optim.SGD(bn.parameters(), 0.1))
    acc(*_global_batch(9), FairSampler(bn_space, 1).paths(0))
    for r in range(WORLD):
        got = torch.load(tmp_path / f"bn{r}.pt", weights_only=True)
        for name, p in bn.named_parameters():
            torch.testing.assert_close(got[name], p.detach(), rtol=0, atol=1e-5)
