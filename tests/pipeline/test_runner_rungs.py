"""The rung schedule inside a study (``StudySpec.rungs``): one ladder in Optuna from the
screening score to the full training, in place of the fine-tuning phase and phase 3."""

from __future__ import annotations

import json
import warnings

import optuna
import pytest

from nasflow.pipeline import StudyRunner, summary_table
from nasflow.pipeline._arch._ranking import rank_candidates
from nasflow.pipeline._phases._rungs import finetune_settings, ranked_candidates
from nasflow.pipeline._schedule._ladder import SUFFIX
from nasflow.record import (
    FINETUNED_KEY,
    KEPT_KEY,
    RUNGS_KEY,
    RungEntry,
    retrain_key,
    rung_outcome,
    study_rungs,
)
from nasflow.search import FineTuning, Rungs, StudyFileError, load_study_file
from tests._study_template import write_study

EXTRA = """
from nasflow.search import Rungs
study = study.replace(rungs=Rungs(finetune=(1, 2), candidates=4, reduction=2))
"""


def _run(tmp_path, extra: str = EXTRA, **kw):
    spec = load_study_file(write_study(tmp_path, finetune=0, n_trials=8, extra=extra, **kw))
    runner = StudyRunner(spec, out_dir=tmp_path / "runs", progress=False, log=lambda _: None)
    return spec, runner


@pytest.mark.slow  # runs a study
def test_candidates_climb_the_rungs_in_ranking_order_and_the_top_is_kept(tmp_path) -> None:
    spec, runner = _run(tmp_path)
    result = runner.run()
    study = result.study
    rungs = optuna.load_study(study_name=spec.name + SUFFIX, storage=study._storage)
    trials = sorted(rungs.trials, key=lambda t: t.number)
    # The four best-ranked screened architectures entered, in the study's ranking order.
    ranked = [r.get_arch().to_json() for _, r in ranked_candidates(study)][:4]
    assert [RungEntry.from_trial(t).arch for t in trials] == ranked
    states = [t.state for t in trials]
    assert optuna.trial.TrialState.COMPLETE in states  # some reached the top rung
    # Every candidate is a ready model (its fine-tuned weights saved), pruned or not.
    tuned = [rung_outcome(t)[0] for t in trials]
    assert all(ft is not None and ft.test_accuracy is not None for ft in tuned)
    ready = tmp_path / "runs" / "tiny" / "ready"
    for ft in tuned:
        saved = json.loads((ready / f"trial-{ft.trial}" / "record.json").read_text())
        assert saved["test_accuracy"] == ft.test_accuracy
    # The top rung trained from scratch: each complete trial is a retrained winner,
    # recorded as phase 3's winners are, and the kept model is one of them (or an
    # ready model that validates higher), as the kept decision reads them.
    complete = [t for t in trials if t.state == optuna.trial.TrialState.COMPLETE]
    winners = {w.number for w in result.winners}
    assert winners == {rung_outcome(t)[1].number for t in complete}
    assert all(retrain_key(n) in study.user_attrs for n in winners)
    assert result.winners[0].val_accuracy == max(w.val_accuracy for w in result.winners)
    assert study.user_attrs[KEPT_KEY]["trial"] in winners | {ft.trial for ft in tuned}
    # The fine-tuning record holds every candidate; the rung record how many reached each
    # rung and how well each ranked the next.
    assert len(study.user_attrs[FINETUNED_KEY]["candidates"]) == 4
    record = study_rungs(study)
    assert record is not None and RUNGS_KEY in study.user_attrs
    reached = [s.reached for s in record.steps]
    assert [s.step for s in record.steps] == [0, 1, 2, 4]
    assert reached[0] == reached[1] == 4 and reached[-1] == len(complete)
    assert reached == sorted(reached, reverse=True)
    assert "rungs" in result.seconds and "finetune" not in result.seconds
    table = summary_table(result, spec).splitlines()
    assert any(line.startswith("kept model") for line in table)
    assert record.line() in table and record.line().startswith(
        "rungs (validation accuracy at each; keep 1/2): 4 screening"
    )
    # The study has no trust probe: the report's headline reads the trust from the rungs.
    from nasflow.pipeline._result._headline import headline

    assert headline(study).trust == f"read from the {record.line()}"
    # Rungs.rank_by="ranker" queues by the pairwise ranker's order instead (its prior
    # here: no anchors trained).
    by_ranker = [t.number for t, _ in ranked_candidates(study, "ranker")]
    assert by_ranker == [t.number for t in rank_candidates(list(study.trials)).trials]
    # A run killed mid-candidate leaves its trial RUNNING (here: the fifth-ranked one,
    # queued and taken as a worker would, never finished).
    t5, r5 = ranked_candidates(study)[4]
    entry = RungEntry(r5.get_arch().to_json(), 4, False, r5.supernet_accuracy, t5.number)
    rungs.enqueue_trial({}, user_attrs=entry.to_attrs())
    with warnings.catch_warnings():  # (Optuna warns of a heartbeat storage's trial taken
        warnings.simplefilter("ignore", UserWarning)  # outside optimize: the point here)
        assert rungs.ask().number == 4
    # The resumed study fails it, queues it once more and trains it; nothing else twice.
    again = StudyRunner(
        load_study_file(write_study(tmp_path, finetune=0, n_trials=8, extra=EXTRA)),
        out_dir=tmp_path / "runs",
        progress=False,
        log=lambda _: None,
    ).run()
    rungs = optuna.load_study(study_name=spec.name + SUFFIX, storage=again.study._storage)
    states = [t.state for t in sorted(rungs.trials, key=lambda t: t.number)]
    assert len(states) == 6 and states[4] == optuna.trial.TrialState.FAIL
    retried = rungs.trials[5]
    assert RungEntry.from_trial(retried) == entry and retried.state.is_finished()
    assert rung_outcome(retried)[0] is not None  # fine-tuned by the resumed run


