"""One tiny searched study and one export of its winner, shared by the export tests."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from nasflow.cli import main
from nasflow.search import StudyRunner, StudySpec, load_study_file, summary_table
from tests._study_template import write_study


@dataclass(frozen=True)
class TinyRun:
    """A finished tiny study: its file, spec, the folder the search wrote to, and the
    text ``nasflow search`` printed at its end (``summary_table``)."""

    name: str
    study_file: Path
    spec: StudySpec
    runs: Path
    printed: str


@pytest.fixture(scope="session")
def tiny_run(tmp_path_factory: pytest.TempPathFactory) -> TinyRun:
    root = tmp_path_factory.mktemp("export-study")
    study_file = write_study(root, name="tiny", channels=4, n_trials=4, finetune=0)
    spec = load_study_file(study_file)
    runner = StudyRunner(spec, out_dir=root / "runs", progress=False, log=lambda _: None)
    result = runner.run(retrain=True)
    return TinyRun("tiny", study_file, spec, root / "runs", summary_table(result, spec))


def export_args(run: TinyRun, out: Path, *extra: str) -> list[str]:
    """``nasflow export`` arguments for the tiny study."""
    return [
        "export",
        run.name,
        "--runs",
        str(run.runs),
        "--study",
        str(run.study_file),
        "--out",
        str(out),
        *extra,
    ]


@pytest.fixture(scope="session")
def exported(tiny_run: TinyRun, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The best trial exported with every format (ONNX included) through the CLI, with
    the default weights: the winner phase 3 retrained."""
    out = tmp_path_factory.mktemp("exports") / "best"
    assert main(export_args(tiny_run, out)) == 0
    return out


@pytest.fixture(scope="session")
def exported_supernet(tiny_run: TinyRun, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The best trial exported with the supernet's weights (BN recalibrated) and ONNX."""
    out = tmp_path_factory.mktemp("exports") / "best-supernet"
    assert main(export_args(tiny_run, out, "--weights", "supernet")) == 0
    return out
