"""The fine-tuning phase inside a study: ready models, records, the winner it picks."""

from __future__ import annotations

import html
import json

import pytest

from nasflow.pipeline import StudyRunner, summary_table
from nasflow.pipeline._arch._ranking import anchor_labels, rank_candidates
from nasflow.pipeline._phases._finetune import by_score
from nasflow.pipeline._result._headline import headline
from nasflow.record import (
    DUPLICATE_KEY,
    FINETUNED_KEY,
    KEPT_KEY,
    SUPERNET_ACCURACY_ATTR,
    SUPERNET_LOSS_ATTR,
    study_ranker,
    study_retrains,
)
from nasflow.search import load_study_file
from tests._study_template import write_study

pytestmark = pytest.mark.slow  # every test here runs a study

EXTRA = """
from nasflow.search import FineTuning
study = study.replace(finetuning=FineTuning(finalists=4, rungs=(1, 2), keep=0.5))
"""


def _run(tmp_path, **kw):
    spec = load_study_file(write_study(tmp_path, finetune=0, n_trials=8, extra=EXTRA, **kw))
    runner = StudyRunner(spec, out_dir=tmp_path / "runs", progress=False, log=lambda _: None)
    return spec, runner


def test_finalists_become_ready_models_and_phase_3_retrains_the_best(tmp_path) -> None:
    spec, runner = _run(tmp_path)
    result = runner.run()
    record = result.study.user_attrs[FINETUNED_KEY]
    cands = record["candidates"]
    assert len(cands) == 4 and record["rungs"] == [1, 2]
    # top=2 (half of 4): the two best supernet scores (by the rank sum of accuracy and
    # cross-entropy, FineTuning's default) go through every rung; of the other two,
    # halving keeps one.
    assert sorted(len(c["val_curve"]) for c in cands) == [1, 2, 2, 2]
    originals = [t for t in result.study.trials if DUPLICATE_KEY not in t.user_attrs]
    best_two = [t.number for t in by_score(originals, "rank_sum")[:2]]
    protected = [c for c in cands if c["trial"] in best_two]
    assert len(protected) == 2 and [c["trial"] for c in cands[:2]] == best_two
    assert all(len(c["val_curve"]) == 2 for c in protected)
    # Every screened path records its validation cross-entropy beside its accuracy
    # (FineTuning.rank_by="rank_sum" ranks by both).
    screened = [t for t in result.study.trials if SUPERNET_ACCURACY_ATTR in t.user_attrs]
    assert len(screened) >= 4
    assert all(0 < t.user_attrs[SUPERNET_LOSS_ATTR] < 100 for t in screened)
    ready = tmp_path / "runs" / "tiny" / "ready"
    for c in cands:
        saved = json.loads((ready / f"trial-{c['trial']}" / "record.json").read_text())
        assert saved["weights_origin"].startswith("fine-tuned from inherited supernet weights, ")
        assert saved["test_accuracy"] == c["test_accuracy"]
    best = max((c for c in cands if len(c["val_curve"]) == 2), key=lambda c: c["val_curve"][-1])
    assert [w.number for w in result.winners] == [best["trial"]]
    assert record["early_stopping"]["multiplier"] > 1
    # Each candidate records the run's CPU-seconds when its weights were final.
    assert all(c["trained_cpu_seconds"] > 0 for c in cands)
    assert "finetune" in result.seconds
    # The summary says which of the winner's weights validate higher and are kept.
    winner = result.winners[0]
    kept = [
        line for line in summary_table(result, spec).splitlines() if line.startswith("kept model")
    ]
    finetuned_higher = best["val_curve"][-1] > winner.val_accuracy
    assert len(kept) == 1 and f"trial {winner.number}" in kept[0]
    assert ("fine-tuned weights" in kept[0]) == finetuned_higher
    # The study records it; `nasflow export --best` exports that trial, not the best
    # supernet score of the Pareto set.
    record_kept = result.study.user_attrs[KEPT_KEY]
    assert record_kept["trial"] == winner.number and record_kept["source"] == "search"
    assert record_kept["weights"] == (
        "fine-tuned" if "fine-tuned weights" in kept[0] else "retrained"
    )
    from nasflow.export import select_trials

    assert [t.number for t in select_trials(result.study, "best")] == [winner.number]


