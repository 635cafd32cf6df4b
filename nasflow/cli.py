"""The ``nasflow`` command line."""

from __future__ import annotations

import argparse
import math
import os
import signal
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any, NoReturn

from nasflow._entry_points import SPACES, STUDIES, module_file, registered
from nasflow.errors import ConfigError, NasflowError

if TYPE_CHECKING:
    import optuna

DEFAULT_STUDY = "mnist1d_front"
#: ``--runs`` means the same folder in every command; ``--out`` is always an export folder.
RUNS_HELP = "folder the search writes studies, checkpoints and winners to (default runs)"
STORAGE_HELP = "Optuna storage: sqlite:///FILE, journal:///FILE or postgresql://USER@HOST:PORT/DB"


class UsageError(NasflowError, ValueError):
    """Bad input on the command line (exit code 2)."""


def _study_path(arg: str | None) -> Path:
    """A study file path; ``None`` or a registered name resolves to the ready study."""
    name = arg or DEFAULT_STUDY
    studies = registered(STUDIES)
    if arg is None or (name in studies and not Path(name).exists()):
        if name not in studies:
            raise UsageError(f"no ready study {name!r}; known: {sorted(studies)}")
        path = module_file(studies[name])
        if path is None:
            raise UsageError(f"ready study {name!r} ({studies[name]}) is not installed")
        return path
    return Path(arg)


def _add_storage(p: argparse.ArgumentParser, required: bool = False) -> None:
    p.add_argument(
        "--storage",
        required=required,
        help=STORAGE_HELP + " (default: RUNS/STUDY/study.db)",
    )
    p.add_argument("--runs", default="runs", help=RUNS_HELP)


def _version() -> str:
    """The installed package's version (``importlib.metadata``), else the source's."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("nasflow")
    except PackageNotFoundError:  # run from a source tree that is not installed
        from nasflow import __version__

        return __version__


class _VersionAction(argparse.Action):
    """``--version``: print ``nasflow VERSION`` and exit (looked up only when asked)."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: object) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *_: object) -> None:
        print(f"nasflow {_version()}")
        parser.exit(0)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="nasflow", description="Neural-architecture search for PyTorch on Optuna."
    )
    parser.add_argument("--version", action=_VersionAction, help="print the version and exit")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("search", help="train the supernet, search, retrain the winner")
    p.add_argument("study", nargs="?", help=f"study file or ready study (default {DEFAULT_STUDY})")
    _add_storage(p)
    p.add_argument("--n-trials", type=int, help="total finished trials wanted (default: study's)")
    p.add_argument("--timeout", type=float, help="stop searching after this many seconds")
    p.add_argument("--seed", type=int, help="override the study's seed")
    g = p.add_mutually_exclusive_group()
    g.add_argument(
        "--retrain",
        dest="retrain",
        action="store_true",
        default=True,
        help="retrain the winners from scratch (default)",
    )
    g.add_argument(
        "--no-retrain",
        dest="retrain",
        action="store_false",
        help="skip phase 3 (no test accuracy, no retrained weights to export)",
    )
    p.add_argument("--no-progress", action="store_true", help="plain log lines, no bars")
    p.add_argument(
        "--verbose",
        action="store_true",
        help="print the detail above the result: the most accurate architectures, the Pareto "
        "set, the ready models, the winners and every record (default: the result alone)",
    )
    p.add_argument(
        "--recalibrate-stack",
        action="store_true",
        help="stack='auto': calibrate again and replace this device's stored record",
    )
    p.add_argument(
        "--remeasure-costs",
        action="store_true",
        help="cost model: measure this device's op-latency table and calibration again and "
        "replace the stored ones (study database and shared table) instead of reusing them",
    )
    _add_deterministic(p)

    p = sub.add_parser("worker", help="join a running study on a shared storage")
    p.add_argument("study", help="study file or ready study")
    _add_storage(p, required=True)
    p.add_argument("--n-trials", type=int, help="total finished trials wanted")
    p.add_argument("--timeout", type=float, help="stop searching after this many seconds")
    p.add_argument("--no-progress", action="store_true", help="plain log lines, no bars")
    _add_deterministic(p)

    p = sub.add_parser("studies", help="list the studies in a storage")
    p.add_argument("--storage", required=True, help=STORAGE_HELP)

    p = sub.add_parser("show", help="print the Pareto set of a study, with a header row")
    p.add_argument("name", help="study name")
    p.add_argument("--storage", help=STORAGE_HELP + " (default: RUNS/NAME/study.db)")
    p.add_argument("--runs", default="runs", help=RUNS_HELP)
    p.add_argument("--json", action="store_true", help="print the rows as a JSON list")

    p = sub.add_parser("report", help="write a study's offline HTML report")
    p.add_argument("name", help="study name")
    _add_storage(p)
    p.add_argument("--out-file", help="the HTML file (default: RUNS/NAME/report.html)")

    p = sub.add_parser("dashboard", help="push the report's figures and serve optuna-dashboard")
    p.add_argument("name", help="study name")
    _add_storage(p)
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default: 127.0.0.1)")
    p.add_argument("--port", type=int, default=8080, help="port (default 8080; 0: a free one)")

    p = sub.add_parser(
        "spaces",
        help="list the registered search spaces",
        description="List the registered search spaces by name (nothing is imported). Name "
        "spaces, or pass --details, for their sizes and descriptions (imports them).",
    )
    p.add_argument("names", nargs="*", help="spaces to describe: size and description")
    p.add_argument("--details", action="store_true", help="describe every registered space")
    _add_export_parsers(sub)
    _add_measure_stack_parser(sub)
    p = sub.add_parser(
        "bench",
        help="run a benchmark of the source checkout's benchmarks/ folder",
        description="Run benchmarks/NAME.py with the given arguments (--quick: the CI smoke "
        "size). With no NAME, list the benchmarks.",
    )
    p.add_argument("name", nargs="?", help="a benchmark's name or B-number (none: the list)")
    p.add_argument("args", nargs=argparse.REMAINDER, help="arguments for the benchmark")
    return parser


