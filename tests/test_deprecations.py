"""No deprecation shims in an unreleased package: the old names are gone, not aliased."""

from __future__ import annotations

import pytest

import nasflow.calibrate
import nasflow.search
from nasflow.cli import build_parser


def test_the_renamed_names_are_gone() -> None:
    assert not hasattr(nasflow.search, "report")  # report_values
    assert not hasattr(nasflow.calibrate, "bench_stack")  # measure_stack
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    assert "bench-stack" not in sub.choices and "measure-stack" in sub.choices


def test_storage_names_live_in_nasflow_storage_only() -> None:
    import nasflow.storage

    for name in ("StorageError", "redact", "resolve_storage"):
        assert hasattr(nasflow.storage, name)
        assert not hasattr(nasflow.search, name), name


def test_the_renamed_modules_are_gone() -> None:
    with pytest.raises(ImportError):
        import nasflow.bench
    with pytest.raises(ImportError):
        import nasflow.calibrate._bench  # noqa: F401 - now nasflow.calibrate._harness
    from nasflow.report import StackLayerRow
    from nasflow.train.stack._base import StackLayer

    assert StackLayerRow is not StackLayer
