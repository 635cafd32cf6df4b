"""What every ``nasflow`` command shares: the usage error, the study and storage options,
one-line argparse errors."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

from nasflow._entry_points import STUDIES, module_file, registered
from nasflow.errors import NasflowError

DEFAULT_STUDY = "mnist1d_front"
#: ``--runs`` means the same folder in every command; ``--out`` is always an export folder.
RUNS_HELP = "folder the search writes studies, checkpoints and winners to (default runs)"
STORAGE_HELP = "Optuna storage: sqlite:///FILE, journal:///FILE or postgresql://USER@HOST:PORT/DB"


class UsageError(NasflowError, ValueError):
    """Bad input on the command line (exit code 2)."""


def study_path(arg: str | None) -> Path:
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


def add_storage(p: argparse.ArgumentParser, required: bool = False) -> None:
    """``--storage`` (default: the study's database under ``--runs``) and ``--runs``."""
    p.add_argument(
        "--storage",
        required=required,
        help=STORAGE_HELP + " (default: RUNS/STUDY/study.db)",
    )
    p.add_argument("--runs", default="runs", help=RUNS_HELP)


def add_named_storage(p: argparse.ArgumentParser) -> None:
    """``--storage`` (default: ``RUNS/NAME/study.db``) and ``--runs`` of a command that
    names a stored study."""
    p.add_argument("--storage", help=STORAGE_HELP + " (default: RUNS/NAME/study.db)")
    p.add_argument("--runs", default="runs", help=RUNS_HELP)


def one_line_errors(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Make argparse report a bad command line in one stderr line (exit code 2)."""

    def error(message: str) -> NoReturn:
        p.exit(2, f"nasflow: error: {p.prog}: {message} (see --help)\n")

    p.error = error  # type: ignore[method-assign]
    return p


class VersionAction(argparse.Action):
    """``--version``: print ``nasflow VERSION`` (``nasflow.__version__``, the one place the
    version is written) and exit."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *_: object) -> None:
        from nasflow import __version__

        print(f"nasflow {__version__}")
        parser.exit(0)
