"""A tabular study counts distinct architectures toward ``n_trials``, as the screening of
a supernet study does: a sampler that keeps proposing scored architectures spends no
trial on them, and the regret is stated after that many distinct architectures."""

from __future__ import annotations

import optuna
import pytest
from optuna.trial import TrialState

from nasflow.pipeline import StudyRunner, summary_table
from nasflow.search import StudySpec
from nasflow.search_spaces.nas_bench_201 import NASBench201Space
from nasflow.tabular import (
    TabularBenchmark,
    TabularObjective,
    tabular_outcome,
    tabular_summary,
)
from tests.pipeline.test_batched_screening import Stuck

METRIC = "cifar10_test_acc_200ep"


@pytest.mark.slow
def test_a_sampler_proposing_one_architecture_still_gets_n_distinct_ones(
    shared_data_file, tmp_path
) -> None:
    space = NASBench201Space()
    table = TabularBenchmark(shared_data_file("nb201_cifar10.csv"), space, metric=METRIC)
    spec = StudySpec(
        "distinct", space, table=table, objectives=("accuracy",), sampler=Stuck(), n_trials=8
    )
    runner = StudyRunner(spec, out_dir=tmp_path / "runs", progress=False, log=lambda _: None)
    result = runner.run()
    done = result.study.get_trials(states=(TrialState.COMPLETE,))
    keys = [t.user_attrs["table_key"] for t in done]
    assert len(done) == 8 and len(set(keys)) == 8  # before: 8 trials of one architecture
    assert not any("duplicate_of" in t.user_attrs for t in result.study.trials)
    outcome = tabular_outcome(result.study, table)
    assert outcome is not None and (outcome.trials, outcome.distinct) == (8, 8)
    best = max(table.lookup(table.arch(k)) for k in keys)
    assert outcome.regret == pytest.approx(table.optimum - best)
    text = summary_table(result, spec)
    assert "8 distinct architectures scored from nb201_cifar10.csv (no training)" in text
    assert f"regret to the optimum: {outcome.regret:.4f} (after 8 distinct" in text


@pytest.mark.slow
def test_the_per_trial_loop_says_how_many_trials_repeated_an_architecture(
    shared_data_file,
) -> None:
    """``screen_batch=0`` keeps the per-trial loop (repeats reuse their score): the outcome
    counts trials and distinct architectures apart, and the summary says both."""
    space = NASBench201Space()
    table = TabularBenchmark(shared_data_file("nb201_cifar10.csv"), space, metric=METRIC)
    study = optuna.create_study(direction="maximize", sampler=Stuck())
    study.optimize(TabularObjective(table), n_trials=3)
    outcome = tabular_outcome(study, table)
    assert outcome is not None and (outcome.trials, outcome.distinct) == (3, 1)
    lines = tabular_summary(study, table)
    assert (
        "1 distinct architecture scored from nb201_cifar10.csv (2 trials repeated one)"
        in (lines[0])
    )
    assert lines[-1].endswith("(after 1 distinct architecture)")
