"""A SQLite study file's lock says who holds it (a worker or a dashboard) and is told
apart from a lock that cannot be taken at all (a folder where no lock file can be made)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from nasflow.storage import SQLiteLock, StorageError


def test_a_study_file_whose_lock_file_cannot_be_created_is_not_busy() -> None:
    with pytest.raises(StorageError) as info:
        SQLiteLock(Path("/proc/nasflow-x.db")).acquire()
    message = str(info.value)
    assert "another nasflow worker" not in message
    assert message.startswith("cannot lock the SQLite study file '/proc/nasflow-x.db': its lock ")
    assert "cannot be created" in message


def test_a_dashboard_holding_the_study_file_is_named(tmp_path) -> None:
    db = tmp_path / "study.db"
    db.touch()
    with SQLiteLock(db, role="dashboard"), pytest.raises(StorageError) as info:
        SQLiteLock(db).acquire()  # a search, refused
    message = str(info.value)
    assert message.startswith(f"a nasflow dashboard (process {os.getpid()}) is using ")
    assert "another nasflow worker" not in message and "stop it (Ctrl-C) first" in message
    with SQLiteLock(db), pytest.raises(StorageError, match="another nasflow worker \\(process"):
        SQLiteLock(db, role="dashboard").acquire()
