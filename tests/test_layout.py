"""Where things may live: every ``nasflow:*`` key in ``nasflow.record``, and no private
``nasflow.search`` module imported from outside ``nasflow/search/``."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RECORD = ROOT / "nasflow" / "record.py"

#: A key: ``nasflow:`` followed by a key name, or ending the literal (a bare prefix).
#: Prose ("nasflow: error: ...") has a space after the colon.
_KEY = re.compile(r"(?<![\w.-])nasflow:(?=[A-Za-z_{]|$)")
#: A private module of nasflow.search, in an import statement or a string (a subprocess
#: script, ``importlib.import_module``).
_PRIVATE_SEARCH = re.compile(r"\bnasflow\.search\._\w+")


def _sources(*folders: str) -> list[Path]:
    return sorted(p for f in folders for p in (ROOT / f).rglob("*.py"))


def _docstrings(tree: ast.Module) -> set[int]:
    """``id`` of every docstring node (module, class, function)."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                found.add(id(body[0].value))
    return found


def key_literals(source: str) -> list[str]:
    """The string literals of ``source`` (docstrings aside) that hold a ``nasflow:`` key."""
    tree = ast.parse(source)
    docs = _docstrings(tree)
    hits = []
    for node in ast.walk(tree):
        text = node.value if isinstance(node, ast.Constant) else None
        if isinstance(text, str) and id(node) not in docs and _KEY.search(text):
            hits.append(text)
    return hits


def test_the_key_check_finds_keys_and_ignores_prose() -> None:
    found = key_literals(
        '"""nasflow: a docstring naming ``"nasflow:space"``."""\n'
        'A = "nasflow:space"\n'
        "B = f\"nasflow:retrain:{n}\"\n"
        'C = "nasflow:"\n'
        "D = f\"space: {attrs.get('nasflow:fingerprint', '?')}\"\n"
        'E = ("No record (study user attribute "\n     "nasflow:stack). Prose around.")\n'
        'print(f"nasflow: error: {e}")\n'
    )
    assert sorted(found) == [
        "No record (study user attribute nasflow:stack). Prose around.",
        "nasflow:",
        "nasflow:fingerprint",
        "nasflow:retrain:",
        "nasflow:space",
    ]


def test_every_nasflow_key_is_defined_in_the_record_module() -> None:
    assert key_literals(RECORD.read_text(encoding="utf-8"))  # the check sees them there
    outside = {
        str(path.relative_to(ROOT)): hits
        for path in _sources("nasflow", "benchmarks")
        if path != RECORD and (hits := key_literals(path.read_text(encoding="utf-8")))
    }
    assert not outside, f"nasflow:* keys outside nasflow/record.py: {outside}"


def test_no_private_search_module_is_imported_from_outside_search() -> None:
    search, tests_search = ROOT / "nasflow" / "search", ROOT / "tests" / "search"
    outside = {}
    for path in _sources("nasflow", "benchmarks", "tests"):
        if search in path.parents or tests_search in path.parents or path == Path(__file__):
            continue
        text = path.read_text(encoding="utf-8")
        hits = _PRIVATE_SEARCH.findall(text)
        tree = ast.parse(text)
        for node in ast.walk(tree):  # from nasflow.search import _runner
            if isinstance(node, ast.ImportFrom) and node.module == "nasflow.search":
                hits += [f"nasflow.search.{a.name}" for a in node.names if a.name[0] == "_"]
            if isinstance(node, ast.ImportFrom) and node.module == "tests.search":
                hits += [f"tests.search.{a.name}" for a in node.names if a.name[0] == "_"]
        hits += re.findall(r"\btests\.search\._\w+", text)
        if hits:
            outside[str(path.relative_to(ROOT))] = sorted(set(hits))
    assert not outside, f"private nasflow.search modules imported outside it: {outside}"
