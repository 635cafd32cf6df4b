"""Read-only commands write nothing into a SQLite file that is not an Optuna study, and
``show`` says when a study has no completed trial."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

import optuna
import pytest

from nasflow.cli import main


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _commands(url: str, tmp_path: Path) -> dict[str, list[str]]:
    runs = str(tmp_path / "runs")
    return {
        "studies": ["studies", "--storage", url],
        "show": ["show", "mine", "--storage", url],
        "report": ["report", "mine", "--storage", url, "--out-file", str(tmp_path / "r.html")],
        "export": ["export", "mine", "--storage", url, "--runs", runs, "--out", "e", "--no-onnx"],
    }


@pytest.mark.parametrize("command", ["studies", "show", "report", "export"])
def test_a_users_sqlite_database_is_refused_and_left_untouched(tmp_path, capsys, command) -> None:
    db = tmp_path / "notes.db"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT)")
        conn.execute("INSERT INTO notes (text) VALUES ('keep me')")
    conn.close()
    before, files = _digest(db), sorted(tmp_path.iterdir())
    assert main(_commands(f"sqlite:///{db}", tmp_path)[command]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert f"{str(db)!r} is not an Optuna study database" in err
    assert "nothing was written to it" in err
    assert _digest(db) == before and sorted(tmp_path.iterdir()) == files
    with sqlite3.connect(db) as conn:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master")]
    conn.close()
    assert tables == ["notes"]  # Optuna's tables were not created


@pytest.mark.parametrize("command", ["studies", "show"])
def test_a_file_that_is_not_sqlite_is_refused_and_left_untouched(
    tmp_path, capsys, command
) -> None:
    text = tmp_path / "notes.txt"
    text.write_text("my notes, not a database\n" * 100)
    assert main(_commands(f"sqlite:///{text}", tmp_path)[command]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is not a SQLite study file" in err
    assert text.read_text() == "my notes, not a database\n" * 100


def test_show_says_when_no_trial_has_completed(tmp_path, capsys) -> None:
    url = f"sqlite:///{tmp_path / 'study.db'}"
    study = optuna.create_study(study_name="mine", storage=url)
    study.ask()  # running
    study.tell(study.ask(), state=optuna.trial.TrialState.FAIL)
    capsys.readouterr()
    assert main(["show", "mine", "--storage", url]) == 0
    out = capsys.readouterr().out
    assert out == "study 'mine' has no completed trial yet (1 fail, 1 running)\n"
    empty = optuna.create_study(study_name="empty", storage=url)
    assert main(["show", empty.study_name, "--storage", url]) == 0
    assert capsys.readouterr().out == "study 'empty' has no completed trial yet (no trials)\n"
    assert main(["show", "mine", "--storage", url, "--trained"]) == 0
    assert capsys.readouterr().out == "study 'mine' has trained no model yet\n"
    assert main(["show", "mine", "--storage", url, "--trained", "--json"]) == 0
    assert capsys.readouterr().out == "[]\n"
