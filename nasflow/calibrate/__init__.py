"""Calibration of the speedup stack: measure each layer on this machine, keep what pays.

The step engine (``nasflow.train.stack``: the layers, ``StackStep``, the DDP gradient
reducer) is what every training run executes. This package sits *above* the trainers
and drives them: it trains the same network under several stacks side by side
(``run_interleaved``), measures every layer alone and stacked cumulatively against the
plain baseline (``measure_stack``, the ``nasflow measure-stack`` command), times the
trainers against a hand-written loop (``trainer_overhead``), chooses the layers that
measurably pay off (``auto_stack``; ``stack="auto"`` in a study) and stores that choice
once per device in the study's database (``device_stack``). It is a sibling of ``train``
rather than a part of it because it imports the trainers, and nothing in ``train``
imports it: the engine below, its measurement above.
"""

from __future__ import annotations

from nasflow.calibrate._auto import AUTO_LAYERS, CUT_BELOW, AutoResult, auto_stack
from nasflow.calibrate._command import run_measure_stack
from nasflow.calibrate._harness import StackMeasurement, measure_stack
from nasflow.calibrate._interleave import RunConfig
from nasflow.calibrate._overhead import trainer_overhead
from nasflow.calibrate._store import StackCalibrationTable, device_stack
from nasflow.calibrate._study import calibrate_for_space

__all__ = [
    "AUTO_LAYERS",
    "CUT_BELOW",
    "AutoResult",
    "RunConfig",
    "StackCalibrationTable",
    "StackMeasurement",
    "auto_stack",
    "calibrate_for_space",
    "device_stack",
    "measure_stack",
    "run_measure_stack",
    "trainer_overhead",
]
