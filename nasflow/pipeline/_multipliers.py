"""Search-level speedup multipliers: what one-shot search, early stopping, the cost-model
gate, the training stack and data-parallel training each saved, compounded, next to the
measured wall time of the search.

A multiplier is cost without the technique / cost with it. The training stack's is
measured (by ``stack="auto"``'s calibration on this device: the chosen stack against the
plain baseline, same work, same run). The one-shot figure compares against work that never
ran (training every distinct candidate stand-alone): it is MEASURED when the study trained
architectures stand-alone (the retrained winners, the fine-tuned ready models' timed
epochs scaled to the recipe's epochs; :func:`measured_trainings`), whose measured time
the cost model only spreads over the distinct candidates by their predicted-cost ratio;
else an estimate from the cost model's predicted training costs. The gate figure is an
estimate from predicted costs, and early stopping's is an estimate from epoch counts. A
candidate scored twice (``duplicate_of``) is counted once. Each part says which it is
(``"label"``: ``"MEASURED"``, ``"ESTIMATE"`` or ``"n/a"``) and what it comes from. The
compounded product assumes the techniques are independent; it is shown next to the
measured wall time of the search, never instead of it."""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from optuna.trial import FrozenTrial, TrialState

from nasflow.record import FineTuneResult, MultipliersRecord, StackRecord, TrialRecord

_ONE_SHOT_SOURCE = (
    "the predicted stand-alone training cost (trial user attribute 'train_cost': the "
    "study's training budget, from the cost model) of every distinct evaluated candidate"
)


#: How to calibrate when a study's calibration was skipped.
CALIBRATE_HINT = (
    "run `nasflow search STUDY --recalibrate-stack` with a larger StudySpec(stack_budget=...) "
    "or on a less loaded machine, or measure the layers with `nasflow measure-stack --auto`"
)


def _ratio(num: float, den: float) -> float | None:
    return num / den if den > 0 and math.isfinite(num / den) else None


def _x(m: float | None, missing: str = "n/a") -> str:
    return f"x{m:.2f}" if m is not None else missing


def stack_origin(record: StackRecord) -> str:
    """Where a stack record's numbers come from (reused device record or this run)."""
    origin = record.origin
    if origin is None:
        return "stored with this study"
    when = str(origin.measured_at or "?")[:19].replace("T", " ")
    if origin.kind == "reused":
        return f"this device's record of {when} UTC, reused: no calibration ran for this study"
    if origin.kind == "calibrated":
        kept = f"; NOT stored for the device: {origin.not_stored}" if origin.not_stored else ""
        return f"calibrated on this device for this study, {when} UTC{kept}"
    return f"calibration skipped, {when} UTC"


def _stack_part(record: StackRecord | None) -> dict[str, Any]:
    if record is None:
        return {
            "multiplier": None,
            "label": "n/a",
            "note": "not measured (the study fixes its stack; stack='auto' measures it)",
        }
    if record.skipped:
        return {
            "multiplier": None,
            "label": "n/a",
            "chosen": [],
            "note": f"not measured: calibration skipped ({record.skipped}); trained with "
            f"the baseline; to calibrate, {CALIBRATE_HINT}",
        }
    mult = record.chosen_multiplier
    chosen = list(record.chosen or ())
    origin = stack_origin(record)
    if mult is None:
        layers = record.layers if record.all_layers else ()
        alone = ", ".join(f"{x.name} {_x(x.alone, 'failed')}" for x in layers)
        gain = record.calibration.min_gain
        need = f"; needed {_x(gain)}" if gain else ""
        alone = f" (MEASURED alone: {alone}{need}" if alone else " (nothing gained enough"
        note = (
            f"no layer kept on this device{alone}, or they lost accuracy); trained with the "
            "baseline (x1 by definition)"
        )
    else:
        where = record.chosen_from or "calibration"
        note = f"{'+'.join(chosen)} vs the baseline, {where} of the calibration"
    return {
        "multiplier": mult,
        "label": "MEASURED" if mult is not None else "n/a",
        "product": record.product,
        "chosen": chosen,
        "origin": origin,
        "note": f"{note}; {origin}",
    }


