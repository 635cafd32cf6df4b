"""``train_epochs``: a stand-alone training stopped on request is checkpointed where it
stopped and resumed there exactly; a checkpoint of another training is not resumed."""

from __future__ import annotations

from pathlib import Path

import pytest

from nasflow._logging import lines_to
from nasflow.train import (
    Batches,
    EpochTrainer,
    TrainConfig,
    TrainingInterrupted,
    list_checkpoints,
    train_epochs,
)
from tests.train.test_trainer_stack import _data, _net, _same_tensors, _stop_after

RECIPE = TrainConfig(epochs=3, batch_size=16, lr=1e-2)


def _trainer() -> EpochTrainer:
    return EpochTrainer(_net(), Batches(_data(), 16, seed=1, drop_last=True), RECIPE)


def test_a_stopped_training_resumes_from_its_checkpoint_exactly(tmp_path: Path) -> None:
    ref = _trainer()
    want = train_epochs(ref)
    lines: list[str] = []
    first = _trainer()
    calls = {"n": 0}

    def stop_in_epoch_2() -> bool:  # polled after every step but an epoch's last
        calls["n"] += 1
        return calls["n"] == 6  # epoch 2, step 1 (4 polls in epoch 1, 1 between epochs)

    with pytest.raises(TrainingInterrupted) as stopped:
        train_epochs(first, folder=tmp_path, identity="a", should_stop=stop_in_epoch_2)
    assert "training at epoch 2, batch 1" in str(stopped.value)
    assert stopped.value.checkpoint == tmp_path / "epoch-1-batch-1.pt"
    assert [p.name for _, p in list_checkpoints(tmp_path)] == ["epoch-1-batch-1.pt", "epoch-1.pt"]

    second = _trainer()
    with lines_to(lines.append):
        got = train_epochs(second, folder=tmp_path, identity="a")
    assert lines == ["training: resumed from its checkpoint at epoch 2, batch 1"]
    _same_tensors(second.model.state_dict(), ref.model.state_dict())
    assert got == want  # epoch 1's loss came from the checkpoint


def test_a_stop_between_epochs_and_another_trainings_checkpoint(tmp_path: Path) -> None:
    first = _trainer()
    with pytest.raises(TrainingInterrupted, match="after epoch 1"):
        train_epochs(first, folder=tmp_path, identity="a", should_stop=_stop_after(5))
    lines: list[str] = []
    other = _trainer()
    with lines_to(lines.append):
        train_epochs(other, until=1, folder=tmp_path, identity="b")
    assert lines == [
        f"training: the checkpoints in {str(tmp_path)!r} are of another training; starting over"
    ]
    assert other.epoch == 1  # trained from the start, not resumed at epoch 1
