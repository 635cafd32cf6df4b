"""``nasflow bench-stack``: measure the speedup stack on a candidate of a registered space.

The command's options are declared in ``nasflow.cli`` (so that parsing the command line
does not import torch); ``run`` takes the parsed namespace.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch import nn
from torch.utils.data import Subset

from nasflow.space import Arch, SearchSpace, space_class
from nasflow.train._loop import Batches
from nasflow.train.stack._config import LAYERS, Stack

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


def _data(space: SearchSpace, quick: bool, batch_size: int, seed: int) -> tuple[Batches, Batches]:
    if space.name != "mnist1d":
        raise ValueError(f"bench-stack has data for space 'mnist1d' only, got {space.name!r}")
    from nasflow.data import load_mnist1d

    data = load_mnist1d(val_fraction=0.25, seed=seed)
    train, val = data.train, data.val
    if quick:
        train, val = Subset(train, range(512)), Subset(val, range(256))
    return (
        Batches(train, batch_size, shuffle=True, seed=seed, drop_last=True),
        Batches(val, 500, shuffle=False),
    )


def _settings(args: argparse.Namespace, device: torch.device) -> dict[str, Any]:
    amp = args.amp
    if amp is None:
        amp = "bf16" if device.type == "cpu" or torch.cuda.is_bf16_supported() else "fp16"
    return {"amp": amp, "accumulation": args.accumulation}


#: Layers that exist only on CPU (the rest run on CPU and GPU).
CPU_LAYERS = ("denormal", "threads")


def _check(args: argparse.Namespace, device: torch.device) -> list[str] | None:
    """The ``--layers`` list (``None``: the device's default), after checking the options."""
    layers = None
    if args.layers is not None:
        layers = [x.strip() for x in args.layers.split(",") if x.strip()]
        bad = [x for x in layers if x not in LAYERS]
        if bad or not layers or len(set(layers)) != len(layers):
            raise ValueError(
                f"--layers must name distinct layers from {LAYERS}, got {args.layers!r}"
            )
    for name in ("epochs", "batch_size", "accumulation"):
        v = getattr(args, name)
        if v is not None and v < 1:
            raise ValueError(f"--{name.replace('_', '-')} must be >= 1, got {v}")
    if not 0 < args.target <= 1:
        raise ValueError(f"--target must be in (0, 1], got {args.target}")
    if device.type not in ("cpu", "cuda"):
        raise ValueError(f"--device must be cpu or cuda, got {str(device)!r}")
    return layers


def _default_layers(device: torch.device, auto: bool) -> list[str]:
    from nasflow.train.stack._auto import AUTO_LAYERS

    names = AUTO_LAYERS if auto else LAYERS
    return [n for n in names if device.type == "cpu" or n not in CPU_LAYERS]


def write_figure(record: dict[str, Any], path: Path) -> None:
    """The waterfall as an offline HTML file (plotly.js inlined)."""
    from nasflow.report import StackData, StackLayer, plot_stack

    data = StackData(
        True,
        record["baseline"],
        record["device"],
        [StackLayer(r["name"], r["alone"], r["cumulative"]) for r in record["layers"]],
        record["end_to_end"],
    )
    plot_stack(data).write_html(str(path), include_plotlyjs=True)


def run(args: argparse.Namespace, out: Callable[[str], None] = print) -> int:
    """Run the harness (or the auto calibration) and print its table."""
    from nasflow.train.stack._auto import auto_stack
    from nasflow.train.stack._bench import bench_stack
    from nasflow.train.stack._interleave import RunConfig
    from nasflow.train.stack._overhead import format_overhead, trainer_overhead

    try:
        device = torch.device(args.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    except RuntimeError as e:
        raise ValueError(f"--device {args.device!r}: {e}") from None
    layers = _check(args, device) or _default_layers(device, args.auto)
    space = space_class(getattr(args, "space", "mnist1d"))()
    if args.arch:
        arch = space.validate(Arch.from_json(args.arch))
    elif space.name == "mnist1d" and set(DEFAULT_ARCH) == {c.label for c in space.choices}:
        arch = space.validate(Arch(QUICK_ARCH if args.quick else DEFAULT_ARCH))
    else:
        arch = space.sample(args.seed)
    batch_size = args.batch_size or (32 if args.quick else 64)
    train, val = _data(space, args.quick, batch_size, args.seed)

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
    settings = _settings(args, device)

    def log(msg: str) -> None:
        if not args.quick:
            print(msg, file=sys.stderr, flush=True)

    out(f"candidate {arch.to_json()} ({params:,} parameters) on {device}")
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
            log=log,
            **settings,
        )
        out(json.dumps(result.record, indent=2))
        record, payload = result.record, result.record
    else:
        bench = bench_stack(
            make_model,
            train,
            val,
            cfg,
            layers,
            device,
            candidate={"arch": arch.to_dict(), "params": params, "space": space.name},
            log=log,
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
    if args.figure:
        write_figure(record, Path(args.figure))
    return 0
