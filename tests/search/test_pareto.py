"""Tests for non-dominated sorting, crowding distance and the study's Pareto set."""

from __future__ import annotations

import functools
import math

import numpy as np
import optuna
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from optuna.study import StudyDirection

from nasflow.pipeline import pareto_trials
from nasflow.record import DUPLICATE_KEY
from nasflow.search._pareto import crowding_distance, non_dominated_sort, to_minimization

_DIRECTION_TOKENS = ["minimize", "maximize", StudyDirection.MINIMIZE, StudyDirection.MAXIMIZE]


def _is_max(direction: StudyDirection | str) -> bool:
    return direction in ("maximize", StudyDirection.MAXIMIZE)


def _reference_ranks(rows: list[list[float]], directions: list) -> list[int]:
    """Brute force: rank = 0 if undominated, else 1 + max rank of the points dominating it."""
    loss = [
        [-v if _is_max(d) else v for v, d in zip(row, directions, strict=True)] for row in rows
    ]
    n = len(loss)

    def dominates(i: int, j: int) -> bool:
        return all(a <= b for a, b in zip(loss[i], loss[j], strict=True)) and any(
            a < b for a, b in zip(loss[i], loss[j], strict=True)
        )

    @functools.cache
    def rank(j: int) -> int:
        dominators = [i for i in range(n) if dominates(i, j)]
        return 1 + max(rank(i) for i in dominators) if dominators else 0

    return [rank(j) for j in range(n)]


@st.composite
def _problems(draw: st.DrawFn) -> tuple[list[list[float]], list]:
    n_obj = draw(st.integers(1, 4))
    n = draw(st.integers(0, 30))
    # A small integer grid forces many ties and exact duplicates; floats cover the general case.
    element = st.one_of(
        st.integers(-3, 3).map(float),
        st.floats(-1e6, 1e6, allow_nan=False),
        st.sampled_from([math.inf, -math.inf]),
    )
    rows = draw(
        st.lists(st.lists(element, min_size=n_obj, max_size=n_obj), min_size=n, max_size=n)
    )
    directions = draw(st.lists(st.sampled_from(_DIRECTION_TOKENS), min_size=n_obj, max_size=n_obj))
    return rows, directions


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(_problems())
def test_non_dominated_sort_matches_brute_force(problem: tuple[list[list[float]], list]) -> None:
    rows, directions = problem
    values = np.array(rows, dtype=np.float64).reshape(len(rows), len(directions))
    ranks = non_dominated_sort(values, directions)
    assert ranks.dtype.kind == "i"
    assert ranks.tolist() == _reference_ranks(rows, directions)


@settings(max_examples=100, deadline=None)
@given(_problems(), st.randoms(use_true_random=False))
def test_crowding_distance_is_row_order_invariant(problem: tuple, rnd) -> None:
    rows, directions = problem
    values = np.array(rows, dtype=np.float64).reshape(len(rows), len(directions))
    ranks = non_dominated_sort(values, directions)
    dist = crowding_distance(values, ranks)
    perm = list(range(len(rows)))
    rnd.shuffle(perm)
    dist_perm = crowding_distance(values[perm], ranks[perm])
    np.testing.assert_array_equal(dist_perm, dist[perm])
    assert (dist >= 0).all()


def test_non_dominated_sort_known_fronts_mixed_directions() -> None:
    # maximize accuracy, minimize latency
    values = np.array(
        [
            [0.9, 10.0],  # front 0
            [0.8, 5.0],  # front 0
            [0.8, 5.0],  # duplicate of a front-0 point: also front 0
            [0.7, 6.0],  # dominated by (0.8, 5)
            [0.9, 11.0],  # dominated by (0.9, 10) (tie in accuracy)
            [0.6, 7.0],  # dominated by (0.7, 6)
            [0.95, 20.0],  # front 0
        ]
    )
    ranks = non_dominated_sort(values, ["maximize", StudyDirection.MINIMIZE])
    assert ranks.tolist() == [0, 0, 0, 1, 1, 2, 0]
    # Flipping both directions reverses who wins.
    flipped = non_dominated_sort(values, ["minimize", "maximize"])
    assert flipped[5] == 0 and flipped[6] == 0 and flipped[0] > 0


def test_nan_rows_form_the_last_front() -> None:
    values = np.array([[1.0, 1.0], [np.nan, 0.0], [2.0, 2.0], [0.0, np.nan]])
    ranks = non_dominated_sort(values, ["minimize", "minimize"])
    assert ranks.tolist() == [0, 2, 1, 2]
    assert non_dominated_sort(np.array([[np.nan]]), ["minimize"]).tolist() == [0]
    assert crowding_distance(values, ranks)[[1, 3]].tolist() == [0.0, 0.0]


def test_empty_input() -> None:
    assert non_dominated_sort(np.zeros((0, 2)), ["minimize", "maximize"]).shape == (0,)
    assert crowding_distance(np.zeros((0, 2))).shape == (0,)