def measured_trainings(
    trials: Iterable[FrozenTrial],
    recipe_epochs: int,
    winners: Iterable[tuple[int, float]] = (),
    finetuned: FineTuneResult | None = None,
) -> list[dict[str, Any]]:
    """The stand-alone trainings this study measured, each at the recipe's epochs, beside
    the cost model's prediction for the same architecture.

    Args:
        trials: The study's trials (their predicted ``train_cost``).
        recipe_epochs: The training budget's epochs (``StudySpec.train.epochs``).
        winners: ``(trial number, measured seconds)`` of the winners retrained from
            scratch by this study (in this run or, reused now, an earlier one).
        finetuned: The fine-tuning phase's record: each ready model's timed epochs, their
            mean scaled to ``recipe_epochs``. A trial also retrained counts once, by its
            retraining.

    Returns ``{"trial", "seconds", "predicted", "source"}`` per measured training with a
    positive prediction, ``source`` ``"retrained"`` or ``"fine-tuned epochs"``.
    """
    predicted = {}
    for t in trials:
        cost = TrialRecord.from_trial(t).train_cost
        if cost is not None and cost > 0 and t.number not in predicted:
            predicted[t.number] = float(cost)
    out: dict[int, dict[str, Any]] = {}
    for number, secs in winners:
        if number in predicted and secs > 0 and math.isfinite(secs):
            out[number] = {
                "trial": number,
                "seconds": float(secs),
                "predicted": predicted[number],
                "source": "retrained",
            }
    for c in () if finetuned is None else finetuned.candidates:
        number, epochs = c.trial, list(c.epoch_seconds)
        if number in out or number not in predicted or not epochs:
            continue
        out[number] = {
            "trial": number,
            "seconds": statistics.fmean(epochs) * recipe_epochs,
            "predicted": predicted[number],
            "source": "fine-tuned epochs",
            "epochs_timed": len(epochs),
        }
    return list(out.values())


def search_multipliers(
    trials: Iterable[FrozenTrial],
    seconds: Mapping[str, float],
    finetune_epochs: int,
    stack_record: StackRecord | None = None,
    measured_standalone: Sequence[float] | None = None,
    measured_runs: Sequence[Mapping[str, Any]] | None = None,
    finetuned: FineTuneResult | None = None,
) -> MultipliersRecord:
    """The search-level multipliers of a finished run (a pure function of its records).

    Candidates are the finished trials (complete or pruned); those the cost-model gate
    skipped (user attribute ``skipped``) were never evaluated, the others were.

    Args:
        trials: The study's trials.
        seconds: The study's phase times over its finished runs (``supernet``, ``search``,
            ``total``; :func:`nasflow.record.study_seconds`).
        finetune_epochs: The study's fine-tuning epochs per candidate.
        stack_record: The speedup stack's record (``stack="auto"``'s calibration), or
            ``None`` when the stack was not measured.
        measured_standalone: Measured stand-alone training seconds of random architectures
            of the study's space with its recipe (the study's ``baseline`` tables). When
            given, the one-shot multiplier is measured from them: their median times the
            distinct candidates scored, against the measured supernet + search time (the
            cost-model estimate stays in the record for comparison); an ESTIMATE, since
            they were timed when the tables were made.
        measured_runs: Stand-alone trainings measured by this study
            (:func:`measured_trainings`). When given, the one-shot multiplier is MEASURED:
            their measured seconds over their predicted ones rescale the predicted cost
            of the distinct candidates (the cost model only spreads the measured time
            over them by predicted-cost ratio), against the measured supernet + search
            time; it takes precedence over ``measured_standalone``.
        finetuned: The fine-tuning phase's record. Where the candidates themselves were not
            fine-tuned (``finetune_epochs`` 0), its measured early stopping is the early-stopping
            multiplier: every finalist trained to the last rung, each untrained epoch at
            the candidate's own measured epoch time, over the seconds measured. MEASURED.

    Returns:
        The record (stored as ``to_dict`` gives it): ``one_shot``, ``early_stopping``,
        ``gate``, ``stack``, ``ddp``
        (each with a ``multiplier``, ``None`` when not measured or not applicable, a
        ``label``: ``"MEASURED"``, ``"ESTIMATE"`` or ``"n/a"``, and a ``note`` saying what
        it comes from), ``compounded`` (product of the available multipliers, and which)
        and ``end_to_end`` (the measured wall time of the search and of the run).
    """
    finished = [t for t in trials if t.state in (TrialState.COMPLETE, TrialState.PRUNED)]
    records = {id(t): TrialRecord.from_trial(t) for t in finished}  # (numbers may repeat)
    # One trial per architecture: a repeat reused an earlier score (``duplicate_of``).
    firsts: dict[Any, FrozenTrial] = {}
    for t in finished:
        firsts.setdefault(records[id(t)].arch or ("trial", t.number, id(t)), t)
    finished = list(firsts.values())
    skipped = [t for t in finished if records[id(t)].skipped is not None]
    evaluated = [t for t in finished if records[id(t)].skipped is None]
    predicted = sum(records[id(t)].train_cost or 0.0 for t in evaluated)
    actual = float(seconds.get("supernet", 0.0)) + float(seconds.get("search", 0.0))
    one_shot, without = _one_shot_part(
        len(evaluated), predicted, actual, measured_standalone, measured_runs
    )
    trained = sum(records[id(t)].epochs_trained or 0 for t in evaluated)
    early = _early_part(finetune_epochs, len(evaluated), trained, finetuned)
    skipped_cost = sum(records[id(t)].train_cost or 0.0 for t in skipped)
    gate = _gate_part(len(evaluated), len(skipped), predicted, skipped_cost)
    stack = _stack_part(stack_record)
    ddp = {
        "multiplier": None,
        "label": "n/a",
        "ranks": 1,
        "note": "one process: no data-parallel training ran",
    }
    parts = dict(one_shot=one_shot, early_stopping=early, gate=gate, stack=stack, ddp=ddp)
    return MultipliersRecord.from_dict(_with_totals(parts, seconds, actual, without))


