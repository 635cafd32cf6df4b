"""The end-of-run text and the records it reads: screening, baseline, winners, time."""

from __future__ import annotations

import math
import os
import shlex
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

import numpy as np
import optuna

from nasflow import names
from nasflow.pipeline._arch._scoring import arch_summary
from nasflow.pipeline._arch._winners import WEIGHTS_FILE as WINNER_WEIGHTS
from nasflow.pipeline._baseline import baseline_record
from nasflow.pipeline._budget import budget_excludes
from nasflow.pipeline._costtable import format_cost_table
from nasflow.pipeline._kept import FALLBACK_MARGIN_SE, KeptDecision, anchor_call
from nasflow.pipeline._multipliers import format_multipliers, format_stack
from nasflow.pipeline._phases._anchors import anchor_line
from nasflow.pipeline._phases._trust import format_trust
from nasflow.pipeline._reproducibility import reproducibility_line
from nasflow.pipeline._result._headline import headline, headline_lines, study_location
from nasflow.pipeline._runner import RunResult
from nasflow.record import (
    AnchorEntry,
    FineTuneResult,
    TrialRecord,
    study_cost_table,
    study_finetuned,
    study_multipliers,
    study_reproducibility,
    study_rungs,
    study_screening,
    study_seconds,
    study_stack,
    study_trust,
)
from nasflow.search import StudySpec
from nasflow.space import Arch, is_registered
from nasflow.tabular import tabular_summary

#: What a run that kept nothing decided (a worker's, or a tabular study's).
NOTHING_KEPT = KeptDecision(None, [], 0.0, "", None, None, "retrained")


def one_per_arch(trials: Iterable[optuna.trial.FrozenTrial]) -> list[optuna.trial.FrozenTrial]:
    """The first trial of each architecture, in the given order."""
    seen: set[str] = set()
    out = []
    for t in trials:
        key = TrialRecord.from_trial(t).arch
        if key not in seen:
            seen.add(key)
            out.append(t)
    return out


def trial_numbers(numbers: Iterable[int], most: int = 8) -> str:
    """Trial numbers as ranges with a count (``0-2, 5 (4 trials)``); a count and the
    first and last numbers when they make more than ``most`` ranges."""
    ns = sorted(set(numbers))
    if not ns:
        return "none"
    runs: list[list[int]] = []
    for n in ns:
        if runs and n == runs[-1][1] + 1:
            runs[-1][1] = n
        else:
            runs.append([n, n])
    count = f"{len(ns)} trial{'s' if len(ns) != 1 else ''}"
    if len(runs) > most:
        return f"{count}, numbers {ns[0]} to {ns[-1]}"
    shown = ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)
    return f"{shown} ({count})"


def baseline_line(
    winner_test: float, paths: tuple[str | os.PathLike, ...], weights: str = "retrained"
) -> str:
    """How the winner compares with random architectures trained with the same recipe
    (``weights``: which of the winner's weights ``winner_test`` is of)."""
    table = baseline_record(paths)
    if table.median is None:
        return f"baseline: no readable table of random architectures ({', '.join(table.missing)})"
    median, beaten = table.median, table.beaten(winner_test)
    return (
        f"winner vs random architectures of this space: test accuracy {winner_test:.4f} "
        f"({weights}) against a median of {median:.4f} over {len(table.test_accuracies)} "
        "stand-alone trainings "
        f"of random architectures with the same recipe and test split "
        f"({100 * (winner_test - median):+.2f} points; better than {beaten:.0%} of them)"
    )


