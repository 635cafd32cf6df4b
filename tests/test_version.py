"""The version is written once: ``nasflow.__version__``, which the package metadata reads."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import pytest
from setuptools.config.expand import read_attr
from setuptools.config.pyprojecttoml import read_configuration

import nasflow

ROOT = Path(__file__).resolve().parents[1]


def test_pyproject_reads_the_version_from_the_module() -> None:
    project = read_configuration(ROOT / "pyproject.toml", expand=False)
    assert "version" not in project["project"], "pyproject.toml writes the version again"
    assert "version" in project["project"]["dynamic"]
    attr = project["tool"]["setuptools"]["dynamic"]["version"]["attr"]
    assert attr == "nasflow.__version__"
    # What setuptools reads when it builds the package (from the source, not importing it).
    assert read_attr(attr, {"": "."}, ROOT) == nasflow.__version__


def test_the_installed_metadata_and_the_command_line_say_the_same(capsys) -> None:
    from nasflow.cli import main

    try:
        installed = version("nasflow")
    except PackageNotFoundError:  # a source tree that is not installed
        installed = None
    if installed is not None:
        assert installed == nasflow.__version__
    with pytest.raises(SystemExit):
        main(["--version"])
    assert capsys.readouterr().out == f"nasflow {nasflow.__version__}\n"
