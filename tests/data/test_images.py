"""Image folders and zips: layout detection, transforms, limits, splits, pickling, errors."""

from __future__ import annotations

import collections
import pickle
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest
import torch
from PIL import Image
from torch.utils.data import DataLoader, Subset

from nasflow.data import load_cifar10, load_image_folder
from nasflow.data._images import CIFAR10_MEAN, CIFAR10_STD, ZipImageFolder
from tests.conftest import require_or_skip

CIFAR10_CLASSES = [
    "airplane", "automobile", "bird", "cat", "deer",
    "dog", "frog", "horse", "ship", "truck",
]  # fmt: skip
COLORS = {"blue": (0, 0, 255), "green": (0, 255, 0), "red": (255, 0, 0)}
MEAN = torch.tensor(CIFAR10_MEAN).view(3, 1, 1)  # (C, 1, 1)
STD = torch.tensor(CIFAR10_STD).view(3, 1, 1)  # (C, 1, 1)


def _make_tree(root: Path, n_train: int = 10, n_test: int = 3, size: int = 8) -> Path:
    """``root/{train,test}/<color>/NNN.png``: solid images of the class colour."""
    for split, n in (("train", n_train), ("test", n_test)):
        for name, rgb in COLORS.items():
            (root / split / name).mkdir(parents=True)
            for i in range(n):
                Image.new("RGB", (size, size), rgb).save(root / split / name / f"{i:03d}.png")
    return root


def _zip_tree(tree: Path, dest: Path, top: str = "") -> Path:
    with zipfile.ZipFile(dest, "w") as zf:
        for f in sorted(tree.rglob("*")):
            zf.write(f, top + f.relative_to(tree).as_posix())
    return dest


def _rgb(x: torch.Tensor) -> list[int]:
    """The colour of a solid normalized image tensor, back in 0-255."""
    return (x * STD + MEAN).mul(255).round().flatten(1).mean(1).round().int().tolist()


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    return _make_tree(tmp_path / "colors")


@pytest.fixture
def cifar_zip(shared_data_file: Callable[[str], Path]) -> Path:
    return shared_data_file("cifar10-jpg.zip")


@pytest.mark.parametrize("kind", ["dir", "zip", "zip_with_top_folder"])
def test_tiny_layout_labels_match_pixels(tree: Path, tmp_path: Path, kind: str) -> None:
    path = {
        "dir": lambda: tree,
        "zip": lambda: _zip_tree(tree, tmp_path / "colors.zip"),
        "zip_with_top_folder": lambda: _zip_tree(tree, tmp_path / "c.zip", top="colors/"),
    }[kind]()
    bundle = load_image_folder(path, val_fraction=0.2, seed=3)
    assert (bundle.input_shape, bundle.num_classes) == ((3, 8, 8), 3)
    assert (len(bundle.train), len(bundle.val), len(bundle.test)) == (24, 6, 9)
    assert bundle.train.dataset.classes == sorted(COLORS)
    for split in (bundle.train, bundle.val, bundle.test):
        for x, y in split:
            assert x.shape == (3, 8, 8) and x.dtype == torch.float32
            assert tuple(_rgb(x)) == COLORS[sorted(COLORS)[y]]
    assert sorted(bundle.train.indices + bundle.val.indices) == list(range(30))


def test_zip_and_dir_agree_and_resize(tree: Path, tmp_path: Path) -> None:
    zipped = _zip_tree(tree, tmp_path / "colors.zip", top="colors/")
    a = load_image_folder(tree, image_size=12, seed=5)
    b = load_image_folder(zipped, image_size=12, seed=5)
    assert a.input_shape == b.input_shape == (3, 12, 12)
    assert a.val.indices == b.val.indices and a.test.indices == b.test.indices
    for i in range(len(a.val)):
        assert torch.equal(a.val[i][0], b.val[i][0]) and a.val[i][1] == b.val[i][1]
    assert b.name == "colors" and a.name == "colors"