def anchors_verdict(
    study: str,
    kept_val: float,
    what: str,
    anchors: Sequence[AnchorEntry],
    samples: int | None,
    fallback: int | None = None,
) -> str:
    """The search's kept model against the zero-cost anchors, on validation accuracy (both
    trained from scratch with the study's recipe, or the kept model fine-tuned): the
    "kept model" line when an anchor is kept (``nasflow.pipeline._kept.anchor_call``: one
    that validates higher, or the ``fallback`` the search did not beat by
    :data:`FALLBACK_MARGIN_SE` standard errors), else how the two compare."""
    call = anchor_call(kept_val, anchors, samples, fallback)
    se = _standard_errors(FALLBACK_MARGIN_SE)
    if call.kept is not None:
        kept = call.kept
        kept_score = kept.val_accuracy or 0.0
        test = kept.test_accuracy
        if call.fallback and kept is call.against:
            why = (
                f"the space's largest architecture, the fallback the search must beat: "
                f"validation {kept_score:.4f} against {kept_val:.4f} for the search's {what}, "
                f"which is not ahead by more than {se} ({100 * call.margin:.2f} points)"
            )
        else:
            why = (
                f"validation {kept_score:.4f} against {kept_val:.4f} for the search's {what}, "
                f"higher by {100 * (kept_score - kept_val):.2f} points (no margin: the best "
                "validation is kept)"
            )
        return (
            f"kept model: trial {kept.trial}, a zero-cost anchor trained from scratch "
            f"before the supernet: {why}"
            + ("" if test is None else f"; test {test:.4f}")
            + f"; `nasflow export {shlex.quote(study)} --trial {kept.trial} --out DIR` "
            "exports it"
        )
    against = call.against
    which = (
        f"the fallback anchor (the space's largest architecture, trial {against.trial}"
        if call.fallback
        else f"the best anchor (trial {against.trial}"
    )
    head = (
        f"search vs zero-cost anchors: the {what} validates {kept_val:.4f}, {which}, "
        f"trained from scratch) {against.val_accuracy or 0.0:.4f}"
    )
    if call.lead > call.margin:
        return f"{head}: the search's choice is ahead by {100 * call.lead:.2f} points"
    if call.fallback:
        return (
            f"{head}: within {se} of a validation accuracy ({100 * call.margin:.2f} points), "
            "no difference on this evidence: the search's choice stays"
        )
    return f"{head}: tied, the search's choice stays"


def _standard_errors(k: float) -> str:
    return f"{k:g} standard error{'' if k == 1 else 's'}"


def ready_model_lines(record: FineTuneResult) -> list[str]:
    """The fine-tuning phase's ready models: every number says which weights it is of."""
    cands = sorted(record.candidates, key=lambda c: (-c.epochs, -(c.val_curve or (0,))[-1]))
    rungs = record.rungs or (record.full_epochs,)
    lines = [
        "",
        f"Ready models: finalists fine-tuned from inherited supernet weights (rungs "
        f"{'/'.join(map(str, rungs))} epochs; validation chooses, test only reports):",
        f"{'trial':>5}  {'epochs':>6}  {'supernet score':>14}  {'fine-tuned val':>14}  "
        f"{'fine-tuned test':>15}  {'measured train s':>16}  status",
    ]
    for c in cands:
        val = f"{c.val_accuracy:.4f}" if c.val_curve else "-"
        test = f"{c.test_accuracy:.4f}" if c.test_accuracy is not None else "-"
        lines.append(
            f"{c.trial:>5}  {c.epochs:>6}  {c.supernet_accuracy:>14.4f}  "
            f"{val:>14}  {test:>15}  {sum(c.epoch_seconds):>16.2f}  {c.status}"
        )
    # (The phase's measured early stopping is printed once, with the search-level
    # multipliers.)
    return lines


def worker_summary(result: RunResult, spec: StudySpec) -> str:
    """What a ``nasflow worker`` did, and who decides: a worker keeps no model (the
    process that started the study, ``nasflow search``, decides once every worker's
    trials are in), so it prints no kept model and no export command of its own."""
    quoted = shlex.quote(spec.name)
    kinds = {
        "trust": "trust probe",
        "trust-pool": "trust probe's pool",
        "finetune": "fine-tuning rungs",
        "retrain": "retrains",
    }
    trained = ", ".join(f"{kinds.get(k, k)} {n}" for k, n in sorted(result.trainings.items()))
    return "\n".join(
        [
            f"trials run by this process: {trial_numbers(result.ran_trials)}",
            "trainings after screening run by this process: " + (trained or "none"),
            f"time, this process: {_phase_seconds(result.seconds)}",
            f"study: {result.storage.safe_url}",
            "worker done: the kept model is decided by the study's own process "
            "(`nasflow search`) once every worker's trials are in; then "
            f"`nasflow report {quoted}` shows it",
        ]
    )


