"""The ``nasflow`` command line."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from importlib.metadata import entry_points
from pathlib import Path

DEFAULT_STUDY = "mnist1d"


class UsageError(ValueError):
    """Bad input on the command line (exit code 2)."""


def _registered(group: str) -> dict[str, str]:
    return {ep.name: ep.value for ep in entry_points(group=group)}


def _study_path(arg: str | None) -> Path:
    """A study file path; ``None`` or a registered name resolves to the ready study."""
    name = arg or DEFAULT_STUDY
    studies = _registered("nasflow.studies")
    if arg is None or (name in studies and not Path(name).exists()):
        if name not in studies:
            raise UsageError(f"no ready study {name!r}; known: {sorted(studies)}")
        import importlib.util

        spec = importlib.util.find_spec(studies[name])
        if spec is None or spec.origin is None:
            raise UsageError(f"ready study {name!r} ({studies[name]}) is not installed")
        return Path(spec.origin)
    return Path(arg)


def _add_storage(p: argparse.ArgumentParser, required: bool = False) -> None:
    p.add_argument(
        "--storage",
        required=required,
        help="sqlite:///FILE (default: OUT/STUDY/study.db), journal:///FILE or "
        "postgresql://USER@HOST:PORT/DB",
    )
    p.add_argument("--out", default="runs", help="folder for studies, checkpoints, reports")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="nasflow", description="Neural-architecture search for PyTorch on Optuna."
    )
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
    g.add_argument("--no-retrain", dest="retrain", action="store_false")
    p.add_argument("--no-progress", action="store_true", help="plain log lines, no bars")

    p = sub.add_parser("worker", help="join a running study on a shared storage")
    p.add_argument("study", help="study file or ready study")
    _add_storage(p, required=True)
    p.add_argument("--n-trials", type=int, help="total finished trials wanted")
    p.add_argument("--timeout", type=float)
    p.add_argument("--no-progress", action="store_true")

    p = sub.add_parser("studies", help="list the studies in a storage")
    p.add_argument("--storage", required=True)

    p = sub.add_parser("show", help="print the best trials of a study")
    p.add_argument("name", help="study name")
    p.add_argument("--storage", help="default: runs/NAME/study.db")
    p.add_argument("--out", default="runs")

    sub.add_parser("spaces", help="list the registered search spaces")
    return parser


def _cmd_search(args: argparse.Namespace, worker: bool) -> int:
    from nasflow.search import StudyRunner, load_study_file, summary_table

    spec = load_study_file(_study_path(args.study))
    if getattr(args, "seed", None) is not None:
        spec = spec.replace(seed=args.seed)
    if args.n_trials is not None and args.n_trials < 1:
        raise UsageError(f"--n-trials must be >= 1, got {args.n_trials}")
    runner = StudyRunner(spec, args.storage, args.out, progress=not args.no_progress)
    result = runner.run(
        n_trials=args.n_trials,
        timeout=args.timeout,
        retrain=getattr(args, "retrain", False),
        worker=worker,
    )
    print(summary_table(result, spec))
    return 0


def _cmd_studies(args: argparse.Namespace) -> int:
    import optuna

    from nasflow.search._storage import check_reachable, open_storage, resolve_storage

    spec = resolve_storage(args.storage, "unused")
    if spec.path is not None and not spec.path.exists():
        raise UsageError(f"no study file at {str(spec.path)!r}")
    check_reachable(spec)
    for s in optuna.get_all_study_summaries(open_storage(spec)):
        dirs = ",".join(d.name.lower() for d in s.directions)
        print(f"{s.study_name}\t{s.n_trials} trials\t{dirs}")
    return 0


def _cmd_show(args: argparse.Namespace) -> int:
    import optuna

    from nasflow.search import pareto_trials
    from nasflow.search._storage import check_reachable, open_storage, resolve_storage

    spec = resolve_storage(args.storage, Path(args.out) / args.name / "study.db")
    if spec.path is not None and not spec.path.exists():
        raise UsageError(f"no study file at {str(spec.path)!r}")
    check_reachable(spec)
    storage = open_storage(spec)
    if args.name not in {s.study_name for s in optuna.get_all_study_summaries(storage)}:
        raise UsageError(f"no study {args.name!r} in {spec.safe_url!r}")
    study = optuna.load_study(study_name=args.name, storage=storage)
    for t in pareto_trials(study):
        vals = " ".join(f"{v:.4g}" for v in t.values)
        print(f"trial {t.number}\t{vals}\t{t.user_attrs.get('arch', '')}")
    return 0


def _cmd_spaces() -> int:
    from importlib import import_module

    for name, target in sorted(_registered("nasflow.spaces").items()):
        module, _, attr = target.partition(":")
        space = getattr(import_module(module), attr)()
        print(f"{name}\t{space.size:,} architectures\t{space.description}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit code (2 for bad input, one line on stderr)."""
    args = build_parser().parse_args(argv)
    from nasflow.search import StorageError, StudyFileError, StudyMismatchError
    from nasflow.train import CheckpointError

    try:
        if args.command in ("search", "worker"):
            return _cmd_search(args, worker=args.command == "worker")
        if args.command == "studies":
            return _cmd_studies(args)
        if args.command == "show":
            return _cmd_show(args)
        return _cmd_spaces()
    except (UsageError, StudyFileError, StorageError, StudyMismatchError, CheckpointError) as e:
        print(f"nasflow: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("nasflow: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
