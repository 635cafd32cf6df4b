"""A real tiny study (supernet, search with pruning and a budget, one retrained winner),
run once per session and shared read-only by the report tests; copy it to change it."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

import pytest

from nasflow.pipeline import StudyRunner, summary_table
from nasflow.search import load_study_file
from tests._study_template import write_study


class TinyStudy(NamedTuple):
    """Where the shared study lives: ``out / name / "study.db"``."""

    name: str
    out: Path

    @property
    def db(self) -> Path:
        return self.out / self.name / "study.db"

    @property
    def url(self) -> str:
        return f"sqlite:///{self.db}"


@pytest.fixture(scope="session")
def tiny_study(tmp_path_factory: pytest.TempPathFactory) -> TinyStudy:
    folder = tmp_path_factory.mktemp("report-study")
    spec = load_study_file(write_study(folder, n_trials=6, finetune=2, max_params=900))
    out = folder / "runs"
    StudyRunner(spec, out_dir=out, progress=False, log=lambda _: None).run()
    return TinyStudy(spec.name, out)


@pytest.fixture(scope="session")
def calibrated_study(tmp_path_factory: pytest.TempPathFactory) -> TinyStudy:
    """A tiny study with ``stack="auto"`` whose calibration ran (one intra-op thread: two
    on a busy 2-core machine make tiny convolutions crawl and the budget probe skip it)."""
    import torch

    folder = tmp_path_factory.mktemp("report-calibrated")
    # recalibrate: a record shared by an earlier test's study on this device would be reused
    extra = "study = study.replace(stack='auto', stack_budget=600.0, recalibrate_stack=True)"
    spec = load_study_file(
        write_study(folder, name="calibrated", n_trials=3, finetune=1, extra=extra)
    )
    out = folder / "runs"
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        StudyRunner(spec, out_dir=out, progress=False, log=lambda _: None).run()
    finally:
        torch.set_num_threads(threads)
    return TinyStudy(spec.name, out)


class OneShotStudy(NamedTuple):
    """A finished one-shot study and the summary its run printed."""

    name: str
    out: Path
    printed: str

    @property
    def url(self) -> str:
        return f"sqlite:///{self.out / self.name / 'study.db'}"


@pytest.fixture(scope="session")
def oneshot_study(tmp_path_factory: pytest.TempPathFactory) -> OneShotStudy:
    """A real one-shot study (no fine-tuning during the search) with a fine-tuning phase
    (three finalists halved over rungs of 1 and 2 epochs, ``top=0``: ready models of 1
    and of 2 epochs) and one retrained winner."""
    folder = tmp_path_factory.mktemp("report-oneshot")
    extra = (
        "from nasflow.search import FineTuning\n"
        "study = study.replace(finetuning=FineTuning(finalists=3, rungs=(1, 2), keep=0.5, top=0))"
    )
    spec = load_study_file(
        write_study(folder, name="oneshot", n_trials=6, finetune=0, extra=extra)
    )
    out = folder / "runs"
    result = StudyRunner(spec, out_dir=out, progress=False, log=lambda _: None).run()
    return OneShotStudy(spec.name, out, summary_table(result, spec))


class ResultStudy(NamedTuple):
    """A finished study with every record its result states, and what its run printed
    (``verbose``: the detail above the result; ``short``: the result alone)."""

    name: str
    out: Path
    verbose: str
    short: str
    baseline: Path

    @property
    def url(self) -> str:
        return f"sqlite:///{self.out / self.name / 'study.db'}"


#: Test data: test accuracies standing in for a table of random architectures of the tiny
#: space trained with its recipe (a real study measures its own, ``StudySpec.baseline``).
BASELINE_ACCURACIES = (0.22, 0.25, 0.27, 0.3, 0.33, 0.35, 0.38, 0.4, 0.45, 0.5, 0.6, 0.7)


@pytest.fixture(scope="session")
def result_study(tmp_path_factory: pytest.TempPathFactory) -> ResultStudy:
    """A real tiny study run end to end with every record its result states: two zero-cost
    anchors, the trust probe (4 architectures, 1 epoch), a fine-tuning phase (two
    finalists, one epoch), two retrained winners and a baseline table."""
    folder = tmp_path_factory.mktemp("report-result")
    baseline = folder / "random_archs.csv"
    rows = "".join(f"{i},{a}\n" for i, a in enumerate(BASELINE_ACCURACIES))
    baseline.write_text("index,test_accuracy\n" + rows)
    extra = (
        "from nasflow.search import Anchors, FineTuning, TrustProbe\n"
        "study = study.replace(\n"
        "    anchors=Anchors(n=2, sample=16),\n"
        "    trust=TrustProbe(archs=4, epochs=1, bootstrap=100, schedule_epochs=1, pool=8),\n"
        "    finetuning=FineTuning(finalists=2, rungs=(1,), top=0),\n"
        f"    cost='measure', retrain_top=2, baseline=({str(baseline)!r},),\n"
        ")"
    )
    spec = load_study_file(write_study(folder, name="result", n_trials=6, finetune=0, extra=extra))
    out = folder / "runs"
    result = StudyRunner(spec, out_dir=out, progress=False, log=lambda _: None).run()
    return ResultStudy(
        spec.name,
        out,
        summary_table(result, spec),
        summary_table(result, spec, verbose=False),
        baseline,
    )


@pytest.fixture
def study_copy(tiny_study: TinyStudy, tmp_path: Path) -> Callable[[], TinyStudy]:
    """``study_copy()``: a private copy of the shared study under ``tmp_path``."""

    def copy() -> TinyStudy:
        out = tmp_path / "runs"
        (out / tiny_study.name).mkdir(parents=True, exist_ok=True)
        shutil.copy2(tiny_study.db, out / tiny_study.name / "study.db")
        return TinyStudy(tiny_study.name, out)

    return copy
