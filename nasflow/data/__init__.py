"""Datasets: MNIST-1D (generated), image folders and zips, character-level text; batches."""

from __future__ import annotations

from nasflow.data._base import DataBundle, split_indices, split_train_val
from nasflow.data._batches import EVAL_BATCH_SIZE, Batches
from nasflow.data._check import DataError, check_bundle
from nasflow.data._fingerprint import data_fingerprint
from nasflow.data._images import (
    CIFAR10_MEAN,
    CIFAR10_STD,
    ZipImageFolder,
    load_cifar10,
    load_image_folder,
)
from nasflow.data._mnist1d import (
    MNIST1DVariant,
    default_cache_dir,
    load_mnist1d,
    mnist1d_arrays,
)
from nasflow.data._text import CharBlocks, CharVocab, load_text

__all__ = [
    "CIFAR10_MEAN",
    "CIFAR10_STD",
    "EVAL_BATCH_SIZE",
    "Batches",
    "CharBlocks",
    "CharVocab",
    "DataBundle",
    "DataError",
    "MNIST1DVariant",
    "ZipImageFolder",
    "check_bundle",
    "data_fingerprint",
    "default_cache_dir",
    "load_cifar10",
    "load_image_folder",
    "load_mnist1d",
    "load_text",
    "mnist1d_arrays",
    "split_indices",
    "split_train_val",
]
