"""Bad trials: a NaN loss is pruned, out-of-memory fails, a bug in user code fails with its
traceback; the study goes on (for user errors only where the study file asked)."""

from __future__ import annotations

import contextlib
import resource
from collections.abc import Iterator
from pathlib import Path

import optuna
import pytest
from optuna.trial import TrialState

from nasflow.pipeline import StudyRunner
from nasflow.search import load_study_file

#: A study file whose space is user code: a shared linear head whose stand-alone form
#: depends on the "head" choice ("huge" carries an 8 GiB scratch buffer, "bug" raises in
#: forward), and a fine-tuning learning rate that may diverge.
STUDY = """
import copy

import torch
from torch import nn
from torch.utils.data import TensorDataset

from nasflow.data import DataBundle
from nasflow.search import StudySpec
from nasflow.space import SearchSpace, hyper_choice, op_choice
from nasflow.supernet import SuperModule, Supernet, SuperSequential
from nasflow.train import SupernetConfig, TrainConfig


class Broken(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(40, 4)

    def forward(self, x):
        raise ValueError("a bug in the user's network")


class Head(SuperModule):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(40, 4)

    def forward(self, x, arch):
        return self.fc(x.flatten(1))  # (B, 1, 40) -> (B, 40) -> (B, 4)

    def extract(self, arch):
        if arch["head"] == "bug":
            return Broken()
        net = nn.Sequential(nn.Flatten(), copy.deepcopy(self.fc))  # (B, 1, 40) -> (B, 40)
        if arch["head"] == "huge":
            net.register_buffer("scratch", torch.empty(2**31))  # 8 GiB
        return net


class BadSpace(SearchSpace):
    def __init__(self):
        choices = [op_choice("head", ["small", "huge", "bug"]), hyper_choice("lr", (1e-3, 1e30))]
        super().__init__(choices, name="bad-numbers")

    def supernet(self):
        return Supernet(self, SuperSequential(Head()))


def data():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(300, 1, 40, generator=g)
    y = (x[:, 0, :20].sum(1) > 0).long() + 2 * (x[:, 0, 20:].sum(1) > 0).long()
    ds = lambda a, b: TensorDataset(x[a:b], y[a:b])
    return DataBundle(ds(0, 200), ds(200, 250), ds(250, 300), (1, 40), 4, "synthetic")


study = StudySpec(
    name={name!r},
    space=BadSpace(),
    data=data,
    objectives=("accuracy",),
    supernet=SupernetConfig(epochs=1, batch_size=50),
    n_trials=5,
    bn_batches=1,
    finetune=TrainConfig(epochs=1, batch_size=50),
    train=TrainConfig(epochs=1, batch_size=50),
    pruner="none",
    sampler="random",
    # Time each candidate when it is scored: the cost model would time every op of the
    # space up front, the broken and the huge one included, before any trial.
    cost="measure",
    catch={catch},
)
"""


@contextlib.contextmanager
def memory_budget(extra_bytes: int) -> Iterator[None]:
    """Cap this process's address space at its current size plus ``extra_bytes``."""
    with open("/proc/self/status") as f:
        vm = next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmSize:"))
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    resource.setrlimit(resource.RLIMIT_AS, (vm + extra_bytes, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def _runner(tmp_path: Path, name: str, catch: str, queue: list[dict]) -> StudyRunner:
    path = tmp_path / f"{name}.py"
    path.write_text(STUDY.format(name=name, catch=catch))
    logs: list[str] = []
    runner = StudyRunner(load_study_file(path), None, tmp_path / "runs", logs.append, False)
    study = runner.open_study()
    for params in queue:
        study.enqueue_trial(params)
    runner.close()
    runner.logs = logs  # type: ignore[attr-defined]
    return runner


@pytest.mark.slow
def test_nan_oom_and_caught_user_errors_fail_one_trial_each_and_the_study_goes_on(
    tmp_path,
) -> None:
    queue = [
        {"head": "small", "lr": 1e-3},
        {"head": "small", "lr": 1e30},  # diverges: NaN/inf loss
        {"head": "huge", "lr": 1e-3},  # over the memory budget
        {"head": "bug", "lr": 1e-3},  # an exception in user code, caught as asked
        {"head": "small", "lr": 1e-3},
    ]
    runner = _runner(tmp_path, "bad", "(ValueError,)", queue)
    with memory_budget(2 * 2**30):
        study = runner.run(retrain=False).study
    ok, nan, oom, bug, after = study.trials
    assert ok.state == TrialState.COMPLETE and after.state == TrialState.COMPLETE
    assert nan.state == TrialState.PRUNED
    assert nan.user_attrs["fail_reason"].startswith("non-finite loss: loss is ")
    assert oom.state == TrialState.FAIL
    assert oom.user_attrs["fail_reason"].startswith("out of memory")
    assert "can't allocate memory" in oom.user_attrs["traceback"]
    assert bug.state == TrialState.FAIL
    assert bug.user_attrs["fail_reason"] == "ValueError: a bug in the user's network"
    tb = bug.user_attrs["traceback"]
    assert tb.startswith("Traceback") and "in forward" in tb and "bad.py" in tb
    logs = runner.logs  # type: ignore[attr-defined]
    assert any("trial 2 fail" in m and "out of memory" in m for m in logs)


@pytest.mark.slow
def test_an_uncaught_user_error_fails_its_trial_with_the_traceback_and_stops(tmp_path) -> None:
    queue = [{"head": "bug", "lr": 1e-3}, {"head": "small", "lr": 1e-3}]
    runner = _runner(tmp_path, "strict", "()", queue)
    with pytest.raises(ValueError, match="a bug in the user's network"):
        runner.run(retrain=False)
    study = optuna.load_study(study_name="strict", storage=runner.storage.url)
    [bug, waiting] = study.trials
    assert bug.state == TrialState.FAIL and "Traceback" in bug.user_attrs["traceback"]
    assert waiting.state == TrialState.WAITING  # the study stopped: the user asked no catch