def _with_totals(
    parts: dict[str, dict[str, Any]],
    seconds: Mapping[str, float],
    actual: float,
    without: float | None,
) -> dict[str, Any]:
    """The record: ``parts``, their product and the run's measured wall time."""
    used = [name for name, p in parts.items() if p["multiplier"] is not None]
    product = math.prod(parts[name]["multiplier"] for name in used) if used else None
    measured_parts = [name for name in used if parts[name]["label"] == "MEASURED"]
    record = {
        **parts,
        "compounded": {
            "multiplier": product,
            "of": used,
            "measured": measured_parts,
            "estimate": True,
            "label": "ESTIMATE" if product is not None else "n/a",
        },
        "end_to_end": {
            "seconds": float(seconds.get("total", actual)),
            "search_seconds": actual,
            # What training the same candidates stand-alone would have taken (from the
            # measured sample), when the study has baseline tables.
            "without_nasflow_seconds": without,
            "multiplier": None,
            "label": "MEASURED",
            "note": "measured wall time of the study's runs; no baseline search ran, so the "
            "end-to-end multiplier is not measured",
        },
    }
    return record


def _one_shot_part(
    distinct: int,
    predicted: float,
    actual: float,
    measured_standalone: Sequence[float] | None,
    measured_runs: Sequence[Mapping[str, Any]] | None,
) -> tuple[dict[str, Any], float | None]:
    """The one-shot part of :func:`search_multipliers` (``distinct`` candidates, predicted
    to cost ``predicted`` s, against ``actual`` s), and their measured stand-alone cost."""
    evaluated = distinct > 0
    one_shot_m = _ratio(predicted, actual) if evaluated else None
    one_shot: dict[str, Any] = {
        "multiplier": one_shot_m,
        "label": "ESTIMATE" if one_shot_m is not None else "n/a",
        "estimate": True,
        "estimated_standalone_seconds": predicted,
        "actual_seconds": actual,
        "candidates": distinct,
        "note": f"estimated from {_ONE_SHOT_SOURCE}, vs the measured supernet + search time",
    }
    without = None
    runs = [r for r in measured_runs or () if r["predicted"] > 0 and r["seconds"] > 0]
    if measured_standalone and evaluated and not (runs and evaluated):
        per = statistics.median(float(v) for v in measured_standalone)
        without = distinct * per
        m = _ratio(without, actual)
        one_shot.update(
            {
                "multiplier": m,
                # The sample was timed when its tables were made, under that machine's load
                # then, not in this run: an estimate from measurements, labelled so.
                "label": "ESTIMATE" if m is not None else "n/a",
                "estimate": True,
                "measured_standalone_seconds": without,
                "distinct_candidates": distinct,
                "median_measured_seconds": per,
                "sample": len(measured_standalone),
                "note": f"estimated from the stand-alone training time measured on "
                f"{len(measured_standalone)} random architectures of this space with this "
                f"recipe when the study's baseline tables were made (median {per:.2f}s; the "
                f"machine's load then may differ from now) x the {distinct} distinct "
                f"candidates scored, vs "
                f"the measured supernet + search time; the cost model predicted "
                f"{predicted:.0f}s for the same candidates",
            }
        )
    if runs and evaluated:
        measured = sum(float(r["seconds"]) for r in runs)
        scale = measured / sum(float(r["predicted"]) for r in runs)
        without = scale * predicted
        m = _ratio(without, actual)
        retrained = sum(r["source"] == "retrained" for r in runs)
        sources = [f"{retrained} retrained from scratch"] if retrained else []
        if len(runs) - retrained:
            sources.append(
                f"{len(runs) - retrained} fine-tuned ready models' timed epochs scaled to the "
                "recipe's epochs"
            )
        one_shot.update(
            {
                "multiplier": m,
                "label": "MEASURED" if m is not None else "n/a",
                "estimate": False,
                "measured_standalone_seconds": without,
                "distinct_candidates": distinct,
                "sample": len(runs),
                "sample_measured_seconds": measured,
                "sample_sources": sources,
                "scale": scale,
                "note": f"measured: {len(runs)} stand-alone trainings timed by this study "
                f"({'; '.join(sources)}) took {measured:.1f}s where the cost model predicted "
                f"{measured / scale:.1f}s (x{scale:.2f}); that measured rate over the "
                f"{distinct} distinct candidates (spread by their predicted cost, "
                f"{predicted:.0f}s) vs the measured supernet + search time",
            }
        )
    return one_shot, without


