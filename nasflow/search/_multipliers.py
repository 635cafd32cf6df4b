"""Search-level speedup multipliers: what one-shot search, early stopping, the cost-model
gate and the training stack each saved, compounded, next to the measured search cost.

A multiplier is cost without the technique / cost with it. Only the training stack's is
measured (by ``stack="auto"``'s calibration); the one-shot and gate figures compare
against work that never ran (training candidates stand-alone), so they are estimates from
the cost model's predicted training costs and are labelled so. The compounded product
assumes the techniques are independent; it is shown next to the measured end-to-end
search seconds, not instead of them.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from optuna.trial import FrozenTrial, TrialState

#: Study user attribute holding :func:`search_multipliers`' record.
MULTIPLIERS_KEY = "nasflow:multipliers"

_ONE_SHOT_SOURCE = (
    "the predicted stand-alone training cost (trial user attribute 'train_cost': the "
    "study's training budget, from the cost model) of every evaluated candidate"
)


def _ratio(num: float, den: float) -> float | None:
    return num / den if den > 0 and math.isfinite(num / den) else None


def search_multipliers(
    trials: Iterable[FrozenTrial],
    seconds: Mapping[str, float],
    finetune_epochs: int,
    stack_record: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The search-level multipliers of a finished run (a pure function of its records).

    Candidates are the finished trials (complete or pruned); those the cost-model gate
    skipped (user attribute ``skipped``) were never evaluated, the others were.

    Args:
        trials: The study's trials.
        seconds: The run's phase times (``supernet``, ``search``, ``total``).
        finetune_epochs: The study's fine-tuning epochs per candidate.
        stack_record: Study user attribute ``nasflow:stack`` (``auto_stack``'s record), or
            ``None`` when the stack was not measured.

    Returns:
        A JSON-able record: ``one_shot``, ``early_stopping``, ``gate``, ``stack``, ``ddp``
        (each with a ``multiplier``, ``None`` when not measured or not applicable, and a
        ``note``), ``compounded`` (product of the available multipliers, and which) and
        ``end_to_end`` (the measured search seconds).
    """
    finished = [t for t in trials if t.state in (TrialState.COMPLETE, TrialState.PRUNED)]
    skipped = [t for t in finished if "skipped" in t.user_attrs]
    evaluated = [t for t in finished if "skipped" not in t.user_attrs]
    predicted = sum(float(t.user_attrs.get("train_cost", 0.0)) for t in evaluated)
    actual = float(seconds.get("supernet", 0.0)) + float(seconds.get("search", 0.0))
    one_shot = {
        "multiplier": _ratio(predicted, actual) if evaluated else None,
        "estimate": True,
        "estimated_standalone_seconds": predicted,
        "actual_seconds": actual,
        "candidates": len(evaluated),
        "note": f"estimated from {_ONE_SHOT_SOURCE}, vs the measured supernet + search time",
    }
    planned = finetune_epochs * len(evaluated)
    trained = sum(int(t.user_attrs.get("epochs_trained", 0)) for t in evaluated)
    early = {
        "multiplier": _ratio(planned, trained) if planned else None,
        "epochs_trained": trained,
        "epochs_without_pruning": planned,
        "note": (
            f"{finetune_epochs} fine-tuning epochs x {len(evaluated)} evaluated candidates "
            "without pruning"
            if planned
            else "no fine-tuning: nothing to stop early"
        ),
    }
    skipped_cost = sum(float(t.user_attrs.get("train_cost", 0.0)) for t in skipped)
    gate = {
        "multiplier": _ratio(predicted + skipped_cost, predicted) if evaluated else None,
        "estimate": True,
        "skipped": len(skipped),
        "skipped_predicted_seconds": skipped_cost,
        "note": "predicted stand-alone cost of all candidates / of the evaluated ones",
    }
    if stack_record is not None:
        e2e = stack_record.get("end_to_end")
        stack = {
            "multiplier": e2e,
            "product": stack_record.get("product"),
            "chosen": list(stack_record.get("chosen") or []),
            "note": "measured by the stack calibration"
            if e2e is not None
            else "measured: no layer paid off, trained with the baseline",
        }
    else:
        stack = {"multiplier": None, "note": "not measured"}
    ddp = {"multiplier": None, "ranks": 1, "note": "one process"}
    parts = {"one_shot": one_shot, "early_stopping": early, "gate": gate, "stack": stack}
    used = [name for name, p in parts.items() if p["multiplier"] is not None]
    product = math.prod(parts[name]["multiplier"] for name in used) if used else None
    return {
        **parts,
        "ddp": ddp,
        "compounded": {"multiplier": product, "of": used, "estimate": True},
        "end_to_end": {
            "seconds": float(seconds.get("total", actual)),
            "search_seconds": actual,
            "multiplier": None,
            "note": "measured cost of this run; no baseline search ran, so the end-to-end "
            "multiplier is not measured",
        },
    }


def _x(m: float | None, missing: str) -> str:
    return f"x{m:.2f}" if m is not None else missing


def format_multipliers(m: Mapping[str, Any]) -> list[str]:
    """Summary lines for a :func:`search_multipliers` record."""
    one, early, gate, stack = m["one_shot"], m["early_stopping"], m["gate"], m["stack"]
    comp, e2e = m["compounded"], m["end_to_end"]
    lines = ["search-level multipliers (cost without / cost with):"]
    lines.append(
        f"  one-shot         {_x(one['multiplier'], 'n/a'):>8}  ESTIMATE: {one['candidates']} "
        f"candidates stand-alone ~{one['estimated_standalone_seconds']:.0f}s (sum of their "
        f"predicted train_cost) vs {one['actual_seconds']:.0f}s supernet + search"
    )
    lines.append(
        f"  early stopping   {_x(early['multiplier'], 'n/a'):>8}  {early['epochs_trained']} of "
        f"{early['epochs_without_pruning']} fine-tuning epochs trained"
    )
    lines.append(
        f"  cost-model gate  {_x(gate['multiplier'], 'n/a'):>8}  ESTIMATE: {gate['skipped']} "
        f"candidates skipped, predicted {gate['skipped_predicted_seconds']:.0f}s of training"
    )
    chosen = f" ({'+'.join(stack['chosen']) or 'baseline'})" if "chosen" in stack else ""
    lines.append(
        f"  training stack   {_x(stack['multiplier'], 'n/a'):>8}  {stack['note']}{chosen}"
    )
    lines.append(f"  DDP              {_x(m['ddp']['multiplier'], 'n/a'):>8}  {m['ddp']['note']}")
    of = " x ".join(comp["of"]) or "nothing measured"
    lines.append(
        f"  compounded       {_x(comp['multiplier'], 'n/a'):>8}  ESTIMATE ({of}); measured "
        f"end to end: {e2e['seconds']:.0f}s for this run"
    )
    return lines
