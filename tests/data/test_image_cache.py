"""Images decoded once: the cached tensor file, its key, reuse, corruption, augmentation."""

from __future__ import annotations

import zipfile
from collections import Counter
from pathlib import Path

import pytest
import torch
from PIL import Image

from nasflow.data import load_image_folder
from nasflow.data._image_cache import CropFlip, ImageTensorDataset, content_key, crop_flip
from nasflow.errors import ConfigError

COLORS = {"blue": (0, 0, 255), "green": (0, 255, 0), "red": (255, 0, 0)}


def _zip(tmp_path: Path, size: int = 8, n: int = 6) -> Path:
    dest = tmp_path / "colors.zip"
    with zipfile.ZipFile(dest, "w") as zf:
        for split in ("train", "test"):
            for name, rgb in COLORS.items():
                for i in range(n):
                    img = Image.new("RGB", (size, size), rgb)
                    img.putpixel((0, 0), (i * 10, i * 10, i * 10))  # every image differs
                    p = tmp_path / "png" / f"{split}-{name}-{i}.png"
                    p.parent.mkdir(exist_ok=True)
                    img.save(p)
                    zf.write(p, f"{split}/{name}/{i:03d}.png")
    return dest


def test_the_cached_bundle_matches_the_lazy_one(tmp_path: Path) -> None:
    src = _zip(tmp_path)
    lazy = load_image_folder(src, val_fraction=0.25, seed=1)
    cached = load_image_folder(src, val_fraction=0.25, seed=1, cache=tmp_path / "cache")
    assert isinstance(cached.train, ImageTensorDataset)
    assert cached.input_shape == lazy.input_shape == (3, 8, 8)
    for split in ("train", "val", "test"):
        a, b = getattr(lazy, split), getattr(cached, split)
        assert len(a) == len(b)
        for i in range(len(a)):
            torch.testing.assert_close(a[i][0], b[i][0], atol=1e-5, rtol=0)
            assert a[i][1] == int(b[i][1])


def test_decoded_once_then_read_from_the_file(tmp_path: Path, monkeypatch) -> None:
    src, cache = _zip(tmp_path), tmp_path / "cache"
    load_image_folder(src, image_size=4, val_fraction=0.25, cache=cache)
    files = list(cache.glob("images-*-4-v*.pt"))
    assert len(files) == 1 and content_key(src) in files[0].name

    from nasflow.data import _image_cache

    def no_decoding(*args, **kwargs):
        raise AssertionError("decoded again although the cache file exists")

    monkeypatch.setattr(_image_cache, "_decode", no_decoding)
    again = load_image_folder(src, image_size=4, val_fraction=0.25, cache=cache)
    assert again.input_shape == (3, 4, 4)


def test_a_changed_archive_or_size_gets_its_own_file(tmp_path: Path) -> None:
    src, cache = _zip(tmp_path), tmp_path / "cache"
    load_image_folder(src, val_fraction=0.25, cache=cache)
    load_image_folder(src, image_size=4, val_fraction=0.25, cache=cache)
    with zipfile.ZipFile(src, "a") as zf:
        zf.writestr("README.txt", "changed")
    load_image_folder(src, val_fraction=0.25, cache=cache)
    assert len(list(cache.glob("images-*.pt"))) == 3


def test_a_corrupt_cache_file_is_decoded_again(tmp_path: Path) -> None:
    src, cache = _zip(tmp_path), tmp_path / "cache"
    first = load_image_folder(src, val_fraction=0.25, cache=cache)
    (f,) = cache.glob("images-*.pt")
    f.write_bytes(b"not a tensor file")
    again = load_image_folder(src, val_fraction=0.25, cache=cache)
    torch.testing.assert_close(first.train.tensors[0], again.train.tensors[0])
    assert f.stat().st_size > 100  # replaced by a good file