class _GracefulStop:
    """SIGINT/SIGTERM handling of a running study.

    The first signal sets ``event``: training finishes its current step, writes a
    checkpoint, queues the trial in flight to be resumed, and the command exits with
    128 + the signal's number. A second signal exits at once (a trial left RUNNING is
    failed and retried by the next ``nasflow search``/``worker`` start-up).
    """

    def __init__(self) -> None:
        self.event = threading.Event()
        self.signum = 0

    def install(self) -> None:
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, self._handle)

    def _handle(self, signum: int, _frame: FrameType | None) -> None:
        name = signal.Signals(signum).name
        if self.event.is_set():
            os.write(2, f"nasflow: second signal ({name}): exiting now\n".encode())
            os._exit(128 + signum)
        self.signum = signum
        self.event.set()
        # os.write, not print: a handler may run in the middle of another print.
        os.write(
            2,
            f"nasflow: {name}: finishing the current step, checkpointing and stopping "
            "(send it again to exit at once)\n".encode(),
        )


def _add_deterministic(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--deterministic",
        action="store_true",
        help="decide nothing by timings (StudySpec(deterministic=True)): stack='auto' trains "
        "plain fp32 uncalibrated, the stored cost table is reused as it is, fine-tuning "
        "promotes by predicted cost, torch uses deterministic algorithms; a rerun with the "
        "same seed and storage kind keeps the same model",
    )


