"""The result of a finished run, first: which model is kept, what it scores and on which
split, what it beats, whether the supernet's ranking held here, and how to take it away.

:func:`headline` reads it from the study's records once; the closing lines of
``nasflow search`` (:func:`headline_lines`) and the top of the HTML report both show it,
so the two never say different things."""

from __future__ import annotations

import shlex
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NamedTuple

import optuna

from nasflow import names
from nasflow.errors import StudyRecordError
from nasflow.pipeline._kept import (
    FALLBACK_MARGIN_SE,
    anchor_call,
    full_recipe_choice,
    kept_weights,
)
from nasflow.pipeline._phases._retrain import pareto_trials
from nasflow.record import (
    AnchorEntry,
    BaselineRecord,
    FineTuneResult,
    KeptRecord,
    ReadyModelError,
    RetrainRecord,
    TrialRecord,
    TrustRecord,
    study_anchors,
    study_baseline,
    study_finetuned,
    study_kept,
    study_metric_names,
    study_ranker,
    study_retrains,
    study_rungs,
    study_trust,
)
from nasflow.storage import StorageSpec

#: What the measured seconds of a from-scratch training are (the trainer's clock).
FROM_SCRATCH_SECONDS = "wall time of its training steps"


#: What the measured seconds of a ready model are.
FINETUNE_SECONDS = (
    "wall time of its fine-tuning epochs; the supernet its weights came from not counted"
)


class Headline(NamedTuple):
    """A finished run's result, as its report and its summary state it.

    Attributes:
        study: The study's name.
        kept: The kept model's record (``None``: the run keeps none; ``why_none`` says why).
        trial: The kept trial, else the most accurate Pareto trial (``None``: no trial).
        weights: Which weights, in words (the kept model's), or what the trial's number
            is when nothing is kept.
        arch: The trial's architecture as ``Arch.to_json()`` (``None``: not recorded).
        test_accuracy: The kept weights' accuracy on the test split (never used to choose).
        val_accuracy: The same weights' validation accuracy (what chose them).
        seconds: The kept weights' measured training seconds; ``seconds_what`` says what
            they cover.
        seconds_what: What ``seconds`` is.
        params: Parameter count.
        baseline: The study's table of random architectures (``None``: none recorded).
        anchors: The zero-cost anchors' verdict in words (empty: no anchor trained).
        trust: The trust probe's verdict in words (empty: no probe ran).
        export: The command that exports the kept model (or the best trial).
        why_none: Why no model is kept (empty when one is).
        score: ``(metric, value)``: the trial's first objective when nothing is kept.
        ranker: The line of the ranker that chose the finalists (empty: no ranker ran,
            ``FineTuning.rank_by``).
    """

    study: str
    kept: KeptRecord | None
    trial: int | None
    weights: str
    arch: str | None
    test_accuracy: float | None
    val_accuracy: float | None
    seconds: float | None
    seconds_what: str
    params: int | None
    baseline: BaselineRecord | None
    anchors: str
    trust: str
    export: str
    why_none: str = ""
    score: tuple[str, float] | None = None
    ranker: str = ""

    @property
    def beaten(self) -> float | None:
        """The share of the baseline's random architectures the kept model's test
        accuracy beats (``None``: no table, or no test accuracy)."""
        if self.baseline is None or not self.baseline.test_accuracies:
            return None
        if self.test_accuracy is None:
            return None
        return self.baseline.beaten(self.test_accuracy)


def study_location(out_dir: Path, storage: StorageSpec) -> tuple[str, ...]:
    """The ``--storage``/``--runs`` arguments that find a run's study again from the
    command line (none where the defaults do): ``out_dir`` is ``RUNS/NAME``."""
    args: list[str] = []
    path = storage.path if storage.kind == "sqlite" else None
    if path is None or Path(path).resolve() != (out_dir / "study.db").resolve():
        args += ["--storage", storage.safe_url]
    if out_dir.parent != Path("runs"):
        args += ["--runs", str(out_dir.parent)]
    return tuple(args)


def export_command(study: str, kept: KeptRecord | None, location: Sequence[str] = ()) -> str:
    """The exact ``nasflow export`` command of the kept model: ``--ready N`` exports
    fine-tuned weights, ``--best`` the kept model's from-scratch weights (or, where nothing
    is kept, the most accurate Pareto trial)."""
    which = ["--ready", str(kept.trial)] if kept and kept.weights == "fine-tuned" else ["--best"]
    return shlex.join(["nasflow", "export", study, *location, *which, "--out", "DIR"])