def test_rungs_replace_the_fine_tuning_phase(tmp_path) -> None:
    extra = EXTRA + "study = study.replace(finetuning=FineTuning())\n"
    extra = "from nasflow.search import FineTuning\n" + extra
    with pytest.raises(StudyFileError, match=r"rungs=.*replaces the fine-tuning phase"):
        load_study_file(write_study(tmp_path, finetune=0, extra=extra))


def test_rungs_replace_phase_3_whose_retrains_retrain_spread_spreads(tmp_path) -> None:
    extra = EXTRA + "study = study.replace(retrain_spread=2)\n"
    with pytest.raises(StudyFileError, match=r"rungs=.*replaces phase 3.*retrain_spread=2"):
        load_study_file(write_study(tmp_path, finetune=0, extra=extra))
    bad = "study = study.replace(retrain_spread=-1)\n"
    with pytest.raises(StudyFileError, match=r"retrain_spread.*-1"):
        load_study_file(write_study(tmp_path, finetune=0, extra=bad))


def test_the_fine_tuning_schedule_spans_the_last_rung_or_the_recipe() -> None:
    assert finetune_settings(Rungs(finetune=(1, 2, 4)), 10).rungs == (1, 2, 4)
    inherited = finetune_settings(Rungs(finetune=(1, 2, 4), top="inherited"), 10)
    assert inherited.rungs == (1, 2, 4, 10)
    assert isinstance(inherited, FineTuning) and inherited.keep == 0.5


@pytest.mark.slow  # runs a study
@pytest.mark.parametrize(
    ("objectives", "settings"),
    [
        (("accuracy",), 'pruner="hyperband"'),
        (("accuracy", "train_cost"), 'top="inherited", budget=60.0, candidates=3'),
        # Two objectives promoted by accuracy alone: a one-objective rung study.
        (("accuracy", "train_cost"), 'promote="accuracy", candidates=4'),
    ],
)
def test_one_objective_under_hyperband_and_an_inherited_top_rung(
    tmp_path, objectives, settings
) -> None:
    extra = (
        "from nasflow.search import Rungs\n"
        f"study = study.replace(rungs=Rungs(finetune=(1, 2), reduction=2, {settings}))\n"
    )
    spec = load_study_file(
        write_study(tmp_path, finetune=0, n_trials=8, extra=extra, objectives=objectives)
    )
    runner = StudyRunner(spec, out_dir=tmp_path / "runs", progress=False, log=lambda _: None)
    result = runner.run()
    rungs = optuna.load_study(study_name=spec.name + SUFFIX, storage=result.study._storage)
    done = [t for t in rungs.trials if t.state == optuna.trial.TrialState.COMPLETE]
    assert done and result.study.user_attrs[KEPT_KEY]["trial"] is not None
    record = study_rungs(result.study)
    assert record is not None and record.steps[0].reached == len(rungs.trials)
    if spec.rungs.top == "inherited":
        # The top rung goes on from the inherited weights to the recipe's epochs: ready
        # models that trained the full recipe, and no training from scratch.
        tuned = [rung_outcome(t)[0] for t in done]
        assert all(ft is not None and ft.epochs == spec.train.epochs for ft in tuned)
        assert not result.winners and record.top == "inherited"
        assert len(rungs.trials) <= 3  # the budget's candidates, at most `candidates`
    else:  # one objective, or promoted by accuracy alone; from scratch
        assert len(done[0].values) == 1 and result.winners
