"""Which screened candidates the fine-tuning phase takes, and in what order."""

from __future__ import annotations

import json
import math

import optuna
import pytest
from optuna.distributions import FloatDistribution
from optuna.trial import FrozenTrial, create_trial

from nasflow.errors import ConfigError, StudyRecordError
from nasflow.pipeline._arch._ranking import STUDY_FEATURES, candidate_features, rank_candidates
from nasflow.pipeline._phases._finetune import by_score, select_finalists
from nasflow.record import (
    ARCH_ATTR,
    PARAMS_ATTR,
    SUPERNET_ACCURACY_ATTR,
    SUPERNET_LOSS_ATTR,
    TRAIN_COST_ATTR,
    RankerRecord,
    TrialRecord,
)
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
    assert FineTuning(rank_by="ranker").rank_by == "ranker"


def _costed(name: str, acc: float, loss: float, params: int, cost: float, n: int) -> FrozenTrial:
    t = _trial(name, acc, loss)
    t.user_attrs.update({PARAMS_ATTR: params, TRAIN_COST_ATTR: cost})
    t.number = n
    return t


def test_the_ranker_orders_by_its_prior_without_labels() -> None:
    """The suite's prior: 0.627 x standardised accuracy + 2.373 x standardised width (the
    parameters, unrecorded here, weigh nothing). With widths A 0.25, B 0.5, C and D 1.0:
    C +2.57, D +1.19, B -1.01, A -2.76; by accuracy alone A, B, C, D."""
    widths = {"A": 0.25, "B": 0.5, "C": 1.0, "D": 1.0}
    trials = [_trial(k, *v) for k, v in PATHS.items()]
    for t in trials:
        t.user_attrs[ARCH_ATTR] = Arch({"op": _name(t), "width": widths[_name(t)]}).to_json()
    assert [_name(t) for t in by_score(trials, "ranker")] == ["C", "D", "B", "A"]
    ranked = rank_candidates(trials)
    assert ranked.record.source == "prior"
    assert ranked.record.features == STUDY_FEATURES
    assert "no candidate trained from scratch" in (ranked.record.note or "")
    # Without widths the accuracy alone orders them.
    plain = [_trial(k, *v) for k, v in PATHS.items()]
    assert [_name(t) for t in by_score(plain, "ranker")] == ["A", "B", "C", "D"]


def test_the_ranker_is_refitted_on_enough_labels_that_it_orders_better() -> None:
    """Eight candidates whose trained accuracy follows the parameter count, against the
    supernet's scores: the refit weighs the parameters and reorders the rest."""
    trials = [
        _costed(f"p{i}", acc=0.9 - 0.01 * i, loss=0.3 + 0.01 * i, params=1000 * (i + 1),
                cost=1.0 + i, n=i)
        for i in range(10)
    ]  # fmt: skip
    labels = {i: 0.5 + 0.02 * i for i in range(8)}  # more parameters train better
    ranked = rank_candidates(trials, labels)
    assert ranked.record.source == "fitted", ranked.record.note
    assert ranked.record.labels == 8
    weight = dict(zip(ranked.record.features, ranked.record.weights, strict=True))
    assert weight["log_params"] > 0
    assert [t.number for t in ranked.trials][:2] == [9, 8]  # the largest, unlabelled ones
    # Too few labels: the prior, and the record says why.
    few = rank_candidates(trials, {0: 0.5, 1: 0.6})
    assert few.record.source == "prior" and "labels" in (few.record.note or "")


def test_the_ranker_record_round_trips_and_refuses_a_malformed_one() -> None:
    record = rank_candidates([_trial(k, *v) for k, v in PATHS.items()]).record
    assert RankerRecord.from_dict(json.loads(json.dumps(record.to_dict()))) == record
    assert record.line().startswith("ranker: prior: width +2.37, supernet_accuracy +0.63")
    with pytest.raises(StudyRecordError, match="source 'guess'"):
        RankerRecord.from_dict({**record.to_dict(), "source": "guess"})
    with pytest.raises(StudyRecordError, match="not two lists of one length"):
        RankerRecord.from_dict({**record.to_dict(), "weights": [1.0]})


def test_the_ranker_reads_the_width_choice_where_the_space_has_one() -> None:
    wide = TrialRecord(arch=Arch({"op": "a", "width": 0.5}).to_json(), params=100)
    embd = TrialRecord(arch=Arch({"op": "a", "n_embd": 64}).to_json(), train_cost=2.0)
    none = TrialRecord(arch=Arch({"op": "a"}).to_json(), supernet_accuracy=0.5)
    assert candidate_features(wide)[STUDY_FEATURES.index("width")] == 0.5
    assert candidate_features(wide)[STUDY_FEATURES.index("log_params")] == pytest.approx(
        math.log(100)
    )
    assert candidate_features(embd)[STUDY_FEATURES.index("width")] == 64
    feats = candidate_features(none)
    assert feats[0] == 0.5 and all(math.isnan(v) for v in feats[1:])
