"""MNIST-1D, generated locally by the ``mnist1d`` package (never downloaded)."""

from __future__ import annotations

import hashlib
import io
import json
import os
import random
import warnings
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch
from torch.utils.data import TensorDataset

from nasflow import settings
from nasflow._checks import check_fraction, check_int
from nasflow._files import atomic_write
from nasflow.data._base import DataBundle, split_train_val
from nasflow.errors import ConfigError

_KEYS = ("x", "y", "x_test", "y_test")
_SHAPES = {"x": (4000, 40), "y": (4000,), "x_test": (1000, 40), "y_test": (1000,)}
CACHE_NAME = "mnist1d.npz"
#: Generator settings added after the first variants, with their published defaults.
_LATER_FIELDS = {"scale_coeff": 0.4, "shear_scale": 0.75}


def default_cache_dir() -> Path:
    """The cache folder (``nasflow.settings.cache_dir``): ``$NASFLOW_CACHE``, else
    ``$XDG_CACHE_HOME/nasflow``, else ``~/.cache/nasflow``."""
    return settings.cache_dir()


@dataclass(frozen=True)
class MNIST1DVariant:
    """Generator settings of an MNIST-1D variant (the ``mnist1d`` package's arguments).

    The training pool (train + validation) and the test set are generated separately, the
    test set with its own seed, so a test set far larger than the published 1,000
    sequences can be drawn from the same generator (10,000 test sequences give an accuracy
    near 95% a standard error of about 0.2 points; the published 1,000, 0.7).

    Attributes:
        train_samples: Sequences in the training pool (a multiple of 10: equal classes).
        test_samples: Sequences in the test set (a multiple of 10).
        iid_noise_scale: Scale of the per-point Gaussian noise (published: 0.02).
        corr_noise_scale: Scale of the correlated (smoothed) noise (published: 0.25).
        max_translation: Largest shift of the digit inside the padded sequence (48).
        shuffle_seq: Permute the positions of every sequence with one fixed permutation.
        scale_coeff: Largest random rescaling of the digit template (published: 0.4).
        shear_scale: Largest random shear of the digit template (published: 0.75).
        seed: Generator seed of the training pool.
        test_seed: Generator seed of the test set (must differ from ``seed``).
    """

    train_samples: int = 4000
    test_samples: int = 10000
    iid_noise_scale: float = 0.02
    corr_noise_scale: float = 0.25
    max_translation: int = 48
    shuffle_seq: bool = False
    seed: int = 42
    test_seed: int = 43
    scale_coeff: float = 0.4
    shear_scale: float = 0.75

    def __post_init__(self) -> None:
        for name in ("train_samples", "test_samples"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 10 or v % 10:
                raise ConfigError(f"{name} must be a positive multiple of 10, got {v!r}")
        for name in ("iid_noise_scale", "corr_noise_scale", "scale_coeff", "shear_scale"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v < 100:
                raise ConfigError(f"{name} must be a number in [0, 100), got {v!r}")
        check_int("max_translation", self.max_translation, 0, 60)
        for name in ("seed", "test_seed"):
            check_int(name, getattr(self, name), 0)
        if self.seed == self.test_seed:
            raise ConfigError(f"test_seed must differ from seed, both are {self.seed!r}")

    def key(self) -> str:
        """A short stable hash of the settings (names the cache file and the bundle)."""
        settings = asdict(self)
        # Fields added later join the hash only when set, so the variants that existed
        # before them keep their cache files and dataset names.
        for name, default in _LATER_FIELDS.items():
            if settings[name] == default:
                del settings[name]
        if self.shuffle_seq:  # one permutation for pool and test (not the old two)
            settings["shuffle"] = "shared"
        blob = json.dumps(settings, sort_keys=True).encode()
        return hashlib.sha256(blob).hexdigest()[:12]


def _make(**overrides: object) -> dict[str, np.ndarray]:
    """``mnist1d``'s ``make_dataset`` with ``overrides``, leaving the global RNGs untouched."""
    from mnist1d.data import get_dataset_args, make_dataset

    args = get_dataset_args()
    for k, v in overrides.items():
        setattr(args, k, v)
    np_state, py_state = np.random.get_state(), random.getstate()
    try:
        data = make_dataset(args)  # reseeds numpy and random globally
    finally:
        np.random.set_state(np_state)
        random.setstate(py_state)
    return {k: np.asarray(data[k]) for k in _KEYS}


def _generate() -> dict[str, np.ndarray]:
    """The published 4,000/1,000 split, leaving the caller's global RNGs untouched."""
    return _make()


def _generate_variant(v: MNIST1DVariant) -> dict[str, np.ndarray]:
    """A variant's training pool and test set, each from its own generator seed.

    ``shuffle_seq`` is applied here, one permutation (seeded by ``v.seed``) for the pool
    and the test set: the ``mnist1d`` package draws its permutation from the global RNG
    after the samples, so the pool and the test set, generated with two seeds, would each
    get another one and the test set would not be the task the pool teaches.
    """
    common = {
        "iid_noise_scale": v.iid_noise_scale,
        "corr_noise_scale": v.corr_noise_scale,
        "max_translation": v.max_translation,
        "shuffle_seq": False,
        "scale_coeff": v.scale_coeff,
        "shear_scale": v.shear_scale,
    }
    pool = _make(num_samples=v.train_samples, train_split=1.0, seed=v.seed, **common)
    test = _make(num_samples=v.test_samples, train_split=0.0, seed=v.test_seed, **common)
    out = {"x": pool["x"], "y": pool["y"], "x_test": test["x_test"], "y_test": test["y_test"]}
    if v.shuffle_seq:
        perm = np.random.default_rng(v.seed).permutation(out["x"].shape[-1])
        out["x"], out["x_test"] = out["x"][..., perm], out["x_test"][..., perm]
    return out


def _shapes(variant: MNIST1DVariant | None) -> dict[str, tuple[int, ...]]:
    if variant is None:
        return _SHAPES
    n, m = variant.train_samples, variant.test_samples
    return {"x": (n, 40), "y": (n,), "x_test": (m, 40), "y_test": (m,)}


def _valid(arrays: dict[str, np.ndarray], variant: MNIST1DVariant | None = None) -> bool:
    """Whether cached arrays have the expected shapes, finite values and labels 0-9."""
    if any(arrays[k].shape != shape for k, shape in _shapes(variant).items()):
        return False
    labels = np.concatenate([arrays["y"], arrays["y_test"]])
    return (
        bool(np.isfinite(arrays["x"]).all() and np.isfinite(arrays["x_test"]).all())
        and np.issubdtype(labels.dtype, np.integer)
        and int(labels.min()) >= 0
        and int(labels.max()) <= 9
    )


def _read_cache(path: Path, variant: MNIST1DVariant | None = None) -> dict[str, np.ndarray] | None:
    """The cached arrays, or ``None`` when the file is missing, corrupt or truncated."""
    if not path.is_file():
        return None
    try:
        with np.load(path, allow_pickle=False) as f:
            arrays = {k: f[k] for k in _KEYS}
    except Exception:  # corrupt, truncated or missing keys: regenerate
        return None
    return arrays if _valid(arrays, variant) else None


def mnist1d_arrays(
    cache_dir: os.PathLike | str | None = None, variant: MNIST1DVariant | None = None
) -> dict[str, np.ndarray]:
    """The raw MNIST-1D arrays, read from the cache file or generated and cached.

    Args:
        cache_dir: Folder of ``mnist1d.npz``; ``None`` means :func:`default_cache_dir`.
        variant: Generator settings; ``None`` is the published dataset.

    Returns:
        ``{"x": (4000, 40), "y": (4000,), "x_test": (1000, 40), "y_test": (1000,)}`` for
        the published dataset; a variant's sizes otherwise.
    """
    name = CACHE_NAME if variant is None else f"mnist1d-{variant.key()}.npz"
    path = Path(cache_dir if cache_dir is not None else default_cache_dir()) / name
    arrays = _read_cache(path, variant)
    if arrays is not None:
        return arrays
    arrays = _generate() if variant is None else _generate_variant(variant)
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
    cache_dir: os.PathLike | str | None = None,
    val_fraction: float = 0.1,
    seed: int = 0,
    variant: MNIST1DVariant | None = None,
) -> DataBundle:
    """MNIST-1D: the published 4,000 training and 1,000 test sequences, or a variant.

    The validation split is carved out of the 4,000 training sequences with ``seed``;
    the test split is never part of it. Generation runs locally (no download) and leaves
    the global ``numpy`` and ``random`` RNG states as they were.

    Args:
        cache_dir: Folder of the ``mnist1d.npz`` cache; ``None`` means
            the cache folder (``nasflow.settings.cache_dir``).
        val_fraction: Share of the training sequences held out for validation, in (0, 1).
        seed: Seed of the train/validation split.
        variant: Other generator settings and sizes (:class:`MNIST1DVariant`); ``None``
            is the published dataset.

    Returns:
        A bundle with float32 samples shaped ``(1, 40)`` and int64 labels in 0-9.

    Raises:
        ValueError: ``val_fraction`` outside (0, 1).
    """
    check_fraction("val_fraction", val_fraction)
    if variant is not None and not isinstance(variant, MNIST1DVariant):
        raise ConfigError(f"variant must be an MNIST1DVariant or None, got {variant!r}")
    a = mnist1d_arrays(cache_dir, variant)
    train, val = split_train_val(_tensors(a["x"], a["y"]), val_fraction, seed)
    test = _tensors(a["x_test"], a["y_test"])
    name = "mnist1d" if variant is None else f"mnist1d-{variant.key()}"
    return DataBundle(train, val, test, (1, 40), 10, name)
