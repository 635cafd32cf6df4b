"""`nasflow search` on bad input: one clear stderr line, exit code 2, nothing written."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from nasflow.cli import main
from tests.search._study_template import write_study


def _tree(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


@pytest.fixture
def in_tmp(tmp_path, monkeypatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["search", "no_such_study.py"], "study file 'no_such_study.py' does not exist"),
        (["search", "{nospace}"], "space must be a SearchSpace"),
        (["search", "{broken}"], "failed to run: RuntimeError: boom"),
        (["search", "{study}", "--storage", "mysql://u:pw@h/db"], "unknown storage"),
        (["search", "{study}", "--storage", "runs/x.db"], "unknown storage 'runs/x.db'"),
        (
            ["search", "{study}", "--storage", "postgresql://postgres:pw@127.0.0.1:9/test"],
            "cannot reach storage 'postgresql://postgres:***@127.0.0.1:9/test'",
        ),
        (["search", "{study}", "--n-trials", "0"], "--n-trials must be >= 1, got 0"),
        (["worker", "{study}", "--storage", "sqlite:///x.db"], "SQLite supports one process"),
    ],
)
def test_bad_input_is_one_line_exit_2_and_writes_nothing(in_tmp, capsys, args, message) -> None:
    files = {
        "study": write_study(in_tmp, name="cli"),
        "nospace": write_study(
            in_tmp, name="nospace", extra="study = StudySpec(name='x', space=None, data=data)"
        ),
        "broken": in_tmp / "broken.py",
    }
    files["broken"].write_text("raise RuntimeError('boom')\n")
    argv = [a.format(**{k: str(v) for k, v in files.items()}) for a in args]
    before = _tree(in_tmp)
    assert main([*argv, "--no-progress"] if argv[0] == "search" else argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert err[0].startswith("nasflow: error: ")
    assert message in err[0], err[0]
    assert "pw@" not in err[0]  # passwords never printed
    assert _tree(in_tmp) == before  # nothing written: no runs/, no database, no lock
    assert not os.path.exists(in_tmp / "runs")
