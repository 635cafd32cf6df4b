from __future__ import annotations

import pytest
import torch
from torch.utils.data import TensorDataset

from nasflow.data import DataBundle
from nasflow.data._batches import EVAL_BATCH_SIZE


def _bundle(n: int = 1100) -> DataBundle:
    def split(offset: int) -> TensorDataset:
        x = torch.arange(offset, offset + n, dtype=torch.float32).reshape(n, 1)
        return TensorDataset(x, torch.zeros(n, dtype=torch.long))

    return DataBundle(split(0), split(10_000), split(20_000), (1,), 2, "counting")


def _samples(batches, epoch: int = 0) -> list[list[float]]:
    return [x.flatten().tolist() for x, _ in batches.epoch(epoch)]


def test_training_batches_are_whole_and_reshuffled_every_epoch_from_the_seed() -> None:
    data = _bundle()
    train = data.batches("train", 64, seed=3)
    first, second = _samples(train, 0), _samples(train, 1)
    assert len(train) == len(first) == 1100 // 64 and {len(b) for b in first} == {64}
    assert first != second  # another order every epoch
    assert _samples(data.batches("train", 64, seed=3), 1) == second  # the seed fixes it
    assert _samples(data.batches("train", 64, seed=4), 0) != first
    assert all(0 <= v < 1100 for b in first for v in b)


@pytest.mark.parametrize(("split", "offset"), [("val", 10_000), ("test", 20_000)])
def test_evaluation_batches_read_every_sample_in_order(split: str, offset: int) -> None:
    batches = _bundle().batches(split)
    got = _samples(batches)
    assert [len(b) for b in got] == [EVAL_BATCH_SIZE, EVAL_BATCH_SIZE, 1100 - 2 * EVAL_BATCH_SIZE]
    assert [v for b in got for v in b] == [float(offset + i) for i in range(1100)]


def test_an_unknown_split_or_batch_size_is_refused() -> None:
    with pytest.raises(ValueError, match=r"split must be one of .* got 'dev'"):
        _bundle().batches("dev")
    with pytest.raises(ValueError, match="batch_size must be an int >= 1, got 0"):
        _bundle().batches("train", 0)
