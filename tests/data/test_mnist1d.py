"""MNIST-1D: local generation, global-RNG hygiene, atomic and self-healing cache, splits."""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch

import nasflow.data._mnist1d as m1d
from nasflow.data import DataBundle, load_mnist1d
from nasflow.data._mnist1d import mnist1d_arrays

# Fingerprint of the published dataset (mnist1d make_dataset with its default args, seed 42).
FIRST_TRAIN_LABELS = [2, 6, 4, 5, 6, 6, 6, 0, 3, 1, 6, 9]
FIRST_TEST_LABELS = [2, 6, 3, 9, 4, 3, 1, 9, 5, 2, 0, 7]


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A cache folder holding a freshly generated ``mnist1d.npz`` (generated once)."""
    folder = tmp_path_factory.mktemp("mnist1d-cache")
    mnist1d_arrays(folder)
    return folder


@pytest.fixture
def good_arrays(cache: Path) -> dict[str, np.ndarray]:
    with np.load(cache / "mnist1d.npz") as f:
        return {k: f[k] for k in f.files}


@pytest.mark.slow
def test_generation_keeps_global_rngs_and_never_downloads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import requests

    def no_network(*args: object, **kwargs: object) -> None:
        raise AssertionError("MNIST-1D must not touch the network")

    monkeypatch.setattr(requests, "get", no_network)
    monkeypatch.setattr(requests.Session, "request", no_network)
    np.random.seed(1234)
    random.seed(1234)
    torch.manual_seed(1234)
    bundle = load_mnist1d(tmp_path)  # cold: runs make_dataset, which calls set_seed(42)
    after = (np.random.rand(3).tolist(), random.random(), torch.rand(2).tolist())
    np.random.seed(1234)
    random.seed(1234)
    torch.manual_seed(1234)
    expected = (np.random.rand(3).tolist(), random.random(), torch.rand(2).tolist())
    assert after == expected
    assert (tmp_path / "mnist1d.npz").is_file()
    assert [p.name for p in tmp_path.iterdir()] == ["mnist1d.npz"]  # no temp file left over
    assert len(bundle.train) + len(bundle.val) == 4000


@pytest.mark.slow
def test_shapes_dtypes_and_published_split(cache: Path) -> None:
    bundle = load_mnist1d(cache)
    assert isinstance(bundle, DataBundle)
    assert (bundle.input_shape, bundle.num_classes, bundle.name) == ((1, 40), 10, "mnist1d")
    assert (len(bundle.train), len(bundle.val), len(bundle.test)) == (3600, 400, 1000)
    x, y = bundle.train[0]
    assert x.shape == (1, 40) and x.dtype == torch.float32
    assert y.dtype == torch.int64 and 0 <= int(y) < 10
    test_labels = [int(bundle.test[i][1]) for i in range(12)]
    assert test_labels == FIRST_TEST_LABELS
    all_train = bundle.train.dataset.tensors[1]  # type: ignore[attr-defined]
    assert all_train[:12].tolist() == FIRST_TRAIN_LABELS
    assert sorted(set(all_train.tolist())) == list(range(10))


def test_val_split_is_seeded_disjoint_and_from_train_only(cache: Path) -> None:
    a, b, c = load_mnist1d(cache, seed=0), load_mnist1d(cache, seed=0), load_mnist1d(cache, seed=1)
    assert a.val.indices == b.val.indices and a.train.indices == b.train.indices
    assert a.val.indices != c.val.indices
    assert sorted(a.train.indices + a.val.indices) == list(range(4000))
    assert a.train.dataset is a.val.dataset  # both from the 4,000 training sequences
    assert a.test is not a.train.dataset and len(a.test) == 1000
    train_x = a.train.dataset.tensors[0]
    test_x = a.test.tensors[0]
    assert not any(torch.equal(test_x[0], row) for row in train_x)
    quarter = load_mnist1d(cache, val_fraction=0.25)
    assert (len(quarter.train), len(quarter.val)) == (3000, 1000)


@pytest.mark.parametrize("bad", [0, 0.0, 1, 1.0, -0.1, 1.5, True])
def test_bad_val_fraction_is_rejected(cache: Path, bad: float) -> None:
    with pytest.raises(ValueError, match="val_fraction"):
        load_mnist1d(cache, val_fraction=bad)


def test_cache_hit_reads_file_without_regenerating(
    cache: Path, monkeypatch: pytest.MonkeyPatch, good_arrays: dict[str, np.ndarray]
) -> None:
    monkeypatch.setattr(m1d, "_generate", lambda: pytest.fail("regenerated a valid cache"))
    arrays = mnist1d_arrays(cache)
    for key in ("x", "y", "x_test", "y_test"):
        np.testing.assert_array_equal(arrays[key], good_arrays[key])


def _counting_generate(
    monkeypatch: pytest.MonkeyPatch, arrays: dict[str, np.ndarray]
) -> list[int]:
    calls: list[int] = []

    def fake() -> dict[str, np.ndarray]:
        calls.append(1)
        return {k: arrays[k].copy() for k in ("x", "y", "x_test", "y_test")}

    monkeypatch.setattr(m1d, "_generate", fake)
    return calls


@pytest.mark.parametrize("damage", ["garbage", "truncated", "wrong_shape", "empty", "nan"])
def test_corrupt_cache_is_regenerated_and_rewritten(
    tmp_path: Path,
    cache: Path,
    monkeypatch: pytest.MonkeyPatch,
    good_arrays: dict[str, np.ndarray],
    damage: str,
) -> None:
    target = tmp_path / "mnist1d.npz"
    good = (cache / "mnist1d.npz").read_bytes()
    if damage == "garbage":
        target.write_bytes(b"not an npz file at all")
    elif damage == "truncated":
        target.write_bytes(good[: len(good) // 2])
    elif damage == "empty":
        target.write_bytes(b"")
    elif damage == "wrong_shape":
        np.savez(target, **{**good_arrays, "x": good_arrays["x"][:100]})
    else:
        x = good_arrays["x"].copy()
        x[0, 0] = np.nan
        np.savez(target, **{**good_arrays, "x": x})
    calls = _counting_generate(monkeypatch, good_arrays)
    bundle = load_mnist1d(tmp_path)
    assert calls == [1]
    assert len(bundle.train) + len(bundle.val) == 4000
    assert target.read_bytes() == good  # rewritten with the valid arrays
    load_mnist1d(tmp_path)
    assert calls == [1]  # the repaired cache is used from now on


def test_default_cache_dir_honours_env(
    tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NASFLOW_CACHE", str(tmp_path / "nested" / "cache"))
    assert m1d.default_cache_dir() == tmp_path / "nested" / "cache"
    (tmp_path / "nested" / "cache").mkdir(parents=True)
    shutil.copy(cache / "mnist1d.npz", tmp_path / "nested" / "cache" / "mnist1d.npz")
    monkeypatch.setattr(m1d, "_generate", lambda: pytest.fail("ignored $NASFLOW_CACHE"))
    assert load_mnist1d().num_classes == 10
    monkeypatch.delenv("NASFLOW_CACHE")
    assert m1d.default_cache_dir() == Path.home() / ".cache" / "nasflow"


def test_unwritable_cache_still_returns_data(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, good_arrays: dict[str, np.ndarray]
) -> None:
    blocker = tmp_path / "file-not-folder"
    blocker.write_text("x")
    _counting_generate(monkeypatch, good_arrays)
    with pytest.warns(RuntimeWarning, match="could not cache"):
        bundle = load_mnist1d(blocker / "sub")
    assert len(bundle.test) == 1000


def test_interrupted_write_leaves_old_file_and_no_temp(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, good_arrays: dict[str, np.ndarray]
) -> None:
    target = tmp_path / "mnist1d.npz"
    target.write_bytes(b"old, corrupt cache")
    _counting_generate(monkeypatch, good_arrays)

    def crash(*args: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr("os.replace", crash)
    with pytest.warns(RuntimeWarning, match="disk full"):
        bundle = load_mnist1d(tmp_path)
    assert len(bundle.train) == 3600
    assert target.read_bytes() == b"old, corrupt cache"
    assert [p.name for p in tmp_path.iterdir()] == ["mnist1d.npz"]


# ---------------------------------------------------------------------------- variants
@pytest.mark.slow
def test_a_variant_has_its_own_sizes_test_seed_and_cache_file(tmp_path: Path) -> None:
    v = m1d.MNIST1DVariant(train_samples=200, test_samples=300, iid_noise_scale=0.05)
    bundle = load_mnist1d(tmp_path, val_fraction=0.25, variant=v)
    assert (len(bundle.train), len(bundle.val), len(bundle.test)) == (150, 50, 300)
    assert bundle.name == f"mnist1d-{v.key()}"
    assert [p.name for p in tmp_path.iterdir()] == [f"mnist1d-{v.key()}.npz"]
    arrays = mnist1d_arrays(tmp_path, v)
    # The test set comes from another generator seed: no sequence of the pool recurs.
    pool = {row.tobytes() for row in arrays["x"]}
    assert not any(row.tobytes() in pool for row in arrays["x_test"])
    assert sorted(np.bincount(arrays["y_test"]).tolist()) == [30] * 10  # balanced classes
    # Other settings give other data and another cache file; the published one is intact.
    noisier = m1d.MNIST1DVariant(train_samples=200, test_samples=300, iid_noise_scale=0.5)
    assert noisier.key() != v.key()
    assert not np.allclose(mnist1d_arrays(tmp_path, noisier)["x"], arrays["x"])
    assert len(load_mnist1d(tmp_path).test) == 1000


@pytest.mark.parametrize(
    "kwargs, bad",
    [
        ({"train_samples": 15}, "train_samples must be a positive multiple of 10, got 15"),
        ({"test_samples": 0}, "test_samples must be a positive multiple of 10, got 0"),
        ({"iid_noise_scale": -1.0}, "iid_noise_scale must be a number in"),
        ({"max_translation": 61}, "max_translation must be an int from 0 to 60, got 61"),
        ({"seed": 7, "test_seed": 7}, "test_seed must differ from seed, both are 7"),
    ],
)
def test_bad_variant_settings_are_refused(kwargs, bad) -> None:
    with pytest.raises(ValueError, match=bad):
        m1d.MNIST1DVariant(**kwargs)


def test_load_refuses_a_variant_of_the_wrong_type(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="variant must be an MNIST1DVariant or None, got"):
        load_mnist1d(tmp_path, variant={"train_samples": 100})  # type: ignore[arg-type]


def test_a_shuffled_variant_permutes_pool_and_test_alike(tmp_path) -> None:
    import numpy as np

    from nasflow.data import MNIST1DVariant
    from nasflow.data._mnist1d import mnist1d_arrays

    plain = MNIST1DVariant(train_samples=100, test_samples=100)
    shuffled = MNIST1DVariant(train_samples=100, test_samples=100, shuffle_seq=True)
    a, b = mnist1d_arrays(tmp_path, plain), mnist1d_arrays(tmp_path, shuffled)
    # One permutation maps both splits of the plain variant onto the shuffled one.
    perm = np.random.default_rng(shuffled.seed).permutation(40)
    np.testing.assert_allclose(a["x"][..., perm], b["x"], rtol=1e-6)
    np.testing.assert_allclose(a["x_test"][..., perm], b["x_test"], rtol=1e-6)
    assert shuffled.key() != MNIST1DVariant(train_samples=100, test_samples=100).key()
