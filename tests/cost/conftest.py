"""Cost-model tests time real ops; one intra-op thread keeps them quick on a busy 2-core
machine (thread counts are part of the device fingerprint, so nothing here depends on it)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import torch


@pytest.fixture(autouse=True)
def _one_thread() -> Iterator[None]:
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)
