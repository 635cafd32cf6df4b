"""Exporting winners as plain models, and loading them back without pickle.

An export directory holds ``arch.json`` (space, fingerprint, config, choices, which weights
and the metrics of exactly those weights), ``model.safetensors`` (a study's retrained
winner, a ready model's fine-tuned weights, or supernet weights), a ``torch.export``
program (``model.pt2``), an ONNX file checked with onnxruntime (``model.onnx``) and a
``README.md``. ``load_exported`` rebuilds the network from ``arch.json`` and
``model.safetensors`` only.
"""

from __future__ import annotations

from nasflow.export._export import export
from nasflow.export._format import ExportError, ExportInfo
from nasflow.export._loader import NonFiniteWeightsWarning, load_exported, read_export
from nasflow.export._programs import require_onnx
from nasflow.export._retrain import retrain_exported, retrain_target, write_retrained
from nasflow.export._study import select_trials
from nasflow.export._writer import export_arch

__all__ = [
    "ExportError",
    "ExportInfo",
    "NonFiniteWeightsWarning",
    "export",
    "export_arch",
    "load_exported",
    "read_export",
    "require_onnx",
    "retrain_exported",
    "retrain_target",
    "select_trials",
    "write_retrained",
]
