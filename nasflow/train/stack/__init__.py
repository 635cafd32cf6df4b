"""The speedup stack: independent training-step layers, each measured, never assumed.

``Stack()`` is plain fp32 eager training; each field switches one layer on. A stack
builds a ``StackStep`` (one call per batch) for a network and its optimizer::

    step = Stack(amp="bf16", accumulation=2).build(model, optimizer, schedule=Schedule(n))
    for x, y in batches:
        loss = step(x, y)  # a supernet: step(x, y, paths)

Each layer is declared once, in ``LAYER_SPECS``. This package is the step engine every
trainer runs; measuring and choosing the layers (``measure_stack``, ``auto_stack``) is
``nasflow.calibrate``, above the trainers.
"""

from __future__ import annotations

from nasflow.train.stack._accumulation import Schedule
from nasflow.train.stack._config import CPU_LAYERS, LAYER_SPECS, LAYERS, Stack
from nasflow.train.stack._ddp import GradReducer, ddp_supernet_step, is_rank_zero, launch
from nasflow.train.stack._gate import ActivationMeter
from nasflow.train.stack._precision import AMP_DTYPES
from nasflow.train.stack._step import StackStep
from nasflow.train.stack._timer import StepTimer, device_clock

__all__ = [
    "AMP_DTYPES",
    "CPU_LAYERS",
    "LAYERS",
    "LAYER_SPECS",
    "ActivationMeter",
    "GradReducer",
    "Schedule",
    "Stack",
    "StackStep",
    "StepTimer",
    "ddp_supernet_step",
    "device_clock",
    "is_rank_zero",
    "launch",
]
