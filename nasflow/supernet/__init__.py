"""Weight-sharing supernets with the path passed explicitly to ``forward``."""

from __future__ import annotations

from nasflow.supernet._base import (
    LayerChoice,
    SuperModule,
    Supernet,
    SuperSequential,
    call,
    extract_module,
)
from nasflow.supernet._blocks import SuperResidual
from nasflow.supernet._bn import recalibrate_bn
from nasflow.supernet._elastic import (
    Channels,
    ElasticBatchNorm1d,
    ElasticBatchNorm2d,
    ElasticConv1d,
    ElasticConv2d,
    ElasticLinear,
)
from nasflow.supernet._split import Split, split_supernet

__all__ = [
    "Channels",
    "ElasticBatchNorm1d",
    "ElasticBatchNorm2d",
    "ElasticConv1d",
    "ElasticConv2d",
    "ElasticLinear",
    "LayerChoice",
    "Split",
    "SuperModule",
    "SuperResidual",
    "SuperSequential",
    "Supernet",
    "call",
    "extract_module",
    "recalibrate_bn",
    "split_supernet",
]
