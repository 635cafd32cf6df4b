"""One-line checks of a data bundle before anything trains on it."""

from __future__ import annotations

from collections.abc import Sequence

import torch

from nasflow.data._base import SPLITS, DataBundle
from nasflow.data._fingerprint import _indices
from nasflow.errors import ConfigError


class DataError(ConfigError):
    """A data bundle is unusable: an empty split, inputs of another shape than the space
    takes, or labels outside ``range(num_classes)``."""


def check_bundle(data: DataBundle, input_shape: Sequence[int] | None = None) -> None:
    """Check ``data`` on a sample of each split (the samples its fingerprint reads).

    Args:
        data: The bundle.
        input_shape: What the space takes (its ``config["input_shape"]``), if it says.

    Raises:
        DataError: Not a ``DataBundle``, an empty split, ``input_shape`` not the space's,
            a sample of another shape, or a label outside ``range(num_classes)``, naming it.
    """
    if not isinstance(data, DataBundle):
        raise DataError(f"the study's data() must return a DataBundle, got {data!r}")
    shape = tuple(data.input_shape)
    if input_shape is not None and tuple(input_shape) != shape:
        raise DataError(
            f"data {data.name!r} has input_shape {list(shape)}, the space takes "
            f"{list(input_shape)}{_channels_hint(shape, tuple(input_shape))}"
        )
    for split in SPLITS:
        ds = getattr(data, split)
        if len(ds) == 0:
            raise DataError(f"data {data.name!r}: the {split} split is empty")
        for i in _indices(len(ds), 8):
            x, y = ds[i][0], ds[i][1]
            floats = isinstance(x, torch.Tensor) and x.dtype.is_floating_point
            if floats and tuple(x.shape) != shape:
                raise DataError(
                    f"data {data.name!r}: {split} sample {i} has shape {list(x.shape)}, the "
                    f"bundle's input_shape is {list(shape)}"
                )
            labels = torch.as_tensor(y)
            if labels.numel() and (int(labels.min()) < 0 or int(labels.max()) >= data.num_classes):
                raise DataError(
                    f"data {data.name!r}: {split} sample {i} has label {labels.tolist()!r}, "
                    f"outside 0..{data.num_classes - 1} (num_classes={data.num_classes})"
                )


def _channels_hint(have: tuple[int, ...], want: tuple[int, ...]) -> str:
    """Where only the image channels differ (1 against 3): the loaders' option that loads
    the other number."""
    if len(have) != 3 or len(want) != 3 or have[1:] != want[1:] or {have[0], want[0]} != {1, 3}:
        return ""
    if want[0] == 1:
        return (
            "; image folders load as 3-channel RGB unless told otherwise: pass channels=1 "
            "(load_image_folder(..., channels=1) or load_cifar10(..., channels=1)) to load "
            "them grayscale"
        )
    return (
        "; images loaded with channels=1 are grayscale: pass channels=3 (the default of "
        "load_image_folder and load_cifar10) to load them RGB"
    )