def test_zip_prefers_top_level_and_skips_junk(tree: Path, tmp_path: Path) -> None:
    dest = _zip_tree(tree, tmp_path / "c.zip")
    with zipfile.ZipFile(dest, "a") as zf:
        zf.writestr("__MACOSX/train/red/._000.png", b"junk")
        zf.writestr("train/red/.hidden.png", b"junk")
        zf.writestr("train/red/notes.txt", b"junk")
        zf.writestr("train/README.md", b"junk")
    ds = ZipImageFolder(dest, "train")
    assert len(ds) == 30 and ds.classes == sorted(COLORS)
    assert all(name.startswith("train/") and name.endswith(".png") for name, _ in ds.samples)
    assert ds.targets == [label for _, label in ds.samples]


def test_augment_only_on_train(tree: Path) -> None:
    bundle = load_image_folder(tree, augment=True, val_fraction=0.2)
    train_ops = [type(t).__name__ for t in bundle.train.dataset.transform.transforms]
    val_ops = [type(t).__name__ for t in bundle.val.dataset.transform.transforms]
    assert "RandomCrop" in train_ops and "RandomHorizontalFlip" in train_ops
    assert "RandomCrop" not in val_ops and "RandomHorizontalFlip" not in val_ops
    assert bundle.train.dataset.samples is bundle.val.dataset.samples  # one index, two views
    torch.manual_seed(0)
    x = bundle.train[0][0]
    crops = [bundle.train[0][0] for _ in range(10)]
    assert any(not torch.equal(x, c) for c in crops)  # padding shows up in random crops
    assert torch.equal(bundle.val[0][0], bundle.val[0][0])
    assert bundle.input_shape == (3, 8, 8)


def test_limits_are_stratified_seeded_and_validated(tree: Path) -> None:
    a = load_image_folder(tree, train_limit=12, test_limit=4, val_fraction=0.25, seed=1)
    b = load_image_folder(tree, train_limit=12, test_limit=4, val_fraction=0.25, seed=1)
    c = load_image_folder(tree, train_limit=12, test_limit=4, val_fraction=0.25, seed=2)
    assert (len(a.train), len(a.val), len(a.test)) == (9, 3, 4)
    targets = a.train.dataset.targets
    pool = a.train.indices + a.val.indices
    assert collections.Counter(targets[i] for i in pool) == {0: 4, 1: 4, 2: 4}
    assert a.val.indices == b.val.indices and a.test.indices == b.test.indices
    assert sorted(a.train.indices + a.val.indices) != sorted(c.train.indices + c.val.indices)
    assert len(load_image_folder(tree, train_limit=10_000).train) == 27  # at most all
    for bad in ({"train_limit": 0}, {"test_limit": -1}, {"image_size": 2.5}):
        with pytest.raises(ValueError, match=next(iter(bad))):
            load_image_folder(tree, **bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="val_fraction"):
        load_image_folder(tree, val_fraction=1.0)


def test_bad_paths_and_layouts(tree: Path, tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="nowhere"):
        load_image_folder(tmp_path / "nowhere")
    for sub in ("test", "train"):
        broken = _make_tree(tmp_path / f"no-{sub}")
        for f in sorted((broken / sub).rglob("*"), reverse=True):
            f.unlink() if f.is_file() else f.rmdir()
        (broken / sub).rmdir()
        with pytest.raises(ValueError, match=f"{sub}/"):
            load_image_folder(broken)
        zipped = _zip_tree(broken, tmp_path / f"no-{sub}.zip")
        with pytest.raises(ValueError, match=f"no {sub}/"):
            load_image_folder(zipped)
    text = tmp_path / "notes.txt"
    text.write_text("hello")
    with pytest.raises(ValueError, match=r"folder or a \.zip"):
        load_image_folder(text)
    fake_zip = tmp_path / "fake.zip"
    fake_zip.write_text("hello")
    with pytest.raises(ValueError, match="not a zip"):
        load_image_folder(fake_zip)
    (tree / "test" / "purple").mkdir()
    Image.new("RGB", (8, 8)).save(tree / "test" / "purple" / "0.png")
    with pytest.raises(ValueError, match="differ"):
        load_image_folder(tree)
    with pytest.raises(ValueError, match="10 classes"):
        load_cifar10(_make_tree(tmp_path / "three"))