def test_a_corrupt_archive_gets_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "cifar.zip"
    bad.write_bytes(b"PK\x03\x04 truncated")
    with pytest.raises(ValueError, match="is not a zip file") as e:
        load_image_folder(bad, cache=tmp_path / "cache")
    assert "\n" not in str(e.value)


def test_augmentation_only_on_training_batches_and_per_sample() -> None:
    torch.manual_seed(0)
    x = torch.arange(2 * 3 * 8 * 8, dtype=torch.float32).view(2, 3, 8, 8).repeat(32, 1, 1, 1)
    out = CropFlip(8, 2)(x)
    assert out.shape == x.shape
    changed = [not torch.equal(out[i], x[i]) for i in range(len(x))]
    assert any(changed) and not all(changed)  # each sample draws its own crop and flip

    from nasflow.data import Batches

    ds = ImageTensorDataset(x, torch.zeros(len(x), dtype=torch.long), CropFlip(8, 2))
    ((val_x, _),) = Batches(ds, 64, shuffle=False)
    assert torch.equal(val_x, x)  # evaluation batches are never augmented
    ((train_x, _),) = Batches(ds, 64, shuffle=True, seed=0)
    assert not torch.equal(train_x.sort(0).values, x.sort(0).values)


def test_fixed_batches_draw_the_augmentation_once_from_the_seed() -> None:
    """The batches every path's BN is re-estimated on: the same tensors on every call, the
    same augmentation in another process (a new ``Batches``) whatever the global random
    state, and the caller's random state untouched."""
    from nasflow.data import Batches

    x = torch.arange(2 * 3 * 8 * 8, dtype=torch.float32).view(2, 3, 8, 8).repeat(32, 1, 1, 1)
    ds = ImageTensorDataset(x, torch.arange(len(x)), CropFlip(8, 2))
    torch.manual_seed(1)
    batches = Batches(ds, 16, shuffle=True, seed=5)
    state = torch.get_rng_state()
    fixed = batches.fixed(3)
    assert torch.equal(torch.get_rng_state(), state)  # the caller's stream goes on unchanged
    assert len(fixed) == 3 and all(b[0].shape == (16, 3, 8, 8) for b in fixed)
    assert batches.fixed(3) is fixed  # made once
    torch.manual_seed(2)  # another global state: the same augmentation, from the seed
    again = Batches(ds, 16, shuffle=True, seed=5).fixed(3)
    assert all(torch.equal(a[0], b[0]) for a, b in zip(fixed, again, strict=True))
    # The images are epoch 0's first batches, augmented (labels say which samples).
    order = [y.tolist() for _, y in Batches(ds, 16, shuffle=True, seed=5).epoch(0)][:3]
    assert [y.tolist() for _, y in fixed] == order
    assert any(not torch.equal(xb, x[yb]) for xb, yb in fixed)
    other = Batches(ds, 16, shuffle=True, seed=6).fixed(3)
    assert any(not torch.equal(a[0], b[0]) for a, b in zip(fixed, other, strict=True))


def test_crop_flip_is_torchvision_crop_then_flip_of_each_padded_image() -> None:
    """The batched gather against torchvision's own crop and flip, image by image."""
    from torchvision.transforms.v2 import functional as tvf

    g = torch.Generator().manual_seed(0)
    x = torch.randn(40, 3, 12, 12, generator=g)
    top = torch.randint(0, 7, (40,), generator=g)
    left = torch.randint(0, 7, (40,), generator=g)
    flip = torch.rand(40, generator=g) < 0.5
    out = crop_flip(x, top, left, flip, 12, 3)
    for i in range(40):
        want = tvf.crop(tvf.pad(x[i], [3]), int(top[i]), int(left[i]), 12, 12)
        if flip[i]:
            want = tvf.horizontal_flip(want)
        assert torch.equal(out[i], want)