def summary_table(
    result: RunResult, spec: StudySpec, verbose: bool = True, study_file: str | None = None
) -> str:
    """The end-of-run text. Its closing lines (at most six) state the result: the kept
    model, its test accuracy, what it beats, the anchors' and the trust verdicts and the
    export command (:func:`~nasflow.search.headline`, the report's headline too).

    Args:
        result: The finished run.
        spec: Its study.
        verbose: Print the detail above the result: the most accurate architectures, the
            Pareto set, the ready models, the winners, every record (the CLI's
            ``--verbose``); else only where the study is and how long the run took.
        study_file: The study file the run was started from: the export command names it
            where the space is registered nowhere (``nasflow export NAME`` could not
            rebuild it from the stored study).
    """
    if spec.table is not None:  # tabular mode: the best found and its regret
        lines = tabular_summary(result.study, spec.table)
        lines.append(f"time: {result.seconds.get('total', 0.0):.1f}s")
        lines.append(f"study: {result.storage.safe_url}")
        return "\n".join(lines)
    location = study_location(result.out_dir, result.storage)
    report = shlex.join(["nasflow", "report", spec.name, *location])
    export_as = None if is_registered(spec.space) or study_file is None else study_file
    result_lines = headline_lines(
        headline(result.study, location, export_as),
        lambda arch: arch_summary(spec.space, Arch.from_json(arch)),
        f"`{report}`",
    )
    if not verbose:
        secs = result.seconds.get("total", 0.0)
        return "\n".join(
            [
                f"trials run by this process: {trial_numbers(result.ran_trials)}; "
                f"time {secs:.0f}s",
                f"study: {result.storage.safe_url} (the trained models: `nasflow show "
                f"{shlex.join([spec.name, *location])} --trained`; the screening's Pareto "
                "set: without --trained; the tables and records: this `nasflow search` "
                "again with --verbose, which trains nothing more for a finished study)",
                "",
                *result_lines,
            ]
        )
    detail = _table_lines(result, spec) + _outcome_lines(result, spec, export_as or spec.name)
    return "\n".join([*detail, "", *result_lines])


def _table_lines(result: RunResult, spec: StudySpec) -> list[str]:
    """The most accurate architectures, the Pareto set, the budget and the ready models."""
    finetuned = spec.finetune_epochs > 0
    retrained = {w.number: w for w in result.winners}
    cols = [("trial", 5), (names.SUPERNET_SCORE, len(names.SUPERNET_SCORE))]
    if finetuned:
        cols.append((names.FINETUNED_ACCURACY, len(names.FINETUNED_ACCURACY)))
    cols += [(names.PREDICTED_COST, len(names.PREDICTED_COST)), (names.PARAMS, 10)]
    cols.append((names.RETRAINED_TEST_ACCURACY, len(names.RETRAINED_TEST_ACCURACY)))
    cols.append(("proposed", 8))
    all_trials = result.study.get_trials(deepcopy=False)
    proposed = Counter(TrialRecord.from_trial(t).arch for t in all_trials)
    header = "  ".join(f"{n:>{w}}" for n, w in cols) + "  arch"

    def row(t: optuna.trial.FrozenTrial) -> str:
        rec = TrialRecord.from_trial(t)
        arch = rec.get_arch()
        cells = [str(t.number), f"{rec.supernet_accuracy:.4f}"]
        if finetuned:
            out = "screened out" if rec.screened_out is not None else "pruned"
            cells.append(f"{t.values[0]:.4f}" if t.values else out)
        cells += [f"{rec.train_cost:.1f}", f"{rec.params:,}"]
        w = retrained.get(t.number)
        cells.append(f"{w.test_accuracy:.4f}" if w is not None else "-")
        cells.append(str(proposed[rec.arch]))
        return (
            "  ".join(f"{c:>{w}}" for c, (_, w) in zip(cells, cols, strict=True))
            + f"  {arch_summary(spec.space, arch)}"
        )

    scored = [
        t
        for t in result.study.get_trials(deepcopy=False)
        if (rec := TrialRecord.from_trial(t)).supernet_accuracy is not None
        and rec.train_cost is not None
    ]
    first = names.FINETUNED_ACCURACY if finetuned else names.SUPERNET_SCORE
    # Ranked by the searched objective (pruned fine-tunings last), the winners always shown.
    scored.sort(
        key=lambda t: (
            not t.values,
            -(t.values or [TrialRecord.from_trial(t).supernet_accuracy])[0],  # type: ignore[list-item]
        )
    )
    scored = one_per_arch(scored)
    top = scored[:10] + [t for t in scored[10:] if t.number in retrained]
    meaning = [f"{names.SUPERNET_SCORE}: {names.MEANINGS[names.SUPERNET_SCORE]}"]
    if finetuned:
        meaning.append(
            f"{names.FINETUNED_ACCURACY}: after {spec.finetune_epochs} epochs (the first "
            "objective)"
        )
    meaning.append(f"{names.RETRAINED_TEST_ACCURACY}: phase 3, retrained from scratch, test split")
    meaning.append("proposed: how many trials proposed the architecture (scored once)")
    lines = [
        f"Most accurate of the {len(scored)} evaluated architectures by {first}, and the "
        f"winners ({'; '.join(meaning)}):",
        header,
        *(row(t) for t in top),
        "",
        f"Pareto set of study {spec.name!r} ({len(result.pareto)} trials):",
        header,
        *(row(t) for t in one_per_arch(result.pareto)),
    ]
    excluded = budget_excludes(all_trials, spec.budget)
    if excluded is not None:
        lines.append(f"budget: {excluded}")
    finetuned = study_finetuned(result.study)
    if finetuned is not None:
        lines.extend(ready_model_lines(finetuned))
    return lines


