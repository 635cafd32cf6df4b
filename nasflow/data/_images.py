"""Image classification data from an ``ImageFolder`` directory or a zip of one."""

from __future__ import annotations

import copy
import io
import os
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from PIL import Image
from torch.utils.data import Dataset, Subset

from nasflow._checks import check_choice, check_fraction, check_int
from nasflow.data._base import DataBundle, split_indices
from nasflow.data._image_cache import (
    CropFlip,
    ImageTensorDataset,
    ImageTensors,
    image_tensors,
    normalize,
)
from nasflow.data._mnist1d import default_cache_dir
from nasflow.errors import ConfigError, MissingFileError

CIFAR10_MEAN = (0.4914, 0.4822, 0.4465)
CIFAR10_STD = (0.2470, 0.2435, 0.2616)
#: PIL's RGB -> L weights (ITU-R 601-2 luma), by which a grayscale image is made.
LUMA = (0.299, 0.587, 0.114)
#: Channels an image can be loaded with, and the PIL mode each converts to.
CHANNELS = {1: "L", 3: "RGB"}
IMG_EXTENSIONS = (".jpg", ".jpeg", ".png", ".ppm", ".bmp", ".pgm", ".tif", ".tiff", ".webp")
_SPLITS = ("train", "test")
_COUNTS = ("image_size", "train_limit", "test_limit")


def check_channels(channels: object) -> int:
    """``channels`` if it is 1 (grayscale) or 3 (RGB), else ``ValueError`` naming it."""
    if isinstance(channels, bool) or channels not in CHANNELS:
        raise ConfigError(
            f"channels must be 1 (grayscale, PIL mode 'L') or 3 (RGB), got {channels!r}"
        )
    return int(channels)  # type: ignore[call-overload]


def image_stats(channels: int) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """The per-channel mean and standard deviation images are normalized with: CIFAR-10's
    for RGB; for grayscale, the same figures weighted as PIL weights RGB into L (exact for
    the mean, an approximation for the deviation: channels are correlated)."""
    if channels == 3:
        return CIFAR10_MEAN, CIFAR10_STD
    mean = sum(w * m for w, m in zip(LUMA, CIFAR10_MEAN, strict=True))
    std = sum(w * s for w, s in zip(LUMA, CIFAR10_STD, strict=True))
    return (mean,), (std,)


def _zip_root(names: list[str], zip_path: Path) -> str:
    """The folder inside the zip (``""`` or ``"top/"``) that holds ``train/`` and ``test/``."""
    found: dict[str, set[str]] = {}
    for name in names:
        parts = name.split("/")
        for depth in (0, 1):
            if len(parts) > depth + 1 and parts[depth] in _SPLITS:
                found.setdefault("".join(p + "/" for p in parts[:depth]), set()).add(parts[depth])
    complete = sorted(root for root, splits in found.items() if splits == set(_SPLITS))
    if complete:
        return complete[0]  # "" sorts first: a top-level layout wins over a nested one
    missing = [f"{s}/" for s in _SPLITS if not any(s in v for v in found.values())]
    problem = f"no {' or '.join(missing)} folder" if missing else "train/, test/ in two folders"
    raise ConfigError(
        f"{zip_path} has {problem}; expected train/<class>/<image> and test/<class>/<image> "
        "at its top or under one top-level folder"
    )


_ZIPS: dict[tuple[str, int, int, int], zipfile.ZipFile] = {}


def _open_zip(path: Path) -> zipfile.ZipFile:
    """One read-only ``ZipFile`` per file version and process, shared by its datasets
    (parsing a 60,000-member index takes about a second); a forked worker opens its own."""
    st = path.stat()
    key = (str(path), st.st_mtime_ns, st.st_size, os.getpid())
    if key not in _ZIPS:
        _ZIPS[key] = zipfile.ZipFile(path)
    return _ZIPS[key]


