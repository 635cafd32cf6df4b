"""Screen many, fine-tune few: with ``screen_keep`` only candidates whose supernet score
ranks in the top share of those scored so far are fine-tuned; the rest are PRUNED trials
that keep their supernet score."""

from __future__ import annotations

import pytest
from optuna.trial import TrialState

from nasflow.pipeline import StudyRunner
from nasflow.search import StudyFileError, load_study_file, promoted
from nasflow.train import TrainConfig
from tests._study_template import write_study


@pytest.mark.slow
def test_only_the_top_share_of_screened_candidates_is_fine_tuned(tmp_path) -> None:
    spec = load_study_file(write_study(tmp_path, n_trials=16, finetune=1))
    spec = spec.replace(screen_keep=0.25)
    runner = StudyRunner(spec, out_dir=tmp_path / "runs", progress=False, log=lambda _: None)
    study = runner.run(retrain=False).study
    trials = sorted(study.trials, key=lambda t: t.number)
    assert len(trials) == 16
    tuned = [t for t in trials if t.user_attrs.get("epochs_trained", 0) > 0]
    out = [t for t in trials if "screened_out" in t.user_attrs]
    assert tuned and len(out) > 3, (len(tuned), len(out))  # more than the bootstrap
    assert all(t.state == TrialState.PRUNED and "epochs_trained" not in t.user_attrs for t in out)
    assert all(t.number in {u.number for u in out} for t in trials[:3])  # bootstrap: 4 first
    # Each decision is the rule applied to the candidates scored before it (one process:
    # in trial order), so a candidate is fine-tuned exactly when it ranks in the top 25%.
    directions = study.directions
    for i, t in enumerate(trials):
        if "duplicate_of" in t.user_attrs:
            continue
        before = [u.user_attrs.get("nasflow:screen") for u in trials[:i]]
        want = promoted(t.user_attrs["nasflow:screen"], before, directions, 4, 3, keep_front=False)
        assert want == (t in tuned), (t.number, want, t.user_attrs.get("screened_out"))
    for t in trials:
        assert 0.0 <= t.user_attrs["supernet_accuracy"] <= 1.0  # every candidate was scored
    # Only fine-tuned candidates are COMPLETE: the first objective is fine-tuned accuracy.
    done = [
        t for t in trials if t.state == TrialState.COMPLETE and "duplicate_of" not in t.user_attrs
    ]
    assert done and all(t in tuned for t in done)


def test_screen_keep_is_checked(tmp_path) -> None:
    spec = load_study_file(write_study(tmp_path, n_trials=4, finetune=0))
    with pytest.raises(StudyFileError, match="finetune=None fine-tunes none"):
        spec.replace(screen_keep=0.5)
    for bad in (0, 1.5, "half", True):
        with pytest.raises(StudyFileError, match="screen_keep must be a share in"):
            spec.replace(finetune=TrainConfig(epochs=1), screen_keep=bad)
