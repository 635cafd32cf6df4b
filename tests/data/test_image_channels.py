"""Image folders load with the channels asked for: RGB by default, grayscale with
``channels=1``; a space of the other channel count gets an error naming the option."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest
import torch
from PIL import Image

from nasflow.data import DataError, check_bundle, load_cifar10, load_image_folder
from nasflow.data._images import image_stats

#: Class name -> grey level of its solid grayscale images.
LEVELS = {"dark": 30, "light": 220}


def _gray_tree(root: Path, n: int = 6, size: int = 8) -> Path:
    """``root/{train,test}/<class>/NNN.png``: solid grayscale (mode L) images."""
    for split in ("train", "test"):
        for name, level in LEVELS.items():
            (root / split / name).mkdir(parents=True)
            for i in range(n):
                Image.new("L", (size, size), level).save(root / split / name / f"{i:03d}.png")
    return root


def _level(x: torch.Tensor) -> list[int]:
    """The grey level of each channel of a solid normalized image, back in 0-255."""
    mean, std = image_stats(x.shape[0])
    m = torch.tensor(mean).view(-1, 1, 1)  # (C,) -> (C, 1, 1)
    s = torch.tensor(std).view(-1, 1, 1)
    return (x * s + m).mul(255).round().flatten(1).mean(1).round().int().tolist()


def test_a_grayscale_folder_loads_with_one_channel_when_asked(tmp_path: Path) -> None:
    tree = _gray_tree(tmp_path / "gray")
    gray = load_image_folder(tree, val_fraction=0.25, seed=1, channels=1)
    rgb = load_image_folder(tree, val_fraction=0.25, seed=1)
    assert gray.input_shape == (1, 8, 8) and rgb.input_shape == (3, 8, 8)
    names = sorted(LEVELS)
    for split in ("train", "val", "test"):
        for (x, y), (x3, _) in zip(getattr(gray, split), getattr(rgb, split), strict=True):
            assert x.shape == (1, 8, 8) and _level(x) == [LEVELS[names[y]]]
            assert _level(x3) == [LEVELS[names[y]]] * 3  # RGB repeats the one channel
    check_bundle(gray, (1, 8, 8))  # what a 1-channel space takes


def test_the_cached_and_zipped_grayscale_bundles_match_the_lazy_one(tmp_path: Path) -> None:
    tree = _gray_tree(tmp_path / "gray")
    zipped = tmp_path / "gray.zip"
    with zipfile.ZipFile(zipped, "w") as zf:
        for f in sorted(tree.rglob("*.png")):
            zf.write(f, f.relative_to(tree).as_posix())
    lazy = load_image_folder(tree, val_fraction=0.25, seed=1, channels=1)
    from_zip = load_image_folder(zipped, val_fraction=0.25, seed=1, channels=1)
    cache = tmp_path / "cache"
    cached = load_image_folder(zipped, val_fraction=0.25, seed=1, channels=1, cache=cache)
    again_rgb = load_image_folder(zipped, val_fraction=0.25, seed=1, cache=cache)
    assert cached.input_shape == from_zip.input_shape == (1, 8, 8)
    assert again_rgb.input_shape == (3, 8, 8)  # a file of its own, not the grayscale one
    assert len(list(cache.glob("images-*-gray-v*.pt"))) == 1
    for split in ("train", "val", "test"):
        a, b, c = getattr(lazy, split), getattr(from_zip, split), getattr(cached, split)
        assert len(a) == len(b) == len(c)
        for i in range(len(a)):
            assert torch.allclose(a[i][0], b[i][0]) and torch.allclose(b[i][0], c[i][0])


def test_a_colour_image_is_converted_as_pil_converts_to_l(tmp_path: Path) -> None:
    root = tmp_path / "colour"
    for split in ("train", "test"):
        for name, rgb in {"a": (200, 40, 10), "b": (10, 90, 250)}.items():
            (root / split / name).mkdir(parents=True)
            for i in range(4):
                Image.new("RGB", (8, 8), rgb).save(root / split / name / f"{i}.png")
    bundle = load_image_folder(root, val_fraction=0.25, channels=1)
    x, y = bundle.test[0]
    want = Image.new("RGB", (1, 1), {0: (200, 40, 10), 1: (10, 90, 250)}[y]).convert("L")
    assert _level(x) == [want.getpixel((0, 0))]


def test_a_space_of_another_channel_count_is_told_the_option(tmp_path: Path) -> None:
    tree = _gray_tree(tmp_path / "gray")
    rgb = load_image_folder(tree, val_fraction=0.25)
    with pytest.raises(DataError) as e:
        check_bundle(rgb, (1, 8, 8))
    message = str(e.value)
    assert "has input_shape [3, 8, 8], the space takes [1, 8, 8]" in message
    assert "load as 3-channel RGB" in message and "channels=1" in message
    gray = load_image_folder(tree, val_fraction=0.25, channels=1)
    with pytest.raises(DataError, match=r"channels=3 \(the default"):
        check_bundle(gray, (3, 8, 8))
    with pytest.raises(DataError) as other:  # not a channel mismatch: no hint
        check_bundle(gray, (1, 16, 16))
    assert "channels=" not in str(other.value)


@pytest.mark.parametrize("bad", [2, 0, True, "L", None])
def test_a_bad_channel_count_is_refused_naming_it(tmp_path: Path, bad: object) -> None:
    tree = _gray_tree(tmp_path / "gray", n=1)
    with pytest.raises(ValueError, match=rf"channels must be 1 \(grayscale.*got {bad!r}"):
        load_image_folder(tree, channels=bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="channels must be"):
        load_cifar10(tree, channels=bad)  # type: ignore[arg-type]
