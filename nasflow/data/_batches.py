"""``Batches``: reproducible mini-batches of a dataset, the way every phase reads data."""

from __future__ import annotations

import contextlib
import itertools
import math
from collections.abc import Callable, Iterator

import torch
from torch.utils.data import DataLoader, Dataset, Subset, TensorDataset

from nasflow.errors import ConfigError

#: Samples per batch when a split is evaluated (validation, test).
EVAL_BATCH_SIZE = 512


def batch_seed(seed: int, epoch: int, b: int) -> int:
    """The seed of batch ``b`` of ``epoch`` of a training seeded with ``seed``: what its
    augmentation draws from (``Batches``) and, salted, what a training step's own draws
    (dropout) come from (``nasflow.train.EpochTrainer``)."""
    return ((seed * 1_000_003 + epoch) * 1_000_003 + b) % (1 << 63)


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

    The augmentation of a shuffled batch (an ``ImageTensorDataset``'s batch transform, or a
    folder dataset's per-image transforms) is drawn from the CPU generator seeded with
    ``(seed, e, b)`` for batch ``b`` of epoch ``e``, inside ``torch.random.fork_rng``: batch
    ``b`` is the same whatever ran before in the process, in whichever order candidates
    train, and after a resume mid-epoch; the caller's random state is left as it was.
    (Drawn from the global generator as it stood, what it was until 2026-11-29, a
    candidate's crops depended on what the process had trained before it.)

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
                if self._transform is not None:
                    with self._drawing(epoch, b):
                        x = self._transform(x)
                yield x, self._tensors[1][idx]
            return
        loader = DataLoader(
            Subset(self.dataset, order.tolist()),
            batch_size=self.batch_size,
            shuffle=False,
            drop_last=self.drop_last,
        )
        it = iter(loader)
        for b in range(len(loader)):
            with self._drawing(epoch, b):  # (the per-image transforms draw as it loads)
                batch = next(it)
            if b >= start:
                yield batch[0], batch[1]

    @contextlib.contextmanager
    def _drawing(self, epoch: int, b: int) -> Iterator[None]:
        """The CPU generator seeded for batch ``b`` of ``epoch`` (shuffled batches only),
        restored after (about 8 us a batch on a 2-vCPU VM, against ~3 ms for cropping a batch
        of 256 CIFAR images)."""
        if not self.shuffle:
            yield
            return
        with torch.random.fork_rng(devices=[]):
            torch.default_generator.manual_seed(batch_seed(self.seed, epoch, b))
            yield

    def __iter__(self) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        return self.epoch(0)

    def fixed(self, n: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
        """The first ``n`` batches of epoch 0, made once and kept: every call returns the
        same tensors (what re-estimates the batch norm of many paths, so that every path is
        scored on the same images).

        Where the dataset augments, the augmentation is drawn once, from the seed (as every
        batch is): the same batches in every process, so a resumed study scores a path as
        the first process would have. Drawing it anew per path cost a fifth of the image
        proving ground's screening time and gave every path other images
        (``benchmarks/RESULTS.md``, "Fixed BN batches").
        """
        if n not in self._fixed:
            self._fixed[n] = list(itertools.islice(self.epoch(0), n))
        return self._fixed[n]
