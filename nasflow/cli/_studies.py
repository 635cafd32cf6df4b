"""``nasflow studies`` and ``nasflow spaces``: what a storage holds, what is registered."""

from __future__ import annotations

import argparse

from nasflow._entry_points import SPACES, registered
from nasflow.cli._common import STORAGE_HELP, UsageError


def add_studies_parser(sub: argparse._SubParsersAction) -> None:
    """The ``studies`` command."""
    p = sub.add_parser("studies", help="list the studies in a storage")
    p.add_argument("--storage", required=True, help=STORAGE_HELP)


def add_spaces_parser(sub: argparse._SubParsersAction) -> None:
    """The ``spaces`` command."""
    p = sub.add_parser(
        "spaces",
        help="list the registered search spaces",
        description="List the registered search spaces by name (nothing is imported). Name "
        "spaces, or pass --details, for their sizes and descriptions (imports them).",
    )
    p.add_argument("names", nargs="*", help="spaces to describe: size and description")
    p.add_argument("--details", action="store_true", help="describe every registered space")


def run_studies(args: argparse.Namespace) -> int:
    """``nasflow studies``: each study of a storage, its trials and directions."""
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


def run_spaces(args: argparse.Namespace) -> int:
    """``nasflow spaces``: the registered spaces' names, or their sizes and descriptions."""
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