def _anchor_rows(study: optuna.Study) -> tuple[list[AnchorEntry], int | None]:
    """The trained anchors and the fallback's trial (``AnchorsRecord.fallback``)."""
    try:
        record = study_anchors(study)
    except StudyRecordError:  # a record this version cannot read: no anchors said
        return [], None
    return ([], None) if record is None else (record.trained, record.fallback)


def _finetuned(study: optuna.Study) -> FineTuneResult | None:
    try:
        return study_finetuned(study)
    except ReadyModelError:  # a record the report's table names
        return None


def _search_choice(
    kept: KeptRecord, retrained: dict[int, RetrainRecord], tuned: FineTuneResult | None
) -> tuple[float, str] | None:
    """The validation accuracy of the search's kept weights and what they are: the kept
    model itself, or (where an anchor is kept) phase 3's best-validating retrain with the
    weights :func:`kept_weights` keeps."""
    number = kept.trial if kept.source == "search" else None
    if number is None:
        done = [
            (n, w)
            for n, w in retrained.items()
            if w.val_accuracy is not None and not w.spread  # (spread: never a candidate)
        ]
        if not done:
            return _full_recipe_choice(None, tuned)
        number = max(done, key=lambda nw: nw[1].val_accuracy or 0.0)[0]
    w = retrained.get(number)
    if w is None or w.val_accuracy is None:
        # No retrain: the top rung trained on from the inherited weights
        # (``StudySpec.top_rung_inherited``), its fine-tuned weights are the choice.
        return _full_recipe_choice(number, tuned)
    chosen = (
        None if tuned is None else kept_weights(number, w.val_accuracy, w.test_accuracy, tuned)
    )
    if chosen is not None:
        return chosen.val_accuracy, f"choice ({chosen.kind})"
    return w.val_accuracy, "choice (retrained)"


def _full_recipe_choice(
    number: int | None, tuned: FineTuneResult | None
) -> tuple[float, str] | None:
    """Where nothing was retrained by score (the top rung from inherited weights): the
    validation of trial ``number``'s fine-tuned weights, or (``None``: an anchor is kept)
    of the ready model the kept rule would have chosen (:func:`full_recipe_choice`)."""
    best = None if tuned is None else full_recipe_choice(tuned, number)
    if best is None:
        return None
    return best.val_accuracy, "choice (fine-tuned, the full recipe)"


def _standard_errors(k: float) -> str:
    return f"{k:g} standard error{'' if k == 1 else 's'}"


def anchors_words(
    kept: KeptRecord | None,
    retrained: dict[int, RetrainRecord],
    tuned: FineTuneResult | None,
    anchors: Sequence[AnchorEntry],
    fallback: int | None = None,
) -> str:
    """The search's kept weights against the zero-cost anchors (the best-validating, or the
    ``fallback`` the search must beat), on validation accuracy (empty: no anchor trained,
    or nothing kept)."""
    if not anchors or kept is None:
        return ""
    search = _search_choice(kept, retrained, tuned)
    if search is None:
        return ""
    val, what = search
    call = anchor_call(val, anchors, None if tuned is None else tuned.val_samples, fallback)
    against = call.against
    against_val = against.val_accuracy or 0.0
    se = _standard_errors(FALLBACK_MARGIN_SE)
    anchor = (
        f"the fallback, the space's largest architecture (trial {against.trial}, from scratch)"
        if call.fallback
        else f"the best zero-cost anchor (trial {against.trial}, from scratch)"
    )
    if kept.source == "anchor" and call.kept is not None and call.kept is not against:
        kept_val = call.kept.val_accuracy or 0.0
        return (
            f"an anchor is kept: trial {call.kept.trial} validates {kept_val:.4f} against "
            f"{val:.4f} for the search's {what} and {against_val:.4f} for {anchor}"
        )
    if kept.source == "anchor" and call.fallback:
        return (
            f"the fallback is kept: {anchor} validates {against_val:.4f} against {val:.4f} "
            f"for the search's {what}, which is not ahead by more than {se} "
            f"({100 * call.margin:.2f} points)"
        )
    if kept.source == "anchor":
        return (
            f"an anchor is kept: {anchor} validates {against_val:.4f} against "
            f"{val:.4f} for the search's {what}, higher by {100 * -call.lead:.2f} points "
            "(no margin: the best validation is kept)"
        )
    head = f"the search's {what} validates {val:.4f}, {anchor} {against_val:.4f}"
    if call.lead > call.margin:
        more = f", more than {se}" if call.fallback else ""
        return f"{head}: the search is ahead by {100 * call.lead:.2f} points{more}"
    if call.fallback:
        return (
            f"{head}: within {se} ({100 * call.margin:.2f} points), no difference; the "
            "search's choice stays"
        )
    return f"{head}: tied; the search's choice stays"


