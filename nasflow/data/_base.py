"""``DataBundle``: the splits a study trains, validates and tests on."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch.utils.data import Dataset, Subset

from nasflow._checks import check_fraction
from nasflow.data._batches import EVAL_BATCH_SIZE, Batches
from nasflow.errors import ConfigError

#: The splits of a ``DataBundle``.
SPLITS = ("train", "val", "test")


@dataclass(frozen=True)
class DataBundle:
    """Train / validation / test splits and what a network needs to know about them.

    Attributes:
        train: Training split (supernet training, fine-tuning, BN recalibration).
        val: Validation split carved from the training data (the search score).
        test: Held-out test split (only for retrained winners, never during search).
        input_shape: Shape of one sample, without the batch dimension.
        num_classes: Classes (vocabulary size for language models).
        name: Short name for reports.
    """

    train: Dataset
    val: Dataset
    test: Dataset
    input_shape: tuple[int, ...]
    num_classes: int
    name: str = ""

    def batches(self, split: str, batch_size: int = EVAL_BATCH_SIZE, seed: int = 0) -> Batches:
        """The batches of one split, as every phase of a study reads them.

        ``"train"`` is reshuffled every epoch from ``seed`` (epoch ``e`` with seed
        ``(seed, e)``) and drops its last incomplete batch, so every step has
        ``batch_size`` samples; ``"val"`` and ``"test"`` are read in order, every sample.

        Args:
            split: ``"train"``, ``"val"`` or ``"test"``.
            batch_size: Samples per batch (the recipe's for training).
            seed: Seed of the training order (ignored for ``"val"`` and ``"test"``).

        Raises:
            ValueError: An unknown split or a bad batch size.
        """
        if split not in SPLITS:
            raise ConfigError(f"split must be one of {SPLITS}, got {split!r}")
        if split == "train":
            return Batches(self.train, batch_size, shuffle=True, seed=seed, drop_last=True)
        return Batches(getattr(self, split), batch_size, shuffle=False)


def split_indices(n: int, val_fraction: float, seed: int) -> tuple[list[int], list[int]]:
    """Seeded train/validation index lists over ``range(n)``.

    Uses its own ``torch.Generator``; the global RNGs are neither read nor changed.

    Args:
        n: Number of samples to split.
        val_fraction: Share of the samples that goes to validation, in (0, 1).
        seed: Seed of the permutation.

    Returns:
        ``(train_indices, val_indices)``, disjoint, together ``range(n)``.

    Raises:
        ValueError: ``val_fraction`` outside (0, 1), or a split that would be empty.
    """
    check_fraction("val_fraction", val_fraction)
    n_val = round(n * val_fraction)
    if n_val == 0 or n_val == n:
        raise ConfigError(
            f"val_fraction={val_fraction!r} of {n} samples leaves an empty train or val split"
        )
    order = torch.randperm(n, generator=torch.Generator().manual_seed(int(seed))).tolist()
    return order[n_val:], order[:n_val]


def split_train_val(dataset: Dataset, val_fraction: float, seed: int) -> tuple[Subset, Subset]:
    """A deterministic (seeded) train/validation split of a training set.

    Args:
        dataset: The training set (never the test set) to carve validation out of.
        val_fraction: Share of ``dataset`` that goes to validation, in (0, 1).
        seed: Seed of the split; the same seed gives the same split.

    Returns:
        ``(train, val)`` subsets of ``dataset``.

    Raises:
        ValueError: ``val_fraction`` outside (0, 1), or a split that would be empty.
    """
    train_idx, val_idx = split_indices(len(dataset), val_fraction, seed)  # type: ignore[arg-type]
    return Subset(dataset, train_idx), Subset(dataset, val_idx)