def wrap(text: str, width: int = 160) -> str:
    """A long summary line as lines of at most about ``width`` characters, broken after
    its ``"; "`` clauses (never inside one: commands and figures stay whole), each
    continuation indented by two spaces."""
    parts = text.split("; ")
    lines, current = [], parts[0]
    for part in parts[1:]:
        if len(current) + 2 + len(part) > width:
            lines.append(current + ";")
            current = "  " + part
        else:
            current += "; " + part
    lines.append(current)
    return "\n".join(lines)


def _phase_seconds(seconds: Mapping[str, float]) -> str:
    """``phase Ns, ...`` in the record's order."""
    return ", ".join(f"{k} {v:.0f}s" for k, v in seconds.items())


def regime_line(result: RunResult, decision: KeptDecision) -> str | None:
    """What one stand-alone training of the recipe cost here, what the supernet and the
    screening cost in such trainings (``k``), and what random search buys with that
    budget: the best of ``k`` random architectures beats ``k / (k + 1)`` of the space's
    random architectures in expectation (the order statistic, ignoring the noise of one
    training), the bar above which the one-shot part pays for itself on this machine.
    ``None`` where this run measured no stand-alone training or trained no supernet."""
    measured = [w.measured_train_cost for w in result.winners]
    measured += [float(e.measured_train_cost) for e in decision.anchors if e.measured_train_cost]
    spent = study_seconds(result.study) or result.seconds  # every run's: a rerun adds ~0 s
    one_shot = spent.get("supernet", 0.0) + spent.get("search", 0.0)
    if not measured or one_shot <= 0:
        return None
    single = float(np.median(measured))
    k = one_shot / single
    bar = math.floor(k) / (math.floor(k) + 1) if k >= 1 else 0.0
    return (
        f"regime: one stand-alone training of the recipe took {single:.0f}s here (median of "
        f"{len(measured)} measured by this study); the supernet and the screening took "
        f"{one_shot:.0f}s, as much as {k:.1f} of them; random search with that budget keeps "
        f"the best of {math.floor(k)} random architectures, which beats {bar:.0%} of them in "
        "expectation; the one-shot part pays for itself here where the kept model beats more"
    )


