"""Phase 0 inside a study: the zero-cost anchors are trials, trained first, saved, exported."""

from __future__ import annotations

import json

import optuna
import pytest
import torch

from nasflow.pipeline import StudyRunner, summary_table
from nasflow.record import ANCHOR_ATTR, ANCHORS_KEY, KEPT_KEY, SUPERNET_ACCURACY_ATTR
from nasflow.search import load_study_file
from tests._study_template import write_study

pytestmark = pytest.mark.slow  # every test here runs a study

EXTRA = """
from nasflow.search import Anchors
study = study.replace(anchors=Anchors(n=2, sample=16))
"""


def _runner(tmp_path, extra: str = EXTRA, log=None) -> tuple:
    spec = load_study_file(write_study(tmp_path, finetune=0, n_trials=6, extra=extra))
    runner = StudyRunner(
        spec, out_dir=tmp_path / "runs", progress=False, log=log or (lambda _: None)
    )
    return spec, runner


def test_anchors_are_trained_first_and_scored_as_trials(tmp_path) -> None:
    lines: list[str] = []
    spec, runner = _runner(tmp_path, log=lines.append)
    result = runner.run()
    record = result.study.user_attrs[ANCHORS_KEY]
    anchors = record["anchors"]
    assert [a["trial"] for a in anchors] == [0, 1] and "anchors" in result.seconds
    # Phase 0 logged each anchor before phase 1 trained the supernet.
    first_supernet = next(
        i for i, line in enumerate(lines) if "supernet" in line and "phase 0" not in line
    )
    anchor_lines = [i for i, line in enumerate(lines) if line.startswith("anchor ")]
    assert len(anchor_lines) == 2 and max(anchor_lines) < first_supernet
    trials = {t.number: t for t in result.study.trials}
    for a in anchors:
        t = trials[a["trial"]]
        # Phase 2 scored the queued anchor like any other candidate.
        assert t.state == optuna.trial.TrialState.COMPLETE
        assert t.user_attrs[ANCHOR_ATTR] == a["index"]
        assert json.loads(t.user_attrs["arch"]) == json.loads(a["arch"])
        assert 0 <= t.user_attrs[SUPERNET_ACCURACY_ATTR] <= 1
        # Trained from scratch, saved where phase 3 saves a retrained winner.
        folder = tmp_path / "runs" / "tiny" / "winners" / f"trial-{a['trial']}"
        saved = json.loads((folder / "record.json").read_text())
        assert saved[ANCHOR_ATTR] == a["index"] and saved["trial"] == a["trial"]
        assert saved["val_accuracy"] == a["val_accuracy"]
        assert saved["test_accuracy"] == a["test_accuracy"]
        assert 0 < a["measured_train_cost"] < a["ready_seconds"] and a["ready_cpu_seconds"] > 0
        assert a["weights"] == f"winners/trial-{a['trial']}/model.safetensors"
    text = summary_table(result, spec)
    assert text.count("trained from scratch, validation") == 2
    best = max(anchors, key=lambda a: a["val_accuracy"])
    verdict = [
        line
        for line in text.splitlines()
        if line.startswith("search vs zero-cost") or "a zero-cost anchor trained" in line
    ]
    assert len(verdict) == 1 and f"{best['val_accuracy']:.4f}" in verdict[0]
    kept = [line for line in text.splitlines() if line.startswith("kept model:")]
    anchor_kept = "a zero-cost anchor trained" in verdict[0]
    if anchor_kept:  # the anchor is kept: one kept model
        assert kept == verdict and f"trial {best['trial']}," in kept[0]
    # The study records the kept model, and `nasflow export --best` exports that one.
    from nasflow.export import select_trials

    expected = best["trial"] if anchor_kept else result.winners[0].number
    assert result.study.user_attrs[KEPT_KEY] == {
        "trial": expected,
        "weights": "retrained",
        "source": "anchor" if anchor_kept else "search",
    }
    assert [t.number for t in select_trials(result.study, "best")] == [expected]
    # The report draws them on the trained models' figure, at their own measured test
    # accuracy and training seconds (the screened panels show supernet scores only).
    from nasflow.report import report_data, report_figures

    data = report_data(result.study, spec.space)
    assert [r.number for r in data.anchors] == [0, 1]
    assert [r.val_accuracy for r in data.anchors] == [a["val_accuracy"] for a in anchors]
    figures = {f.key: f.figure for f in report_figures(data)}
    (trace,) = [t for t in figures["pareto"].data if t.name == "zero-cost anchor (from scratch)"]
    measured = sorted((a["measured_train_cost"], a["test_accuracy"]) for a in anchors)
    assert sorted(zip(trace.x, trace.y, strict=True)) == measured
    assert any("trial 0: zero-cost anchor, trained from scratch" in x for x in trace.text)
    for key in ("screening", "params"):
        assert not any("anchor" in (t.name or "") for t in figures[key].data)


