"""``nasflow measure-stack``: measure the speedup stack on a candidate of a registered space.

The command line (``nasflow.cli``) declares and checks the options, resolves the device,
the layers and how they are switched on, and draws the waterfall; ``run`` picks the
candidate and its data and runs the harness (or the auto calibration).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import torch
from torch import nn
from torch.utils.data import Subset

from nasflow._logging import lines_to
from nasflow.calibrate._auto import auto_stack
from nasflow.calibrate._harness import measure_stack
from nasflow.calibrate._interleave import RunConfig
from nasflow.calibrate._overhead import format_overhead, trainer_overhead
from nasflow.data import DataBundle, load_mnist1d
from nasflow.errors import ConfigError
from nasflow.space import Arch, SearchSpace, space_class
from nasflow.train import Batches
from nasflow.train.stack import Stack

#: A mid-sized candidate of the default MNIST-1D space (about 98k parameters).
DEFAULT_ARCH = {
    "s1/l0": "k5_e2",
    "s1/l1": "k5_e2",
    "s1/l2": "k3_e2",
    "s2/l0": "k5_e2",
    "s2/l1": "k5_e2",
    "s2/l2": "k3_e2",
    "width": 0.75,
}
#: A small candidate for the ``--quick`` smoke run.
QUICK_ARCH = {
    "s1/l0": "k3_e2",
    "s1/l1": "skip",
    "s1/l2": "skip",
    "s2/l0": "k3_e2",
    "s2/l1": "skip",
    "s2/l2": "skip",
    "width": 0.5,
}


def _space_and_data(args: argparse.Namespace) -> tuple[SearchSpace, Callable[[], DataBundle]]:
    """The space to draw the candidate from and its data: ``--study``'s, else MNIST-1D's."""
    if getattr(args, "study", None):
        from nasflow.search import load_study_file

        spec = load_study_file(args.study)
        if spec.data is None:
            raise ConfigError(f"--study {args.study!r} names no data to train on")
        return spec.space, spec.data
    return space_class("mnist1d")(), lambda: load_mnist1d(val_fraction=0.25, seed=args.seed)


def _data(
    load: Callable[[], DataBundle], quick: bool, batch_size: int, seed: int
) -> tuple[Batches, Batches]:
    data = load()
    if quick:  # the first 512 training and 256 validation samples (fewer where fewer)
        train = Subset(data.train, range(min(512, len(data.train))))  # type: ignore[arg-type]
        val = Subset(data.val, range(min(256, len(data.val))))  # type: ignore[arg-type]
        data = replace(data, train=train, val=val)
    return data.batches("train", batch_size, seed), data.batches("val")


def run_measure_stack(
    args: argparse.Namespace,
    device: torch.device,
    layers: Sequence[str],
    settings: dict[str, Any],
    out: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Run the harness (or the auto calibration), print its table and return its
    waterfall record.

    Args:
        args: The parsed options of ``nasflow measure-stack``.
        device: Where to train.
        layers: Layers to measure, in cumulative order.
        settings: How layers are switched on (``amp="bf16"``, ``accumulation=2``).
        out: Where the table goes.
    """
    space, load = _space_and_data(args)
    if args.arch:
        arch = space.validate(Arch.from_json(args.arch))
    elif space.name == "mnist1d" and set(DEFAULT_ARCH) == {c.label for c in space.choices}:
        arch = space.validate(Arch(QUICK_ARCH if args.quick else DEFAULT_ARCH))
    else:
        arch = space.sample(args.seed)
    batch_size = args.batch_size or (32 if args.quick else 64)
    train, val = _data(load, args.quick, batch_size, args.seed)

    def make_model() -> nn.Module:
        return space.build(arch)

    params = sum(p.numel() for p in make_model().parameters())
    backend = args.compile_backend or ("eager" if args.quick else "inductor")
    base = Stack(compile_backend=backend)
    cfg = RunConfig(
        epochs=args.epochs or (1 if args.quick else 3),
        chunk=2 if args.quick else 8,
        target_accuracy=args.target,
        seed=args.seed,
    )

    def log(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    out(f"candidate {arch.to_json()} ({params:,} parameters) on {device}")
    candidate = {"arch": arch.to_dict(), "params": params, "space": space.name}
    # The calibration's progress lines (the ``nasflow`` logger's) to stderr, but --quick's.
    with lines_to(None if args.quick else log):
        return _measure(args, device, layers, settings, out, make_model, train, val, base, cfg,
                        candidate)  # fmt: skip


def _measure(
    args: argparse.Namespace,
    device: torch.device,
    layers: Sequence[str],
    settings: dict[str, Any],
    out: Callable[[str], None],
    make_model: Callable[[], nn.Module],
    train: Batches,
    val: Batches,
    base: Stack,
    cfg: RunConfig,
    candidate: dict[str, Any],
) -> dict[str, Any]:
    """:func:`run_measure_stack`'s measurement, table and record."""
    if args.auto:
        result = auto_stack(
            make_model,
            train,
            val,
            device,
            candidates=layers,
            calibration_batches=8 if args.quick else 48,
            cfg=cfg,
            base=base,
            **settings,
        )
        out(json.dumps(result.record, indent=2))
        record, payload = result.record, result.record
    else:
        bench = measure_stack(
            make_model,
            train,
            val,
            cfg,
            layers,
            device,
            candidate=candidate,
            base=base,
            **settings,
        )
        out(bench.table())
        record, payload = bench.record(), bench.to_dict()
    if args.overhead:
        overhead = trainer_overhead(
            make_model,
            train,
            epochs=1 if args.quick else 3,
            chunk=2,
            device=device,
            threads=1 if device.type == "cpu" else None,
        )
        out("")
        out(format_overhead(overhead))
        payload = {**payload, "overhead": overhead}
    if args.json_path:
        Path(args.json_path).write_text(json.dumps(payload, indent=2, sort_keys=True))
    return record
