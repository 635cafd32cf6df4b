"""Images decoded once: an ``ImageFolder`` zip or folder as cached uint8 tensors.

Decoding 60,000 CIFAR-10 JPEGs takes tens of seconds on a CPU core; a study reads the same
images in every phase and every run. The first load decodes every image of both splits at
the requested size into one tensor file in the cache folder, named by the archive's
content hash and the preprocessing; later loads memory-map that file (well under a second).
"""

from __future__ import annotations

import contextlib
import hashlib
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch
from torch.utils.data import TensorDataset

from nasflow._files import atomic_write
from nasflow.errors import ConfigError

#: Bump when the decoding or the file's layout changes: old cache files are then ignored.
FORMAT = 1


@dataclass(frozen=True)
class ImageTensors:
    """Both splits of an image dataset as uint8 tensors ``(N, C, H, W)`` (C: 3 for RGB, 1
    for grayscale) and int64 labels."""

    train_x: torch.Tensor
    train_y: torch.Tensor
    test_x: torch.Tensor
    test_y: torch.Tensor
    classes: tuple[str, ...]


def content_key(path: Path) -> str:
    """A hash of the data's content: the bytes of a zip, or the names, sizes and modification
    times of a folder's files (hashing every image of a folder would cost a full read)."""
    h = hashlib.sha256()
    if path.is_file():
        with path.open("rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
    else:
        for p in sorted(path.rglob("*")):
            if p.is_file():
                st = p.stat()
                h.update(f"{p.relative_to(path)}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return h.hexdigest()[:16]


def _decode(
    folder: object, size: int | None, channels: int = 3
) -> tuple[torch.Tensor, torch.Tensor]:
    """Every image of an ``ImageFolder``-like dataset, resized, as uint8 ``(N, C, H, W)``
    (``channels=1``: converted to grayscale by PIL, as the lazy loader's transform does)."""
    from torchvision.transforms.v2 import functional as TF

    load: Callable = getattr(folder, "load_image", None) or (lambda i: folder[i][0])  # type: ignore[index]
    mode = "L" if channels == 1 else "RGB"
    images = []
    for i in range(len(folder)):  # type: ignore[arg-type]
        pil = load(i)
        img = TF.pil_to_tensor(pil if pil.mode == mode else pil.convert(mode))  # (C, H0, W0)
        if size is not None and img.shape[-2:] != (size, size):
            img = TF.resize(img, [size, size], antialias=True)
        images.append(img)
    if len({tuple(t.shape) for t in images}) > 1:
        raise ConfigError("images differ in size; pass image_size to resize them to one")
    return torch.stack(images), torch.as_tensor(folder.targets, dtype=torch.long)  # type: ignore[attr-defined]


def image_tensors(
    train: object,
    test: object,
    source: Path,
    size: int | None,
    cache_dir: Path | None,
    channels: int = 3,
) -> ImageTensors:
    """The decoded splits, from the cache file or decoded now and cached.

    Args:
        train: The training split, an ``ImageFolder`` or ``ZipImageFolder``.
        test: The test split, the same kind.
        source: The zip or folder both came from (its content names the cache file).
        size: Resize to ``size`` x ``size``; ``None`` keeps the stored size.
        cache_dir: Folder of the cache file; ``None`` decodes without caching.
        channels: 3 (RGB) or 1 (grayscale): a file of its own each.
    """
    gray = "-gray" if channels == 1 else ""  # (RGB files keep the name they had)
    name = f"images-{content_key(source)}-{size or 'native'}{gray}-v{FORMAT}.pt"
    path = None if cache_dir is None else Path(cache_dir) / name
    if path is not None and path.is_file():
        try:
            blob = torch.load(path, mmap=True, weights_only=True)
            return ImageTensors(**{**blob, "classes": tuple(blob["classes"])})
        except Exception:  # truncated or foreign file: decode again and replace it
            pass
    train_x, train_y = _decode(train, size, channels)
    test_x, test_y = _decode(test, size, channels)
    out = ImageTensors(train_x, train_y, test_x, test_y, tuple(train.classes))  # type: ignore[attr-defined]
    if path is not None:
        blob = {**out.__dict__, "classes": list(out.classes)}
        # A read-only cache only costs decoding again next time.
        with contextlib.suppress(OSError):
            atomic_write(path, lambda f: torch.save(blob, f))
    return out


class ImageTensorDataset(TensorDataset):
    """Normalized float images ``(N, C, H, W)`` and labels, with an optional augmentation
    that ``Batches`` applies to each training batch (on tensors, per sample)."""

    def __init__(
        self,
        images: torch.Tensor,
        labels: torch.Tensor,
        batch_transform: Callable[[torch.Tensor], torch.Tensor] | None = None,
    ) -> None:
        super().__init__(images, labels)
        self.batch_transform = batch_transform


def normalize(
    images: torch.Tensor, mean: tuple[float, ...], std: tuple[float, ...]
) -> torch.Tensor:
    """uint8 ``(N, C, H, W)`` -> normalized float32 of the same shape."""
    m = torch.tensor(mean).view(1, -1, 1, 1)  # (C,) -> (1, C, 1, 1)
    s = torch.tensor(std).view(1, -1, 1, 1)
    return (images.float() / 255.0 - m) / s


class CropFlip:
    """Per-sample random crop (zero padding ``padding``) and horizontal flip of a batch
    ``(N, C, H, W)``: torchvision's ``RandomCrop(size, padding=padding)`` then
    ``RandomHorizontalFlip()`` on each image, drawn from the global torch RNG (which
    ``Batches`` seeds for each batch), done as one gather for the whole batch.

    Written here rather than calling torchvision's v2 transforms per image (what this
    class did before): they draw one crop per call, so a batch took a Python loop over its
    images. That loop cost 21-56 ms of CPU per batch of 256 CIFAR-sized images, while an
    H200's whole timed step on them (a 2.2M-parameter MBConv network, the loop included)
    was 42.5 ms (``benchmarks/results/b3-speedup-stack.md``); one gather for the batch
    costs about 3 ms (0.4 ms against 10 ms for a batch of 64 at 16x16).
    """

    def __init__(self, size: int, padding: int) -> None:
        if size < 1 or padding < 0:
            raise ConfigError(f"CropFlip needs size >= 1 and padding >= 0, got {size}, {padding}")
        self.size, self.padding = size, padding

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        n, h, w = x.shape[0], x.shape[-2], x.shape[-1]
        p = self.padding
        if h + 2 * p < self.size or w + 2 * p < self.size:
            raise ConfigError(
                f"CropFlip: a crop of {self.size} does not fit images of {h}x{w} padded by {p}"
            )
        top = torch.randint(0, h + 2 * p - self.size + 1, (n,))
        left = torch.randint(0, w + 2 * p - self.size + 1, (n,))
        flip = torch.rand(n) < 0.5
        return crop_flip(x, top, left, flip, self.size, p)


def crop_flip(
    x: torch.Tensor,
    top: torch.Tensor,
    left: torch.Tensor,
    flip: torch.Tensor,
    size: int,
    padding: int,
) -> torch.Tensor:
    """Image ``i`` of ``x`` zero-padded by ``padding``, cropped to ``size`` x ``size`` at
    (``top[i]``, ``left[i]``) of the padded image, and mirrored where ``flip[i]``."""
    padded = torch.nn.functional.pad(x, (padding,) * 4)  # (N, C, Hp, Wp)
    n, c, hp, wp = padded.shape
    steps = torch.arange(size)
    rows = top[:, None] + steps  # (N, S)
    cols = left[:, None] + steps  # (N, S)
    cols = torch.where(flip[:, None], cols.flip(1), cols)
    # Flat positions in each padded image: (N, S, S) -> (N, 1, S*S), the same for every
    # channel; one gather along the flattened pixels (a quarter of indexing's time).
    at = (rows[:, :, None] * wp + cols[:, None, :]).view(n, 1, size * size)
    flat = padded.reshape(n, c, hp * wp)  # (N, C, Hp*Wp)
    return flat.gather(2, at.expand(n, c, size * size)).view(n, c, size, size)


def is_zip(path: Path) -> bool:
    return path.is_file() and (path.suffix.lower() == ".zip" or zipfile.is_zipfile(path))
