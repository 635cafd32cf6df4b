"""``benchmarks/suite_runs.py``: the search's choice a run's row records."""

from __future__ import annotations

from types import SimpleNamespace

import optuna
import pytest

from nasflow.record import FineTuned, FineTuneResult, write_record
from tests.benchmarks._load import load_benchmark


@pytest.fixture(scope="module")
def suite_runs():  # type: ignore[no-untyped-def]
    return load_benchmark("suite_runs.py")


def _winner(number: int, val: float, spread: bool = False) -> SimpleNamespace:
    return SimpleNamespace(
        number=number, val_accuracy=val, test_accuracy=val + 0.01, spread=spread
    )


def _study(*ready: FineTuned) -> optuna.Study:
    study = optuna.create_study()
    write_record(study, FineTuneResult(ready, full_epochs=6, val_samples=500))
    return study


def test_the_search_choice_is_the_first_retrain_by_score_never_a_spread_one(suite_runs) -> None:
    study = _study()
    result = SimpleNamespace(winners=[_winner(4, 0.8), _winner(9, 0.9, spread=True)], study=study)
    assert suite_runs.search_choice(result) == (4, 0.8, pytest.approx(0.81))


def test_without_a_retrain_by_score_it_is_the_best_finalist_at_the_whole_recipe(
    suite_runs,
) -> None:
    """``retrain_top=0`` (the top rung from inherited weights): the spread retrains, or
    none, are never the search's choice; a finalist stopped below the recipe is not one."""
    full = FineTuned(3, "{}", 0.5, [0.4, 0.5, 0.6, 0.6, 0.7, 0.72], [1.0] * 6, 0.71, "ready")
    other = FineTuned(5, "{}", 0.5, [0.4, 0.5, 0.6, 0.6, 0.7, 0.70], [1.0] * 6, 0.75, "ready")
    short = FineTuned(8, "{}", 0.5, [0.8, 0.9], [1.0] * 2, 0.95, "stopped")
    study = _study(full, other, short)
    for winners in ([], [_winner(9, 0.99, spread=True)]):
        result = SimpleNamespace(winners=winners, study=study)
        assert suite_runs.search_choice(result) == (3, 0.72, 0.71)
    with pytest.raises(ValueError, match="retrained no finalist and fine-tuned none"):
        suite_runs.search_choice(SimpleNamespace(winners=[], study=_study(short)))
