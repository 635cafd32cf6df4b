"""One base for nasflow's errors: every exception class the package defines derives from
``NasflowError`` (and keeps its built-in base), and the CLI reports any as one line."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest

import nasflow
from nasflow import NasflowError


def _package_exceptions() -> list[type[BaseException]]:
    found = []
    for info in pkgutil.walk_packages(nasflow.__path__, "nasflow."):
        try:
            module = importlib.import_module(info.name)
        except ImportError as e:  # an optional extra (NNI) that is not installed
            if "nni" not in str(e):
                raise
            continue
        for _, obj in inspect.getmembers(module, inspect.isclass):
            error = issubclass(obj, BaseException) and not issubclass(obj, Warning)
            if error and obj.__module__ == info.name:
                found.append(obj)
    return found


def test_every_nasflow_exception_derives_from_nasflow_error() -> None:
    exceptions = _package_exceptions()
    assert len(exceptions) >= 15
    loose = [e.__qualname__ for e in exceptions if not issubclass(e, NasflowError)]
    assert not loose, f"exceptions without the NasflowError base: {loose}"
    from nasflow.export import ExportError
    from nasflow.train import CheckpointError

    assert issubclass(ExportError, ValueError) and issubclass(CheckpointError, RuntimeError)


def test_the_cli_reports_any_nasflow_error_in_one_line(monkeypatch, capsys) -> None:
    from nasflow import cli
    from nasflow.bench import TableError

    def broken(args: object) -> int:  # a command meeting an error the CLI never listed
        raise TableError("table 'x.csv' has no column 'accuracy'")

    monkeypatch.setattr(cli, "_cmd_spaces", broken)
    assert cli.main(["spaces"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["nasflow: error: table 'x.csv' has no column 'accuracy'"]


def test_catching_nasflow_error_catches_nothing_else() -> None:
    with pytest.raises(KeyError):
        try:
            raise KeyError("x")
        except NasflowError:  # pragma: no cover - must not catch
            pytest.fail("NasflowError caught a KeyError")
