"""The real ``SupernetTrainer`` on 2 gloo ranks ends with the weights of one process."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
import torch.distributed as dist
from torch.utils.data import TensorDataset

from nasflow.train import SupernetConfig, SupernetTrainer, list_checkpoints
from nasflow.train.stack import Stack, launch
from tests.train.test_ddp import NoBNSpace  # no batch norm: per-rank statistics would differ

WORLD = 2
CONFIG = SupernetConfig(epochs=1, batch_size=16, warmup_epochs=0.5, seed=3)  # 4 global steps
STACKS = {"plain": None, "accumulation": Stack(accumulation=2)}
SEEN: list[int] = []  # batch sizes the supernet saw in this process


class ShardSpace(NoBNSpace):
    """``NoBNSpace`` whose supernet records the batch size of every forward pass."""

    def supernet(self):
        net = super().supernet()
        net.register_forward_pre_hook(lambda _m, args: SEEN.append(int(args[0].shape[0])))
        return net


def _data() -> TensorDataset:
    g = torch.Generator().manual_seed(0)
    return TensorDataset(
        torch.randn(64, 1, 40, generator=g), torch.randint(0, 10, (64,), generator=g)
    )


def _worker(rank: int, world: int, out: str) -> None:
    calls: list[int] = []
    real = dist.all_reduce

    def counting(*args, **kwargs):  # instruments the real collective
        calls.append(1)
        return real(*args, **kwargs)

    dist.all_reduce = counting
    torch.manual_seed(100 + rank)  # the trainer seeds, then broadcasts rank 0's weights
    record = {}
    for name, stack in STACKS.items():
        before = len(calls)
        SEEN.clear()
        trainer = SupernetTrainer(ShardSpace(), _data(), CONFIG, Path(out) / name, stack=stack)
        result = trainer.fit()
        torch.save(result.supernet.state_dict(), Path(out) / f"{name}-{rank}.pt")
        record[name] = {
            "world": trainer.world_size,
            "writer": trainer.writer,
            "all_reduces": len(calls) - before,
            "losses": result.losses,
            "batch_sizes": sorted(set(SEEN)),
        }
    (Path(out) / f"rank{rank}.json").write_text(json.dumps(record))


@pytest.mark.slow
def test_supernet_trainer_on_two_gloo_ranks_matches_one_process(tmp_path: Path) -> None:
    launch(_worker, WORLD, args=(str(tmp_path),), backend="gloo")
    records = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in range(WORLD)]
    for name, stack in STACKS.items():
        ref = SupernetTrainer(ShardSpace(), _data(), CONFIG, stack=stack).fit()
        for rank, rec in enumerate(records):
            assert rec[name]["world"] == WORLD
            assert rec[name]["batch_sizes"] == [CONFIG.batch_size // WORLD]  # its shard only
            assert rec[name]["writer"] == (rank == 0)  # only rank 0 writes checkpoints
            # One all-reduce per optimizer step: 4 fair steps, or 2 accumulating 2 batches.
            assert rec[name]["all_reduces"] == (4 if stack is None else 2)
            state = torch.load(tmp_path / f"{name}-{rank}.pt", weights_only=True)
            for key, value in ref.supernet.state_dict().items():
                torch.testing.assert_close(state[key], value, rtol=0, atol=1e-5)
        if stack is None:  # ddp_supernet_step returns the global batch's loss
            assert abs(records[0][name]["losses"][0] - ref.losses[0]) <= 1e-5
        names = [p.name for _, p in list_checkpoints(tmp_path / name)]
        assert names == ["epoch-1.pt"]
