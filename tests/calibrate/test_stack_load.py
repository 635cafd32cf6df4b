"""A stack calibration taken while other processes load the machine is used by its study
but never stored for the device (one line says so), as the cost table flags such a table."""

from __future__ import annotations

import pytest
import torch

from nasflow.calibrate._store import StackCalibrationTable
from nasflow.cost import assess_reference, measure_ops, shared_table_url
from nasflow.cost._measure import LOADED_SHARE, reference_unit
from tests._busy import busy_cores
from tests.calibrate.test_stack_store import _calibrate


@pytest.fixture(autouse=True)
def _one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def test_a_busy_threads_share_of_a_core_decides_load_with_the_rounds() -> None:
    rounds = [1.00e-3, 1.02e-3, 1.01e-3]  # the reference op's rounds agree
    assert not assess_reference("thread CPU time", rounds, core_share=0.97).loaded
    waited = assess_reference("thread CPU time", rounds, core_share=0.4)
    assert waited.loaded and waited.core_share == 0.4
    assert waited.why_loaded() == "a busy thread got 40% of a core"


@pytest.mark.slow
def test_the_cost_table_sees_a_steady_load_its_reference_rounds_miss() -> None:
    with busy_cores():
        run = measure_ops([reference_unit()], "cpu", rounds=8, iters=3)
    stability = run.stability
    assert stability.core_share is not None and stability.core_share < LOADED_SHARE
    assert stability.loaded and stability.why_loaded().startswith("a busy thread got ")


@pytest.mark.slow
def test_a_calibration_under_load_is_used_but_not_stored_for_the_device(tmp_path) -> None:
    url = f"sqlite:///{tmp_path / 'study.db'}"
    with busy_cores():
        res, ran = _calibrate(url)
    assert ran and not res.reused  # it calibrated, and the study trains with its choice
    load = res.record["calibration"]["load"]
    assert load["loaded"] and load["core_share"] < LOADED_SHARE
    with StackCalibrationTable(url) as table:
        assert table.count() == 0  # nothing stored for the device ...
    with StackCalibrationTable(shared_table_url()) as shared:  # (this test's own)
        assert shared.count() == 0  # ... nor shared with the next study
    why = res.record["origin"]["not_stored"]  # (the study's stack line says it)
    assert why.startswith("the machine looked loaded while it ran (a busy thread got ")