def test_phase_3_keeps_the_best_retrain_of_several_finalists(tmp_path) -> None:
    """``retrain_top=3``: the three best fine-tuned finalists are retrained from scratch and
    the one that validates highest after retraining is the search's kept choice."""
    extra = EXTRA + "study = study.replace(retrain_top=3)\n"
    spec = load_study_file(write_study(tmp_path, finetune=0, n_trials=8, extra=extra))
    runner = StudyRunner(spec, out_dir=tmp_path / "runs", progress=False, log=lambda _: None)
    result = runner.run()
    cands = result.study.user_attrs[FINETUNED_KEY]["candidates"]
    ranked = sorted(cands, key=lambda c: (-len(c["val_curve"]), -c["val_curve"][-1]))
    assert {w.number for w in result.winners} == {c["trial"] for c in ranked[:3]}
    vals = [w.val_accuracy for w in result.winners]
    assert vals == sorted(vals, reverse=True)
    kept = result.study.user_attrs[KEPT_KEY]
    assert kept["trial"] == result.winners[0].number and kept["source"] == "search"
    text = summary_table(result, spec)
    assert "phase 3 retrained 3 trials from scratch; the first validates highest" in text
    (line,) = [x for x in text.splitlines() if x.startswith("kept model")]
    assert f"trial {result.winners[0].number}" in line


def test_phase_3_retrains_more_to_spread_the_trained_models_over_cost(tmp_path) -> None:
    """``retrain_spread=1``: after the best fine-tuned finalist, one screened Pareto member
    chosen by cost is retrained too; the log, the record and the summary say which and
    why; it is not a candidate for the kept model, which is the finalist's retrain
    whichever validates higher."""
    extra = EXTRA + "study = study.replace(retrain_spread=1)\n"
    spec = load_study_file(write_study(tmp_path, finetune=0, n_trials=8, extra=extra))
    lines: list[str] = []
    runner = StudyRunner(spec, out_dir=tmp_path / "runs", progress=False, log=lines.append)
    result = runner.run()
    cands = result.study.user_attrs[FINETUNED_KEY]["candidates"]
    best = max(cands, key=lambda c: (len(c["val_curve"]), c["val_curve"][-1]))
    numbers = {w.number for w in result.winners}
    assert len(numbers) == 2 and best["trial"] in numbers
    (spread,) = numbers - {best["trial"]}
    assert any(
        f"phase 3: trial {spread} chosen to spread the trained models over cost" in line
        for line in lines
    )
    assert [w.number for w in result.winners] == [best["trial"], spread]
    assert [w.spread for w in result.winners] == [False, True]
    assert result.study.user_attrs[KEPT_KEY]["trial"] == best["trial"]
    records = study_retrains(result.study)
    assert records[spread].spread and not records[best["trial"]].spread
    text = summary_table(result, spec)
    assert f"winner: trial {spread} (spread over cost, not a candidate for the kept model)" in (
        text
    )
    assert (
        "phase 3 retrained 2 trials from scratch; the first validates highest of the 1 "
        "chosen by score and is the search's choice; the last 1, retrained to spread"
    ) in " ".join(text.split())


def test_a_rerun_reuses_the_ready_models(tmp_path, monkeypatch) -> None:
    _, runner = _run(tmp_path)
    first_run = runner.run().study.user_attrs[FINETUNED_KEY]
    first = first_run["candidates"]
    from nasflow.train import EpochTrainer

    calls = []
    original = EpochTrainer.run_epoch

    def counted(self, *a, **k):
        calls.append(1)
        return original(self, *a, **k)

    monkeypatch.setattr(EpochTrainer, "run_epoch", counted)
    spec = load_study_file(write_study(tmp_path, finetune=0, n_trials=8, extra=EXTRA))
    logged: list[str] = []
    runner = StudyRunner(spec, out_dir=tmp_path / "runs", progress=False, log=logged.append)
    rerun = runner.run().study.user_attrs[FINETUNED_KEY]
    again = rerun["candidates"]
    assert again == first
    assert calls == []  # neither fine-tuned again nor retrained (the winner is reused)
    # The phase's record keeps the seconds the training took (a rerun adds its own ~0 s),
    # and its line says that the epochs were trained before, not in 0 s now.
    assert rerun["seconds"] >= first_run["seconds"] > 0
    epochs = sum(len(c["val_curve"]) for c in again)
    line = next(x for x in logged if x.startswith("fine-tuning: "))
    assert f"({epochs} epochs in all, {epochs} of them by an earlier run or a worker;" in line