def ranking_line(spec: StudySpec, decision: KeptDecision) -> str:
    """Which ranking chose the kept model, and what parameter count alone would have
    kept: the zero-cost anchor with the most parameters (trained from scratch like a
    retrain), its validation and test accuracy beside the kept model's."""
    rank_by = spec.rungs.rank_by if spec.rungs is not None else None
    rank_by = spec.finetuning.rank_by if spec.finetuning is not None else rank_by
    first = {
        "rank_sum": "the rank sum of supernet accuracy and cross-entropy",
        "ranker": "the pairwise ranker (the headline's line)",
    }.get(rank_by or "", "supernet accuracy")
    if spec.rungs is not None:
        how = (
            f"{first} (the rungs' queue), then validation after each fine-tuning rung and "
            "after the full training (promotion)"
        )
    elif spec.finetuning is not None and spec.top_rung_inherited:
        how = (
            f"{first} (finalists), then validation after each fine-tuning rung, the last "
            "the recipe's epochs from the inherited weights"
        )
    elif spec.finetuning is not None:
        how = f"{first} (finalists), fine-tuned validation (retrains), then their validation"
    else:
        how = "supernet accuracy (the screened Pareto set), then retrained validation"
    line = f"chosen by: {how}"
    if not decision.anchors:
        return line + "; no anchors trained, so parameter count's own choice was not measured"
    largest = max(decision.anchors, key=lambda e: e.params)
    if largest.val_accuracy is None or largest.test_accuracy is None:
        return line
    kept_val, kept_test = decision.search_val, None
    if decision.anchor is not None:
        kept_val, kept_test = decision.search_val, decision.anchor.test_accuracy
        kept_val = decision.anchor.val_accuracy or kept_val
    elif decision.search is not None:
        kept_test = decision.search.test_accuracy
    same = decision.trial == largest.trial
    ours = (
        "the same model"
        if same
        else f"the kept model's {kept_val:.4f}"
        + ("" if kept_test is None else f", test {kept_test:.4f}")
    )
    return (
        f"{line}; parameter count alone keeps trial {largest.trial} (the anchor with the most "
        f"parameters, {largest.params:,}, retrained from scratch): validation "
        f"{largest.val_accuracy:.4f}, test {largest.test_accuracy:.4f}, against {ours}"
    )


def _outcome_lines(result: RunResult, spec: StudySpec, export_as: str) -> list[str]:
    """The winners, the kept model, the anchors, the baseline, every record, what a rerun
    reproduces and where things were written (``export_as``: what the export commands
    name, the study's name or its file)."""
    lines: list[str] = []
    finetuned = study_finetuned(result.study)
    # Which model is kept, as the run decided it (once, before it recorded it): the
    # search's (its retrain or its fine-tuned weights), unless a zero-cost anchor
    # validates higher by the margin.
    decision = result.kept if result.kept is not None else NOTHING_KEPT
    kept, trained, anchor_kept = decision.search, decision.anchors, decision.anchor
    kept_val, what, samples = decision.search_val, decision.what, decision.samples
    several = len(result.winners) > 1
    spread = sum(w.spread for w in result.winners)
    if several and spread:
        # A spread retrain may validate higher than the first: it is not a candidate.
        lines.append(
            f"phase 3 retrained {len(result.winners)} trials from scratch; the first validates "
            f"highest of the {len(result.winners) - spread} chosen by score and is the "
            f"search's choice; the last {spread}, retrained to spread the trained models "
            "over cost, are not candidates for it"
        )
    elif several:
        lines.append(
            f"phase 3 retrained {len(result.winners)} trials from scratch; the first validates "
            "highest after retraining and is the search's choice"
        )
    for w in result.winners:
        when = " (by an earlier run)" if w.reused else ""
        finalist = finetuned is not None and finetuned.candidate(w.number) is not None
        chosen = (
            " (spread over cost, not a candidate for the kept model)"
            if w.spread
            else " (a finalist by its fine-tuned validation accuracy)"
            if finalist and several
            else " (chosen by its fine-tuned validation accuracy)"
            if finalist
            else ""
        )
        lines.append(
            f"winner: trial {w.number}{chosen} retrained from scratch{when}: "
            f"{names.RETRAINED_TEST_ACCURACY} {w.test_accuracy:.4f}, "
            f"{names.RETRAINED_VAL_ACCURACY} {w.val_accuracy:.4f}; training cost measured "
            f"{w.measured_train_cost:.1f}s vs predicted {w.predicted_train_cost:.1f}s"
        )
        if w.weights is not None:
            lines.append(f"  weights: {w.weights / WINNER_WEIGHTS}")
        if kept is not None and w is result.winners[0]:
            label = "kept model" if anchor_kept is None else "the search's choice"
            lines.append(kept.line(spec.name, label))
    lines.extend(anchor_line(e) for e in trained)
    if trained and result.winners:
        lines.append(
            anchors_verdict(spec.name, kept_val, what, trained, samples, decision.fallback)
        )
    if kept is not None:
        lines.append(wrap(ranking_line(spec, decision)))
    regime = regime_line(result, decision)
    if regime:
        lines.append(wrap(regime))
    if result.winners and spec.baseline:
        lines.append(baseline_line(result.winners[0].test_accuracy, spec.baseline))
        if kept is not None and kept.kind == "fine-tuned" and kept.test_accuracy is not None:
            lines.append(
                baseline_line(
                    kept.test_accuracy,
                    spec.baseline,
                    f"kept: fine-tuned {kept.finetuned_epochs} epochs",
                )
            )
        if anchor_kept is not None and anchor_kept.test_accuracy is not None:
            lines.append(
                baseline_line(
                    anchor_kept.test_accuracy,
                    spec.baseline,
                    "kept: zero-cost anchor, trained from scratch",
                )
            )
    return lines + _record_lines(result, spec, decision.trial, decision.weights, export_as)


