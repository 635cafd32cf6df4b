"""``nasflow measure-stack`` and ``nasflow bench``: measure the speedup stack on this
machine, run a benchmark of the source checkout."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from nasflow.cli._common import UsageError, one_line_errors, study_path
from nasflow.errors import ConfigError


def add_measure_stack_parser(sub: argparse._SubParsersAction) -> None:
    """The ``measure-stack`` command."""
    p = one_line_errors(
        sub.add_parser("measure-stack", help="measure each speedup-stack layer on a candidate")
    )
    p.add_argument("--arch", help="candidate as JSON (default: a mid-sized mnist1d candidate)")
    p.add_argument(
        "--study",
        help="study file or ready study with the data and space to measure on (default: "
        "the MNIST-1D space and data)",
    )
    p.add_argument("--quick", action="store_true", help="a seconds-long smoke run")
    p.add_argument("--epochs", type=int, help="epochs per variant (default 3; 1 with --quick)")
    p.add_argument("--batch-size", type=int, help="default 64 (32 with --quick)")
    p.add_argument("--target", type=float, default=0.9, help="validation accuracy target")
    p.add_argument("--layers", help="comma-separated layers in cumulative order (default all)")
    p.add_argument("--amp", choices=("bf16", "fp16"), help="amp layer dtype (default bf16)")
    p.add_argument("--accumulation", type=int, default=2, help="k of the accumulation layer")
    p.add_argument("--compile-backend", help="default inductor (eager with --quick)")
    p.add_argument("--device", help="cpu or cuda (default: cuda when available)")
    p.add_argument("--seed", type=int, default=0, help="seed of the data and weights (default 0)")
    p.add_argument("--save-json", dest="json_path", help="write the full result as JSON here")
    p.add_argument("--figure", help="write the waterfall as an offline HTML file here")
    p.add_argument("--overhead", action="store_true", help="also time the trainer overhead")
    p.add_argument("--auto", action="store_true", help="run the stack='auto' calibration")


def add_bench_parser(sub: argparse._SubParsersAction) -> None:
    """The ``bench`` command."""
    p = sub.add_parser(
        "bench",
        help="run a benchmark of the source checkout's benchmarks/ folder",
        description="Run benchmarks/NAME.py with the given arguments (--quick: the CI smoke "
        "size). With no NAME, list the benchmarks.",
    )
    p.add_argument("name", nargs="?", help="a benchmark's name or B-number (none: the list)")
    p.add_argument("args", nargs=argparse.REMAINDER, help="arguments for the benchmark")


def _measure_stack_layers(args: argparse.Namespace, device: Any) -> list[str]:
    """The ``--layers`` list (default: the device's layers), after checking the options."""
    from nasflow.calibrate import AUTO_LAYERS
    from nasflow.train.stack import CPU_LAYERS, LAYERS

    if args.layers is None:
        names = AUTO_LAYERS if args.auto else LAYERS
        layers = [n for n in names if device.type == "cpu" or n not in CPU_LAYERS]
    else:
        layers = [x.strip() for x in args.layers.split(",") if x.strip()]
        bad = [x for x in layers if x not in LAYERS]
        if bad or not layers or len(set(layers)) != len(layers):
            raise ConfigError(
                f"--layers must name distinct layers from {LAYERS}, got {args.layers!r}"
            )
    for name in ("epochs", "batch_size", "accumulation"):
        v = getattr(args, name)
        if v is not None and v < 1:
            raise ConfigError(f"--{name.replace('_', '-')} must be >= 1, got {v}")
    if not 0 < args.target <= 1:
        raise ConfigError(f"--target must be in (0, 1], got {args.target}")
    if device.type not in ("cpu", "cuda"):
        raise ConfigError(f"--device must be cpu or cuda, got {str(device)!r}")
    return layers


def _write_stack_figure(record: dict[str, Any], path: Path) -> None:
    """The waterfall as an offline HTML file (plotly.js inlined)."""
    from nasflow.report import StackData, StackLayerRow, plot_stack

    data = StackData(
        True,
        record["baseline"],
        record["device"],
        [StackLayerRow(r["name"], r["alone"], r["cumulative"]) for r in record["layers"]],
        record["end_to_end"],
    )
    plot_stack(data).write_html(str(path), include_plotlyjs=True)


def run_measure_stack(args: argparse.Namespace) -> int:
    """``nasflow measure-stack``: each speedup-stack layer measured on a candidate."""
    import torch

    from nasflow.calibrate import run_measure_stack as measure

    try:
        try:
            device = torch.device(args.device or ("cuda" if torch.cuda.is_available() else "cpu"))
        except RuntimeError as e:
            raise ConfigError(f"--device {args.device!r}: {e}") from None
        layers = _measure_stack_layers(args, device)
        if args.study is not None:  # a ready study's name -> its file
            args.study = str(study_path(args.study))
        amp = args.amp
        if amp is None:
            amp = "bf16" if device.type == "cpu" or torch.cuda.is_bf16_supported() else "fp16"
        settings = {"amp": amp, "accumulation": args.accumulation}
        record = measure(args, device, layers, settings)
        if args.figure:
            _write_stack_figure(record, Path(args.figure))
    except ValueError as e:
        raise UsageError(str(e)) from None
    return 0


def _benchmarks_dir() -> Path:
    """``benchmarks/`` of the source checkout nasflow runs from (an editable install)."""
    import nasflow

    folder = Path(nasflow.__file__).resolve().parents[1] / "benchmarks"
    if not folder.is_dir():
        raise UsageError(
            f"no benchmarks folder at {folder}: nasflow is not running from a source "
            "checkout; the benchmarks ship with the checkout (pip install -e .), not with "
            "the package"
        )
    return folder


def benchmark_catalogue() -> dict[str, tuple[str, str]]:
    """``BENCHMARKS`` of ``benchmarks/catalogue.py`` in the source checkout: name ->
    (B-number or ``""``, what it measures).

    Raises:
        UsageError: nasflow does not run from a source checkout (no ``benchmarks/``).
    """
    import runpy

    catalogue = _benchmarks_dir() / "catalogue.py"
    if not catalogue.is_file():
        raise UsageError(f"no benchmark catalogue at {catalogue}")
    return dict(runpy.run_path(str(catalogue))["BENCHMARKS"])


def run_bench(args: argparse.Namespace) -> int:
    """``nasflow bench``: list the benchmarks, or run one with its arguments."""
    import runpy

    benchmarks = benchmark_catalogue()
    if args.name is None:
        for name, (code, what) in benchmarks.items():
            print(f"{name}\t{code or '-'}\t{what}")
        return 0
    by_code = {code.lower(): name for name, (code, _) in benchmarks.items() if code}
    name = by_code.get(args.name.lower(), args.name)
    if name not in benchmarks:
        raise UsageError(f"no benchmark {args.name!r}; known: {', '.join(benchmarks)}")
    script = _benchmarks_dir() / f"{name}.py"
    if not script.is_file():
        raise UsageError(f"benchmark {name!r} has no script at {script}")
    old_argv = sys.argv
    sys.argv = [str(script), *args.args]
    try:
        runpy.run_path(str(script), run_name="__main__")
    except SystemExit as e:
        status = e.code
        if status is None:
            return 0
        if isinstance(status, int):
            return status
        print(status, file=sys.stderr)
        return 1
    finally:
        sys.argv = old_argv
    return 0
