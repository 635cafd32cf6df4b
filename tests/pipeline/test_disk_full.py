"""A search whose study database the disk refuses (past a file-size limit, as on a full
disk) ends with one line naming the database and its disk, exit code 2: not Optuna's
guess of "invalid data ... exceeding max length", not a traceback."""

from __future__ import annotations

import errno
import os
import resource
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from nasflow._files import atomic_write
from nasflow.errors import WriteError
from nasflow.storage import resolve_storage, storage_failure
from tests._study_template import write_study

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_a_study_database_the_disk_refuses_is_one_line(tmp_path: Path) -> None:
    # 170 kB: the supernet checkpoint (about 140 kB) fits, the study database does not
    # once screening writes its trials (nothing else is written there: no shared cache).
    study = write_study(tmp_path, name="full", n_trials=30, finetune=0)
    limit = 170 * 1024
    proc = subprocess.run(
        [sys.executable, "-m", "nasflow.cli", "search", str(study), "--no-progress"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={
            **os.environ,
            "PYTHONPATH": str(REPO),
            "PYTHONDONTWRITEBYTECODE": "1",  # (a limit would truncate bytecode files)
            "OMP_NUM_THREADS": "1",
            "NASFLOW_COST_CACHE": "off",
        },
        preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit)),
        timeout=900,
    )
    assert proc.returncode == 2, proc.stdout + proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("nasflow: error:")]
    assert len(errors) == 1, proc.stderr
    assert "cannot write " in errors[0] and "'runs/full/study.db'" in errors[0], errors[0]
    assert "the disk mounted at '" in errors[0]
    assert "Traceback" not in proc.stderr and "exceeding max length" not in proc.stderr


def test_sqlites_full_database_is_named_with_its_disk(tmp_path: Path) -> None:
    # SQLite says "database or disk is full" (SQLITE_FULL) when a database cannot grow:
    # made to happen here with max_page_count, as a full disk makes it happen.
    path = tmp_path / "study.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE t (x BLOB)")
    conn.execute("PRAGMA max_page_count = 2")
    with pytest.raises(sqlite3.OperationalError) as full:
        conn.execute("INSERT INTO t VALUES (?)", (b"x" * 100_000,))
    conn.close()
    failed = storage_failure(full.value, resolve_storage(f"sqlite:///{path}", "unused"))
    assert isinstance(failed, WriteError)
    want = f"cannot write the study database {str(path)!r}: the disk is full ("
    assert str(failed).startswith(want)


def test_a_checkpoint_the_disk_refuses_names_it_and_keeps_the_previous_file(tmp_path) -> None:
    path = tmp_path / "epoch-1.pt"
    path.write_bytes(b"previous")

    def full(f) -> None:
        f.write(b"partial")
        raise OSError(errno.ENOSPC, "No space left on device")

    with pytest.raises(WriteError, match=r"cannot write '.*epoch-1\.pt': the disk is full \("):
        atomic_write(path, full)
    assert path.read_bytes() == b"previous" and sorted(os.listdir(tmp_path)) == ["epoch-1.pt"]
