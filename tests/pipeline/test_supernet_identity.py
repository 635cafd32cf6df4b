"""A study never mixes trials scored by two supernets: the supernet belongs to its identity."""

from __future__ import annotations

import json
import shutil
import sqlite3

import optuna
import pytest

from nasflow.cli import main
from nasflow.pipeline import StudyRunner
from nasflow.record import SUPERNET_IDENTITY_KEY, StudyMismatchError
from nasflow.search import load_study_file
from tests._study_template import write_study

FAST = "study = study.replace(cost='measure')"  # (the cost model measures every op: slow)
EPOCHS_2 = FAST + "\nstudy = study.replace(supernet=SupernetConfig(epochs=2, batch_size=50))"


def _runner(tmp_path, n_trials: int, extra: str = FAST) -> StudyRunner:
    spec = load_study_file(write_study(tmp_path, n_trials=n_trials, finetune=0, extra=extra))
    return StudyRunner(spec, out_dir=tmp_path / "runs", progress=False, log=lambda _: None)


def _db(tmp_path):
    return tmp_path / "runs" / "tiny" / "study.db"


@pytest.mark.slow
def test_another_supernet_config_is_refused_in_one_line(tmp_path, capsys) -> None:
    study = _runner(tmp_path, 2).run(retrain=False).study
    record = json.loads(study.user_attrs[SUPERNET_IDENTITY_KEY])
    assert record["config"]["epochs"] == 1 and record["space"]
    shutil.rmtree(tmp_path / "runs" / "tiny" / "supernet")  # the checkpoints are gone
    size = _db(tmp_path).stat().st_size
    with pytest.raises(StudyMismatchError, match="epochs 1 in the study, 2 here"):
        _runner(tmp_path, 4, EPOCHS_2).run(retrain=False)
    study_file = write_study(tmp_path, n_trials=4, finetune=0, extra=EPOCHS_2)
    args = ["search", str(study_file), "--runs", str(tmp_path / "runs"), "--no-progress"]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "scored by another supernet" in err
    assert "give the study a new name" in err
    stored = optuna.load_study(study_name="tiny", storage=f"sqlite:///{_db(tmp_path)}")
    assert len(stored.trials) == 2 and _db(tmp_path).stat().st_size == size
    assert not (tmp_path / "runs" / "tiny" / "supernet").exists()  # nothing was trained


@pytest.mark.slow
def test_a_study_created_before_the_record_is_adopted_and_recorded(tmp_path) -> None:
    _runner(tmp_path, 2).run(retrain=False)
    with sqlite3.connect(_db(tmp_path)) as conn:  # what an older nasflow left behind
        conn.execute("DELETE FROM study_user_attributes WHERE key = ?", (SUPERNET_IDENTITY_KEY,))
    old = optuna.load_study(study_name="tiny", storage=f"sqlite:///{_db(tmp_path)}")
    assert SUPERNET_IDENTITY_KEY not in old.user_attrs
    study = _runner(tmp_path, 3).run(retrain=False).study
    assert len(study.trials) == 3
    assert json.loads(study.user_attrs[SUPERNET_IDENTITY_KEY])["config"]["epochs"] == 1
    with pytest.raises(StudyMismatchError, match="another supernet"):  # recorded from now on
        _runner(tmp_path, 4, EPOCHS_2).run(retrain=False)
