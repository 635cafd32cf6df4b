"""``Batches``: reproducible mini-batches of a dataset, the way every phase reads data."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterator

import torch
from torch.utils.data import DataLoader, Dataset, Subset, TensorDataset

from nasflow.errors import ConfigError

#: Samples per batch when a split is evaluated (validation, test).
EVAL_BATCH_SIZE = 512


def _batch_transform(dataset: Dataset) -> Callable[[torch.Tensor], torch.Tensor] | None:
    """The per-batch augmentation of an in-memory dataset (``ImageTensorDataset``), if any."""
    while isinstance(dataset, Subset):
        dataset = dataset.dataset
    return getattr(dataset, "batch_transform", None)


def _as_tensors(dataset: Dataset) -> tuple[torch.Tensor, ...] | None:
    """The tensors behind an in-memory dataset (``TensorDataset`` or a ``Subset`` of one)."""
    if isinstance(dataset, TensorDataset):
        return tuple(dataset.tensors)
    if isinstance(dataset, Subset):
        inner = _as_tensors(dataset.dataset)
        if inner is not None:
            idx = torch.as_tensor(dataset.indices, dtype=torch.long)
            return tuple(t[idx] for t in inner)
    return None


class Batches:
    """Reproducible mini-batches of a dataset: epoch ``e`` is shuffled with seed ``(seed, e)``.

    In-memory datasets (``TensorDataset``/``Subset``) are sliced directly, which on small
    data is several times faster than a ``DataLoader``; anything else goes through one.

    Args:
        dataset: Yields ``(x, y)``.
        batch_size: Samples per batch.
        shuffle: Shuffle every epoch.
        seed: Base seed of the shuffling.
        drop_last: Drop a last incomplete batch (training).
    """

    def __init__(
        self,
        dataset: Dataset,
        batch_size: int,
        shuffle: bool = True,
        seed: int = 0,
        drop_last: bool = False,
    ) -> None:
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ConfigError(f"batch_size must be an int >= 1, got {batch_size!r}")
        self.dataset, self.batch_size = dataset, batch_size
        self.shuffle, self.seed, self.drop_last = shuffle, seed, drop_last
        self._tensors = _as_tensors(dataset)
        # Augmentation applies to shuffled (training) batches only.
        self._transform = _batch_transform(dataset) if shuffle else None
        self._fixed: dict[int, list[tuple[torch.Tensor, torch.Tensor]]] = {}

    def __len__(self) -> int:
        n = len(self.dataset)  # type: ignore[arg-type]
        return n // self.batch_size if self.drop_last else math.ceil(n / self.batch_size)

    def epoch(self, epoch: int, start: int = 0) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        """The batches of ``epoch``, from batch index ``start`` on."""
        n = len(self.dataset)  # type: ignore[arg-type]
        if self.shuffle:
            g = torch.Generator().manual_seed(self.seed * 1_000_003 + epoch)
            order = torch.randperm(n, generator=g)
        else:
            order = torch.arange(n)
        if self._tensors is not None:
            for b in range(start, len(self)):
                idx = order[b * self.batch_size : (b + 1) * self.batch_size]
                x = self._tensors[0][idx]
                yield (self._transform(x) if self._transform else x), self._tensors[1][idx]
            return
        loader = DataLoader(
            Subset(self.dataset, order.tolist()),
            batch_size=self.batch_size,
            shuffle=False,
            drop_last=self.drop_last,
        )
        for b, batch in enumerate(loader):
            if b >= start:
                yield batch[0], batch[1]

    def __iter__(self) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        return self.epoch(0)

    def fixed(self, n: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
        """The first ``n`` batches of epoch 0, made once and kept: every call returns the
        same tensors (what re-estimates the batch norm of many paths, so that every path is
        scored on the same images).

        Where the dataset augments, the augmentation is drawn once, from the global torch
        generator re-seeded with ``seed`` inside ``torch.random.fork_rng`` (the caller's
        random state is left as it was): the same batches in every process, so a resumed
        study scores a path as the first process would have. Drawing it anew per path cost
        a fifth of the image proving ground's screening time and gave every path other
        images (``benchmarks/RESULTS.md``, "Fixed BN batches").
        """
        if n not in self._fixed:
            with torch.random.fork_rng(devices=[]):
                torch.manual_seed(self.seed)
                self._fixed[n] = list(itertools.islice(self.epoch(0), n))
        return self._fixed[n]
