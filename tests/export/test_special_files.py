"""``load_exported`` opens regular files only: a FIFO, socket, link or folder in an export
is refused at once, unopened (a FIFO used to block it forever)."""

from __future__ import annotations

import os
import shutil
import socket
from collections.abc import Callable
from pathlib import Path

import pytest

from nasflow.export import ExportError, load_exported
from tests.export.conftest import deadline

#: Seconds ``load_exported`` gets before the test counts it as hung.
HANG = 60


@pytest.fixture
def copy(exported: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(exported, tmp_path / "e"))


def _fifo(path: Path) -> None:
    os.mkfifo(path)


def _socket(path: Path) -> None:
    s = socket.socket(socket.AF_UNIX)
    s.bind(str(path))
    s.close()  # the socket file stays


def _link_out(path: Path) -> None:
    path.symlink_to(path.parent.parent / "elsewhere.txt")


def _dir_link(path: Path) -> None:
    path.symlink_to("/")


def _folder(path: Path) -> None:
    path.mkdir()


def _replace(make: Callable[[Path], None]) -> Callable[[Path], None]:
    """Put ``make``'s thing in place of an existing file (kept beside it for the link)."""

    def put(path: Path) -> None:
        os.replace(path, path.parent.parent / "elsewhere.txt")
        make(path)

    return put


@pytest.mark.parametrize(
    ("name", "make", "kind"),
    [
        ("notes", _fifo, "a FIFO (named pipe)"),
        ("sub/pipe", _fifo, "a FIFO (named pipe)"),
        ("arch.json", _replace(_fifo), "a FIFO (named pipe)"),
        ("model.safetensors", _replace(_fifo), "a FIFO (named pipe)"),
        ("model.onnx", _replace(_fifo), "a FIFO (named pipe)"),
        ("sock", _socket, "a socket"),
        ("notes.txt", _link_out, "a symbolic link"),
        ("arch.json", _replace(_link_out), "a symbolic link"),
        ("model.safetensors", _replace(_link_out), "a symbolic link"),
        ("root", _dir_link, "a symbolic link"),
        ("arch.json", _replace(_folder), "a directory"),
        ("model.safetensors", _replace(_folder), "a directory"),
    ],
)
def test_anything_but_a_regular_file_is_refused_unopened(copy, name, make, kind) -> None:
    (copy.parent / "elsewhere.txt").write_text("not part of the export")
    (copy / name).parent.mkdir(exist_ok=True)
    make(copy / name)
    with deadline(HANG), pytest.raises(ExportError) as info:
        load_exported(copy)
    msg = str(info.value)
    assert name in msg and kind in msg and "\n" not in msg
