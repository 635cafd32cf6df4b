"""A trial that another worker's sweep fails while this worker still fine-tunes it (its
heartbeat came late on a loaded machine) is stopped after the epoch in flight, keeps its
checkpoint, and its retry resumes there: no finished epoch is lost, and this worker goes
on with the study instead of dying on Optuna's "Cannot tell a FAIL trial"."""

from __future__ import annotations

import optuna
import pytest
from optuna.trial import TrialState

from nasflow.pipeline import StudyRunner
from nasflow.pipeline._recovery import _fail, _retry_once
from nasflow.search import load_study_file
from tests._study_template import write_study
from tests.pipeline.test_reliability import EXTRA, FINETUNE_EPOCHS


@pytest.mark.slow
def test_a_trial_swept_while_fine_tuning_is_resumed_by_its_retry(tmp_path) -> None:
    spec = load_study_file(
        write_study(tmp_path, name="swept", n_trials=3, finetune=FINETUNE_EPOCHS, extra=EXTRA)
    )
    url = f"sqlite:///{tmp_path / 'runs' / 'swept' / 'study.db'}"
    lines: list[str] = []

    def log(line: str) -> None:
        lines.append(line)
        first = not any(x == "(swept)" for x in lines)
        if line.startswith("trial 0: fine-tuned epoch 1/") and first:
            # What a worker that judged trial 0's heartbeat stale does: fail it, retry it.
            other = optuna.load_study(study_name="swept", storage=url)
            [t] = [t for t in other.get_trials(deepcopy=False) if t.number == 0]
            assert _fail(other, t._trial_id)
            _retry_once(other, other._storage.get_trial(t._trial_id))
            lines.append("(swept)")

    runner = StudyRunner(spec, out_dir=tmp_path / "runs", progress=False, log=log)
    study = runner.run(retrain=False).study
    assert any(
        line.startswith("trial 0 was failed by another worker's sweep while this one")
        for line in lines
    ), lines
    assert not any(line.startswith("trial 0: fine-tuned epoch 2/") for line in lines)
    [retry] = [t for t in study.trials if t.system_attrs.get("failed_trial") == 0]
    assert study.trials[0].state == TrialState.FAIL
    assert retry.state == TrialState.COMPLETE and retry.params == study.trials[0].params
    assert retry.user_attrs["resumed_at"] == [1, 0]  # epoch 1 was not trained again
