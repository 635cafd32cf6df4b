"""A study never mixes scores measured on other data or with other recipes: the data's
fingerprint, the recipes, the BN batches and the cost estimator belong to its identity,
and its supernet checkpoints carry the data's fingerprint."""

from __future__ import annotations

import shutil
import sqlite3

import optuna
import pytest

from nasflow.cli import main
from nasflow.pipeline import StudyRunner
from nasflow.record import SCORING_KEY, StudyMismatchError
from nasflow.search import load_study_file
from nasflow.train import CheckpointError
from tests._study_template import write_study

FAST = "study = study.replace(cost='measure')"  # (the cost model measures every op: slow)
OTHER_DATA = (
    FAST
    + """
_old_data = data
def data():
    b = _old_data()
    g = torch.Generator().manual_seed(1)
    x = torch.randn(600, 1, 40, generator=g)
    y = (x[:, 0, :20].sum(1) > x[:, 0, 20:].sum(1)).long()
    ds = lambda a, c: TensorDataset(x[a:c], y[a:c])
    return DataBundle(ds(0, 400), ds(400, 500), ds(500, 600), (1, 40), 10, "synthetic")
study = study.replace(data=data)
"""
)
EPOCHS_3 = FAST + "\nstudy = study.replace(train=TrainConfig(epochs=3, batch_size=50))"
BN_4 = FAST + "\nstudy = study.replace(bn_batches=4)"


def _runner(tmp_path, n_trials: int, extra: str = FAST, runs: str = "runs") -> StudyRunner:
    spec = load_study_file(write_study(tmp_path, n_trials=n_trials, finetune=0, extra=extra))
    return StudyRunner(spec, out_dir=tmp_path / runs, progress=False, log=lambda _: None)


def _db(tmp_path, runs: str = "runs"):
    return tmp_path / runs / "tiny" / "study.db"


def _trials(tmp_path) -> int:
    study = optuna.load_study(study_name="tiny", storage=f"sqlite:///{_db(tmp_path)}")
    return len(study.trials)


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        (OTHER_DATA, "data '"),
        (EPOCHS_3, "train.epochs 2 in the study, 3 here"),
        (BN_4, "bn_batches 2 in the study, 4 here"),
    ],
    ids=["data", "train-epochs", "bn-batches"],
)
def test_other_data_or_recipe_is_refused_in_one_line(tmp_path, capsys, extra, says) -> None:
    _runner(tmp_path, 2).run(retrain=False)
    size = _db(tmp_path).stat().st_size
    with pytest.raises(StudyMismatchError, match="scored with other data or settings"):
        _runner(tmp_path, 4, extra).run(retrain=False)
    for _ in tmp_path.glob("runs/tiny/supernet/*.pt"):  # also with the checkpoints gone
        _.unlink()
    study_file = write_study(tmp_path, n_trials=4, finetune=0, extra=extra)
    args = ["search", str(study_file), "--runs", str(tmp_path / "runs"), "--no-progress"]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and says in err, err
    assert "give the study a new name" in err
    assert _trials(tmp_path) == 2 and _db(tmp_path).stat().st_size == size
    assert not list(tmp_path.glob("runs/tiny/supernet/*.pt"))  # nothing was trained


def test_a_checkpoint_trained_on_other_data_is_refused(tmp_path) -> None:
    _runner(tmp_path, 1).run(retrain=False)
    _runner(tmp_path, 1, OTHER_DATA, runs="other").run(retrain=False)
    mine = tmp_path / "runs" / "tiny" / "supernet"
    shutil.rmtree(mine)
    mine.mkdir()
    shutil.copy(tmp_path / "other" / "tiny" / "supernet" / "epoch-1.pt", mine / "epoch-1.pt")
    with pytest.raises(CheckpointError, match="trained on other data"):
        _runner(tmp_path, 2).run(retrain=False)
    assert _trials(tmp_path) == 1


def test_an_older_study_without_the_record_is_adopted_with_one_warning(tmp_path) -> None:
    _runner(tmp_path, 2).run(retrain=False)
    with sqlite3.connect(_db(tmp_path)) as conn:  # what an older nasflow left behind
        conn.execute("DELETE FROM study_user_attributes WHERE key = ?", (SCORING_KEY,))
    lines: list[str] = []
    spec = load_study_file(write_study(tmp_path, n_trials=3, finetune=0, extra=FAST))
    runner = StudyRunner(spec, out_dir=tmp_path / "runs", progress=False, log=lines.append)
    study = runner.run(retrain=False).study
    warned = [line for line in lines if line.startswith("warning:")]
    assert len(warned) == 1 and "older nasflow" in warned[0]
    assert len(study.trials) == 3 and SCORING_KEY in study.user_attrs
    with pytest.raises(StudyMismatchError, match=r"train\.epochs"):  # recorded from now on
        _runner(tmp_path, 4, EPOCHS_3).run(retrain=False)