def _cmd_search(args: argparse.Namespace, worker: bool) -> int:
    from nasflow.pipeline import StudyRunner, summary_table
    from nasflow.search import StudyFileError, load_study_file
    from nasflow.train import TrainingInterrupted

    path = _study_path(args.study)
    print(f"loading study file {str(path)!r}…", flush=True)  # (it runs user code)
    spec = load_study_file(path)
    if getattr(args, "seed", None) is not None:
        try:
            spec = spec.replace(seed=args.seed)
        except StudyFileError as e:
            raise UsageError(f"--seed: {e}") from None
    if getattr(args, "recalibrate_stack", False):
        spec = spec.replace(recalibrate_stack=True)
    if getattr(args, "remeasure_costs", False):
        spec = spec.replace(remeasure_costs=True)
    if getattr(args, "deterministic", False):
        try:
            spec = spec.replace(deterministic=True)
        except ValueError as e:
            raise UsageError(f"--deterministic: {e}") from None
    if args.n_trials is not None and args.n_trials < 1:
        raise UsageError(f"--n-trials must be >= 1, got {args.n_trials}")
    if args.timeout is not None and not (math.isfinite(args.timeout) and args.timeout > 0):
        raise UsageError(f"--timeout must be a number of seconds > 0, got {args.timeout}")
    stop = _GracefulStop()
    try:  # bad NASFLOW_HEARTBEAT_INTERVAL / NASFLOW_GRACE_PERIOD values
        runner = StudyRunner(
            spec, args.storage, args.runs, progress=not args.no_progress, stop=stop.event
        )
    except ValueError as e:
        raise UsageError(str(e)) from None
    stop.install()
    try:
        result = runner.run(
            n_trials=args.n_trials,
            timeout=args.timeout,
            retrain=getattr(args, "retrain", False),
            worker=worker,
        )
    except TrainingInterrupted as e:
        print(f"nasflow: {e}; run the same command again to resume", file=sys.stderr)
        return 128 + (stop.signum or signal.SIGINT)
    verbose = getattr(args, "verbose", False)
    print(summary_table(result, spec, verbose=verbose, study_file=str(path)))
    return 0


def _cmd_studies(args: argparse.Namespace) -> int:
    import optuna

    from nasflow.storage import (
        check_reachable,
        check_study_file,
        open_storage,
        resolve_storage,
    )

    spec = resolve_storage(args.storage, "unused")
    if spec.path is not None and not spec.path.exists():
        raise UsageError(f"no study file at {str(spec.path)!r}")
    check_study_file(spec)
    check_reachable(spec)
    for s in optuna.get_all_study_summaries(open_storage(spec)):
        dirs = ",".join(d.name.lower() for d in s.directions)
        print(f"{s.study_name}\t{s.n_trials} trials\t{dirs}")
    return 0


#: ``nasflow show`` column headers of the objectives (which split, predicted or measured).
def _show_rows(study: optuna.Study, run_dir: Path) -> list[dict[str, Any]]:
    """The Pareto trials of a study as ``nasflow show`` rows, best accuracy first.

    ``run_dir`` (``RUNS/NAME``) is where phase 3 saved the retrained winners' weights.
    """
    import json

    from nasflow.pipeline import pareto_trials
    from nasflow.record import RunFolder, TrialRecord, retrain_key, study_objectives

    attrs = study.user_attrs
    names = study_objectives(study)
    rows = []
    for t in pareto_trials(study):
        trial = TrialRecord.from_trial(t)
        epochs = trial.epochs_trained
        if trial.supernet_accuracy is None:
            scored = "table look-up"
        elif isinstance(epochs, int) and epochs > 0:
            scored = f"fine-tuned {epochs} ep"
        else:
            scored = "supernet, BN-recal."
        retrain = attrs.get(retrain_key(t.number))
        saved = RunFolder(run_dir).winner(t.number)
        rows.append(
            {
                "trial": t.number,
                "objectives": {
                    (names[i] if i < len(names) else f"objective_{i}"): v
                    for i, v in enumerate(t.values)
                },
                "scored_with": scored,
                "supernet_val_accuracy": trial.supernet_accuracy,
                "retrained": (
                    {
                        k: retrain.get(k)
                        for k in ("test_accuracy", "val_accuracy", "measured_train_cost")
                    }
                    | {"weights": str(saved) if saved.is_dir() else None}
                    if isinstance(retrain, dict)
                    else None
                ),
                "arch": json.loads(trial.arch or "{}"),
            }
        )
    return rows


