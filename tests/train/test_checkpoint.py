"""Checkpoint files: atomic writes, corrupt and truncated files, fallback to the last good."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch
from torch.utils.data import TensorDataset

from nasflow._files import atomic_write
from nasflow._logging import lines_to
from nasflow.record import DIGEST_KEY
from nasflow.train import (
    CheckpointError,
    SupernetConfig,
    SupernetTrainer,
    list_checkpoints,
    load_checkpoint,
    load_latest,
    save_checkpoint,
)
from tests._spaces import tiny_mnist1d

REPO = Path(__file__).resolve().parents[2]


def _state(seed: int) -> dict:
    g = torch.Generator().manual_seed(seed)
    return {"w": torch.randn(64, 64, generator=g), "step": seed, "name": f"s{seed}"}


def _same(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(
        torch.equal(a[k], b[k]) if isinstance(a[k], torch.Tensor) else a[k] == b[k] for k in a
    )


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


def test_round_trip_checks_a_digest_and_plain_torch_files_still_load(tmp_path) -> None:
    path = save_checkpoint(tmp_path / "epoch-1.pt", _state(1))
    assert _same(load_checkpoint(path), _state(1))
    assert DIGEST_KEY in torch.load(path, weights_only=True)  # stored, then stripped on load
    torch.save(_state(2), tmp_path / "plain.pt")
    assert _same(load_checkpoint(tmp_path / "plain.pt"), _state(2))
    with pytest.raises(ValueError, match="reserved"):
        save_checkpoint(tmp_path / "x.pt", {DIGEST_KEY: "forged"})


@pytest.mark.parametrize("damage", ["truncate", "flip", "empty", "garbage"])
def test_a_damaged_checkpoint_raises_a_typed_error_naming_the_file(tmp_path, damage) -> None:
    path = save_checkpoint(tmp_path / "epoch-2.pt", _state(2))
    data = path.read_bytes()
    if damage == "truncate":
        path.write_bytes(data[: len(data) // 2])
    elif damage == "flip":  # one byte inside the tensor data: the zip reader misses this
        i = data.index(_state(2)["w"].numpy().tobytes()[:16]) + 100
        path.write_bytes(data[:i] + bytes([data[i] ^ 0x55]) + data[i + 1 :])
    elif damage == "empty":
        path.write_bytes(b"")
    else:
        path.write_bytes(b"not a checkpoint at all" * 10)
    with pytest.raises(CheckpointError, match=r"epoch-2\.pt") as info:
        load_checkpoint(path)
    assert info.value.path == path
    if damage == "flip":
        assert "digest" in str(info.value)


class _Payload:
    """Anything that needs pickle to load."""


def test_a_checkpoint_that_needs_pickle_is_refused_not_unpickled(tmp_path) -> None:
    path = tmp_path / "epoch-1.pt"
    torch.save({"obj": _Payload()}, path)
    with pytest.raises(CheckpointError, match=r"epoch-1\.pt.*Unpickl|weights_only"):
        load_checkpoint(path)
    torch.save([torch.zeros(2)], tmp_path / "epoch-2.pt")
    with pytest.raises(CheckpointError, match="expected a dict"):
        load_checkpoint(tmp_path / "epoch-2.pt")
    with pytest.raises(CheckpointError, match="no such file"):
        load_checkpoint(tmp_path / "epoch-9.pt")


def test_load_latest_falls_back_to_the_newest_valid_checkpoint(tmp_path) -> None:
    for epoch in (1, 2, 3):
        save_checkpoint(tmp_path / f"epoch-{epoch}.pt", _state(epoch))
    save_checkpoint(tmp_path / "epoch-3-batch-2.pt", _state(32))
    order = [p.name for _, p in list_checkpoints(tmp_path)]
    assert order == ["epoch-3-batch-2.pt", "epoch-3.pt", "epoch-2.pt", "epoch-1.pt"]
    for name in ("epoch-3-batch-2.pt", "epoch-3.pt"):  # the two newest are cut off
        path = tmp_path / name
        path.write_bytes(path.read_bytes()[:300])
    bad: list[CheckpointError] = []
    found = load_latest(tmp_path, on_bad=bad.append)
    assert found is not None
    progress, state = found
    assert tuple(progress) == (2, 0) and _same(state, _state(2))
    assert [e.path.name for e in bad] == ["epoch-3-batch-2.pt", "epoch-3.pt"]
    assert load_latest(tmp_path / "nothing-here") is None


def test_a_write_that_fails_half_way_leaves_the_previous_file_intact(tmp_path) -> None:
    path = save_checkpoint(tmp_path / "epoch-1.pt", _state(1))
    before = path.read_bytes()

    def half_then_fail(f) -> None:
        f.write(before[: len(before) // 2])
        raise OSError(28, "No space left on device (injected)")

    with pytest.raises(OSError, match="the disk is full"):
        atomic_write(path, half_then_fail)
    assert path.read_bytes() == before and _same(load_checkpoint(path), _state(1))
    assert _leftovers(tmp_path) == []
    with pytest.raises(ValueError, match="'a'"):
        atomic_write(path, half_then_fail, mode="a")


@pytest.mark.slow
def test_a_full_disk_leaves_the_previous_checkpoint_intact(tmp_path) -> None:
    """A real process whose file-size limit is below the new checkpoint's size: the kernel
    refuses the write (EFBIG) half-way, as it would on a full disk."""
    path = save_checkpoint(tmp_path / "epoch-1.pt", _state(1))
    before = path.read_bytes()
    script = textwrap.dedent(
        f"""
        import resource, signal, torch
        from nasflow.train import save_checkpoint
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # get EFBIG instead of a signal
        big = {{"w": torch.randn(256, 1024), "step": 2}}  # about 1 MB
        resource.setrlimit(resource.RLIMIT_FSIZE, (64 * 1024, resource.RLIM_INFINITY))
        try:
            save_checkpoint({str(path)!r}, big)
        except OSError as e:
            print("refused", e.errno)
        """
    )
    proc = subprocess.run(
        [sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("refused"), proc.stdout + proc.stderr
    assert path.read_bytes() == before and _same(load_checkpoint(path), _state(1))
    assert _leftovers(tmp_path) == []


def test_the_supernet_trainer_resumes_from_the_newest_valid_checkpoint(tmp_path) -> None:
    g = torch.Generator().manual_seed(0)
    data = TensorDataset(torch.randn(48, 1, 40, generator=g), torch.randint(0, 10, (48,)))
    space = tiny_mnist1d()
    config = SupernetConfig(epochs=2, batch_size=16)
    SupernetTrainer(space, data, config, tmp_path).fit()
    newest = tmp_path / "epoch-2.pt"
    newest.write_bytes(newest.read_bytes()[:-100])
    logged: list[str] = []
    with lines_to(logged.append):
        result = SupernetTrainer(space, data, config, tmp_path).fit()
    assert result.resumed_from == 1  # epoch 2 was retrained from epoch 1
    assert any("skipping" in m and "epoch-2.pt" in m for m in logged)
    assert load_checkpoint(newest)["progress"] == [2, 0]  # rewritten, loadable again
    other = SupernetConfig(epochs=2, batch_size=16, lr=1e-2)
    with pytest.raises(CheckpointError, match="another space or supernet configuration"):
        SupernetTrainer(space, data, other, tmp_path).fit()


def test_atomic_write_gives_the_permissions_of_an_ordinary_write(tmp_path) -> None:
    # The temporary file is created 0600; the result must not stay private to its owner.
    old = os.umask(0o022)
    try:
        atomic_write(tmp_path / "a.bin", lambda f: f.write(b"x"))
        (tmp_path / "plain.bin").write_bytes(b"x")
    finally:
        os.umask(old)
    mode = (tmp_path / "a.bin").stat().st_mode & 0o777
    assert mode == (tmp_path / "plain.bin").stat().st_mode & 0o777 == 0o644
