"""The public surface stays small: each package's ``__all__`` lists what a user or an
extension needs (Optuna's largest ``__all__`` has 25 names), and every name it lists is
there."""

from __future__ import annotations

import importlib
import pkgutil

import pytest

import nasflow

#: Most names one package may export.
MAX_NAMES = 30


def packages() -> list[str]:
    """nasflow and its public packages (none with a ``_`` in its path)."""
    found = ["nasflow"]
    for info in pkgutil.walk_packages(nasflow.__path__, "nasflow."):
        private = any(p.startswith("_") for p in info.name.split("."))
        if info.ispkg and not private:
            found.append(info.name)
    return found


@pytest.mark.parametrize("name", packages())
def test_a_package_exports_few_names_and_each_one_exists(name: str) -> None:
    module = importlib.import_module(name)
    names = list(module.__all__)
    assert len(set(names)) == len(names), f"{name}.__all__ repeats a name"
    missing = [n for n in names if not hasattr(module, n)]
    assert not missing, f"{name}.__all__ lists names it does not have: {missing}"
    assert len(names) <= MAX_NAMES, f"{name} exports {len(names)} names (at most {MAX_NAMES})"
