"""The package's import graph: no circle across packages, no private import across them.

Every ``import`` statement of every module counts, wherever it stands: at module level,
inside a function, or under ``if TYPE_CHECKING`` (a type-only import is still a
dependency of the design). ``import x`` and ``from x import y`` are read, relative imports
resolved.

A node of the graph is a top-level subpackage (``nasflow.train``, its subpackages
included) or a top-level module (``nasflow/storage.py`` is ``nasflow.storage``). The rules:

- The subpackage graph has no cycle.
- ``nasflow.<pkg>._x`` (any private module below a subpackage) is imported only from
  inside ``<pkg>``; other packages use what ``<pkg>/__init__.py`` exports.
- Exceptions, by design: the package root ``nasflow/__init__.py`` is the facade that
  lazily loads the rest, so its own imports are not edges, and importing the root itself
  (``import nasflow``, ``from nasflow import __version__``) is no edge either; top-level
  private modules ``nasflow/_x.py`` are shared helpers that any package may import.
"""

from __future__ import annotations

import ast
import itertools
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import nasflow

PACKAGE_DIR = Path(nasflow.__file__).parent


@dataclass(frozen=True)
class Import:
    """One imported module: where the import stands and what it names."""

    source: str  # importing module, "nasflow.train._loop"
    target: str  # imported module, "nasflow.supernet"
    where: str  # "nasflow/train/_loop.py:12"
    line: str  # the statement's first line

    def __str__(self) -> str:
        return f"{self.where}: {self.line}"