def test_finalists_chosen_by_the_ranker_are_recorded_and_shown(tmp_path) -> None:
    """``rank_by="ranker"``: the protected finalists are the ranker's first, refitted on
    the anchors' trainings where there are enough (two here: the prior, said so); the
    study records the ranker and the headline shows its line, in the summary and the
    report."""
    extra = (
        "from nasflow.search import Anchors, FineTuning\n"
        "study = study.replace(anchors=Anchors(n=2, sample=16), finetuning=FineTuning("
        "finalists=3, top=2, rungs=(1,), rank_by='ranker'))\n"
    )
    spec = load_study_file(write_study(tmp_path, finetune=0, n_trials=8, extra=extra))
    runner = StudyRunner(spec, out_dir=tmp_path / "runs", progress=False, log=lambda _: None)
    result = runner.run()
    originals = [t for t in result.study.trials if DUPLICATE_KEY not in t.user_attrs]
    labels = anchor_labels(result.study)
    assert len(labels) == 2  # both anchors trained, both screened
    ranked = rank_candidates(originals, labels)
    cands = result.study.user_attrs[FINETUNED_KEY]["candidates"]
    assert [c["trial"] for c in cands[:2]] == [t.number for t in ranked.trials[:2]]
    record = study_ranker(result.study)
    assert record == ranked.record
    assert record.source == "prior" and "2 labels in groups of two or more (< 6)" in record.note
    line = f"finalists chosen by the {record.line()}"
    text = summary_table(result, spec)
    assert f"  {line}" in text.splitlines()
    assert "chosen by: the pairwise ranker (the headline's line) (finalists)" in " ".join(
        text.split()
    )
    h = headline(result.study)
    assert h.ranker == record.line()
    from nasflow.report._html import _headline_html

    cell = html.escape(record.line(), quote=False)
    assert f"<th>finalists chosen by</th><td>{cell}</td>" in _headline_html(h, str)


def test_retrain_top_0_keeps_the_best_finalist_that_trained_the_recipe_from_inherited_weights(
    tmp_path,
) -> None:
    """The top rung from inherited weights inside the fine-tuning phase: its last rung is
    the recipe's epochs (2 here) and ``retrain_top=0``, so phase 3 retrains only the spread
    member; the kept model is the best-validating finalist that reached the last rung, with
    its fine-tuned weights, never the spread retrain; the summary says so."""
    extra = (
        "from nasflow.search import FineTuning\n"
        "study = study.replace(finetuning=FineTuning(finalists=4, rungs=(1, 2)),"
        " retrain_top=0, retrain_spread=1)\n"
    )
    spec = load_study_file(write_study(tmp_path, finetune=0, n_trials=8, extra=extra))
    assert spec.top_rung_inherited
    runner = StudyRunner(spec, out_dir=tmp_path / "runs", progress=False, log=lambda _: None)
    result = runner.run()
    cands = result.study.user_attrs[FINETUNED_KEY]["candidates"]
    full = [c for c in cands if len(c["val_curve"]) == spec.train.epochs]
    best = max(full, key=lambda c: (c["val_curve"][-1], -c["trial"]))
    assert [w.spread for w in result.winners] == [True]  # the spread retrain alone
    kept = result.study.user_attrs[KEPT_KEY]  # (the template trains no anchors)
    assert kept == {"trial": best["trial"], "weights": "fine-tuned", "source": "search"}
    text = " ".join(summary_table(result, spec).split())
    assert f"trial {best['trial']}'s fine-tuned weights (" in text
    assert "the full recipe): validation" in text
    assert "then validation after each fine-tuning rung, the last the recipe's epochs" in text