class ZipImageFolder(Dataset):
    """``torchvision.datasets.ImageFolder`` over one split of a zip, read lazily.

    The zip holds ``train/<class>/<image>`` and ``test/<class>/<image>``, possibly under
    one top-level folder. Members are decoded on access; the dataset holds no open file (the
    ``ZipFile`` is opened on first use in each process), so it pickles into workers.

    Attributes:
        classes: Class names, sorted.
        class_to_idx: Class name to label.
        samples: ``(member name, label)`` pairs, sorted by member name.
        targets: Labels of ``samples``.
        transform: Applied to the decoded ``PIL.Image`` (RGB, or L with ``channels=1``).
        channels: 3 decodes every image as RGB, 1 as grayscale (PIL mode ``L``).
    """

    def __init__(
        self,
        zip_path: os.PathLike | str,
        split: str = "train",
        transform: Callable | None = None,
        channels: int = 3,
    ) -> None:
        """Index one split of the zip.

        Args:
            zip_path: The ``.zip`` file.
            split: Folder inside the layout, ``"train"`` or ``"test"``.
            transform: Applied to each decoded image.
            channels: 3 (RGB) or 1 (grayscale).

        Raises:
            FileNotFoundError: ``zip_path`` does not exist.
            ValueError: Not a zip, no such split, or a split without images.
        """
        self.zip_path = Path(zip_path).resolve()
        if not self.zip_path.is_file():
            raise MissingFileError(f"image zip {zip_path} does not exist")
        check_choice("split", split, _SPLITS)
        self.channels = check_channels(channels)
        if not zipfile.is_zipfile(self.zip_path):
            raise ConfigError(f"{self.zip_path} is not a zip file")
        names = [n for n in _open_zip(self.zip_path).namelist() if not n.endswith("/")]
        prefix = _zip_root(names, self.zip_path) + split + "/"
        members = []  # (member name, class folder)
        for name in sorted(n for n in names if n.startswith(prefix)):
            rel = name[len(prefix) :].split("/")
            if len(rel) > 1 and name.lower().endswith(IMG_EXTENSIONS) and rel[-1][0] != ".":
                members.append((name, rel[0]))
        self.classes = sorted({c for _, c in members})
        if not self.classes:
            raise ConfigError(f"{self.zip_path}: {prefix} holds no <class>/<image> files")
        self.class_to_idx = {c: i for i, c in enumerate(self.classes)}
        self.samples = [(name, self.class_to_idx[c]) for name, c in members]
        self.targets = [label for _, label in self.samples]
        self.transform = transform

    def __len__(self) -> int:
        return len(self.samples)

    def load_image(self, index: int) -> Image.Image:
        """The decoded image of sample ``index`` (RGB, or L with ``channels=1``), without
        the transform."""
        data = _open_zip(self.zip_path).read(self.samples[index][0])
        with Image.open(io.BytesIO(data)) as img:
            return img.convert(CHANNELS[self.channels])

    def __getitem__(self, index: int) -> tuple[Any, int]:
        img = self.load_image(index)
        return (self.transform(img) if self.transform else img), self.samples[index][1]


def _transforms(
    size: tuple[int, int] | None, crop: tuple[int, int], augment: bool, channels: int = 3
) -> Callable[[Image.Image], torch.Tensor]:
    """Grayscale (``channels=1``), resize (optional), train-only augmentation, ToTensor,
    normalization (:func:`image_stats`)."""
    from torchvision import transforms as T

    # (torchvision's Grayscale converts a PIL image with PIL's own RGB -> L, as the cache)
    steps: list[Callable] = [T.Grayscale(1)] if channels == 1 else []
    steps += [T.Resize(size)] if size else []
    if augment:
        steps += [T.RandomCrop(crop, padding=4), T.RandomHorizontalFlip()]
    mean, std = image_stats(channels)
    return T.Compose([*steps, T.ToTensor(), T.Normalize(mean, std)])


def _limited(targets: list[int], limit: int | None, seed: int) -> list[int]:
    """At most ``limit`` indices, seeded and spread evenly over the classes (sorted)."""
    if limit is None:
        return list(range(len(targets)))
    gen = torch.Generator().manual_seed(int(seed))
    by_class: dict[int, list[int]] = {}
    for i in torch.randperm(len(targets), generator=gen).tolist():
        by_class.setdefault(targets[i], []).append(i)
    queues = [by_class[c] for c in sorted(by_class)]
    picked = [q[r] for r in range(max(map(len, queues))) for q in queues if r < len(q)]
    return sorted(picked[:limit])  # round-robin over classes: balanced while classes last


def _with_transform(dataset: Any, transform: Callable) -> Any:
    view = copy.copy(dataset)  # shares the sample list, not the transform
    view.transform = transform
    return view


