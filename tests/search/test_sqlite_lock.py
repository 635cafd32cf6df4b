"""The one-process lock of a SQLite study file holds through symbolic links."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from nasflow.pipeline import StudyRunner
from nasflow.search import load_study_file
from nasflow.storage import SQLiteLock, StorageError
from tests._study_template import write_study


def test_a_link_to_the_study_file_or_its_folder_meets_the_same_lock(tmp_path) -> None:
    real = tmp_path / "runs" / "tiny" / "study.db"
    real.parent.mkdir(parents=True)
    real.write_bytes(b"")
    (tmp_path / "link.db").symlink_to(real)
    (tmp_path / "linked-folder").symlink_to(real.parent)
    with SQLiteLock(real):  # what a running `nasflow search` holds
        for alias in (tmp_path / "link.db", tmp_path / "linked-folder" / "study.db"):
            with pytest.raises(StorageError, match="another nasflow worker") as info:
                SQLiteLock(alias).acquire()
            assert str(alias) in str(info.value) and str(real) in str(info.value)
        spec = load_study_file(write_study(tmp_path, n_trials=1, finetune=0))
        runner = StudyRunner(
            spec, f"sqlite:///{tmp_path / 'link.db'}", tmp_path / "out", progress=False
        )
        with pytest.raises(StorageError, match="SQLite supports one worker"):
            runner.run()
    assert real.read_bytes() == b""  # refused before anything was written
    with SQLiteLock(tmp_path / "link.db"):  # free again once released
        pass
    assert sorted(p.name for p in real.parent.iterdir()) == ["study.db", "study.db.lock"]


def test_the_lock_is_held_across_processes_and_freed_when_its_holder_is_killed(tmp_path) -> None:
    db = tmp_path / "study.db"
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLD, str(db)], cwd=REPO, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with pytest.raises(StorageError, match="another nasflow worker"):
            SQLiteLock(db).acquire()
    finally:
        holder.kill()  # SIGKILL: no release, no clean-up
        holder.wait(timeout=60)
    with SQLiteLock(db):  # the operating system dropped the dead process's lock
        pass


_HOLD = """
import sys, time
from pathlib import Path
from nasflow.storage import SQLiteLock
lock = SQLiteLock(Path(sys.argv[1]))
lock.acquire()
print("held", flush=True)
time.sleep(600)
"""
REPO = Path(__file__).resolve().parents[2]


def test_a_hard_link_to_the_study_file_meets_the_same_lock(tmp_path) -> None:
    real = tmp_path / "runs" / "tiny" / "study.db"
    real.parent.mkdir(parents=True)
    real.write_bytes(b"")
    hard = tmp_path / "hard.db"
    hard.hardlink_to(real)
    with SQLiteLock(real):  # what a running `nasflow search` holds
        with pytest.raises(StorageError, match="another nasflow worker") as info:
            SQLiteLock(hard).acquire()
        assert str(hard) in str(info.value) and "hard link" in str(info.value)
    with SQLiteLock(hard), pytest.raises(StorageError, match="another nasflow worker"):
        SQLiteLock(real).acquire()  # free again once released, then held through the link


def test_a_new_study_file_is_locked_by_identity_once_it_exists(tmp_path) -> None:
    db = tmp_path / "new" / "study.db"
    with SQLiteLock(db) as lock:  # the file does not exist yet: nothing is created
        assert not db.exists()
        db.write_bytes(b"")  # what opening the Optuna storage does
        lock.lock_identity()
        (tmp_path / "hard.db").hardlink_to(db)
        with pytest.raises(StorageError, match="another nasflow worker"):
            SQLiteLock(tmp_path / "hard.db").acquire()


def test_a_runner_on_a_hard_link_of_a_running_study_is_refused(tmp_path) -> None:
    spec = load_study_file(write_study(tmp_path, n_trials=1, finetune=0))
    spec = spec.replace(cost="measure")
    first = StudyRunner(spec, None, tmp_path / "runs", progress=False, log=lambda _: None)
    first.open_study()  # holds the locks, as a running `nasflow search` does
    try:
        (tmp_path / "hard.db").hardlink_to(first.storage.path)
        second = StudyRunner(
            spec, f"sqlite:///{tmp_path / 'hard.db'}", tmp_path / "out", progress=False
        )
        with pytest.raises(StorageError, match="hard link"):
            second.run()
    finally:
        first.close()
