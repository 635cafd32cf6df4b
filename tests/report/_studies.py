"""Small in-memory studies built through Optuna's ask/tell API, with nasflow's records."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import optuna
from optuna.trial import TrialState

from nasflow.record import set_constraints


def arch_json(ops: Sequence[str], width: float = 1.0) -> str:
    labels = [f"s1/l{i}" for i in range(len(ops))]
    parts = [f'"{lab}":"{op}"' for lab, op in zip(labels, ops, strict=True)]
    return "{" + ",".join([*parts, f'"width":{width}']) + "}"


def make_study(
    trials: Sequence[dict[str, Any]],
    directions: Sequence[str] = ("maximize", "minimize"),
    user_attrs: dict[str, Any] | None = None,
) -> optuna.Study:
    """A study whose trials are told in order.

    Each trial dict may hold ``values``, ``state`` (``"complete"``, ``"pruned"``, ``"fail"``),
    ``attrs`` (user attributes) and ``constraints`` (name -> value, feasible when <= 0).
    """
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(directions=list(directions))
    for key, value in (user_attrs or {}).items():
        study.set_user_attr(key, value)
    for spec in trials:
        trial = study.ask()
        for key, value in spec.get("attrs", {}).items():
            trial.set_user_attr(key, value)
        if "constraints" in spec:
            set_constraints(trial, spec["constraints"])
        state = spec.get("state", "complete")
        if state == "complete":
            study.tell(trial, spec["values"])
        elif state == "pruned":
            study.tell(trial, state=TrialState.PRUNED)
        else:
            study.tell(trial, state=TrialState.FAIL)
    return study


def mixed_study() -> optuna.Study:
    """Six trials: a 2-point front, a dominated one, a constraint violator that would be
    best, an over-budget skip, a pruned one and a failed one; trial 1 was retrained."""

    def attrs(cost: float, params: int, ops: Sequence[str], epochs: int) -> dict[str, Any]:
        return {
            "train_cost": cost,
            "params": params,
            "arch": arch_json(ops),
            "epochs_trained": epochs,
        }

    return make_study(
        [
            {"values": [0.80, 1.0], "attrs": attrs(1.0, 500, ["k3", "skip"], 3)},  # 0 front
            {"values": [0.90, 2.0], "attrs": attrs(2.0, 900, ["k5", "k3"], 3)},  # 1 front, won
            {"values": [0.70, 3.0], "attrs": attrs(3.0, 400, ["k3", "k3"], 3)},  # 2 dominated
            {  # 3: best in both, but violates a constraint
                "values": [0.95, 0.5],
                "attrs": attrs(0.5, 950, ["k5", "k5"], 3),
                "constraints": {"params": 0.2},
            },
            {  # 4: over budget, skipped before evaluation
                "state": "pruned",
                "attrs": {**attrs(4.0, 2000, ["k7", "k7"], 0), "skipped": "over budget: x"},
                "constraints": {"params": 1.0},
            },
            {"state": "pruned", "attrs": attrs(1.5, 600, ["k3", "k5"], 1)},  # 5 pruned
            {"state": "fail", "attrs": {"arch": arch_json(["skip", "skip"])}},  # 6 failed
        ],
        user_attrs={
            "nasflow:objectives": '["accuracy", "train_cost"]',
            "nasflow:retrain:1": {
                "number": 1,
                "test_accuracy": 0.88,
                "predicted_train_cost": 2.0,
                "measured_train_cost": 3.0,
                "params": 900,
            },
        },
    )


#: The report's figures, in order, as ``report_figures`` draws them (the dashboard and the
#: report page add the Pareto table as a last figure).
FIGURE_KEYS = (
    "pareto",
    "screening",
    "params",
    "history",
    "budget",
    "fairness",
    "costmodel",
    "stack",
    "multipliers",
)
