"""Hardware-aware cost model: analytic FLOPs, parameters and activation memory, and a
measured per-op training-latency table for the current device (SQLAlchemy), from which
``CostModel`` predicts any candidate's training-step time."""

from __future__ import annotations

from nasflow.cost._accuracy import evaluate_accuracy
from nasflow.cost._analytic import activation_bytes, count_flops, count_params
from nasflow.cost._fingerprint import DeviceFingerprint
from nasflow.cost._measure import CoreShare, assess_reference, load_reasons, measure_ops
from nasflow.cost._model import CostModel
from nasflow.cost._tables._store import Base as MeasurementBase
from nasflow.cost._tables._store import DeviceStore, check_cache, from_shared, store_everywhere
from nasflow.cost._tables._store import now as measured_now
from nasflow.cost._tables._table import default_cache_path, resolve_url, shared_table_url
from nasflow.cost._trace import sees_ops

__all__ = [
    "CoreShare",
    "CostModel",
    "DeviceFingerprint",
    "DeviceStore",
    "MeasurementBase",
    "activation_bytes",
    "assess_reference",
    "check_cache",
    "count_flops",
    "count_params",
    "default_cache_path",
    "evaluate_accuracy",
    "from_shared",
    "load_reasons",
    "measure_ops",
    "measured_now",
    "resolve_url",
    "sees_ops",
    "shared_table_url",
    "store_everywhere",
]