def load_image_folder(
    path: os.PathLike | str,
    image_size: int | None = None,
    val_fraction: float = 0.1,
    seed: int = 0,
    train_limit: int | None = None,
    test_limit: int | None = None,
    augment: bool = False,
    cache: os.PathLike | str | bool = False,
    cache_dir: os.PathLike | str | bool | None = None,
    channels: int = 3,
) -> DataBundle:
    """Image classification data from an ``ImageFolder`` layout, as a folder or a zip.

    Every image is converted to ``channels`` channels whatever it is stored as: RGB by
    default (a grayscale PNG then repeats its one channel three times), grayscale with
    ``channels=1`` (PIL's ``L`` conversion of a colour image). A space that takes
    ``input_shape`` ``[1, H, W]`` needs ``channels=1``.

    Args:
        path: A folder with ``train/<class>/<image>`` and ``test/<class>/<image>``, or a
            ``.zip`` of that layout (at its top or under one top-level folder).
        image_size: Resize every image to ``image_size`` x ``image_size``; ``None`` keeps
            the stored size (which all images must then share).
        val_fraction: Share of the (limited) training images held out for validation.
        seed: Seed of the limits and of the train/validation split.
        train_limit: Use at most this many training images (before the validation split),
            drawn evenly over the classes; ``None`` uses all.
        test_limit: The same for the test images.
        augment: Random crop (padding 4, or 2 below 24 pixels) and horizontal flip on the
            train split only.
        cache: Decode every image once into a tensor file and hold the splits in memory
            as ``ImageTensorDataset`` (augmented on tensors): ``True`` keeps the file in
            the cache folder (``nasflow.settings.cache_dir``), a path in that folder;
            ``False`` (default) decodes lazily on every access, as ``ImageFolder``.
        channels: 3 (default): RGB; 1: grayscale. Normalized with :func:`image_stats`.

    Returns:
        A bundle of normalized float tensors ``(channels, H, W)`` and int labels.

    Raises:
        FileNotFoundError: ``path`` does not exist.
        ValueError: Bad arguments, a missing ``train/`` or ``test/``, or mismatched classes.
    """
    from torchvision.datasets import ImageFolder

    p = Path(path)
    if not p.exists():
        raise MissingFileError(f"image data {p} does not exist")
    for name, value in zip(_COUNTS, (image_size, train_limit, test_limit), strict=True):
        check_int(name, value, optional=True)
    check_fraction("val_fraction", val_fraction)
    check_channels(channels)
    if p.is_dir():
        missing = [f"{s}/" for s in _SPLITS if not (p / s).is_dir()]
        if missing:
            raise ConfigError(f"image folder {p} has no {' or '.join(missing)} subfolder")
        train_all, test_all = ImageFolder(str(p / "train")), ImageFolder(str(p / "test"))
    elif p.suffix.lower() == ".zip" or zipfile.is_zipfile(p):
        train_all = ZipImageFolder(p, "train", channels=channels)
        test_all = ZipImageFolder(p, "test", channels=channels)
    else:
        raise ConfigError(f"image data {p} must be a folder or a .zip file")
    if train_all.classes != test_all.classes:
        raise ConfigError(
            f"{p}: train classes {train_all.classes} differ from test classes {test_all.classes}"
        )
    pool = _limited(train_all.targets, train_limit, seed)
    test_idx = _limited(test_all.targets, test_limit, seed)
    tr, va = split_indices(len(pool), val_fraction, seed)
    if cache is not False:
        folder = default_cache_dir() if cache is True else Path(cache)
        return _tensor_bundle(
            image_tensors(train_all, test_all, p, image_size, folder, channels),
            [pool[i] for i in tr],
            [pool[i] for i in va],
            test_idx,
            augment,
            p.stem if p.is_file() else p.name,
        )

    size = (image_size, image_size) if image_size else None
    first = train_all[pool[0]][0]  # PIL image: no transform set yet
    crop = size or (first.height, first.width)
    plain = _transforms(size, crop, augment=False, channels=channels)
    train_ds = _with_transform(train_all, _transforms(size, crop, augment, channels))
    val_ds, test_ds = _with_transform(train_all, plain), _with_transform(test_all, plain)
    input_shape = tuple(plain(first).shape)  # (C, H, W)
    return DataBundle(
        train=Subset(train_ds, [pool[i] for i in tr]),
        val=Subset(val_ds, [pool[i] for i in va]),
        test=Subset(test_ds, test_idx),
        input_shape=input_shape,
        num_classes=len(train_all.classes),
        name=p.stem if p.is_file() else p.name,
    )


def _tensor_bundle(
    t: ImageTensors,
    train_idx: list[int],
    val_idx: list[int],
    test_idx: list[int],
    augment: bool,
    name: str,
) -> DataBundle:
    """The bundle over decoded tensors: only the chosen images are made float."""

    def split(x: torch.Tensor, y: torch.Tensor, idx: list[int], aug: bool) -> ImageTensorDataset:
        i = torch.as_tensor(idx, dtype=torch.long)
        size = x.shape[-1]
        crop = CropFlip(size, 4 if size >= 24 else 2) if aug else None
        mean, std = image_stats(x.shape[1])
        return ImageTensorDataset(normalize(x[i], mean, std), y[i], crop)

    train = split(t.train_x, t.train_y, train_idx, augment)
    return DataBundle(
        train=train,
        val=split(t.train_x, t.train_y, val_idx, False),
        test=split(t.test_x, t.test_y, test_idx, False),
        input_shape=tuple(train.tensors[0].shape[1:]),
        num_classes=len(t.classes),
        name=name,
    )


def load_cifar10(
    path: os.PathLike | str,
    image_size: int | None = None,
    val_fraction: float = 0.1,
    seed: int = 0,
    train_limit: int | None = None,
    test_limit: int | None = None,
    augment: bool = False,
    cache: os.PathLike | str | bool = False,
    cache_dir: os.PathLike | str | bool | None = None,
    channels: int = 3,
) -> DataBundle:
    """CIFAR-10 from an ``ImageFolder`` folder or zip (e.g. ``cifar10-jpg.zip``).

    A thin alias of :func:`load_image_folder` (same arguments) that also checks for exactly
    10 classes and names the bundle ``"cifar10"``.

    Raises:
        ValueError: Not exactly 10 classes, or as :func:`load_image_folder` raises.
    """
    bundle = load_image_folder(
        path,
        image_size,
        val_fraction,
        seed,
        train_limit,
        test_limit,
        augment,
        cache,
        channels=channels,
    )
    if bundle.num_classes != 10:
        raise ConfigError(f"CIFAR-10 at {path} must have 10 classes, found {bundle.num_classes}")
    return DataBundle(bundle.train, bundle.val, bundle.test, bundle.input_shape, 10, "cifar10")
