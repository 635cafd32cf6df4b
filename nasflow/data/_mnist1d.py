"""MNIST-1D, generated locally by the ``mnist1d`` package (never downloaded)."""

from __future__ import annotations

import io
import os
import random
import warnings
from pathlib import Path

import numpy as np
import torch
from torch.utils.data import TensorDataset

from nasflow.data._base import DataBundle, check_fraction, split_train_val

_KEYS = ("x", "y", "x_test", "y_test")
_SHAPES = {"x": (4000, 40), "y": (4000,), "x_test": (1000, 40), "y_test": (1000,)}
CACHE_NAME = "mnist1d.npz"


def default_cache_dir() -> Path:
    """The cache folder: ``$NASFLOW_CACHE`` if set, else ``~/.cache/nasflow``."""
    return Path(os.environ.get("NASFLOW_CACHE") or Path.home() / ".cache" / "nasflow")


def _generate() -> dict[str, np.ndarray]:
    """The published 4,000/1,000 split, leaving the caller's global RNGs untouched."""
    from mnist1d.data import get_dataset_args, make_dataset

    np_state, py_state = np.random.get_state(), random.getstate()
    try:
        data = make_dataset(get_dataset_args())  # reseeds numpy and random globally
    finally:
        np.random.set_state(np_state)
        random.setstate(py_state)
    return {k: np.asarray(data[k]) for k in _KEYS}


def _valid(arrays: dict[str, np.ndarray]) -> bool:
    """Whether cached arrays have the published shapes, finite values and labels 0-9."""
    if any(arrays[k].shape != shape for k, shape in _SHAPES.items()):
        return False
    labels = np.concatenate([arrays["y"], arrays["y_test"]])
    return (
        bool(np.isfinite(arrays["x"]).all() and np.isfinite(arrays["x_test"]).all())
        and np.issubdtype(labels.dtype, np.integer)
        and int(labels.min()) >= 0
        and int(labels.max()) <= 9
    )


def _read_cache(path: Path) -> dict[str, np.ndarray] | None:
    """The cached arrays, or ``None`` when the file is missing, corrupt or truncated."""
    if not path.is_file():
        return None
    try:
        with np.load(path, allow_pickle=False) as f:
            arrays = {k: f[k] for k in _KEYS}
    except Exception:  # corrupt, truncated or missing keys: regenerate
        return None
    return arrays if _valid(arrays) else None


def mnist1d_arrays(cache_dir: os.PathLike | str | None = None) -> dict[str, np.ndarray]:
    """The raw MNIST-1D arrays, read from the cache file or generated and cached.

    Args:
        cache_dir: Folder of ``mnist1d.npz``; ``None`` means :func:`default_cache_dir`.

    Returns:
        ``{"x": (4000, 40), "y": (4000,), "x_test": (1000, 40), "y_test": (1000,)}``.
    """
    from nasflow.train._checkpoint import atomic_write

    path = Path(cache_dir if cache_dir is not None else default_cache_dir()) / CACHE_NAME
    arrays = _read_cache(path)
    if arrays is not None:
        return arrays
    arrays = _generate()
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    try:
        atomic_write(path, lambda f: f.write(buf.getvalue()))
    except OSError as e:  # a read-only cache only costs a regeneration next time
        warnings.warn(f"could not cache MNIST-1D at {path}: {e}", RuntimeWarning, stacklevel=2)
    return arrays


def _tensors(x: np.ndarray, y: np.ndarray) -> TensorDataset:
    xs = torch.as_tensor(x, dtype=torch.float32).unsqueeze(1)  # (N, 40) -> (N, 1, 40)
    return TensorDataset(xs, torch.as_tensor(y, dtype=torch.long))


def load_mnist1d(
    cache_dir: os.PathLike | str | None = None, val_fraction: float = 0.1, seed: int = 0
) -> DataBundle:
    """MNIST-1D: the published 4,000 training and 1,000 test sequences.

    The validation split is carved out of the 4,000 training sequences with ``seed``;
    the test split is never part of it. Generation runs locally (no download) and leaves
    the global ``numpy`` and ``random`` RNG states as they were.

    Args:
        cache_dir: Folder of the ``mnist1d.npz`` cache; ``None`` means
            ``$NASFLOW_CACHE`` or ``~/.cache/nasflow``.
        val_fraction: Share of the training sequences held out for validation, in (0, 1).
        seed: Seed of the train/validation split.

    Returns:
        A bundle with float32 samples shaped ``(1, 40)`` and int64 labels in 0-9.

    Raises:
        ValueError: ``val_fraction`` outside (0, 1).
    """
    check_fraction("val_fraction", val_fraction)
    a = mnist1d_arrays(cache_dir)
    train, val = split_train_val(_tensors(a["x"], a["y"]), val_fraction, seed)
    test = _tensors(a["x_test"], a["y_test"])
    return DataBundle(train, val, test, (1, 40), 10, "mnist1d")
