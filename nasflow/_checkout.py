"""``nasflow.search_spaces`` and ``nasflow.studies`` in a source checkout.

The repository keeps the ready spaces and studies in its root folders ``search_spaces/``
and ``studies/``; setuptools installs them as ``nasflow.search_spaces`` and
``nasflow.studies`` (``package_dir`` in ``setup.py``). When ``nasflow`` itself is imported
from a checkout (run from the repository root, or an editable install), this finder maps
the two names to that checkout's folders, so a checkout never imports another checkout's
spaces (an editable install of a sibling worktree) and runs from the source tree without
an install. An installed wheel has no such folders beside ``nasflow/``: nothing is mapped.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

#: Subpackage of ``nasflow`` -> its folder at the repository root.
FOLDERS = {"nasflow.search_spaces": "search_spaces", "nasflow.studies": "studies"}


class CheckoutFinder(importlib.abc.MetaPathFinder):
    """Finds ``nasflow.search_spaces``/``nasflow.studies`` in the checkout's root folders.

    Args:
        root: The repository root (the folder holding ``nasflow/``).
    """

    def __init__(self, root: Path) -> None:
        self.root = root

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None = None,
        target: ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        folder = FOLDERS.get(fullname)
        init = self.root / folder / "__init__.py" if folder else None
        if init is None or not init.is_file():
            return None
        return importlib.util.spec_from_file_location(
            fullname, init, submodule_search_locations=[str(init.parent)]
        )


def install(package_dir: Path) -> None:
    """Put a :class:`CheckoutFinder` first in ``sys.meta_path`` if ``package_dir`` (the
    imported ``nasflow/``) sits in a checkout with ``search_spaces/`` or ``studies/``."""
    root = package_dir.parent
    if not any((root / f / "__init__.py").is_file() for f in FOLDERS.values()):
        return
    if not any(isinstance(f, CheckoutFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, CheckoutFinder(root))
