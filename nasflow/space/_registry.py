"""The registry of installed spaces: the ``nasflow.spaces`` entry-point group.

A package registers a space class under a name in its ``pyproject.toml``::

    [project.entry-points."nasflow.spaces"]
    mnist1d = "nasflow.search_spaces.mnist1d:MNIST1DSpace"

The name must be the ``name`` the space gives itself (the one a study records), so that a
stored study or an exported architecture can find its space again.
"""

from __future__ import annotations

from collections.abc import Mapping
from importlib import import_module
from typing import Any

from nasflow._entry_points import SPACES, registered
from nasflow.errors import ConfigError
from nasflow.space._space import SearchSpace


def registered_spaces() -> dict[str, str]:
    """Registered space name -> ``"module:Class"`` target."""
    return registered(SPACES)


def space_class(name: str) -> type[SearchSpace]:
    """The ``SearchSpace`` subclass registered under ``name``.

    Raises:
        ValueError: ``name`` is not registered, or its target is not a ``SearchSpace``
            class; the message names it and lists the registered names.
    """
    spaces = registered_spaces()
    if name not in spaces:
        raise ConfigError(
            f"unknown space {name!r}; registered spaces: {sorted(spaces)}; register it under "
            f'the "nasflow.spaces" entry point ({name} = "package.module:Class" in '
            "pyproject.toml, then reinstall), pass the study file that defines it (nasflow "
            "export STUDY_FILE.py, or --study), or export from Python with "
            "nasflow.export_winner(result, ...)"
        )
    module, _, attr = spaces[name].partition(":")
    try:
        cls = getattr(import_module(module), attr)
    except (ImportError, AttributeError) as e:
        raise ConfigError(
            f"space {name!r} is registered as {spaces[name]!r}, which does not import: {e}"
        ) from None
    if not (isinstance(cls, type) and issubclass(cls, SearchSpace)):
        raise ConfigError(f"space {name!r} ({spaces[name]}) is not a SearchSpace subclass")
    return cls


def rebuild_space(
    name: str,
    config: Mapping[str, Any] | None = None,
    fingerprint: str | None = None,
    cls: type[SearchSpace] | None = None,
) -> SearchSpace:
    """Re-create a space from its registered name and stored ``config``.

    Args:
        name: The space's name (its registry name).
        config: The space's ``config`` as stored; ``None`` builds the default space.
        fingerprint: When given, the rebuilt space must have this fingerprint.
        cls: Use this class instead of the registry's (a space defined in a script or a
            notebook); the name and fingerprint are checked all the same.

    Raises:
        ValueError: Unknown name, a config the class cannot take, a space that names
            itself differently, or a fingerprint mismatch (both fingerprints are named).
    """
    cls = space_class(name) if cls is None else cls
    try:
        space = cls() if config is None else cls.from_config(config)
    except (TypeError, ValueError) as e:
        raise ConfigError(
            f"space {name!r} cannot be rebuilt from config {config!r}: {e}"
        ) from None
    if space.name != name:
        raise ConfigError(f"{cls.__name__} builds a space named {space.name!r}, not {name!r}")
    if fingerprint is not None and space.fingerprint() != fingerprint:
        raise ConfigError(
            f"space {name!r} rebuilt from config {dict(config or {})!r} has fingerprint "
            f"{space.fingerprint()!r}, not the recorded {fingerprint!r}: the space's "
            "definition changed since, or the record was altered"
        )
    return space


def is_registered(space: SearchSpace) -> bool:
    """Whether the registry alone re-creates ``space``: its name is registered and the
    registered class rebuilds it from its ``config`` with its fingerprint. Then a stored
    study or an export finds its space by name (``nasflow export NAME``,
    ``nasflow.load_exported(dir)``); otherwise they need the space given (the study file,
    ``load_exported(dir, space=...)``).
    """
    try:
        rebuild_space(space.name, space.config, space.fingerprint())
    except ValueError:  # unknown name, a class that does not import or rebuild, another space
        return False
    return True
