"""Which screened candidates the fine-tuning phase takes, and in what order."""

from __future__ import annotations

import optuna
import pytest
from optuna.distributions import FloatDistribution
from optuna.trial import FrozenTrial, create_trial

from nasflow.errors import ConfigError
from nasflow.pipeline._phases._finetune import by_score, select_finalists
from nasflow.record import ARCH_ATTR, SUPERNET_ACCURACY_ATTR, SUPERNET_LOSS_ATTR
from nasflow.search import FineTuning
from nasflow.space import Arch

# (accuracy, cross-entropy) of four screened paths. Ranks by accuracy: A1 B2 C3 D4; by
# cross-entropy: D1 B2 C3 A4; sums: A5 B4 C6 D5, A and D tied (A more accurate).
PATHS = {"A": (0.90, 0.50), "B": (0.89, 0.30), "C": (0.88, 0.31), "D": (0.70, 0.20)}


def _trial(name: str, acc: float, loss: float | None, cost: float = 1.0) -> FrozenTrial:
    attrs: dict = {ARCH_ATTR: Arch({"op": name}).to_json(), SUPERNET_ACCURACY_ATTR: acc}
    if loss is not None:
        attrs[SUPERNET_LOSS_ATTR] = loss
    return create_trial(
        values=[acc, cost],
        params={"x": 0.5},
        distributions={"x": FloatDistribution(0, 1)},
        user_attrs=attrs,
    )


def _name(t: FrozenTrial) -> str:
    return Arch.from_json(t.user_attrs[ARCH_ATTR])["op"]


def test_rank_sum_orders_by_both_ranks_ties_by_accuracy() -> None:
    trials = [_trial(k, *v) for k, v in PATHS.items()]
    assert [_name(t) for t in by_score(trials)] == ["A", "B", "C", "D"]
    assert [_name(t) for t in by_score(trials, "rank_sum")] == ["B", "A", "D", "C"]
    # Tied accuracies share their mean rank. With E (as accurate as A, lower loss): by
    # accuracy A 1.5, E 1.5, B 3, C 4, D 5; by loss D 1, B 2, C 3, E 4, A 5; sums B 5,
    # E 5.5, D 6, A 6.5, C 7.
    tied = [*trials, _trial("E", 0.90, 0.40)]
    assert [_name(t) for t in by_score(tied, "rank_sum")] == ["B", "E", "D", "A", "C"]


def test_rank_sum_falls_back_to_accuracy_without_recorded_losses() -> None:
    """A study screened before the cross-entropy was recorded: accuracy alone."""
    trials = [_trial(k, acc, None if k == "C" else loss) for k, (acc, loss) in PATHS.items()]
    assert [_name(t) for t in by_score(trials, "rank_sum")] == ["A", "B", "C", "D"]


def test_unscreened_trials_are_left_out() -> None:
    over_budget = create_trial(state=optuna.trial.TrialState.PRUNED, user_attrs={})
    trials = [_trial("A", 0.9, 0.5), over_budget]
    assert [_name(t) for t in by_score(trials, "rank_sum")] == ["A"]


def test_finalists_protect_the_best_rank_sums() -> None:
    study = optuna.create_study(directions=["maximize", "minimize"])
    # E: the cheapest path, on the front with A; it is not among the two best rank sums.
    for name, (acc, loss) in {**PATHS, "E": (0.60, 0.90)}.items():
        study.add_trial(_trial(name, acc, loss, cost=0.1 if name == "E" else 1.0))
    by_acc = select_finalists(study, n=3, top=2)
    by_sum = select_finalists(study, n=3, top=2, rank_by="rank_sum")
    assert [(f.arch["op"], f.protected) for f in by_acc] == [
        ("A", True),
        ("B", True),
        ("E", False),
    ]
    assert [(f.arch["op"], f.protected) for f in by_sum] == [
        ("B", True),
        ("A", True),
        ("E", False),
    ]
    # The finalist keeps its screening score (the accuracy), whatever ranked it.
    assert [f.supernet_accuracy for f in by_sum] == [0.89, 0.90, 0.60]


def test_rank_by_is_checked() -> None:
    assert FineTuning().rank_by == "rank_sum"
    with pytest.raises(ConfigError, match=r"FineTuning.rank_by must be one of .*got 'loss'"):
        FineTuning(rank_by="loss")