def _cmd_show(args: argparse.Namespace) -> int:
    import json

    from nasflow.record import RunFolder, open_stored_study

    study = open_stored_study(args.name, args.storage, args.runs).study
    rows = _show_rows(study, RunFolder.of(args.runs, args.name).root)
    if not rows and not args.json:
        from collections import Counter

        counts = Counter(t.state.name.lower() for t in study.get_trials(deepcopy=False))
        held = ", ".join(f"{n} {state}" for state, n in sorted(counts.items())) or "no trials"
        print(f"study {args.name!r} has no completed trial yet ({held})")
        return 0
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    from nasflow import names
    from nasflow.record import study_metric_names

    header = [
        "trial",
        *study_metric_names(study),
        "scored with",
        names.RETRAINED_TEST_ACCURACY,
        "arch",
    ]
    print("\t".join(header))
    for row in rows:
        retrained = row["retrained"]
        test = retrained.get("test_accuracy") if isinstance(retrained, dict) else None
        arch = ", ".join(f"{k}={v}" for k, v in row["arch"].items())
        print(
            "\t".join(
                [
                    str(row["trial"]),
                    *(f"{v:.4g}" for v in row["objectives"].values()),
                    str(row["scored_with"]),
                    f"{test:.4f}" if isinstance(test, float) else "-",
                    arch,
                ]
            )
        )
    return 0


