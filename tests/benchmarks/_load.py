"""Load a benchmark script (``benchmarks/NAME``) as a module for the tests, and what the
benchmark tests expect of more than one script."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]


def load_benchmark(name: str) -> ModuleType:
    """``benchmarks/name`` imported as ``bench_name`` (registered in ``sys.modules``:
    dataclasses look their module up there)."""
    spec = importlib.util.spec_from_file_location(f"bench_{name}", ROOT / "benchmarks" / name)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


#: Every column B2 (``benchmarks/ranking.py``) reports for a ground with supernets, a
#: width choice and both proxies, written out here (not read from the script) so that a
#: column the script drops or adds fails the tests.
B2_COLUMNS = frozenset(
    {"acc", "CE", "rank sum", "ranker", "params", "FLOPs", "width", "synflow", "NWOT"}
)