def _early_part(
    finetune_epochs: int, evaluated: int, trained: int, finetuned: FineTuneResult | None
) -> dict[str, Any]:
    """The early-stopping part: epochs counted, or the fine-tuning phase's measurement."""
    planned = finetune_epochs * evaluated
    early_m = _ratio(planned, trained) if planned else None
    early = {
        "multiplier": early_m,
        "label": "ESTIMATE" if early_m is not None else "n/a",
        "estimate": True,
        "epochs_trained": trained,
        "epochs_without_pruning": planned,
        "note": (
            f"estimated from epoch counts: {finetune_epochs} fine-tuning epochs x "
            f"{evaluated} distinct evaluated candidates without pruning vs the {trained} "
            "epochs "
            "trained (counted), assuming every epoch costs the same"
            if planned
            else "no fine-tuning: nothing to stop early"
        ),
    }
    phase = None if finetuned is None else finetuned.early_stopping
    if not planned and finetuned is not None and phase is not None:
        spent, full = phase.seconds, phase.full_seconds
        finalists = len(finetuned.candidates)
        rungs = finetuned.rungs or (None,)
        phase_m = _ratio(full, spent)
        early = {
            "multiplier": phase_m,
            "label": "MEASURED" if phase_m is not None else "n/a",
            "estimate": False,
            "seconds": float(spent),
            "full_seconds": float(full),
            "finalists": finalists,
            "last_rung": rungs[-1],
            "note": f"measured: the fine-tuning phase trained its {finalists} finalists for "
            f"{spent:.1f}s; every finalist to the last rung would have taken {full:.1f}s "
            "(each epoch not trained at that candidate's own measured epoch time)",
        }
    return early


def _gate_part(
    evaluated: int, skipped: int, predicted: float, skipped_cost: float
) -> dict[str, Any]:
    """The cost-model gate's part: all candidates' predicted cost over the evaluated ones'."""
    gate_m = _ratio(predicted + skipped_cost, predicted) if evaluated else None
    gate = {
        "multiplier": gate_m,
        "label": "ESTIMATE" if gate_m is not None else "n/a",
        "estimate": True,
        "skipped": skipped,
        "skipped_predicted_seconds": skipped_cost,
        "note": "estimated from the predicted stand-alone cost (cost model) of all "
        "candidates / of the evaluated ones",
    }
    return gate


