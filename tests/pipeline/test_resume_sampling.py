"""A resumed study continues its sampler's random stream, and an architecture already
scored in the study is never scored again (the trial reuses the earlier values)."""

from __future__ import annotations

import optuna
import pytest
from optuna.trial import TrialState

from nasflow.cli import main as cli_main
from nasflow.pipeline import StudyRunner
from nasflow.search import load_study_file
from tests._study_template import write_study

#: A tabular study over a 6-architecture space (duplicates are certain) or NAS-Bench-201
#: (duplicates are rare), with a complete table written next to it.
TABULAR = """
import csv
import itertools
from pathlib import Path

from nasflow.tabular import TabularBenchmark
from nasflow.search import StudySpec
from nasflow.space import Arch, SearchSpace, op_choice
from nasflow.search_spaces.nas_bench_201 import NASBench201Space


class Small(SearchSpace):
    def __init__(self):
        super().__init__([op_choice("a", ["x", "y", "z"]), op_choice("b", ["p", "q"])],
                         name="small")

    def supernet(self):
        raise NotImplementedError

    def to_string(self, arch):
        arch = self.validate(arch)
        return arch["a"] + "-" + arch["b"]

    def from_string(self, text):
        a, b = text.split("-")
        return self.validate(Arch({{"a": a, "b": b}}))


space = {space}
path = Path(__file__).with_suffix(".csv")
if not path.exists():
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["arch", "acc"])
        for i, arch in enumerate(space.enumerate()):
            w.writerow([space.to_string(arch), (i * 7919) % 1000 / 10])
study = StudySpec(
    name="tab",
    space=space,
    table=TabularBenchmark(path, space, metric="acc"),
    objectives=("accuracy",),
    sampler={sampler!r},
    n_trials=50,
    seed=0,
)
"""


def _tabular(tmp_path, space: str, sampler: str):
    path = tmp_path / "tab.py"
    path.write_text(TABULAR.format(space=space, sampler=sampler))
    return path


def _trials(out):
    study = optuna.load_study(study_name="tab", storage=f"sqlite:///{out}/tab/study.db")
    return study.get_trials(deepcopy=False)


@pytest.mark.slow
def test_a_rerun_with_more_trials_does_not_replay_the_first_architectures(tmp_path) -> None:
    study_file = _tabular(tmp_path, "NASBench201Space()", "tpe")
    out = tmp_path / "runs"
    args = ["search", str(study_file), "--runs", str(out), "--no-progress"]
    assert cli_main([*args, "--n-trials", "3"]) == 0
    assert cli_main([*args, "--n-trials", "6"]) == 0
    trials = _trials(out)
    assert [t.state for t in trials] == [TrialState.COMPLETE] * 6
    first = [t.user_attrs["arch"] for t in trials[:3]]
    again = [t.user_attrs["arch"] for t in trials[3:]]
    # The old code re-seeded TPE's random start-up with the same seed: again == first.
    assert not set(first) & set(again)
    assert not any("duplicate_of" in t.user_attrs for t in trials)


def test_sampler_seed_is_the_studys_for_a_new_study_and_moves_on_when_resumed() -> None:
    from nasflow.search import sampler_seed

    assert sampler_seed(7, 0) == 7
    seeds = {sampler_seed(7, n) for n in range(1, 50)}
    assert len(seeds) == 49 and 7 not in seeds
    assert sampler_seed(7, 3) == sampler_seed(7, 3)  # reproducible
    assert sampler_seed(8, 3) != sampler_seed(7, 3)


@pytest.mark.slow
def test_a_tabular_architecture_already_scored_is_never_scored_again(tmp_path, capsys) -> None:
    # A tabular study counts distinct architectures, as the screening does (issue 42.13):
    # asked for 12 in a space of 6, it scores each once and says the space is exhausted.
    study_file = _tabular(tmp_path, "Small()", "random")
    out = tmp_path / "runs"
    args = ["search", str(study_file), "--runs", str(out), "--no-progress", "--n-trials", "12"]
    assert cli_main(args) == 0
    trials = _trials(out)
    assert len(trials) == 6 and all(t.state == TrialState.COMPLETE for t in trials)
    archs = [t.user_attrs["arch"] for t in trials]
    assert len(set(archs)) == 6  # only 6 architectures exist, each scored once
    assert not any("duplicate_of" in t.user_attrs for t in trials)
    assert "search space exhausted: all 6 architectures" in capsys.readouterr().out


@pytest.mark.slow
def test_a_trained_architecture_already_scored_is_not_fine_tuned_again(tmp_path) -> None:
    # One objective with fine-tuning: a scored trial reports an intermediate value per
    # epoch (Hyperband); a reused one reports none, since nothing is trained.
    spec = load_study_file(write_study(tmp_path, objectives=("accuracy",), finetune=1))
    spec = spec.replace(cost="measure")  # (the cost model measures every op: slow)
    logs: list[str] = []
    runner = StudyRunner(
        spec.replace(n_trials=1), out_dir=tmp_path / "runs", progress=False, log=logs.append
    )
    study = runner.run(retrain=False).study
    first = study.trials[0]
    study.enqueue_trial(first.params)
    runner = StudyRunner(
        spec.replace(n_trials=2), out_dir=tmp_path / "runs", progress=False, log=logs.append
    )
    study = runner.run(retrain=False).study
    dup = study.trials[1]
    assert dup.params == first.params and dup.state == TrialState.COMPLETE
    assert dup.user_attrs["duplicate_of"] == 0
    assert dup.values == first.values
    assert dup.intermediate_values == {} and first.intermediate_values
    for key in ("params", "train_cost", "supernet_accuracy"):
        assert dup.user_attrs[key] == first.user_attrs[key]
    assert "trial 1 complete" in "\n".join(logs)
    assert "architecture of trial 0, reused" in "\n".join(logs)
