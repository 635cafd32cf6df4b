"""``nasflow search`` and ``nasflow worker``: run a study, or join one on a shared storage."""

from __future__ import annotations

import argparse
import math
import os
import signal
import sys
import threading
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING

from nasflow.cli._common import DEFAULT_STUDY, UsageError, add_storage, study_path

if TYPE_CHECKING:
    from nasflow.search import StudySpec


def add_parsers(sub: argparse._SubParsersAction) -> None:
    """The ``search`` and ``worker`` commands."""
    p = sub.add_parser("search", help="train the supernet, search, retrain the winner")
    p.add_argument("study", nargs="?", help=f"study file or ready study (default {DEFAULT_STUDY})")
    add_storage(p)
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
    add_storage(p, required=True)
    p.add_argument("--n-trials", type=int, help="total finished trials wanted")
    p.add_argument("--timeout", type=float, help="stop searching after this many seconds")
    p.add_argument("--no-progress", action="store_true", help="plain log lines, no bars")
    _add_deterministic(p)


def _add_deterministic(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--deterministic",
        action="store_true",
        help="decide nothing by timings (StudySpec(deterministic=True)): stack='auto' trains "
        "plain fp32 uncalibrated, the stored cost table is reused as it is, fine-tuning "
        "promotes by predicted cost, torch uses deterministic algorithms; a rerun with the "
        "same seed and storage kind keeps the same model",
    )


class GracefulStop:
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


def _spec_with_options(args: argparse.Namespace) -> tuple[StudySpec, Path]:
    """The study file's spec with ``--seed``, ``--recalibrate-stack``,
    ``--remeasure-costs`` and ``--deterministic`` applied, and its path."""
    from nasflow.search import StudyFileError, load_study_file

    path = study_path(args.study)
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
    return spec, path


def run_search(args: argparse.Namespace, worker: bool) -> int:
    """``nasflow search`` (``worker=False``) or ``nasflow worker``."""
    from nasflow.pipeline import StudyRunner, summary_table, worker_summary
    from nasflow.train import TrainingInterrupted

    spec, path = _spec_with_options(args)
    if args.n_trials is not None and args.n_trials < 1:
        raise UsageError(f"--n-trials must be >= 1, got {args.n_trials}")
    if args.timeout is not None and not (math.isfinite(args.timeout) and args.timeout > 0):
        raise UsageError(f"--timeout must be a number of seconds > 0, got {args.timeout}")
    stop = GracefulStop()
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
    if worker:
        print(worker_summary(result, spec))
        return 0
    verbose = getattr(args, "verbose", False)
    print(summary_table(result, spec, verbose=verbose, study_file=str(path)))
    return 0
