"""Datasets: MNIST-1D (generated), image folders and zips, character-level text; batches."""

from __future__ import annotations

from nasflow.data._base import DataBundle
from nasflow.data._batches import Batches, batch_seed
from nasflow.data._check import DataError, check_bundle
from nasflow.data._fingerprint import data_fingerprint
from nasflow.data._images import load_cifar10, load_image_folder
from nasflow.data._mnist1d import MNIST1DVariant, default_cache_dir, load_mnist1d
from nasflow.data._text import CharVocab, load_text

__all__ = [
    "Batches",
    "CharVocab",
    "DataBundle",
    "DataError",
    "MNIST1DVariant",
    "batch_seed",
    "check_bundle",
    "data_fingerprint",
    "default_cache_dir",
    "load_cifar10",
    "load_image_folder",
    "load_mnist1d",
    "load_text",
]
