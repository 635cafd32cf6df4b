"""One tiny searched study and one export of its winner, shared by the export tests."""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from nasflow.cli import main
from nasflow.pipeline import StudyRunner, summary_table
from nasflow.search import StudySpec, load_study_file
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
    result: Any = None


@contextlib.contextmanager
def deadline(seconds: int) -> Iterator[None]:
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


#: A fine-tuning phase on the tiny study: three finalists, one rung of one epoch, the best
#: half (two) fine-tuned a second epoch; the third is a ready model "stopped" at one epoch
#: (top=0: no finalist is protected from the halving).
FINETUNING = """
from nasflow.search import FineTuning
study = study.replace(finetuning=FineTuning(finalists=3, rungs=(1, 2), keep=0.5, top=0))
"""


@pytest.fixture(scope="session")
def ready_run(tmp_path_factory: pytest.TempPathFactory) -> TinyRun:
    """A finished tiny study with a fine-tuning phase (ready models in
    ``RUNS/tinyft/ready/trial-N``) and no phase 3."""
    root = tmp_path_factory.mktemp("ready-study")
    study_file = write_study(
        root, name="tinyft", channels=4, n_trials=6, finetune=0, extra=FINETUNING
    )
    spec = load_study_file(study_file)
    runner = StudyRunner(spec, out_dir=root / "runs", progress=False, log=lambda _: None)
    result = runner.run(retrain=False)
    printed = summary_table(result, spec)
    return TinyRun("tinyft", study_file, spec, root / "runs", printed, result)
