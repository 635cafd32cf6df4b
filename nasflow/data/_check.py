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
            f"{list(input_shape)}"
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
