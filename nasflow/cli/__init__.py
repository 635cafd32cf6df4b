"""The ``nasflow`` command line: one module per family of commands.

``_search`` (search, worker), ``_report`` (show, report, dashboard), ``_export`` (export,
retrain), ``_bench`` (measure-stack, bench), ``_studies`` (studies, spaces); ``_common``
holds what they share. Parsing and the light commands (``--help``, ``--version``,
``spaces``) import neither torch nor Optuna; each command imports what it needs.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

from nasflow.cli import _bench, _export, _report, _search, _studies
from nasflow.cli._common import VersionAction
from nasflow.errors import NasflowError

__all__ = ["build_parser", "main"]

#: Each command's function, by name.
COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "search": lambda args: _search.run_search(args, worker=False),
    "worker": lambda args: _search.run_search(args, worker=True),
    "studies": _studies.run_studies,
    "show": _report.run_show,
    "report": _report.run_report,
    "dashboard": _report.run_dashboard,
    "spaces": _studies.run_spaces,
    "export": _export.run_export,
    "retrain": _export.run_retrain,
    "measure-stack": _bench.run_measure_stack,
    "bench": _bench.run_bench,
}


def build_parser() -> argparse.ArgumentParser:
    """The parser of every ``nasflow`` command."""
    parser = argparse.ArgumentParser(
        prog="nasflow", description="Neural-architecture search for PyTorch on Optuna."
    )
    parser.add_argument("--version", action=VersionAction, help="print the version and exit")
    sub = parser.add_subparsers(dest="command", required=True)
    _search.add_parsers(sub)  # search, worker
    _studies.add_studies_parser(sub)
    _report.add_parsers(sub)  # show, report, dashboard
    _studies.add_spaces_parser(sub)
    _export.add_parsers(sub)  # export, retrain
    _bench.add_measure_stack_parser(sub)
    _bench.add_bench_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit code (2 for bad input, one line on stderr)."""
    args = build_parser().parse_args(argv)
    try:
        return COMMANDS[args.command](args)
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