def test_crowding_distance_known_values() -> None:
    front = np.array([[0.0, 3.0], [1.0, 2.0], [2.0, 1.0], [3.0, 0.0]])
    dist = crowding_distance(front)
    assert dist[0] == math.inf and dist[3] == math.inf
    np.testing.assert_allclose(dist[1:3], [4.0 / 3.0, 4.0 / 3.0])
    # Uneven spacing: the point in the larger gap is less crowded.
    front = np.array([[0.0, 10.0], [1.0, 9.0], [2.0, 8.0], [10.0, 0.0]])
    dist = crowding_distance(front)
    assert dist[2] > dist[1]


def test_crowding_distance_per_front_and_duplicates() -> None:
    values = np.array([[0.0, 3.0], [1.0, 2.0], [1.0, 2.0], [3.0, 0.0], [5.0, 5.0]])
    ranks = np.array([0, 0, 0, 0, 1])
    dist = crowding_distance(values, ranks)
    assert dist[1] == dist[2]  # duplicates share one distance
    assert 0.0 < dist[1] < math.inf
    assert dist[4] == math.inf  # a front of one point is a boundary point


def test_validation_errors_name_the_bad_value() -> None:
    with pytest.raises(ValueError, match="3 directions for 2 objectives"):
        non_dominated_sort(np.zeros((4, 2)), ["minimize"] * 3)
    with pytest.raises(ValueError, match="'upward'"):
        non_dominated_sort(np.zeros((4, 1)), ["upward"])
    with pytest.raises(ValueError, match="NOT_SET"):
        to_minimization(np.zeros((1, 1)), [StudyDirection.NOT_SET])
    with pytest.raises(ValueError, match=r"\(3,\)"):
        non_dominated_sort(np.zeros(3), ["minimize"])
    with pytest.raises(ValueError, match="2 ranks for 3 points"):
        crowding_distance(np.zeros((3, 2)), [0, 0])


def _former_pareto_trials(study: optuna.Study) -> list[optuna.trial.FrozenTrial]:
    """``pareto_trials`` before it used ``study.best_trials``: constraints ignored."""
    done = study.get_trials(states=(optuna.trial.TrialState.COMPLETE,))
    ranks = non_dominated_sort(np.array([t.values for t in done]), study.directions)
    return sorted((t for t, r in zip(done, ranks, strict=True) if r == 0), key=_acc)


def _acc(t: optuna.trial.FrozenTrial) -> float:
    return -t.values[0]


@pytest.mark.parametrize("seed", range(4))
def test_pareto_trials_are_optunas_best_trials_less_duplicates(seed: int) -> None:
    """Accuracy up, cost down, a budget constraint; some trials pruned, some infeasible,
    some repeats of an earlier architecture (``duplicate_of``), some equal values."""
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    rng = np.random.default_rng(seed)
    study = optuna.create_study(directions=["maximize", "minimize"])
    scored: dict[int, tuple[list[float], float, int]] = {}
    for number in range(40):
        trial = study.ask()
        arch = int(rng.integers(0, 15))
        if arch in scored:  # what nasflow's dedup does: the earlier values and constraint
            values, over, first = scored[arch]
            trial.set_user_attr(DUPLICATE_KEY, first)
        else:
            values = [float(rng.integers(0, 6)) / 5, float(rng.integers(0, 6))]
            over = float(rng.choice([-1.0, 0.0, 0.5]))
            scored[arch] = (values, over, number)
        trial.set_constraint("train_cost", over)
        if rng.random() < 0.15:
            study.tell(trial, state=optuna.trial.TrialState.PRUNED)
        else:
            study.tell(trial, values)
    front = pareto_trials(study)
    unique = [t for t in study.best_trials if DUPLICATE_KEY not in t.user_attrs]
    assert [t.number for t in front] == [t.number for t in sorted(unique, key=_acc)]
    # By definition: the non-dominated ones among completed, feasible, first trials.
    feasible = [
        t
        for t in study.get_trials(states=(optuna.trial.TrialState.COMPLETE,))
        if t.constraints["train_cost"] <= 0 and DUPLICATE_KEY not in t.user_attrs
    ]
    ranks = non_dominated_sort(np.array([t.values for t in feasible]), study.directions)
    want = [t for t, r in zip(feasible, ranks, strict=True) if r == 0]
    assert {t.number for t in front} == {t.number for t in want}


@pytest.mark.parametrize("seed", range(4))
def test_pareto_trials_without_constraints_or_repeats_are_the_former_set(seed: int) -> None:
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    rng = np.random.default_rng(seed)
    study = optuna.create_study(directions=["maximize", "minimize", "minimize"])
    for _ in range(60):  # coarse values: ties and equal points on the front
        study.add_trial(optuna.trial.create_trial(values=rng.integers(0, 5, 3).tolist()))
    front = [t.number for t in pareto_trials(study)]
    assert front == [t.number for t in _former_pareto_trials(study)] and front


def test_pareto_trials_without_completed_or_feasible_trials_is_empty() -> None:
    study = optuna.create_study(directions=["maximize", "minimize"])
    assert pareto_trials(study) == []
    trial = study.ask()
    trial.set_constraint("params", 1.0)
    study.tell(trial, [0.9, 1.0])
    assert pareto_trials(study) == []