def _record_lines(
    result: RunResult,
    spec: StudySpec,
    kept_trial: int | None,
    kept_weights: str,
    export_as: str,
) -> list[str]:
    """Time, screening, cost table, trust, stack and multipliers, and where things are."""
    lines: list[str] = []
    study = result.study
    lines.append("time, this run: " + _phase_seconds(result.seconds))
    spent = study_seconds(study)  # every finished run's, this one's included
    if spent.get("total", 0.0) > result.seconds.get("total", 0.0) + 0.5:
        lines.append("time, the study's finished runs together: " + _phase_seconds(spent))
    screening = study_screening(study)
    if screening is not None:
        lines.append(
            f"screening: {screening.candidates} distinct candidates scored from the supernet, "
            f"median {screening.median_score_ms:.1f} ms each (BN recalibration on "
            f"{spec.bn_batches} training batches + validation, measured)"
        )
    lines.extend(format_cost_table(study_cost_table(study)))
    trust = study_trust(study)
    if trust is not None:
        lines.append(format_trust(trust, spent.get("total") or result.seconds.get("total")))
    rungs = study_rungs(study)
    if rungs is not None:  # how many reached each rung, each rung's tau with the next
        lines.append(rungs.line())
    lines.extend(format_stack(study_stack(study)))
    multipliers = study_multipliers(study)
    if multipliers is not None:
        lines.extend(format_multipliers(multipliers))
    reproducibility = study_reproducibility(study)
    if reproducibility is not None:
        lines.append(wrap(reproducibility_line(reproducibility)))
    lines.append(f"trials run by this process: {trial_numbers(result.ran_trials)}")
    lines.append(f"study: {result.storage.safe_url}")
    lines.append(f"supernet checkpoints: {result.out_dir / 'supernet'}")
    quoted = shlex.quote(spec.name)
    exported = shlex.quote(export_as)
    if kept_trial is None:
        export = f"`nasflow export {exported} --best --out DIR` exports the most accurate trial"
    elif kept_weights == "fine-tuned":
        export = (
            f"`nasflow export {exported} --ready {kept_trial} --out DIR` exports the kept "
            f"model (trial {kept_trial}, fine-tuned weights), `--best` its architecture "
            "retrained from scratch"
        )
    else:
        export = (
            f"`nasflow export {exported} --best --out DIR` exports the kept model (trial "
            f"{kept_trial}, retrained from scratch)"
        )
    lines.append(
        f"next: `nasflow report {quoted}` writes {result.out_dir / 'report.html'}; {export}"
        + (
            f"; `nasflow export {exported} --ready best --out DIR` the ready "
            "model with the best validation accuracy, with its fine-tuned weights"
            if study_finetuned(study) is not None
            else ""
        )
    )
    return lines
