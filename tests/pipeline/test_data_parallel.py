"""A study started as ranks of a data-parallel group is refused at once, naming the group's
size, before anything is written: its phases are not data-parallel, and under ``torchrun``
the ranks deadlocked on the supernet's lock (one held it and waited in the process
group's set-up for the other, which waited for the lock)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from nasflow.cli import main
from tests._study_template import write_study

REPO = Path(__file__).resolve().parents[2]


def test_a_study_under_world_size_2_is_one_line_and_writes_nothing(
    tmp_path, monkeypatch, capsys
) -> None:
    study_file = write_study(tmp_path, name="ranks", n_trials=2, finetune=0)
    monkeypatch.setenv("WORLD_SIZE", "2")
    runs = tmp_path / "runs"
    for command in ("search", "worker"):
        storage = ["--storage", f"journal:///{tmp_path / 'j.log'}"] * (command == "worker")
        assert main([command, str(study_file), "--runs", str(runs), *storage]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "one of 2 data-parallel ranks (WORLD_SIZE=2" in err, err
        assert "`nasflow worker`" in err
    assert not runs.exists() and not (tmp_path / "j.log").exists()


@pytest.mark.slow
def test_torchrun_with_two_ranks_exits_at_once_instead_of_deadlocking(tmp_path) -> None:
    """Real ``torchrun`` processes (gloo on CPU): both ranks say why and exit; before, they
    waited on each other until killed."""
    study_file = write_study(tmp_path, name="ranks", n_trials=2, finetune=0)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("WORLD_SIZE", None)
    done = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
         "-m", "nasflow.cli", "search", str(study_file), "--runs", str(tmp_path / "runs"),
         "--no-progress"],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=180,
    )  # fmt: skip
    text = done.stdout + done.stderr
    assert done.returncode != 0, text
    assert text.count("nasflow: error: a study runs in one process, not as one of 2") == 2, text
    assert not (tmp_path / "runs").exists()