def test_crop_flip_draws_every_offset_and_flip_about_equally_often() -> None:
    """torchvision's distribution: offsets uniform on 0..2p each way, a flip in half."""
    torch.manual_seed(0)
    x = torch.zeros(8100, 1, 4, 4)
    x[:, :, 0, 0] = 1.0  # one marked pixel: where it lands says the offset and the flip
    out = CropFlip(4, 1)(x)
    assert out.shape == x.shape
    where = Counter(tuple(torch.nonzero(o[0]).flatten().tolist()) for o in out)
    # Pixel (0, 0) moves to (top', left') for the 9 offsets, mirrored by a flip; an offset
    # that pads it out of the crop leaves no mark (row or column offset 2: 5 of 9 offsets).
    seen_rows = {k[0] for k in where if k}
    seen_cols = {k[1] for k in where if k}
    assert seen_rows == {0, 1} and seen_cols == {0, 1, 2, 3}
    empty = where[()]
    assert abs(empty / 8100 - 5 / 9) < 0.03
    marked = {k: v for k, v in where.items() if k}
    assert len(marked) == 8 and all(abs(v / 8100 - 1 / 18) < 0.015 for v in marked.values())


def test_crop_flip_names_a_crop_that_does_not_fit() -> None:
    with pytest.raises(ConfigError, match="a crop of 9 does not fit images of 4x4 padded by 2"):
        CropFlip(9, 2)(torch.zeros(2, 1, 4, 4))
    with pytest.raises(ConfigError, match="got 0, 1"):
        CropFlip(0, 1)


def test_training_batches_augment_from_the_seed_whatever_ran_before() -> None:
    """Batch ``b`` of epoch ``e`` is augmented from ``(seed, e, b)``: the same whatever the
    process drew before it (another candidate's training), the same when an epoch resumes
    at a batch, another in another epoch; the caller's random stream goes on untouched."""
    from nasflow.data import Batches

    x = torch.arange(4 * 3 * 8 * 8, dtype=torch.float32).view(4, 3, 8, 8).repeat(16, 1, 1, 1)
    ds = ImageTensorDataset(x, torch.arange(len(x)), CropFlip(8, 2))
    torch.manual_seed(1)
    state = torch.get_rng_state()
    first = [b[0] for b in Batches(ds, 16, shuffle=True, seed=5).epoch(2)]
    assert torch.equal(torch.get_rng_state(), state)
    torch.rand(1000)  # what another candidate's training would draw
    again = [b[0] for b in Batches(ds, 16, shuffle=True, seed=5).epoch(2)]
    assert all(torch.equal(a, b) for a, b in zip(first, again, strict=True))
    resumed = [b[0] for b in Batches(ds, 16, shuffle=True, seed=5).epoch(2, start=2)]
    assert all(torch.equal(a, b) for a, b in zip(first[2:], resumed, strict=True))
    other = [b[0] for b in Batches(ds, 16, shuffle=True, seed=5).epoch(3)]
    assert any(not torch.equal(a, b) for a, b in zip(first, other, strict=True))


def test_folder_training_batches_augment_from_the_seed_whatever_ran_before() -> None:
    """The same for a dataset whose per-image transform draws as the loader reads it."""
    from torch.utils.data import Dataset

    from nasflow.data import Batches

    class Noisy(Dataset):
        def __len__(self) -> int:
            return 40

        def __getitem__(self, i: int) -> tuple[torch.Tensor, int]:
            return torch.full((3,), float(i)) + torch.rand(3), i

    first = [b[0] for b in Batches(Noisy(), 8, shuffle=True, seed=2).epoch(0)]
    torch.rand(1000)
    again = [b[0] for b in Batches(Noisy(), 8, shuffle=True, seed=2).epoch(0)]
    assert all(torch.equal(a, b) for a, b in zip(first, again, strict=True))
    resumed = [b[0] for b in Batches(Noisy(), 8, shuffle=True, seed=2).epoch(0, start=3)]
    assert all(torch.equal(a, b) for a, b in zip(first[3:], resumed, strict=True))
