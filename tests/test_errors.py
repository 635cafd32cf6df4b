"""One base for nasflow's errors: every exception class the package defines derives from
``NasflowError`` (and keeps its built-in base), no source raises a bare built-in exception
on purpose, and the CLI reports any nasflow error as one line."""

from __future__ import annotations

import ast
import builtins
import importlib
import inspect
import pkgutil
from pathlib import Path

import pytest

import nasflow
from nasflow import NasflowError
from nasflow.errors import ConfigError

ROOT = Path(__file__).resolve().parents[1]
#: The folders whose modules nasflow installs.
SOURCES = ("nasflow", "search_spaces", "studies")

#: Built-in exception classes (``ValueError``, ``KeyError``...), by name.
BUILTIN_ERRORS = frozenset(
    name
    for name, obj in vars(builtins).items()
    if isinstance(obj, type) and issubclass(obj, BaseException)
)
#: Built-in exceptions that are a protocol's signal in these special methods, not errors.
PROTOCOL_RAISES = {
    "__getattr__": {"AttributeError"},
    "__getattribute__": {"AttributeError"},
    "__getitem__": {"KeyError", "IndexError"},
    "__missing__": {"KeyError"},
    "__next__": {"StopIteration"},
}


def _is_abstract(function: ast.AST) -> bool:
    decorators = getattr(function, "decorator_list", [])
    return any(
        (isinstance(d, ast.Name) and d.id == "abstractmethod")
        or (isinstance(d, ast.Attribute) and d.attr == "abstractmethod")
        for d in decorators
    )


def bare_builtin_raises(source: str, filename: str = "<source>") -> list[str]:
    """``"file:line: raise Name"`` for each deliberate raise of a built-in exception.

    A raise of a built-in class (``raise ValueError(...)``, ``raise KeyError``) counts;
    re-raises (``raise``, ``raise e``), ``NotImplementedError`` in an ``@abstractmethod``
    and a protocol's signal in its special method (``AttributeError`` in ``__getattr__``,
    ``KeyError``/``IndexError`` in ``__getitem__``...) do not.
    """
    found: list[str] = []

    def visit(node: ast.AST, function: ast.AST | None) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            function = node
        if isinstance(node, ast.Raise) and node.exc is not None:
            target = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
            name = target.id if isinstance(target, ast.Name) else None
            if name == "NotImplementedError" and function is not None:
                allowed = _is_abstract(function)
            else:
                special = getattr(function, "name", "")
                allowed = name in PROTOCOL_RAISES.get(special, ())
            if name in BUILTIN_ERRORS and not allowed:
                found.append(f"{filename}:{node.lineno}: raise {name}")
        for child in ast.iter_child_nodes(node):
            visit(child, function)

    visit(ast.parse(source, filename), None)
    return found


def test_the_bare_raise_checker_catches_a_planted_one() -> None:
    planted = """
from abc import ABC, abstractmethod

class Space(ABC):
    @abstractmethod
    def build(self):
        raise NotImplementedError

    def __getitem__(self, key):
        raise KeyError(key)

    def __getattr__(self, name):
        raise AttributeError(name)

def check(x):
    try:
        int(x)
    except ValueError as e:
        if x:
            raise
        raise e
    if x is None:
        raise ConfigError("fine: a nasflow error")
    if x == 1:
        raise ValueError(f"bad {x}")
    if x == 2:
        raise TypeError
    if x == 3:
        raise RuntimeError("state") from None
    if x == 4:
        raise KeyError("label")
    raise NotImplementedError("not abstract: a deliberate refusal")
"""
    found = bare_builtin_raises(planted, "planted.py")
    assert [f.split(": ", 1)[1] for f in found] == [
        "raise ValueError",
        "raise TypeError",
        "raise RuntimeError",
        "raise KeyError",
        "raise NotImplementedError",
    ]
    assert found[0] == "planted.py:25: raise ValueError"


def test_no_source_raises_a_bare_builtin_exception() -> None:
    files = [p for folder in SOURCES for p in sorted((ROOT / folder).rglob("*.py"))]
    assert len(files) > 100
    found = [
        hit
        for path in files
        for hit in bare_builtin_raises(path.read_text(), str(path.relative_to(ROOT)))
    ]
    assert not found, (
        "raise a NasflowError subclass (nasflow.errors: ConfigError for a bad value, "
        "StateError, NotFoundError...) instead of a bare built-in:\n" + "\n".join(found)
    )


def test_a_bad_space_argument_is_a_nasflow_error_and_a_value_error() -> None:
    from nasflow._checks import check_int

    with pytest.raises(NasflowError) as caught:
        check_int("epochs", 0)
    assert isinstance(caught.value, ValueError) and type(caught.value) is ConfigError


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
    from nasflow.tabular import TableError

    def broken(args: object) -> int:  # a command meeting an error the CLI never listed
        raise TableError("table 'x.csv' has no column 'accuracy'")

    monkeypatch.setitem(cli.COMMANDS, "spaces", broken)
    assert cli.main(["spaces"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["nasflow: error: table 'x.csv' has no column 'accuracy'"]


def test_catching_nasflow_error_catches_nothing_else() -> None:
    with pytest.raises(KeyError):
        try:
            raise KeyError("x")
        except NasflowError:  # pragma: no cover - must not catch
            pytest.fail("NasflowError caught a KeyError")


def test_a_bad_architecture_and_a_bad_budget_are_nasflow_errors() -> None:
    from nasflow.search import Budget
    from tests._spaces import tiny_mnist1d

    with pytest.raises(NasflowError, match="is not a choice"):
        tiny_mnist1d().validate({"no_such_label": 1})
    with pytest.raises(NasflowError):
        Budget(max_params=-1)
