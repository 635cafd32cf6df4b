"""Which trials ``nasflow export`` selects: ``--best`` is the model the study kept."""

from __future__ import annotations

import optuna
import pytest

from nasflow.errors import ConfigError
from nasflow.export import ExportError, select_trials
from nasflow.record import KEPT_KEY
from nasflow.space import Arch


def _study() -> optuna.Study:
    """Three screened trials: 0 has the best supernet score, 2 the lowest cost."""
    study = optuna.create_study(directions=["maximize", "minimize"])
    for i, values in enumerate([(0.9, 5.0), (0.8, 4.0), (0.7, 1.0)]):
        study.add_trial(
            optuna.trial.create_trial(
                values=list(values), user_attrs={"arch": Arch({"x": i}).to_json()}
            )
        )
    return study


def test_best_is_the_most_accurate_pareto_trial_when_nothing_was_kept() -> None:
    study = _study()
    assert [t.number for t in select_trials(study, "best")] == [0]
    assert [t.number for t in select_trials(study, "pareto")] == [0, 1, 2]


def test_best_is_the_kept_model_not_the_best_supernet_score() -> None:
    """After fine-tuning the kept finalist is chosen on its own validation accuracy (or an
    anchor replaces it): `--best` follows the study's record, not the supernet score."""
    study = _study()
    study.set_user_attr(KEPT_KEY, {"trial": 2, "weights": "retrained", "source": "search"})
    assert [t.number for t in select_trials(study, "best")] == [2]
    assert [t.number for t in select_trials(study, 1)] == [1]


def test_a_kept_record_naming_a_missing_trial_is_refused_by_number() -> None:
    study = _study()
    study.set_user_attr(KEPT_KEY, {"trial": 7, "weights": "retrained", "source": "search"})
    with pytest.raises(ExportError, match="has no trial 7"):
        select_trials(study, "best")
    with pytest.raises(ConfigError, match="'worst'"):
        select_trials(study, "worst")
