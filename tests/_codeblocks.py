"""The fenced code blocks of the README and the documentation, and how the tests run them.

The convention (``docs/guide/development.md``): every block runs in a test. Python blocks
of one file run in order in one namespace; shell blocks run in a scratch folder; TOML
blocks are parsed; ``text`` blocks are output or diagrams. A shell block that cannot run
in a test says why on the line right before its fence::

    <!-- not run: a full study, minutes; tests/test_cli.py runs small ones -->
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: Languages a block may have: run (python, bash), parsed (toml), shown (text).
LANGUAGES = ("python", "bash", "toml", "text")

_FENCE = re.compile(r"^```(\S*)\s*$")
_NOT_RUN = re.compile(r"^<!--\s*not run:(.*?)-->\s*$")


class BlockError(AssertionError):
    """A file's code blocks break the convention (named with the file and line)."""


@dataclass(frozen=True)
class Block:
    """One fenced code block.

    Attributes:
        path: The Markdown file.
        line: 1-based line of the opening fence.
        language: The fence's info string (``python``, ``bash``...).
        code: The block's text.
        not_run: The reason given on the line before the fence, or ``None``.
    """

    path: Path
    line: int
    language: str
    code: str
    not_run: str | None

    @property
    def where(self) -> str:
        path = self.path.relative_to(ROOT) if self.path.is_relative_to(ROOT) else self.path
        return f"{path}:{self.line}"


def blocks(path: Path) -> list[Block]:
    """The fenced code blocks of ``path``, in order.

    Raises:
        BlockError: An unclosed or indented fence (an indented block would not be run).
    """
    lines = path.read_text().splitlines()
    out: list[Block] = []
    i = 0
    while i < len(lines):
        if lines[i].lstrip().startswith("```") and not lines[i].startswith("```"):
            raise BlockError(f"{path}:{i + 1}: an indented code block is not run by the tests")
        m = _FENCE.match(lines[i])
        if m is None:
            i += 1
            continue
        end = next((j for j in range(i + 1, len(lines)) if lines[j].rstrip() == "```"), None)
        if end is None:
            raise BlockError(f"{path}:{i + 1}: code block never closed")
        marker = _NOT_RUN.match(lines[i - 1]) if i > 0 else None
        reason = marker.group(1).strip() if marker else None
        code = "\n".join(lines[i + 1 : end]) + "\n"
        out.append(Block(path, i + 1, m.group(1), code, reason))
        i = end + 1
    return out


def check_convention(block: Block) -> None:
    """Raise ``BlockError`` where ``block`` breaks the convention."""
    if block.language not in LANGUAGES:
        raise BlockError(
            f"{block.where}: code block language {block.language!r}; use one of {LANGUAGES}"
        )
    if block.not_run is not None and block.language != "bash":
        raise BlockError(f"{block.where}: only a shell block may be marked 'not run'")
    if block.not_run == "":
        raise BlockError(f"{block.where}: 'not run' without a reason")


def run_python(path: Path) -> dict[str, object]:
    """Run the Python blocks of ``path`` in order, in one namespace (the working
    directory is the caller's); the namespace is returned.

    Raises:
        AssertionError: Naming the block that failed and why.
    """
    namespace: dict[str, object] = {"__name__": f"docs:{path.name}"}
    for block in blocks(path):
        if block.language != "python":
            continue
        try:
            exec(compile(block.code, block.where, "exec"), namespace)
        except Exception as e:  # name the block that failed
            raise AssertionError(f"{block.where} failed: {e!r}\n{block.code}") from e
    return namespace


def run_shell(block: Block, cwd: Path, timeout: float = 300) -> None:
    """Run a shell block with ``bash -euo pipefail`` in ``cwd``, this interpreter's
    scripts (``nasflow``) first on the ``PATH``.

    Raises:
        AssertionError: The block exited non-zero (with its output).
    """
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    proc = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", block.code],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert proc.returncode == 0, (
        f"{block.where} exited {proc.returncode}:\n{block.code}\n{proc.stdout}\n{proc.stderr}"
    )