def trust_words(probe: TrustRecord | None) -> str:
    """The trust probe's verdict with the Kendall tau it rests on (empty: no probe)."""
    if probe is None:
        return ""
    how = "fine-tuning" if probe.proxy == "finetune" else "stand-alone training"
    epochs = f"{probe.epochs} epoch{'s' * (probe.epochs != 1)}"
    return (
        f"Kendall tau {probe.tau:+.2f} (interval {probe.low:+.2f} to {probe.high:+.2f}; "
        f"supernet score vs {epochs} of {how}, {len(probe.archs)} architectures): "
        f"{probe.verdict}"
    )


def _trust(study: optuna.Study) -> TrustRecord | None:
    try:
        return study_trust(study)
    except StudyRecordError:  # a record this version cannot read
        return None


def _kept_numbers(
    kept: KeptRecord,
    retrained: dict[int, RetrainRecord],
    tuned: FineTuneResult | None,
    anchors: Sequence[AnchorEntry],
) -> tuple[str, float | None, float | None, float | None, str]:
    """``(weights in words, test, validation, measured seconds, what they cover)``."""
    if kept.weights == "fine-tuned":
        ready = [c for c in (tuned.ready if tuned else []) if c.trial == kept.trial]
        if ready:
            c = max(ready, key=lambda c: c.epochs)
            words = names.finetuned_weights(c.epochs)
            return words, c.test_accuracy, c.val_accuracy, c.train_seconds, FINETUNE_SECONDS
        return "fine-tuned (its ready model is not recorded)", None, None, None, ""
    if kept.source == "anchor":
        a = next((a for a in anchors if a.trial == kept.trial), None)
        words = "a zero-cost anchor, trained from scratch with the recipe before the supernet"
        if a is None:
            return words, None, None, None, ""
        secs = a.measured_train_cost
        return words, a.test_accuracy, a.val_accuracy, secs, FROM_SCRATCH_SECONDS
    w = retrained.get(kept.trial)
    words = "retrained from scratch with the study's recipe (the search's choice)"
    if w is None:
        return words, None, None, None, FROM_SCRATCH_SECONDS
    return words, w.test_accuracy, w.val_accuracy, w.measured_train_cost, FROM_SCRATCH_SECONDS


def headline(
    study: optuna.Study, location: Sequence[str] = (), export_as: str | None = None
) -> Headline:
    """The run's result from its records (``nasflow:kept``, the retrains, the fine-tuning
    phase, the anchors, the trust probe, the baseline table).

    Args:
        study: A study (finished or not: without a kept model the headline says why).
        location: The ``--storage``/``--runs`` arguments the export command needs
            (:func:`study_location`).
        export_as: What the export command names (default the study's name): the study
            file, for a space that no registry can rebuild from the stored study.
    """
    kept = study_kept(study)
    retrained, tuned = study_retrains(study), _finetuned(study)
    anchors, fallback = _anchor_rows(study)
    baseline = study_baseline(study)
    trust = trust_words(_trust(study))
    if not trust:  # the rung schedule measured how each rung ranks the next, for free
        rungs = study_rungs(study)
        trust = "" if rungs is None else f"read from the {rungs.line()}"
    export = export_command(export_as or study.study_name, kept, location)
    ranked = study_ranker(study)
    ranker = "" if ranked is None else ranked.line()
    trials = {t.number: t for t in study.get_trials(deepcopy=False)}
    if kept is None:
        front = pareto_trials(study)
        best = front[0] if front else None
        metric = study_metric_names(study)[0]
        why = "nothing was trained to keep (no phase 3: --no-retrain, a worker, or unfinished)"
        if metric == names.TABLE_ACCURACY:
            why = "a tabular study trains nothing: its accuracies are looked up in a table"
        record = TrialRecord.from_trial(best) if best is not None else TrialRecord()
        return Headline(
            study.study_name,
            None,
            None if best is None else best.number,
            f"not trained: its {metric} only" if best is not None else "no completed trial",
            record.arch,
            None,
            None,
            None,
            "",
            record.params,
            baseline,
            "",
            trust,
            export if best is not None else "",
            why,
            None if best is None else (metric, float(best.values[0])),
            ranker,
        )
    words, test, val, secs, what = _kept_numbers(kept, retrained, tuned, anchors)
    trial = trials.get(kept.trial)
    record = TrialRecord.from_trial(trial) if trial is not None else TrialRecord()
    return Headline(
        study.study_name,
        kept,
        kept.trial,
        words,
        record.arch,
        test,
        val,
        secs,
        what,
        record.params,
        baseline,
        anchors_words(kept, retrained, tuned, anchors, fallback),
        trust,
        export,
        ranker=ranker,
    )


