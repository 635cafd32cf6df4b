"""Every environment variable nasflow reads, read in one place.

The variables (all optional):

- ``NASFLOW_CACHE``: the per-user cache folder (MNIST-1D arrays, decoded image tensors,
  the shared measurement table ``cost.db``). Resolution, one rule for every cache file:
  ``$NASFLOW_CACHE``, else ``$XDG_CACHE_HOME/nasflow``, else ``~/.cache/nasflow``
  (``XDG_CACHE_HOME`` is honoured because it is what the user set for every program's
  cache; an empty variable counts as unset).
- ``NASFLOW_COST_CACHE``: the measurement table shared by every study of this user (op
  latencies and ``stack="auto"`` calibrations): a file path, ``sqlite:///FILE`` or
  ``postgresql://...``; ``off`` shares nothing; unset: ``CACHE/cost.db``.
- ``NASFLOW_REMEASURE_COSTS``, ``NASFLOW_RECALIBRATE_STACK``: flags (``1``, ``true`` or
  ``yes``, any case) asking for a fresh cost table or stack calibration.
- ``NASFLOW_HEARTBEAT_INTERVAL``, ``NASFLOW_GRACE_PERIOD``: trial heartbeat settings
  (validated by ``nasflow.search``'s recovery module).
- ``WORLD_SIZE``: set by ``torchrun`` (how many processes a DDP run has).
- ``CUBLAS_WORKSPACE_CONFIG``: cuBLAS's workspace; a deterministic study sets it where the
  user did not (:func:`fix_cublas_workspace`), as PyTorch's notes on reproducibility ask.

The functions read the environment when called (no value is frozen at import, so a test or
a notebook that sets a variable sees it at once); :func:`current` reads them all at once
into a :class:`Settings`. Nothing else in ``nasflow`` reads ``os.environ``; code that sets
variables for child processes (the DDP launcher) writes it directly.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

#: The cache folder (see the module docstring for the resolution rule).
CACHE_ENV = "NASFLOW_CACHE"
#: The shared measurement table (a file path, ``sqlite:///FILE``, ``postgresql://...``).
SHARED_TABLE_ENV = "NASFLOW_COST_CACHE"
#: Flag: measure the cost table again.
REMEASURE_ENV = "NASFLOW_REMEASURE_COSTS"
#: Flag: calibrate the ``stack="auto"`` stack again.
RECALIBRATE_ENV = "NASFLOW_RECALIBRATE_STACK"
#: Seconds between trial heartbeats (RDB storages).
HEARTBEAT_INTERVAL_ENV = "NASFLOW_HEARTBEAT_INTERVAL"
#: Seconds without a heartbeat before a trial's worker counts as dead.
GRACE_PERIOD_ENV = "NASFLOW_GRACE_PERIOD"
#: Value of :data:`SHARED_TABLE_ENV` that shares nothing.
#: Folder of the locks keyed by a file's identity (default: a per-user temporary folder).
LOCK_DIR_ENV = "NASFLOW_LOCK_DIR"

OFF = "off"
#: What a flag variable accepts as true (after stripping, any case).
_TRUE = ("1", "true", "yes")


def _env(environ: Mapping[str, str] | None) -> Mapping[str, str]:
    return os.environ if environ is None else environ


def flag(name: str, environ: Mapping[str, str] | None = None) -> bool:
    """Whether the flag variable ``name`` is set to ``1``, ``true`` or ``yes`` (any case)."""
    return _env(environ).get(name, "").strip().lower() in _TRUE


def raw(name: str, environ: Mapping[str, str] | None = None) -> str | None:
    """The value of ``name`` as set (``None`` when unset)."""
    return _env(environ).get(name)


#: cuBLAS needs a fixed workspace for deterministic matrix products.
CUBLAS_ENV, CUBLAS_WORKSPACE = "CUBLAS_WORKSPACE_CONFIG", ":4096:8"


def fix_cublas_workspace() -> Callable[[], None]:
    """Set ``CUBLAS_WORKSPACE_CONFIG`` for deterministic cuBLAS products where it is unset;
    returns the function that unsets it again (nothing where the user had set it)."""
    if os.environ.get(CUBLAS_ENV) is not None:
        return lambda: None
    os.environ[CUBLAS_ENV] = CUBLAS_WORKSPACE

    def unset() -> None:
        os.environ.pop(CUBLAS_ENV, None)

    return unset


def cache_dir(environ: Mapping[str, str] | None = None) -> Path:
    """The cache folder: ``$NASFLOW_CACHE``, else ``$XDG_CACHE_HOME/nasflow``, else
    ``~/.cache/nasflow``."""
    env = _env(environ)
    root = env.get(CACHE_ENV)
    if root:
        return Path(root)
    xdg = env.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "nasflow"


def shared_table_setting(environ: Mapping[str, str] | None = None) -> str | None:
    """``$NASFLOW_COST_CACHE`` stripped: ``None`` when unset or empty (the cache file),
    else the location or :data:`OFF`."""
    value = _env(environ).get(SHARED_TABLE_ENV, "").strip()
    if not value:
        return None
    return OFF if value.lower() == OFF else value


def remeasure_requested(environ: Mapping[str, str] | None = None) -> bool:
    """Whether ``$NASFLOW_REMEASURE_COSTS`` asks for a fresh cost table."""
    return flag(REMEASURE_ENV, environ)


def recalibration_requested(environ: Mapping[str, str] | None = None) -> bool:
    """Whether ``$NASFLOW_RECALIBRATE_STACK`` asks for a fresh stack calibration."""
    return flag(RECALIBRATE_ENV, environ)


def world_size(environ: Mapping[str, str] | None = None) -> int:
    """``$WORLD_SIZE`` (set by ``torchrun``), 1 when unset."""
    return int(_env(environ).get("WORLD_SIZE", "1"))


@dataclass(frozen=True)
class Settings:
    """Every setting read from the environment at one moment (see :func:`current`).

    Attributes:
        cache_dir: The cache folder.
        shared_table: ``$NASFLOW_COST_CACHE`` (``None``: the cache file; ``"off"``).
        remeasure_costs: ``$NASFLOW_REMEASURE_COSTS``.
        recalibrate_stack: ``$NASFLOW_RECALIBRATE_STACK``.
        heartbeat_interval: ``$NASFLOW_HEARTBEAT_INTERVAL`` as set (validated where used).
        grace_period: ``$NASFLOW_GRACE_PERIOD`` as set.
    """

    cache_dir: Path
    shared_table: str | None
    remeasure_costs: bool
    recalibrate_stack: bool
    heartbeat_interval: str | None
    grace_period: str | None


def current(environ: Mapping[str, str] | None = None) -> Settings:
    """The settings in ``environ`` (default: this process's environment), read now."""
    env = _env(environ)
    return Settings(
        cache_dir=cache_dir(env),
        shared_table=shared_table_setting(env),
        remeasure_costs=remeasure_requested(env),
        recalibrate_stack=recalibration_requested(env),
        heartbeat_interval=raw(HEARTBEAT_INTERVAL_ENV, env),
        grace_period=raw(GRACE_PERIOD_ENV, env),
    )