def test_a_rerun_trains_no_anchor_again(tmp_path, monkeypatch) -> None:
    _, runner = _runner(tmp_path)
    first = runner.run().study.user_attrs[ANCHORS_KEY]

    def refuse(*a, **k):
        raise AssertionError("an anchor was trained twice")

    monkeypatch.setattr("nasflow.pipeline._phases._anchors.train_winner", refuse)
    _, again = _runner(tmp_path)
    second = again.run().study.user_attrs[ANCHORS_KEY]
    assert [a["val_accuracy"] for a in second["anchors"]] == [
        a["val_accuracy"] for a in first["anchors"]
    ]


def test_a_study_that_already_holds_trials_gets_no_anchors(tmp_path) -> None:
    _, runner = _runner(tmp_path, extra="")
    runner.run()
    lines: list[str] = []
    _, again = _runner(tmp_path, log=lines.append)
    result = again.run()
    assert ANCHORS_KEY not in result.study.user_attrs
    assert any("no zero-cost anchors: the study already holds" in line for line in lines)


def test_an_anchor_exports_with_its_from_scratch_weights(tmp_path) -> None:
    from nasflow.export import export, load_exported

    spec, runner = _runner(tmp_path)
    anchors = runner.run().study.user_attrs[ANCHORS_KEY]["anchors"]
    infos = export(
        "tiny",
        tmp_path / "out",
        which=anchors[1]["trial"],
        runs=tmp_path / "runs",
        spec=spec,
        onnx=False,
        log=lambda _: None,
    )
    (info,) = infos
    assert info.metrics["val_accuracy"] == anchors[1]["val_accuracy"]
    assert info.weights["kind"] == "retrained"
    assert "zero-cost anchor 2" in info.notes["val_accuracy"]
    assert info.arch == json.loads(anchors[1]["arch"])
    # The exported network carries exactly the weights phase 0 saved.
    from safetensors.torch import load_file

    saved = load_file(tmp_path / "runs" / "tiny" / anchors[1]["weights"])
    net = load_exported(tmp_path / "out")
    state = net.state_dict()
    assert saved.keys() == state.keys()
    assert all(torch.equal(saved[k], state[k]) for k in saved)


def test_the_largest_as_fallback_is_kept_unless_the_search_beats_it(tmp_path) -> None:
    from nasflow.pipeline._kept import anchor_call
    from nasflow.record import study_anchors, study_finetuned
    from nasflow.space import Arch, largest_arch

    extra = EXTRA.replace("sample=16)", 'sample=16, fallback="largest")')
    spec, runner = _runner(tmp_path, extra=extra)
    result = runner.run()
    record = study_anchors(result.study)
    assert record is not None and record.fallback is not None
    top = record.anchor(record.fallback)
    assert top is not None and Arch.from_json(top.arch) == largest_arch(spec.space)
    assert "and the space's largest" in record.rule
    assert f"the largest (trial {top.trial}) is kept unless the search beats it" in record.rule
    # The run kept what the rule says, given the search's choice and the anchors.
    decision = result.kept
    assert decision is not None and decision.fallback == top.trial
    tuned = study_finetuned(result.study)
    samples = None if tuned is None else tuned.val_samples
    call = anchor_call(decision.search_val, record.trained, samples, record.fallback)
    expected = result.winners[0].number if call.kept is None else call.kept.trial
    assert result.study.user_attrs[KEPT_KEY]["trial"] == expected
    text = summary_table(result, spec)
    if call.kept is top:
        assert "the space's largest architecture, the fallback the search must beat" in text
    else:
        assert "the fallback anchor (the space's largest architecture" in text
    from nasflow.pipeline import headline

    words = headline(result.study).anchors
    if call.kept is top:
        assert words.startswith("the fallback is kept: the fallback, the space's largest")
    else:
        assert f"the fallback, the space's largest architecture (trial {top.trial}" in words