#: What the search's own number is, in a few words.
_SHORT = {
    names.SUPERNET_SCORE: "validation accuracy with inherited supernet weights",
    names.FINETUNED_ACCURACY: "validation accuracy after fine-tuning during the search",
    names.TABLE_ACCURACY: "looked up in the tabular benchmark",
}


def baseline_words(h: Headline) -> str:
    """What share of the study's random architectures the kept model beats, or why that
    is not said."""
    b = h.baseline
    if b is None or not b.test_accuracies:
        missing = f" (unreadable: {', '.join(b.missing)})" if b and b.missing else ""
        return (
            "no table of random architectures of this space trained with the same recipe "
            f"(StudySpec.baseline){missing}: nothing to compare the kept model with"
        )
    if h.test_accuracy is None:
        return (
            f"{len(b.test_accuracies)} trainings of random architectures recorded, but the kept "
            "model has no test accuracy"
        )
    return (
        # Rows, not architectures: a table trained from two seeds holds each architecture
        # twice, and the share is over its rows.
        f"beats {h.beaten:.0%} of {len(b.test_accuracies)} stand-alone trainings of random "
        f"architectures of this space with the same recipe (rows of {len(b.files)} "
        f"table{'s' if len(b.files) != 1 else ''}; test accuracy, median {b.median:.4f})"
    )


def headline_lines(
    h: Headline, summarize: Callable[[str], str] | None = None, report: str = ""
) -> list[str]:
    """The headline in at most six lines (the closing lines of ``nasflow search``).

    Args:
        h: The headline.
        summarize: Names an architecture from its JSON (none: not shown).
        report: How to write the report (the command and the file), if said.
    """
    arch = f" ({summarize(h.arch)})" if summarize is not None and h.arch else ""
    tail = f"; report: {report}" if report else ""
    if h.kept is None:
        lines = [f"result: study {h.study!r} keeps no model: {h.why_none}"]
        if h.score is not None:
            metric, value = h.score
            lines.append(
                f"  best by {metric}: trial {h.trial}{arch}, {value:.4f} "
                f"({_SHORT.get(metric, metric)}: not a trained model's accuracy)"
            )
        if h.trust:
            lines.append(f"  trust: {h.trust}")
        if h.export:
            lines.append(f"  export: `{h.export}` (the supernet's weights, BN-recalibrated){tail}")
        elif report:
            lines.append(f"  report: {report}")
        return lines
    test = "not measured" if h.test_accuracy is None else f"{h.test_accuracy:.4f}"
    val = "" if h.val_accuracy is None else f"; validation {h.val_accuracy:.4f} chose it"
    size = "" if h.params is None else f"; {h.params:,} parameters"
    cost = "" if h.seconds is None else f"; {h.seconds:.1f} s measured ({h.seconds_what})"
    return [
        f"result: study {h.study!r} keeps trial {h.trial}{arch}: {h.weights}",
        f"  test accuracy {test} (test split{val}){size}{cost}",
        f"  vs random architectures: {baseline_words(h)}",
        f"  vs zero-cost anchors: {h.anchors or 'none trained (StudySpec.anchors)'}",
        f"  trust: {h.trust or 'no trust probe ran (StudySpec.trust)'}",
        *([f"  finalists chosen by the {h.ranker}"] if h.ranker else []),
        f"  export: `{h.export}`{tail}",
    ]
