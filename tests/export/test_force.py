"""``export --force`` replaces only a complete export nasflow wrote, never anything else."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from nasflow.cli import main
from nasflow.export import ExportInfo
from tests.export.conftest import TinyRun, export_args


def _tree(folder: Path) -> dict[str, bytes | str]:
    out: dict[str, bytes | str] = {}
    for p in sorted(folder.rglob("*")):
        rel = p.relative_to(folder).as_posix()
        if p.is_symlink():
            out[rel] = f"-> {os.readlink(p)}"
        elif p.is_file():
            out[rel] = p.read_bytes()
        else:
            out[rel] = "dir"
    return out


def _refused(run: TinyRun, out: Path, capsys, *extra: str) -> str:
    before = _tree(out)
    assert main(export_args(run, out, "--best", "--no-onnx", "--force", *extra)) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("nasflow: error:"), err
    assert "refusing to replace it even with --force" in err
    assert _tree(out) == before  # nothing deleted, nothing added
    assert sorted(p.name for p in out.parent.iterdir() if p.name.startswith(".")) == []
    return err


@pytest.fixture
def real_export(tiny_run: TinyRun, tmp_path: Path) -> Path:
    out = tmp_path / "exp"
    assert main(export_args(tiny_run, out, "--trial", "0", "--no-onnx")) == 0
    return out


def test_a_user_folder_that_merely_holds_an_arch_json_is_not_deleted(
    tiny_run, tmp_path, capsys
) -> None:
    user = tmp_path / "P"
    (user / "src").mkdir(parents=True)
    (user / "arch.json").write_text("{}")
    (user / "src" / "a.py").write_text("x\n")
    err = _refused(tiny_run, user, capsys)
    assert "is not a nasflow export" in err and 'no "format"' in err
    assert (user / "src" / "a.py").read_text() == "x\n"


@pytest.mark.slow
def test_a_valid_arch_json_next_to_the_users_files_is_not_enough(
    tiny_run, real_export, tmp_path, capsys
) -> None:
    user = tmp_path / "mine"
    (user / "src").mkdir(parents=True)
    shutil.copy(real_export / "arch.json", user / "arch.json")
    (user / "src" / "a.py").write_text("x\n")
    err = _refused(tiny_run, user, capsys)
    assert "'src'" in err and "nasflow did not write" in err


@pytest.mark.slow
@pytest.mark.parametrize("change", ["extra file", "symlink", "edited weights", "missing file"])
def test_an_export_with_anything_nasflow_did_not_write_is_not_replaced(
    tiny_run, real_export, capsys, change
) -> None:
    if change == "extra file":
        (real_export / "notes.txt").write_text("my notes")
        why = "'notes.txt', which nasflow did not write"
    elif change == "symlink":
        (real_export / "data").symlink_to(real_export.parent)
        why = "'data', which nasflow did not write"
    elif change == "edited weights":
        with (real_export / "model.safetensors").open("ab") as f:
            f.write(b" ")
        why = "'model.safetensors' was changed after it was exported"
    else:
        (real_export / "README.md").unlink()
        why = "it lacks ['README.md']"
    assert why in _refused(tiny_run, real_export, capsys)


@pytest.mark.slow
def test_force_replaces_a_complete_export_and_a_pareto_export(tiny_run, tmp_path) -> None:
    out = tmp_path / "exp"
    assert main(export_args(tiny_run, out, "--trial", "0", "--no-onnx")) == 0
    assert main(export_args(tiny_run, out, "--trial", "1", "--no-onnx", "--force")) == 0
    assert ExportInfo.read(out).study["trial"] == 1
    front = tmp_path / "front"
    assert main(export_args(tiny_run, front, "--pareto", "--no-onnx")) == 0
    assert main(export_args(tiny_run, front, "--pareto", "--no-onnx", "--force")) == 0
    assert main(export_args(tiny_run, front, "--trial", "0", "--no-onnx", "--force")) == 0
    assert ExportInfo.read(front).study["trial"] == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["exp", "front"]


def test_force_refuses_a_readme_edited_after_the_export(tiny_run, real_export, capsys) -> None:
    readme = real_export / "README.md"
    readme.write_text(readme.read_text() + "\nmy notes\n")
    err = _refused(tiny_run, real_export, capsys)
    assert "'README.md' was changed after it was exported" in err
    assert readme.read_text().endswith("my notes\n")


def test_force_on_a_pareto_export_keeps_folders_it_does_not_write(
    tiny_run, real_export, tmp_path, capsys
) -> None:
    front = tmp_path / "front"
    assert main(export_args(tiny_run, front, "--pareto", "--no-onnx")) == 0
    written = sorted(p.name for p in front.iterdir())
    shutil.copytree(real_export, front / "trial-9999")  # a complete export, not this run's
    extra = _tree(front / "trial-9999")
    capsys.readouterr()
    assert main(export_args(tiny_run, front, "--pareto", "--no-onnx", "--force")) == 0
    assert sorted(p.name for p in front.iterdir()) == sorted([*written, "trial-9999"])
    assert _tree(front / "trial-9999") == extra
    out = capsys.readouterr().out
    assert f"--force replaced {', '.join(written)}" in out and "kept trial-9999" in out, out
