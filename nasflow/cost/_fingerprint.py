"""The device fingerprint that keys every measured latency row."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass

import torch

from nasflow._checks import check_choice
from nasflow._host import cpu_model
from nasflow.train.stack import AMP_DTYPES

#: Training precisions the latency table knows: plain fp32, or the speedup stack's
#: autocast dtypes (``Stack.amp``).
PRECISIONS: dict[str, torch.dtype] = {"fp32": torch.float32, **AMP_DTYPES}


@dataclass(frozen=True)
class DeviceFingerprint:
    """What a latency measurement depends on besides the op itself.

    Rows measured under one fingerprint are never used under another: a new torch
    version, another CPU or GPU, another thread count or another precision starts a new
    table.

    Attributes:
        torch_version: ``torch.__version__``.
        device_type: ``"cpu"``, ``"cuda"``...
        device_name: The CPU model for ``cpu``, the GPU name for ``cuda``.
        cpu: The host CPU model (also recorded for GPU devices: it runs the Python side).
        threads: ``torch.get_num_threads()`` when the fingerprint was taken.
        precision: ``"fp32"``, ``"bf16"`` or ``"fp16"`` (autocast).
        timer: How latencies were timed (clock and statistic, ``timer_name``); empty for
            records that time nothing themselves. Left out of the JSON (and so of the key)
            when empty, so the keys of records that predate it stay valid.
    """

    torch_version: str
    device_type: str
    device_name: str
    cpu: str
    threads: int
    precision: str
    timer: str = ""

    @classmethod
    def current(
        cls, device: torch.device | str = "cpu", precision: str = "fp32", timer: str = ""
    ) -> DeviceFingerprint:
        """The fingerprint of ``device`` in this process, now (``timer``: see the
        attribute)."""
        dev = torch.device(device)
        check_choice("precision", precision, PRECISIONS)
        host = cpu_model()
        if dev.type == "cuda":
            name = torch.cuda.get_device_name(dev)
        elif dev.type == "cpu":
            name = host
        else:
            name = dev.type
        return cls(
            torch.__version__, dev.type, name, host, torch.get_num_threads(), precision, timer
        )

    def to_json(self) -> str:
        fields = asdict(self)
        if not fields["timer"]:
            del fields["timer"]
        return json.dumps(fields, sort_keys=True, separators=(",", ":"))

    @property
    def key(self) -> str:
        """A stable 24-hex-digit hash of every field."""
        return hashlib.sha256(self.to_json().encode()).hexdigest()[:24]

    def describe(self) -> str:
        """One human-readable line."""
        timer = f", timed {self.timer}" if self.timer else ""
        return (
            f"{self.device_name} ({self.device_type}, {self.threads} threads, "
            f"{self.precision}, torch {self.torch_version}{timer})"
        )
