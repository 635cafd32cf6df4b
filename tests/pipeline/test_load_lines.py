"""What a run says about load: the cost table's lines and the stack line, from the
records the measurements keep (a busy thread's share of a core)."""

from __future__ import annotations

from nasflow.cost import assess_reference
from nasflow.pipeline._costtable import format_cost_table
from nasflow.pipeline._multipliers import stack_line
from nasflow.record import CostTableRecord, StackRecord
from tests.pipeline.test_multipliers import AUTO


def _table(share: float) -> CostTableRecord:
    rounds = [1.00e-3, 1.02e-3, 1.01e-3]  # the reference op's rounds agree
    return CostTableRecord.from_dict(
        assess_reference("thread CPU time", rounds, core_share=share).to_dict()
    )


def test_a_table_measured_under_a_steady_load_is_not_called_steady() -> None:
    lines = format_cost_table(_table(0.41))
    assert not any("looked steady" in line for line in lines)
    [warning] = [line for line in lines if "WARNING" in line]
    assert "(a busy thread got 41% of a core)" in warning


def test_a_steady_table_says_the_share_it_was_measured_at() -> None:
    steady = "  the machine looked steady while it was measured (a busy thread got 98% of a core)"
    assert steady in format_cost_table(_table(0.98))


def test_the_stack_line_says_a_calibration_was_not_stored() -> None:
    why = "the machine looked loaded while it ran (a busy thread got 40% of a core)"
    origin = {"kind": "calibrated", "measured_at": "2026-11-27T10:00:00", "not_stored": why}
    line = stack_line(StackRecord.from_dict({**AUTO, "origin": origin}))
    assert line.endswith(f"; NOT stored for the device: {why}") and "\n" not in line
