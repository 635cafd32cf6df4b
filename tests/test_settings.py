"""``nasflow.settings``: one reader of the environment, one cache-folder rule."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from nasflow import settings
from nasflow.cost import default_cache_path
from nasflow.data import default_cache_dir

ROOT = Path(__file__).resolve().parents[1]


def test_cache_dir_resolution_order(tmp_path: Path) -> None:
    home = Path.home() / ".cache" / "nasflow"
    assert settings.cache_dir({}) == home
    assert settings.cache_dir({"XDG_CACHE_HOME": ""}) == home
    assert settings.cache_dir({"XDG_CACHE_HOME": str(tmp_path)}) == tmp_path / "nasflow"
    both = {"XDG_CACHE_HOME": str(tmp_path), "NASFLOW_CACHE": str(tmp_path / "n")}
    assert settings.cache_dir(both) == tmp_path / "n"


def test_data_and_cost_caches_agree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NASFLOW_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert default_cache_dir() == tmp_path / "nasflow"
    assert default_cache_path() == default_cache_dir() / "cost.db"
    monkeypatch.setenv("NASFLOW_CACHE", str(tmp_path / "own"))
    assert default_cache_path() == default_cache_dir() / "cost.db" == tmp_path / "own/cost.db"


@pytest.mark.parametrize(
    ("value", "expected"),
    [("1", True), ("true", True), (" YES ", True), ("0", False), ("", False), ("no", False)],
)
def test_flags_share_one_parser(value: str, expected: bool) -> None:
    env = {settings.REMEASURE_ENV: value, settings.RECALIBRATE_ENV: value}
    assert settings.remeasure_requested(env) is expected
    assert settings.recalibration_requested(env) is expected
    assert settings.current(env).remeasure_costs is expected


def test_shared_table_setting() -> None:
    assert settings.shared_table_setting({}) is None
    assert settings.shared_table_setting({settings.SHARED_TABLE_ENV: " OFF "}) == settings.OFF
    assert settings.shared_table_setting({settings.SHARED_TABLE_ENV: "x.db"}) == "x.db"


def test_only_the_settings_module_reads_the_environment() -> None:
    reads = re.compile(r"os\.environ(?!\.update)|os\.getenv|getenv\(")
    outside = [
        f"{path.relative_to(ROOT)}:{n}"
        for path in sorted((ROOT / "nasflow").rglob("*.py"))
        if path.name != "settings.py"
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if reads.search(line)
    ]
    assert not outside, f"environment read outside nasflow/settings.py: {outside}"


def test_the_cublas_workspace_is_set_for_a_deterministic_run_and_unset_after(
    monkeypatch,
) -> None:
    monkeypatch.delenv(settings.CUBLAS_ENV, raising=False)
    unset = settings.fix_cublas_workspace()
    assert os.environ[settings.CUBLAS_ENV] == settings.CUBLAS_WORKSPACE
    unset()
    assert settings.CUBLAS_ENV not in os.environ
    monkeypatch.setenv(settings.CUBLAS_ENV, ":16:8")  # the user's own setting stays
    settings.fix_cublas_workspace()()
    assert os.environ[settings.CUBLAS_ENV] == ":16:8"