@pytest.mark.slow
def test_cifar10_zip_shapes_labels_and_split(cifar_zip: Path) -> None:
    bundle = load_cifar10(cifar_zip, train_limit=200, test_limit=100, seed=0)
    assert (bundle.input_shape, bundle.num_classes, bundle.name) == ((3, 32, 32), 10, "cifar10")
    assert (len(bundle.train), len(bundle.val), len(bundle.test)) == (180, 20, 100)
    train_ds, test_ds = bundle.train.dataset, bundle.test.dataset
    assert train_ds.classes == test_ds.classes == CIFAR10_CLASSES
    assert (len(train_ds), len(test_ds)) == (50_000, 10_000)
    assert set(bundle.train.indices).isdisjoint(bundle.val.indices)
    assert all(train_ds.samples[i][0].split("/")[-3] == "train" for i in bundle.val.indices)
    assert all(test_ds.samples[i][0].split("/")[-3] == "test" for i in bundle.test.indices)
    pool = bundle.train.indices + bundle.val.indices
    assert collections.Counter(train_ds.targets[i] for i in pool) == dict.fromkeys(range(10), 20)
    assert collections.Counter(test_ds.targets[i] for i in bundle.test.indices) == dict.fromkeys(
        range(10), 10
    )
    xs = torch.stack([bundle.val[i][0] for i in range(len(bundle.val))])  # (20, 3, 32, 32)
    assert xs.shape == (20, 3, 32, 32) and xs.dtype == torch.float32
    pixels = xs * STD + MEAN
    assert pixels.min() >= -1e-5 and pixels.max() <= 1 + 1e-5
    assert abs(float(xs.mean())) < 0.5 and 0.5 < float(xs.std()) < 1.5  # roughly normalized
    for split, ds in ((bundle.train, train_ds), (bundle.test, test_ds)):
        for k in range(5):
            x, y = split[k]
            name, label = ds.samples[split.indices[k]]
            assert x.shape == (3, 32, 32) and y == label
            assert name.split("/")[-2] == CIFAR10_CLASSES[y]  # the label is the class folder
    again = load_cifar10(cifar_zip, train_limit=200, test_limit=100, seed=0)
    other = load_cifar10(cifar_zip, train_limit=200, test_limit=100, seed=1)
    assert again.val.indices == bundle.val.indices and again.test.indices == bundle.test.indices
    assert other.val.indices != bundle.val.indices


@pytest.mark.slow
def test_cifar10_zip_pickles_into_dataloader_workers(cifar_zip: Path) -> None:
    bundle = load_cifar10(cifar_zip, train_limit=40, test_limit=20, image_size=16)
    assert bundle.input_shape == (3, 16, 16)
    clone = pickle.loads(pickle.dumps(bundle.val))
    assert isinstance(clone, Subset) and clone.indices == bundle.val.indices
    assert torch.equal(clone[0][0], bundle.val[0][0]) and clone[0][1] == bundle.val[0][1]
    loader = DataLoader(bundle.test, batch_size=8, num_workers=2)
    batches = list(loader)
    xs = torch.cat([x for x, _ in batches])  # (20, 3, 16, 16)
    ys = torch.cat([y for _, y in batches])
    assert xs.shape == (20, 3, 16, 16) and ys.tolist() == [y for _, y in bundle.test]
    expected = torch.stack([x for x, _ in bundle.test])  # (20, 3, 16, 16)
    assert torch.allclose(xs, expected)


def test_require_or_skip_fails_under_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    require_or_skip(True, "present")  # no effect
    monkeypatch.setenv("NASFLOW_REQUIRE_ALL", "1")
    with pytest.raises(pytest.fail.Exception, match="missing thing"):
        require_or_skip(False, "missing thing")
    monkeypatch.delenv("NASFLOW_REQUIRE_ALL")
    with pytest.raises(pytest.skip.Exception, match="missing thing"):
        require_or_skip(False, "missing thing")