def _one_line_errors(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Make argparse report a bad command line in one stderr line (exit code 2)."""

    def error(message: str) -> NoReturn:
        p.exit(2, f"nasflow: error: {p.prog}: {message} (see --help)\n")

    p.error = error  # type: ignore[method-assign]
    return p


def _add_export_parsers(sub: argparse._SubParsersAction) -> None:
    p = _one_line_errors(
        sub.add_parser("export", help="export trials of a study as plain PyTorch and ONNX")
    )
    p.add_argument("name", help="study name, or the study file (.py) that ran it")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--trial", type=int, help="export this trial number")
    g.add_argument(
        "--best",
        action="store_true",
        help="the model the study kept (the summary's 'kept model'; default), or the most "
        "accurate Pareto trial of a study that retrained nothing",
    )
    g.add_argument("--pareto", action="store_true", help="every Pareto trial, one folder each")
    g.add_argument(
        "--ready",
        metavar="{best|TRIAL}",
        help="a ready model of the fine-tuning phase, with its fine-tuned weights exactly as "
        "saved (not recalibrated): 'best' is the ready model with the best validation "
        "accuracy, or give its trial number",
    )
    p.add_argument("--out", required=True, help="export directory to create")
    p.add_argument(
        "--weights",
        choices=("retrained", "supernet"),
        help="retrained: the winner phase 3 retrained from scratch (an error where it did "
        "not); supernet: the supernet's, BN-recalibrated (default: retrained where saved, "
        "else supernet)",
    )
    p.add_argument("--storage", help=STORAGE_HELP + " (default: RUNS/NAME/study.db)")
    p.add_argument("--runs", default="runs", help=RUNS_HELP)
    p.add_argument("--study", help="study file or ready study with the data for BN statistics")
    p.add_argument(
        "--no-recalibrate",
        action="store_true",
        help="supernet weights: keep the supernet's BN statistics",
    )
    p.add_argument("--no-onnx", action="store_true", help="skip model.onnx")
    p.add_argument(
        "--force",
        action="store_true",
        help="replace the complete nasflow export at --out (with --pareto: the trial-N "
        "folders this export writes; other complete trial-N exports there are kept); a file "
        "nasflow did not write, or changed since (README.md included), is refused",
    )

    p = _one_line_errors(
        sub.add_parser("retrain", help="retrain an exported architecture from scratch")
    )
    p.add_argument("export_dir", help="a directory written by `nasflow export`")
    p.add_argument("--epochs", type=int, help="epochs (default: the study's training budget)")
    p.add_argument("--study", help="study file or ready study with the data and recipe")
    p.add_argument(
        "--out",
        help="export directory for the retrained weights (default: EXPORT_DIR itself, "
        "updated in place)",
    )
    p.add_argument("--force", action="store_true", help="replace an existing export at --out")
    p.add_argument(
        "--no-onnx", action="store_true", help="skip model.onnx (default: as EXPORT_DIR has)"
    )
    p.add_argument("--quiet", action="store_true", help="print no per-epoch lines")


def _add_measure_stack_parser(sub: argparse._SubParsersAction) -> None:
    p = _one_line_errors(
        sub.add_parser("measure-stack", help="measure each speedup-stack layer on a candidate")
    )
    p.add_argument("--arch", help="candidate as JSON (default: a mid-sized mnist1d candidate)")
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


def _cmd_measure_stack(args: argparse.Namespace) -> int:
    import torch

    from nasflow.calibrate import run_measure_stack

    try:
        try:
            device = torch.device(args.device or ("cuda" if torch.cuda.is_available() else "cpu"))
        except RuntimeError as e:
            raise ConfigError(f"--device {args.device!r}: {e}") from None
        layers = _measure_stack_layers(args, device)
        amp = args.amp
        if amp is None:
            amp = "bf16" if device.type == "cpu" or torch.cuda.is_bf16_supported() else "fp16"
        settings = {"amp": amp, "accumulation": args.accumulation}
        record = run_measure_stack(args, device, layers, settings)
        if args.figure:
            _write_stack_figure(record, Path(args.figure))
    except ValueError as e:
        raise UsageError(str(e)) from None
    return 0


def _ready_choice(value: str) -> str | int:
    """``--ready``'s value: ``"best"`` or a trial number."""
    if value == "best":
        return value
    if value.isdecimal() and value.isascii():
        return int(value)
    raise UsageError(f"--ready must be 'best' or a trial number, got {value!r}")


def _cmd_export(args: argparse.Namespace) -> int:
    from nasflow.export import export_ready, export_study

    which: str | int = "pareto" if args.pareto else "best"
    if args.trial is not None:
        if args.trial < 0:
            raise UsageError(f"--trial must be a trial number >= 0, got {args.trial}")
        which = args.trial
    ready = _ready_choice(args.ready) if args.ready is not None else None
    if ready is not None and (args.weights or args.no_recalibrate):
        given = "--weights" if args.weights else "--no-recalibrate"
        raise UsageError(
            f"--ready exports the fine-tuned weights as saved; {given} does not apply to it"
        )
    name, study_file = args.name, args.study
    if name.endswith(".py") and Path(name).is_file():  # a study file: its own space and data
        from nasflow.search import load_study_file

        name, study_file = load_study_file(name).name, study_file or name
    if ready is not None:
        export_ready(
            name,
            args.out,
            which=ready,
            storage=args.storage,
            runs=args.runs,
            study_file=study_file,
            onnx=not args.no_onnx,
            force=args.force,
        )
        return 0
    export_study(
        name,
        args.out,
        which=which,
        storage=args.storage,
        runs=args.runs,
        study_file=study_file,
        recalibrate=not args.no_recalibrate,
        onnx=not args.no_onnx,
        force=args.force,
        weights=args.weights or "auto",
    )
    return 0


def _cmd_retrain(args: argparse.Namespace) -> int:
    from nasflow.export import require_onnx, retrain_exported, retrain_target, write_retrained

    if args.epochs is not None and args.epochs < 1:
        raise UsageError(f"--epochs must be >= 1, got {args.epochs}")
    out = retrain_target(args.export_dir, args.out, args.force)  # checked before training
    onnx = not args.no_onnx and (Path(args.export_dir) / "model.onnx").is_file()
    if onnx:
        require_onnx()

    def on_epoch(epoch: int, loss: float) -> None:
        if not args.quiet:
            print(f"epoch {epoch}: loss {loss:.4f}", flush=True)

    done = retrain_exported(args.export_dir, args.epochs, args.study, on_epoch=on_epoch)
    res, before = done.result, done.exported.info
    print(
        f"retrained {args.export_dir} from scratch for {done.recipe.epochs} epochs "
        f"({done.data}): test accuracy {res.test_accuracy:.4f} (retrained weights, test "
        f"split), val accuracy {res.val_accuracy:.4f} (validation split), training cost "
        f"measured {res.seconds:.3g}s"
    )
    predicted = before.study.get("train_cost_predicted_s", before.metrics.get("train_cost"))
    if isinstance(predicted, int | float):
        print(f"predicted training cost during search: {predicted:.1f}s")
    write_retrained(done, out, force=args.force, onnx=onnx)
    print(f"wrote the retrained weights, arch.json and README.md to {out}")
    return 0


def _cmd_report(args: argparse.Namespace) -> int:
    from nasflow.record import RunFolder, open_stored_study
    from nasflow.report import write_report

    out = Path(args.out_file) if args.out_file else RunFolder.of(args.runs, args.name).report
    if out.is_dir():
        raise UsageError(f"--out-file {str(out)!r} is a folder; give a file name")
    try:
        stored = open_stored_study(args.name, args.storage, args.runs)
        where = (["--storage", stored.spec.safe_url] if args.storage else []) + (
            ["--runs", args.runs] if Path(args.runs) != Path("runs") else []
        )
        path = write_report(stored.study, out, storage_label=stored.spec.safe_url, location=where)
    except ValueError as e:  # no such study or file, a malformed record
        raise UsageError(str(e)) from None
    print(f"report: {path}")
    return 0


def _cmd_dashboard(args: argparse.Namespace) -> int:
    from nasflow.report import DashboardUnavailable, serve_dashboard

    if not args.host:
        raise UsageError("--host must not be empty (default 127.0.0.1)")
    try:
        serve_dashboard(
            args.name,
            args.storage,
            args.runs,
            args.host,
            args.port,
            log=lambda line: print(line, flush=True),
        )
    except (ValueError, DashboardUnavailable) as e:  # no study, bad address, no extra
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


def _cmd_bench(args: argparse.Namespace) -> int:
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
        code = e.code
        if code is None:
            return 0
        if isinstance(code, int):
            return code
        print(code, file=sys.stderr)
        return 1
    finally:
        sys.argv = old_argv
    return 0


def _cmd_spaces(args: argparse.Namespace) -> int:
    spaces = registered(SPACES)
    unknown = [n for n in args.names if n not in spaces]
    if unknown:
        raise UsageError(f"no registered space {unknown[0]!r}; known: {sorted(spaces)}")
    names = args.names or (sorted(spaces) if args.details else [])
    if not names:  # names only: importing a space imports torch (seconds)
        for name, target in sorted(spaces.items()):
            print(f"{name}\t{target}")
        return 0
    from importlib import import_module

    for name in names:
        module, _, attr = spaces[name].partition(":")
        space = getattr(import_module(module), attr)()
        print(f"{name}\t{space.size:,} architectures\t{space.description}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit code (2 for bad input, one line on stderr).

    Parsing and the light commands (``--help``, ``--version``, ``spaces``) import neither
    torch nor Optuna; each command imports what it needs.
    """
    args = build_parser().parse_args(argv)
    commands = {
        "search": lambda: _cmd_search(args, worker=False),
        "worker": lambda: _cmd_search(args, worker=True),
        "studies": lambda: _cmd_studies(args),
        "show": lambda: _cmd_show(args),
        "report": lambda: _cmd_report(args),
        "dashboard": lambda: _cmd_dashboard(args),
        "export": lambda: _cmd_export(args),
        "retrain": lambda: _cmd_retrain(args),
        "measure-stack": lambda: _cmd_measure_stack(args),
        "bench": lambda: _cmd_bench(args),
        "spaces": lambda: _cmd_spaces(args),
    }
    try:
        return commands[args.command]()
    except KeyboardInterrupt:
        print("nasflow: interrupted", file=sys.stderr)
        return 130
    except NasflowError as e:  # bad input or a refused state: one line, exit code 2
        print(f"nasflow: error: {e}", file=sys.stderr)
        return 2
    except OSError as e:  # a full disk or a permission that no writer named: one line too
        from nasflow._disk import write_error

        failed = write_error(e.filename or "a file (its path was not reported)", e)
        if failed is None:
            raise
        print(f"nasflow: error: {failed}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