#: How the summary and the report name each part of the record.
MULTIPLIER_TITLES = {
    "one_shot": "one-shot",
    "early_stopping": "early stopping",
    "gate": "cost-model gate",
    "stack": "training stack",
    "ddp": "DDP",
    "compounded": "compounded",
}


def multiplier_basis(record: MultipliersRecord) -> dict[str, str]:
    """What each multiplier of a :func:`search_multipliers` record comes from, in words:
    the text the summary prints after each part's label (and the report shows beside its
    step), keyed by part (``MULTIPLIER_PARTS`` and ``"compounded"``). A part without a
    multiplier says why: its counts (0 candidates...), or its note where there is nothing
    to count (no fine-tuning epochs planned, no stack measured, one process)."""
    one, early, gate = record.part("one_shot"), record.part("early_stopping"), record.part("gate")
    if one.sample_measured_seconds is not None and one.scale:
        spent = one.sample_measured_seconds
        one_text = (
            f"{one.distinct_candidates} distinct candidates stand-alone = "
            f"{one.measured_standalone_seconds:.0f}s (n={one.sample} trainings measured "
            f"by this study: {'; '.join(one.sample_sources)}; "
            f"{spent:.1f}s measured vs {spent / one.scale:.1f}s predicted, "
            f"x{one.scale:.2f}, spread over the candidates by predicted cost) vs "
            f"{one.actual_seconds:.0f}s supernet + search (measured)"
        )
    elif one.measured_standalone_seconds is not None:
        one_text = (
            f"{one.distinct_candidates} distinct candidates x "
            f"{one.median_measured_seconds:.2f}s "
            f"(median stand-alone training measured on {one.sample} random architectures "
            f"of this space when its baseline tables were made) = "
            f"{one.measured_standalone_seconds:.0f}s vs "
            f"{one.actual_seconds:.0f}s supernet + search (measured); the cost model "
            f"predicted {one.estimated_standalone_seconds:.0f}s"
        )
    elif one.candidates is not None:
        one_text = (
            f"{one.candidates} distinct candidates stand-alone ~"
            f"{one.estimated_standalone_seconds:.0f}s (sum of their predicted train_cost, "
            f"cost model) vs {one.actual_seconds:.0f}s supernet + search (measured)"
        )
    else:
        one_text = one.note or "not in the record"
    if early.epochs_without_pruning:
        early_text = (
            f"{early.epochs_trained} of {early.epochs_without_pruning} fine-tuning "
            "epochs trained (counted; time assumed proportional to epochs)"
        )
    elif early.full_seconds is not None:
        last = early.last_rung
        early_text = (
            f"{early.seconds:.1f}s fine-tuning {early.finalists} finalists against "
            f"{early.full_seconds:.1f}s for every finalist to "
            f"{f'{last} epochs' if last else 'the last rung'} (each epoch timed; the epochs "
            "not trained at each candidate's measured epoch time)"
        )
    else:  # (none planned: the note says why)
        early_text = early.note or "not in the record"
    gate_text = (
        f"{gate.skipped} distinct candidates skipped, predicted "
        f"{gate.skipped_predicted_seconds:.0f}s of training (cost model)"
        if gate.skipped is not None
        else gate.note or "not in the record"
    )
    short = {"one_shot": "one-shot", "early_stopping": "early stopping", "gate": "gate"}
    of = " x ".join(short.get(n, n) for n in record.compounded_of)
    return {
        "one_shot": one_text,
        "early_stopping": early_text,
        "gate": gate_text,
        "stack": record.part("stack").note or "not in the record",
        "ddp": record.part("ddp").note or "not in the record",
        "compounded": f"{of or 'nothing measured or estimated'}; assumes the techniques are "
        "independent",
    }


def format_multipliers(record: MultipliersRecord) -> list[str]:
    """Summary lines for a :func:`search_multipliers` record."""
    basis = multiplier_basis(record)
    lines = ["search-level multipliers (cost without / cost with):"]
    for part in record.parts:
        title = MULTIPLIER_TITLES[part.key]
        lines.append(f"  {title:<16} {_x(part.multiplier):>8}  {part.label}: {basis[part.key]}")
    comp = record.compounded
    lines.append(
        f"  {'compounded':<16} {_x(comp.multiplier):>8}  {comp.label} ({basis['compounded']}) "
        f"| measured wall time: search {record.search_seconds or 0.0:.0f}s (supernet + "
        f"search), the study's runs {record.run_seconds or 0.0:.0f}s"
    )
    if record.without_nasflow_seconds is not None:
        one = record.part("one_shot")
        lines.append(
            f"  {'without nasflow':<16} training the same {one.distinct_candidates} "
            f"distinct candidates stand-alone: {record.without_nasflow_seconds:.0f}s (from "
            f"the measured sample above: {one.label}) vs {record.search_seconds or 0.0:.0f}s "
            "measured here"
        )
    return lines


