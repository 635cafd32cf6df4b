"""Supernet training interrupted and resumed is bit-identical to an uninterrupted run."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import torch
from torch.utils.data import TensorDataset

from nasflow._logging import lines_to
from nasflow.train import (
    SupernetConfig,
    SupernetTrainer,
    TrainingInterrupted,
    list_checkpoints,
    load_checkpoint,
)
from tests._spaces import tiny_mnist1d

STEPS_PER_EPOCH = 4  # 64 samples / batch 16
CONFIG = SupernetConfig(epochs=2, batch_size=16, warmup_epochs=0.5, seed=3)


def _data() -> TensorDataset:
    g = torch.Generator().manual_seed(0)
    return TensorDataset(
        torch.randn(64, 1, 40, generator=g), torch.randint(0, 10, (64,), generator=g)
    )


def _assert_identical(a, b, where: str = "state") -> None:
    """Every tensor equal bit for bit (``torch.equal``), every other value equal."""
    if isinstance(a, torch.Tensor):
        assert isinstance(b, torch.Tensor) and a.dtype == b.dtype, where
        assert torch.equal(a, b), where
    elif isinstance(a, dict):
        assert a.keys() == b.keys(), where
        for k in a:
            _assert_identical(a[k], b[k], f"{where}[{k!r}]")
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _assert_identical(x, y, f"{where}[{i}]")
    else:
        assert a == b, f"{where}: {a!r} != {b!r}"


def _state(checkpoint: dict) -> dict:
    """A checkpoint without its training seconds (a clock's reading, not training state)."""
    return {k: v for k, v in checkpoint.items() if k != "seconds"}


def _stop_after(n_steps: int):
    """A ``should_stop`` that asks to stop once ``n_steps`` steps have run in this process."""
    calls = {"n": 0}

    def should_stop() -> bool:
        calls["n"] += 1
        return calls["n"] >= n_steps

    return should_stop


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> dict:
    folder = tmp_path_factory.mktemp("uninterrupted")
    result = SupernetTrainer(tiny_mnist1d(), _data(), CONFIG, folder).fit()
    state = load_checkpoint(folder / "epoch-2.pt")
    assert result.resumed_from is None and state["losses"] == result.losses
    return state


@pytest.mark.slow
@pytest.mark.parametrize(
    ("stops", "kind"),
    [
        ([STEPS_PER_EPOCH], "epoch boundary"),  # polled after steps 1..3, then at the epoch end
        ([6], "mid-epoch"),  # stop after step 6: batch 2 of epoch 2
        ([2, 5], "twice, mid-epoch"),  # batch 2 of epoch 1, then batch 3 of epoch 2
    ],
)
def test_interrupted_and_resumed_training_is_bit_identical(
    tmp_path: Path, reference: dict, stops: list[int], kind: str
) -> None:
    space, data = tiny_mnist1d(), _data()
    positions = []
    for n in stops:
        trainer = SupernetTrainer(space, data, CONFIG, tmp_path, should_stop=_stop_after(n))
        with pytest.raises(TrainingInterrupted) as info:
            trainer.fit()
        assert info.value.checkpoint is not None and info.value.checkpoint.is_file()
        positions.append(info.value.checkpoint.name)
        torch.manual_seed(12345)  # disturb the global generator: the checkpoint restores it
        torch.randn(100)
    t0 = time.perf_counter()
    result = SupernetTrainer(space, data, CONFIG, tmp_path).fit()
    print(f"[{kind}] stopped at {positions}; resume + finish took {time.perf_counter() - t0:.2f}s")
    assert result.resumed_at is not None
    final = load_checkpoint(tmp_path / "epoch-2.pt")
    # The training seconds are a clock's, not state: summed over the runs, never reset.
    assert 0 < final["seconds"] <= result.seconds  # (read before the file was written)
    _assert_identical(_state(final), _state(reference))  # model, optimizer, RNG, counts...
    _assert_identical(result.supernet.state_dict(), reference["model"], "model")
    if kind == "epoch boundary":
        assert positions == ["epoch-1.pt"] and tuple(result.resumed_at) == (1, 0)
    elif kind == "mid-epoch":
        assert positions == ["epoch-1-batch-2.pt"] and tuple(result.resumed_at) == (1, 2)


def test_a_finished_supernet_is_loaded_not_resumed(tmp_path: Path) -> None:
    """Training a finished supernet again trains nothing, says it loaded the one an
    earlier run trained (it said "resumed supernet training from epoch 2", whichever
    process had trained it: a worker of an earlier run, say) and keeps that training's
    seconds."""
    space, data = tiny_mnist1d(), _data()
    config = SupernetConfig(epochs=1, batch_size=16, seed=3)
    first = SupernetTrainer(space, data, config, tmp_path).fit()
    logs: list[str] = []
    with lines_to(logs.append):
        again = SupernetTrainer(space, data, config, tmp_path).fit()
    assert tuple(again.resumed_at) == (1, 0) and again.epochs_done == 1
    # Its cost is the training it loaded (it reported ~0 s, which the study recorded): the
    # checkpoint's seconds, as of its writing.
    stored = load_checkpoint(tmp_path / "epoch-1.pt")["seconds"]
    assert first.seconds >= stored > 0 and again.seconds >= stored
    assert "supernet: loaded the one an earlier run trained (1 epoch)" in logs, logs
    assert not any("resumed" in m for m in logs), logs


@pytest.mark.slow
def test_periodic_mid_epoch_checkpoints_keep_one_fallback(tmp_path: Path, reference: dict) -> None:
    space, data = tiny_mnist1d(), _data()
    trainer = SupernetTrainer(
        space, data, CONFIG, tmp_path, checkpoint_every=1, should_stop=_stop_after(7)
    )
    with pytest.raises(TrainingInterrupted):
        trainer.fit()
    names = [p.name for _, p in list_checkpoints(tmp_path)]
    # Step 7 = batch 3 of epoch 2; batch 2 stays as the fallback, epoch 1 made batch 1..3
    # of epoch 1 redundant.
    assert names == ["epoch-1-batch-3.pt", "epoch-1-batch-2.pt", "epoch-1.pt"]
    (tmp_path / names[0]).write_bytes(b"cut off")  # the newest is corrupt: use the fallback
    logs: list[str] = []
    with lines_to(logs.append):
        result = SupernetTrainer(space, data, CONFIG, tmp_path).fit()
    assert tuple(result.resumed_at) == (1, 2)
    assert any("skipping" in m for m in logs)
    _assert_identical(_state(load_checkpoint(tmp_path / "epoch-2.pt")), _state(reference))
    with pytest.raises(ValueError, match="-1"):
        SupernetTrainer(space, data, CONFIG, tmp_path, checkpoint_every=-1)
