"""One export entry point: ``nasflow.export.export`` takes which trials and which weights;
the command line and the façade call it, and a bad choice is refused before anything."""

from __future__ import annotations

import pytest

import nasflow
import nasflow.export
from nasflow.cli._export import WEIGHT_CHOICES
from nasflow.errors import ConfigError
from nasflow.export._export import WEIGHTS


def test_the_command_line_offers_the_weights_export_takes() -> None:
    assert ("auto", *WEIGHT_CHOICES) == WEIGHTS


def test_the_two_entry_points_are_one() -> None:
    for gone in ("export_ready", "export_study"):
        assert not hasattr(nasflow.export, gone), gone
    assert "export_ready" not in nasflow.__all__
    with pytest.raises(AttributeError):
        nasflow.export_ready  # noqa: B018


@pytest.mark.parametrize(
    ("kwargs", "says"),
    [
        ({"weights": "best"}, "weights must be one of auto, retrained, fine-tuned, supernet, "),
        ({"which": "first"}, "which must be 'best', 'pareto' or a trial number >= 0, got 'first'"),
        ({"which": -1}, "trial number >= 0, got -1"),
        ({"which": True}, "trial number >= 0, got True"),
        ({"which": "pareto", "weights": "fine-tuned"}, "those of one ready model"),
        ({"weights": "fine-tuned", "recalibrate": False}, "does not apply to fine-tuned"),
    ],
)
def test_a_bad_choice_is_one_line_before_the_study_is_opened(tmp_path, kwargs, says) -> None:
    # No storage and no run folder exist: the choice is checked before either is opened.
    with pytest.raises(ConfigError) as e:
        nasflow.export.export("nowhere", tmp_path / "e", runs=tmp_path / "runs", **kwargs)
    assert says in str(e.value) and "\n" not in str(e.value)
    assert not any(tmp_path.iterdir())
