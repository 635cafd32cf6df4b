"""`nasflow search` on bad input: one clear stderr line, exit code 2, nothing written."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

import pytest

from nasflow.cli import main
from tests._study_template import write_study

REPO = Path(__file__).resolve().parents[1]


def _tree(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


@pytest.fixture
def in_tmp(tmp_path, monkeypatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["search", "no_such_study.py"], "study file 'no_such_study.py' does not exist"),
        (["search", "{nospace}"], "space must be a SearchSpace"),
        (["search", "{broken}"], "failed to run: RuntimeError: boom"),
        (["search", "{study}", "--storage", "mysql://u:pw@h/db"], "unknown storage"),
        (["search", "{study}", "--storage", "runs/x.db"], "unknown storage 'runs/x.db'"),
        (
            ["search", "{study}", "--storage", "postgresql://postgres:pw@127.0.0.1:9/test"],
            "cannot reach storage 'postgresql://postgres:***@127.0.0.1:9/test'",
        ),
        (["search", "{study}", "--n-trials", "0"], "--n-trials must be >= 1, got 0"),
        (["worker", "{study}", "--storage", "sqlite:///x.db"], "SQLite supports one process"),
    ],
)
def test_bad_input_is_one_line_exit_2_and_writes_nothing(in_tmp, capsys, args, message) -> None:
    files = {
        "study": write_study(in_tmp, name="cli"),
        "nospace": write_study(
            in_tmp, name="nospace", extra="study = StudySpec(name='x', space=None, data=data)"
        ),
        "broken": in_tmp / "broken.py",
    }
    files["broken"].write_text("raise RuntimeError('boom')\n")
    argv = [a.format(**{k: str(v) for k, v in files.items()}) for a in args]
    before = _tree(in_tmp)
    assert main([*argv, "--no-progress"] if argv[0] == "search" else argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert err[0].startswith("nasflow: error: ")
    assert message in err[0], err[0]
    assert "pw@" not in err[0]  # passwords never printed
    assert _tree(in_tmp) == before  # nothing written: no runs/, no database, no lock
    assert not os.path.exists(in_tmp / "runs")


def _subcommands() -> dict[str, argparse.ArgumentParser]:
    from nasflow.cli import build_parser

    parser = build_parser()
    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    commands: dict[str, argparse.ArgumentParser] = {"": parser}
    for name, command in sub.choices.items():
        if all(command is not other for other in commands.values()):
            commands[name] = command
    return commands


@pytest.mark.parametrize("command", sorted(_subcommands()))
def test_every_option_of_every_command_has_help(command, capsys) -> None:
    parser = _subcommands()[command]
    missing = [
        a.option_strings[0] if a.option_strings else a.dest
        for a in parser._actions
        if not isinstance(a, argparse._SubParsersAction)
        and (not a.help or a.help == argparse.SUPPRESS)
    ]
    assert not missing, f"`nasflow {command}` options without help: {missing}"
    with pytest.raises(SystemExit) as e:
        main([command, "--help"] if command else ["--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: nasflow {command}".rstrip())


def test_version_prints_the_installed_package_version(capsys) -> None:
    from importlib.metadata import version

    with pytest.raises(SystemExit) as e:
        main(["--version"])
    assert e.value.code == 0
    assert capsys.readouterr().out == f"nasflow {version('nasflow')}\n"


_LIGHT = """
import sys
from nasflow.cli import main
try:
    code = main(sys.argv[1:])
except SystemExit as e:  # --help, --version
    code = e.code
heavy = sorted(m for m in ("torch", "optuna", "transformers") if m in sys.modules)
print("HEAVY", heavy, "EXIT", code)
"""


@pytest.mark.parametrize(
    "argv", [["spaces"], ["--help"], ["--version"], ["show", "--help"], ["export", "--help"]]
)
def test_light_commands_import_neither_torch_nor_optuna(argv) -> None:
    proc = subprocess.run(
        [sys.executable, "-c", _LIGHT, *argv], capture_output=True, text=True, cwd=REPO, timeout=99
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[-1] == "HEAVY [] EXIT 0", proc.stdout


def test_spaces_lists_the_registered_names_and_describes_on_request(capsys) -> None:
    from importlib.metadata import entry_points

    names = sorted(ep.name for ep in entry_points(group="nasflow.spaces"))
    assert main(["spaces"]) == 0
    rows = [line.split("\t") for line in capsys.readouterr().out.splitlines()]
    assert [r[0] for r in rows] == names and all(":" in r[1] for r in rows)
    assert main(["spaces", "mnist1d"]) == 0
    (line,) = capsys.readouterr().out.splitlines()
    assert line.startswith("mnist1d\t46,875 architectures\t")
    assert main(["spaces", "mnist1d", "nope"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no registered space 'nope'" in err


#: One meaning per flag: a flag that several commands take says the same thing in each
#: (a phrase its help must hold). ``--runs`` is the folder the search writes to, ``--out``
#: always an export folder.
SHARED_FLAGS = {
    "--storage": "Optuna storage: sqlite:///FILE",
    "--runs": "folder the search writes",
    "--out": "export directory",
    "--n-trials": "total finished trials wanted",
    "--timeout": "stop searching after this many seconds",
    "--no-progress": "plain log lines, no bars",
    "--study": "study file or ready study with the data",
    "--force": "replace",
    "--no-onnx": "skip model.onnx",
    "--epochs": "epochs",
    "--seed": "seed",
    "--json": "JSON",
    "--deterministic": "decide nothing by timings",
}


def test_a_flag_means_the_same_in_every_command() -> None:
    seen: dict[str, list[str]] = {}
    helps: dict[tuple[str, str], str] = {}
    for command, parser in _subcommands().items():
        for a in parser._actions:
            for flag in a.option_strings:
                if flag.startswith("--") and flag != "--help":
                    seen.setdefault(flag, []).append(command)
                    helps[command, flag] = a.help or ""
    shared = {flag for flag, commands in seen.items() if len(commands) > 1}
    assert shared <= set(SHARED_FLAGS), (
        f"flags without one declared meaning: {shared - set(SHARED_FLAGS)}"
    )
    for flag in shared:
        for command in seen[flag]:
            assert SHARED_FLAGS[flag] in helps[command, flag], (
                command,
                flag,
                helps[command, flag],
            )
    # The runs folder and the export folder never share a name.
    assert all(helps[c, "--runs"].startswith("folder the search") for c in seen["--runs"])
    assert {"export", "retrain"} == set(seen["--out"])