def _module_name(path: Path, root: Path, package: str) -> str:
    parts = [package, *path.relative_to(root).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_module(name: str, root: Path, package: str) -> bool:
    rel = Path(*name.split(".")[1:]) if "." in name else Path()
    return (root / rel).is_dir() or (root / rel).with_suffix(".py").is_file()


def imports(root: Path, package: str) -> Iterator[Import]:
    """Every import of a module of ``package`` (rooted at ``root``) by one of its modules."""
    for path in sorted(root.rglob("*.py")):
        source = _module_name(path, root, package)
        text = path.read_text()
        lines = text.splitlines()
        here = source if path.name == "__init__.py" else source.rpartition(".")[0]
        for node in ast.walk(ast.parse(text, filename=str(path))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = ".".join(here.split(".")[: len(here.split(".")) - node.level + 1])
                    module = f"{base}.{node.module}" if node.module else base
                else:
                    module = node.module or ""
                # ``from pkg import mod`` imports the module ``pkg.mod``.
                names = [
                    f"{module}.{a.name}"
                    if _is_module(f"{module}.{a.name}", root, package)
                    else module
                    for a in node.names
                ]
            else:
                continue
            where = f"{path.relative_to(root.parent)}:{node.lineno}"
            for target in dict.fromkeys(names):
                if target.split(".")[0] == package:
                    yield Import(source, target, where, lines[node.lineno - 1].strip())


def node_of(module: str) -> str:
    """The graph node of a module: its top-level subpackage or top-level module."""
    return ".".join(module.split(".")[:2])


def is_private(module: str) -> bool:
    """A module below a subpackage whose name (or a parent's) starts with ``_``."""
    return any(p.startswith("_") and not p.startswith("__") for p in module.split(".")[2:])


def graph(root: Path, package: str) -> dict[tuple[str, str], list[Import]]:
    """Cross-node edges, each with the imports that make it."""
    edges: dict[tuple[str, str], list[Import]] = {}
    for imp in imports(root, package):
        a, b = node_of(imp.source), node_of(imp.target)
        if imp.source == package or imp.target == package or a == b:
            continue
        edges.setdefault((a, b), []).append(imp)
    return edges


def cycles(edges: dict[tuple[str, str], list[Import]]) -> list[list[str]]:
    """The shortest cycle through each edge that lies on one, each cycle once."""
    succ: dict[str, set[str]] = {}
    for a, b in edges:
        succ.setdefault(a, set()).add(b)
        succ.setdefault(b, set())
    # Tarjan's strongly connected components; an edge inside one lies on a cycle.
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def strongconnect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(succ[v]):
            if w not in index:
                strongconnect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                components.append(sorted(comp))

    for v in sorted(succ):
        if v not in index:
            strongconnect(v)

    found: dict[tuple[str, ...], list[str]] = {}
    for comp in components:
        members = set(comp)
        for a, b in sorted(edges):
            if a not in members or b not in members:
                continue
            # The shortest way back from b to a closes the cycle through this edge.
            parents: dict[str, str] = {b: ""}
            queue = [b]
            while a not in parents:
                nxt = []
                for v in queue:
                    for w in sorted(succ[v] & members):
                        if w not in parents:
                            parents[w] = v
                            nxt.append(w)
                queue = nxt
            path = [a]
            while parents[path[-1]]:
                path.append(parents[path[-1]])
            cycle = [a, *reversed(path[1:])]
            i = cycle.index(min(cycle))  # one rotation per cycle
            key = tuple(cycle[i:] + cycle[:i])
            found.setdefault(key, [*key, key[0]])
    return [found[k] for k in sorted(found)]


def private_imports(root: Path, package: str) -> list[Import]:
    """Imports of a subpackage's private module from outside that subpackage."""
    return [
        imp
        for imp in imports(root, package)
        if imp.source != package
        and is_private(imp.target)
        and node_of(imp.source) != node_of(imp.target)
    ]


def describe_cycles(root: Path, package: str) -> str:
    edges = graph(root, package)
    out = []
    for cycle in cycles(edges):
        out.append(" -> ".join(cycle))
        for a, b in itertools.pairwise(cycle):
            out.extend(f"    {imp}" for imp in edges[(a, b)])
    return "\n".join(out)


def test_no_import_circle_across_packages() -> None:
    found = describe_cycles(PACKAGE_DIR, "nasflow")
    assert not found, f"import circles between nasflow's packages:\n{found}"


def test_no_private_module_is_imported_from_another_package() -> None:
    found = "\n".join(f"    {imp}" for imp in private_imports(PACKAGE_DIR, "nasflow"))
    assert not found, f"private modules imported from another package:\n{found}"


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_the_walk_finds_a_circle_and_a_private_import(tmp_path) -> None:
    root = tmp_path / "pkg"
    _write(
        root,
        {
            "__init__.py": "from pkg import _api\nfrom pkg.a import f\n",
            "_api.py": "from pkg.b._x import g\nimport pkg.c\n",
            "_shared.py": "",
            "cli.py": "from pkg import _shared\nimport pkg\nfrom pkg.a import f\n",
            "a/__init__.py": "from pkg.a._impl import f\n",
            "a/_impl.py": "from . import _more\n\ndef f():\n    from pkg.b import g\n",
            "a/_more.py": "",
            "b/__init__.py": "from ._x import g\n",
            "b/_x.py": (
                "from typing import TYPE_CHECKING\n"
                "if TYPE_CHECKING:\n    from ..c import h\n"
                "def g():\n    pass\n"
            ),
            "c/__init__.py": "from pkg.a._more import *\nfrom pkg import cli\n",
        },
    )
    edges = graph(root, "pkg")
    assert set(edges) == {
        ("pkg.cli", "pkg._shared"),
        ("pkg.cli", "pkg.a"),
        ("pkg.a", "pkg.b"),
        ("pkg.b", "pkg.c"),
        ("pkg.c", "pkg.a"),
        ("pkg.c", "pkg.cli"),
        ("pkg._api", "pkg.b"),
        ("pkg._api", "pkg.c"),
    }
    assert cycles(edges) == [
        ["pkg.a", "pkg.b", "pkg.c", "pkg.a"],
        ["pkg.a", "pkg.b", "pkg.c", "pkg.cli", "pkg.a"],
    ]
    text = describe_cycles(root, "pkg")
    assert "pkg/a/_impl.py:4: from pkg.b import g" in text
    assert "pkg/b/_x.py:3: from ..c import h" in text
    assert "pkg/c/__init__.py:1: from pkg.a._more import *" in text
    assert [str(i) for i in private_imports(root, "pkg")] == [
        "pkg/_api.py:1: from pkg.b._x import g",
        "pkg/c/__init__.py:1: from pkg.a._more import *",
    ]
    # Without the function-level import there is no circle left.
    (root / "a" / "_impl.py").write_text("from . import _more\n")
    assert cycles(graph(root, "pkg")) == []
