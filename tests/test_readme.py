"""The README: short, its quick start is the two commands CI runs, and its code runs.

Every code block follows the convention of ``tests/_codeblocks.py``; its Python blocks run
as written, in order, in one namespace.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from tests._codeblocks import ROOT, Block, blocks, check_convention, run_python, run_shell

README = ROOT / "README.md"
CI = ROOT / ".ci" / "run"
#: The issue's bound: a README a newcomer reads; the rest is in docs/.
MAX_LINES = 250


def _section(title: str) -> list[Block]:
    """The code blocks under the README's ``## title`` (up to the next ``##``)."""
    text = README.read_text()
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    first = text[:start].count("\n") + 2
    last = text[: end if end != -1 else len(text)].count("\n") + 1
    return [b for b in blocks(README) if first <= b.line <= last]


def _pip_args(command: str) -> list[str]:
    """The arguments of the ``pip install`` in a ``&&``-chained command line."""
    for part in command.split("&&"):
        words = shlex.split(part)
        if len(words) > 2 and words[0].endswith("pip") and words[1] == "install":
            return words[2:]
    raise AssertionError(f"no pip install in {command!r}")


def test_the_readme_is_at_most_250_lines() -> None:
    n = len(README.read_text().splitlines())
    assert n <= MAX_LINES, f"README.md has {n} lines; move detail to docs/"


def test_every_readme_code_block_runs_or_says_why() -> None:
    found = blocks(README)
    assert found
    for block in found:
        check_convention(block)


def test_the_quick_start_is_two_commands_and_ci_runs_them() -> None:
    setup, tests = (b.code.strip() for b in _section("Quick start: two commands"))
    assert setup.startswith("python3 -m venv .venv && .venv/bin/pip install ")
    assert setup.endswith("&& .venv/bin/nasflow search"), "the first command runs the study"
    assert tests == ".venv/bin/python -m pytest -q"
    ci = CI.read_text()
    ci_installs = [
        _pip_args(line.strip()) for line in ci.splitlines() if ".venv/bin/pip install" in line
    ]
    wanted = _pip_args(setup)
    assert [a for a in ci_installs[0] if a != "--quiet"] == wanted, (
        f".ci/run must run the README's install {wanted}, runs {ci_installs[0]}"
    )
    assert any(line.strip() == tests for line in ci.splitlines()), ".ci/run must run the tests"


def test_the_user_install_is_the_developer_install_without_the_extras() -> None:
    (user,) = _section("Install")
    (setup, _) = _section("Quick start: two commands")
    args = _pip_args(setup.code.strip())
    assert "torch==2.14.1" in args and "torchvision==0.29.1" in args
    dev = args[args.index("-e") + 1]
    assert re.fullmatch(r"\.\[.*\bdev\b.*\]", dev), dev
    assert _pip_args(user.code.strip()) == [*args[: args.index("-e")], "-e", "."]


def test_the_readme_shows_the_python_workflow() -> None:
    code = "\n".join(b.code for b in blocks(README) if b.language == "python")
    for call in (
        "class MySpace",  # your own space
        "StudySpec(",
        "nasflow.optimize(",
        "nasflow.export_winner(",
        "nasflow.load_exported(",
        "DataBundle(",  # your own data, checked
        "check_bundle(",
    ):
        assert call in code, call


def test_the_readme_names_every_elastic_module() -> None:
    import nasflow.supernet

    elastic = [n for n in nasflow.supernet.__all__ if n.startswith("Elastic")]
    assert "ElasticConv2d" in elastic
    missing = [n for n in elastic if n not in README.read_text(encoding="utf-8")]
    assert not missing, f"README.md never names {missing}"


def test_the_readme_links_to_files_that_exist() -> None:
    links = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", README.read_text())
    assert links
    for link in links:
        if "://" not in link:
            assert (ROOT / link).exists(), f"README links to {link}, which does not exist"


@pytest.mark.slow
def test_readme_shell_blocks_not_marked_run(tmp_path: Path) -> None:
    for block in blocks(README):
        if block.language == "bash" and not block.not_run:
            run_shell(block, tmp_path)


@pytest.mark.slow
def test_readme_python_blocks_run_as_written(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)  # the blocks write runs/ in the working directory
    namespace = run_python(README)
    assert (tmp_path / "runs" / "readme" / "winner" / "arch.json").is_file()
    result = namespace["result"]
    assert len(result.study.trials) == 8  # type: ignore[attr-defined]
    assert len(namespace["own_data"].train) == 200  # type: ignore[attr-defined]
