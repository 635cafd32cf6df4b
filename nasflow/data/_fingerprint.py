"""A data bundle's fingerprint: what a study's scores were measured on.

A study's scores depend on its data and on how the data is split, so the fingerprint is
part of the study's identity (``nasflow.record``) and of its supernet checkpoints: a study
resumed on other data, or a checkpoint trained on other data, is refused.

What it covers: the bundle's ``name``, ``input_shape`` and ``num_classes``, the size of
each split, and the contents (inputs and labels, bytes of tensors and arrays) of up to
:data:`SAMPLES` samples per split, spread evenly over it, first and last included. A
change of the data's seed, source or split moves every sample and so changes it; a change
confined to samples between those read is not seen (hashing every sample would read the
whole dataset, images decoded, at every start). Random transforms (augmentation) are
drawn from generators seeded for the fingerprint and restored afterwards, so the same data
always gives the same fingerprint.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any

import numpy as np
import torch

from nasflow.data._base import SPLITS, DataBundle

#: Samples read per split.
SAMPLES = 32


def _indices(n: int, k: int = SAMPLES) -> list[int]:
    """Up to ``k`` indices spread evenly over ``range(n)``, first and last included."""
    if n <= k:
        return list(range(n))
    return sorted({round(i * (n - 1) / (k - 1)) for i in range(k)})


def _feed(h: Any, x: Any) -> None:
    """Hash ``x``: tensors and arrays by dtype, shape and bytes; containers recursively."""
    if isinstance(x, torch.Tensor):
        t = x.detach().cpu().contiguous()
        h.update(f"T{t.dtype}{tuple(t.shape)}".encode())
        h.update(t.reshape(-1).view(torch.uint8).numpy().tobytes())
    elif isinstance(x, np.ndarray):
        a = np.ascontiguousarray(x)
        h.update(f"A{a.dtype}{a.shape}".encode())
        h.update(a.tobytes())
    elif isinstance(x, (list, tuple)):
        h.update(f"L{len(x)}".encode())
        for v in x:
            _feed(h, v)
    elif isinstance(x, dict):
        h.update(f"D{len(x)}".encode())
        for k in sorted(x, key=repr):
            h.update(repr(k).encode())
            _feed(h, x[k])
    elif x is None or isinstance(x, (bool, int, float, str, bytes, np.generic)):
        h.update(f"{type(x).__name__}:{x!r}".encode())
    else:  # an object without a stable repr (an image...): its type and size only
        h.update(f"O{type(x).__name__}:{getattr(x, 'size', '')}".encode())


def data_fingerprint(data: DataBundle) -> str:
    """The fingerprint of ``data`` (a hex SHA-256; see the module's docstring).

    Reads up to :data:`SAMPLES` samples of each split; the global random generators
    (torch, NumPy, ``random``) are left as they were.
    """
    h = hashlib.sha256()
    h.update(repr((data.name, tuple(data.input_shape), int(data.num_classes))).encode())
    py_state, np_state = random.getstate(), np.random.get_state()
    try:
        with torch.random.fork_rng(devices=[]):
            for split in SPLITS:
                ds = getattr(data, split)
                n = len(ds)
                h.update(f"{split}:{n}".encode())
                for i in _indices(n):
                    torch.manual_seed(i)
                    random.seed(i)
                    np.random.seed(i)
                    _feed(h, ds[i])
    finally:
        random.setstate(py_state)
        np.random.set_state(np_state)
    return h.hexdigest()[:16]