def format_stack(record: StackRecord | None) -> list[str]:
    """Summary lines for a ``stack="auto"`` record: the waterfall's numbers, each layer
    alone and cumulatively, their product next to the measured end-to-end figure, the
    interaction, and the stack the study trained with. Empty without a record."""
    if record is None:
        return []
    if record.skipped:
        return [
            f"speedup stack (stack='auto'): calibration SKIPPED: {record.skipped}; "
            "trained with the baseline (fp32 eager), nothing measured",
            f"  to calibrate: {CALIBRATE_HINT}",
        ]
    baseline = "the baseline" if record.baseline is None else record.baseline
    lines = [
        f"speedup stack (stack='auto'), vs {baseline} on "
        f"{'?' if record.device is None else record.device}; {stack_origin(record)}:"
    ]
    if not record.all_layers:  # the chosen layers only
        lines.append(
            f"  trained with: {'+'.join(record.chosen or ()) or 'baseline'} "
            f"{_x(record.chosen_multiplier)} MEASURED"
        )
        return lines
    lines.append(f"  {'layer':<14} {'alone':>7}  {'cumulative':>10}  used  (all MEASURED)")
    for x in record.layers:
        used = "yes" if x.kept else "no"
        decision = record.decision(x.name)
        why = "" if decision is None else decision.reason
        if decision is not None and decision.kept and not x.kept:
            why += "; not in the fastest variant of the final run"
        lines.append(
            f"  {x.name:<14} {_x(x.alone, 'failed'):>7}  "
            f"{_x(x.cumulative, '-'):>10}  {used:<4}  {why}"
        )

    def row(name: str, value: float | None, text: str) -> str:
        return f"  {name:<30} {_x(value):>7}  {text}"

    lines.append(
        row(
            "product of the layers alone",
            record.product,
            "ESTIMATE of the stacked layers (assumes they are independent)",
        )
    )
    lines.append(
        row(f"end to end, all {len(record.layers)} stacked", record.end_to_end, "MEASURED")
    )
    lines.append(row("interaction", record.interaction, "measured end to end / product"))
    if record.noise_multiplier is not None:
        lines.append(
            row(
                "noise floor",
                record.noise_multiplier,
                "MEASURED (the baseline against its reseeded replica)",
            )
        )
    cal = record.calibration
    if record.chosen:
        lines.append(
            f"  trained with: {'+'.join(record.chosen)} {_x(record.chosen_multiplier)} "
            f"MEASURED against the baseline ({record.chosen_from or 'calibration'})"
        )
    else:
        lines.append(
            "  trained with: the baseline (fp32 eager): no layer gained "
            f"{_x(cal.min_gain, 'enough')} on this device without losing accuracy (see each "
            "reason)"
        )
    if cal.seconds is not None:
        of = f" of a {cal.budget_seconds:g}s budget" if cal.budget_seconds else ""
        phases = []
        if cal.first_phase not in (None, "complete"):
            phases.append(f"first phase {cal.first_phase}")
        if str(cal.second_phase or "").startswith("skipped"):
            phases.append(f"second phase {cal.second_phase}")
        more = f"; {'; '.join(phases)}" if phases else ""
        lines.append(f"  calibration: {cal.seconds:.0f}s{of} (measured when it ran){more}")
    return lines


def stack_line(record: StackRecord) -> str:
    """One log line: the stack a study trains with and where it comes from."""
    if record.skipped:
        return (
            f"speedup stack: calibration skipped ({record.skipped}); training with the "
            f"baseline; to calibrate, {CALIBRATE_HINT}"
        )
    chosen = "+".join(record.chosen or ())
    what = f"{chosen} {_x(record.chosen_multiplier)}" if chosen else "the baseline"
    return f"speedup stack: {what}; {stack_origin(record)}"
