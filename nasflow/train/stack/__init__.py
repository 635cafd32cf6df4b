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

from nasflow.train.stack._accumulation import (
    Accumulation,
    AdaptiveAccumulation,
    FixedAccumulation,
    Schedule,
    adaptive_k,
    schedule_factor,
)
from nasflow.train.stack._base import StackLayer
from nasflow.train.stack._checkpointing import Checkpointing
from nasflow.train.stack._compile import Compile, CompileCounter, CompiledBlocks
from nasflow.train.stack._config import CPU_LAYERS, LAYER_SPECS, LAYERS, LayerSpec, Stack
from nasflow.train.stack._ddp import (
    GradReducer,
    broadcast_module,
    ddp_supernet_step,
    init_from_env,
    is_rank_zero,
    launch,
    shard,
)
from nasflow.train.stack._gate import ActivationMeter, largest_micro_batch, measured_step_bytes
from nasflow.train.stack._precision import AMP_DTYPES, FlushDenormal, MixedPrecision, Threads
from nasflow.train.stack._step import StackStep
from nasflow.train.stack._timer import StepTimer, device_clock, synchronize

__all__ = [
    "AMP_DTYPES",
    "CPU_LAYERS",
    "LAYERS",
    "LAYER_SPECS",
    "Accumulation",
    "ActivationMeter",
    "AdaptiveAccumulation",
    "Checkpointing",
    "Compile",
    "CompileCounter",
    "CompiledBlocks",
    "FixedAccumulation",
    "FlushDenormal",
    "GradReducer",
    "LayerSpec",
    "MixedPrecision",
    "Schedule",
    "Stack",
    "StackLayer",
    "StackStep",
    "StepTimer",
    "Threads",
    "adaptive_k",
    "broadcast_module",
    "ddp_supernet_step",
    "device_clock",
    "init_from_env",
    "is_rank_zero",
    "largest_micro_batch",
    "launch",
    "measured_step_bytes",
    "schedule_factor",
    "shard",
    "synchronize",
]
