"""The rung schedule's settings: defaults, and one clear error per bad value."""

from __future__ import annotations

import pytest

from nasflow.search._rungs import Rungs


def test_the_default_is_three_fine_tuning_rungs_below_a_full_training() -> None:
    r = Rungs()
    assert (r.finetune, r.top, r.reduction, r.candidates, r.budget) == (
        (1, 2, 4),
        "scratch",
        2,
        10,
        None,
    )
    assert Rungs(finetune=[1, 3]).finetune == (1, 3)  # a list from a JSON override


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (
            {"finetune": (2, 1)},
            r"Rungs.finetune must be increasing epoch counts >= 1, got \(2, 1\)",
        ),
        ({"finetune": (0, 1)}, "got"),
        ({"top": "warm"}, "Rungs.top must be one of"),
        ({"reduction": 1}, "Rungs.reduction must be an int >= 2, got 1"),
        ({"budget": -3.0}, "Rungs.budget must be CPU-seconds > 0 or None, got -3.0"),
        ({"budget": None, "candidates": None}, "needs a budget or a number of candidates"),
        ({"candidates": 0}, "Rungs.candidates must be an int >= 1, got 0"),
        ({"pruner": "median"}, "Rungs.pruner must be 'asha' or 'hyperband'"),
        ({"promote": "loss"}, "Rungs.promote must be one of .*'front', 'accuracy'.*'loss'"),
        ({"rank_by": "params"}, "Rungs.rank_by must be one of .*'ranker'.*got 'params'"),
    ],
)
def test_bad_settings_name_the_value(kwargs: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        Rungs(**kwargs)
