"""Bad values in a study are refused when it is built, in one line naming the value,
before anything is written."""

from __future__ import annotations

import math
import re

import pytest

from nasflow.cli import main
from nasflow.search import Budget
from tests.search._study_template import write_study


@pytest.mark.parametrize(
    ("kwargs", "shown"),
    [
        ({"max_params": -5}, "-5"),
        ({"max_params": 0}, "0"),
        ({"max_train_cost": 0}, "0"),
        ({"max_train_cost": -1.5}, "-1.5"),
        ({"max_params": True}, "True"),
        ({"max_params": "1000"}, "'1000'"),
        ({"max_train_cost": [60]}, "[60]"),
        ({"max_train_cost": math.nan}, "nan"),
        ({"max_train_cost": math.inf}, "inf"),
        ({"max_params": -math.inf}, "-inf"),
    ],
)
def test_a_budget_limit_that_is_not_a_positive_number_is_refused(kwargs, shown) -> None:
    (name,) = kwargs
    with pytest.raises(ValueError, match=rf"Budget {name} must be .*got {re.escape(shown)}$"):
        Budget(**kwargs)


def test_good_budgets_still_work() -> None:
    b = Budget(max_params=1000, max_train_cost=2.5)
    assert b.violations(1500, 2.5) == {"params": 0.5, "train_cost": 0.0}
    assert Budget().violations(10**9, 1e9) == {}


@pytest.mark.parametrize("bad", ["-5", "0"])
def test_a_study_file_with_a_bad_budget_fails_in_one_line_writing_nothing(
    tmp_path, capsys, bad
) -> None:
    study_file = write_study(tmp_path, max_params=int(bad))
    assert main(["search", str(study_file), "--out", str(tmp_path / "runs")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"Budget max_params must be > 0 (a limit), got {bad}" in err
    assert not (tmp_path / "runs").exists()
