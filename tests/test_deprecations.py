"""Renamed public names that the README documented keep working, with a
``DeprecationWarning``; undocumented old names are gone."""

from __future__ import annotations

import pytest

import nasflow.calibrate
import nasflow.search


def test_search_report_is_a_deprecated_alias_of_report_values() -> None:
    with pytest.warns(DeprecationWarning, match="report_values"):
        old = nasflow.search.report
    assert old is nasflow.search.report_values
    assert "report" not in vars(nasflow.search)["__all__"]


def test_calibrate_bench_stack_is_a_deprecated_alias_of_measure_stack() -> None:
    with pytest.warns(DeprecationWarning, match="measure_stack"):
        old = nasflow.calibrate.bench_stack
    assert old is nasflow.calibrate.measure_stack


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
    from nasflow.train.stack import StackLayer

    assert StackLayerRow is not StackLayer
