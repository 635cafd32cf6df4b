"""An export that the disk refuses (full, past a file-size limit) ends with one line naming
the file and the disk, exit code 2, and leaves nothing behind: no export folder, no
temporary folder. ``torch.export.save`` used to abort the process (SIGABRT, exit 134)."""

from __future__ import annotations

import errno
import io
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from nasflow.cli import main
from nasflow.export import _programs
from tests.export.conftest import TinyRun, export_args

REPO = Path(__file__).resolve().parents[2]
#: The environment of a process run under a file-size limit: no bytecode files (CPython
#: writes them with one unchecked write call: a limit would leave truncated ones behind).
LIMITED_ENV = {
    "PYTHONPATH": str(REPO),
    "PATH": "/usr/bin:/bin",
    "OMP_NUM_THREADS": "1",
    "PYTHONDONTWRITEBYTECODE": "1",
}


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


@pytest.mark.slow
@pytest.mark.parametrize(("kilobytes", "file"), [(4, "model.safetensors"), (40, "model.pt2")])
def test_an_export_past_a_file_size_limit_is_one_line_and_leaves_nothing(
    tiny_run: TinyRun, tmp_path: Path, kilobytes: int, file: str
) -> None:
    # RLIMIT_FSIZE: the kernel refuses a write past the limit (EFBIG) exactly where a full
    # disk refuses one (ENOSPC); Python ignores the SIGXFSZ that comes with it.
    out = tmp_path / "parent" / "exported"
    limit = kilobytes * 1024
    proc = subprocess.run(
        [sys.executable, "-m", "nasflow.cli", *export_args(tiny_run, out)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=LIMITED_ENV,
        preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit)),
        timeout=600,
    )
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith(f"nasflow: error: cannot write the export file '{out / file}': ")
    assert "file-size limit" in lines[0] and "the disk mounted at '" in lines[0]
    assert not out.exists() and not (tmp_path / "parent").exists()  # nothing half-written


def _full_disk_for(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The export's file writer finds the disk full at ``name`` (the first bytes go, the
    write call fails with ENOSPC, as the kernel's write does on a full disk)."""
    real_open = open

    class _Full(io.FileIO):
        def write(self, data) -> int:  # type: ignore[override]
            super().write(bytes(memoryview(data)[:10]))
            raise OSError(errno.ENOSPC, "No space left on device")

    def fake_open(path, mode="r", *args, **kwargs):
        if Path(path).name == name and "w" in mode:
            return _Full(path, "wb")
        return real_open(path, mode, *args, **kwargs)

    monkeypatch.setattr(_programs, "open", fake_open, raising=False)


@pytest.mark.slow
@pytest.mark.parametrize(
    "name", ["model.safetensors", "model.pt2", "model.onnx", "README.md", "arch.json"]
)
def test_a_full_disk_at_any_export_file_is_one_line_and_leaves_nothing(
    tiny_run: TinyRun,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    name: str,
) -> None:
    _full_disk_for(name, monkeypatch)
    out = tmp_path / "exported"
    assert main(export_args(tiny_run, out)) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert err[0].startswith(
        f"nasflow: error: cannot write the export file '{out / name}': the disk is full ("
    )
    assert not out.exists() and _leftovers(tmp_path) == []
