"""Nothing nasflow opens from its own run folder hangs or crashes on a FIFO, a link or a
file where a folder belongs: each is refused, or set aside, in one line."""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

from nasflow.cli import main
from nasflow.train import CheckpointError, load_checkpoint, save_checkpoint
from tests._study_template import write_study

FAST = "study = study.replace(cost='measure')"
HANG = 120


@contextlib.contextmanager
def _deadline(seconds: int = HANG) -> Iterator[None]:
    """Interrupt a blocked system call (``open`` on a FIFO) after ``seconds``."""

    def hung(*_: object) -> None:
        raise TimeoutError(f"still blocked after {seconds}s")

    old = signal.signal(signal.SIGALRM, hung)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def _search(tmp_path: Path, *extra: str) -> list[str]:
    study_file = write_study(tmp_path, n_trials=2, finetune=0, extra=FAST)
    return ["search", str(study_file), "--runs", str(tmp_path / "runs"), "--no-progress", *extra]


def test_a_fifo_in_the_winners_folder_neither_hangs_search_nor_export(tmp_path, capsys) -> None:
    assert main(_search(tmp_path)) == 0
    [winner] = (tmp_path / "runs" / "tiny" / "winners").iterdir()
    (winner / "model.safetensors").unlink()
    os.mkfifo(winner / "model.safetensors")
    capsys.readouterr()
    out = tmp_path / "export"
    with _deadline():
        args = ["export", "tiny", "--runs", str(tmp_path / "runs"), "--out", str(out)]
        assert main([*args, "--no-onnx", "--study", str(_search(tmp_path)[1])]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "FIFO" in err, err
    with _deadline():
        assert main(_search(tmp_path)) == 0  # retrained, the FIFO replaced
    printed = capsys.readouterr().out
    assert "FIFO" in printed and "retraining trial" in printed
    assert (winner / "model.safetensors").is_file()


@pytest.mark.parametrize("folder", ["supernet", "winners"])
@pytest.mark.parametrize("kind", ["symlink", "fifo"])
def test_a_link_or_fifo_where_a_folder_belongs_is_one_line(tmp_path, capsys, folder, kind):
    run = tmp_path / "runs" / "tiny"
    run.mkdir(parents=True)
    if kind == "symlink":
        (tmp_path / "elsewhere").mkdir()
        (run / folder).symlink_to(tmp_path / "elsewhere")
    else:
        os.mkfifo(run / folder)
    with _deadline():
        assert main(_search(tmp_path)) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not a folder" in err and folder in err, err


def test_a_fifo_or_linked_checkpoint_is_named_for_what_it_is(tmp_path) -> None:
    real = save_checkpoint(tmp_path / "real.pt", {"x": torch.zeros(2)})
    os.mkfifo(tmp_path / "epoch-1.pt")
    (tmp_path / "epoch-2.pt").symlink_to(real)
    with _deadline(), pytest.raises(CheckpointError, match="FIFO"):
        load_checkpoint(tmp_path / "epoch-1.pt")
    with pytest.raises(CheckpointError, match="symbolic link"):
        load_checkpoint(tmp_path / "epoch-2.pt")
