"""Hardware-aware cost model: analytic FLOPs, parameters and activation memory, and a
measured per-op training-latency table for the current device (SQLAlchemy), from which
``CostModel`` predicts any candidate's training-step time."""

from __future__ import annotations

from nasflow.cost._accuracy import (
    AccuracyReport,
    Agreement,
    agreement,
    evaluate_accuracy,
    kendall_tau_b,
)
from nasflow.cost._analytic import FlopCount, activation_bytes, count_flops, count_params
from nasflow.cost._cover import covering_archs, fit_line
from nasflow.cost._fingerprint import PRECISIONS, DeviceFingerprint
from nasflow.cost._measure import (
    CoreShare,
    OpMeasurement,
    OpTiming,
    Stability,
    assess_reference,
    load_reasons,
    measure_ops,
    robust_seconds,
    time_ops,
    time_steps,
)
from nasflow.cost._model import CostModel, CostStats, LoadedMachineWarning, MissingLatencyError
from nasflow.cost._store import Base as MeasurementBase
from nasflow.cost._store import DeviceStore, check_cache, from_shared, store_everywhere
from nasflow.cost._store import now as measured_now
from nasflow.cost._table import (
    Calibration,
    LatencyTable,
    default_cache_path,
    open_tables,
    resolve_url,
    shared_table_url,
)
from nasflow.cost._units import OpInstance

__all__ = [
    "PRECISIONS",
    "AccuracyReport",
    "Agreement",
    "Calibration",
    "CoreShare",
    "CostModel",
    "CostStats",
    "DeviceFingerprint",
    "DeviceStore",
    "FlopCount",
    "LatencyTable",
    "LoadedMachineWarning",
    "MeasurementBase",
    "MissingLatencyError",
    "OpInstance",
    "OpMeasurement",
    "OpTiming",
    "Stability",
    "activation_bytes",
    "agreement",
    "assess_reference",
    "check_cache",
    "count_flops",
    "count_params",
    "covering_archs",
    "default_cache_path",
    "evaluate_accuracy",
    "fit_line",
    "from_shared",
    "kendall_tau_b",
    "load_reasons",
    "measure_ops",
    "measured_now",
    "open_tables",
    "resolve_url",
    "robust_seconds",
    "shared_table_url",
    "store_everywhere",
    "time_ops",
    "time_steps",
]
