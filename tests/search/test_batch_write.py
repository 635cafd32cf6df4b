"""The batched screening's writer (``nasflow.search._batch_write``): the same trials written
through it and through ``Study.add_trials`` read back identical, on SQLite and in memory;
a failing batch writes nothing."""

from __future__ import annotations

import datetime
import math
from pathlib import Path

import optuna
import pytest
from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution
from optuna.trial import FrozenTrial, TrialState, create_trial

from nasflow.search._batch_write import rdb_backend, write_trials

optuna.logging.set_verbosity(optuna.logging.WARNING)


def _trials() -> list[FrozenTrial]:
    dists = {
        "op": CategoricalDistribution(["conv3", "conv5", None, 7]),
        "width": IntDistribution(4, 32, step=4),
        "lr": FloatDistribution(1e-4, 1e-1, log=True),
    }
    start = datetime.datetime(2026, 11, 25, 12, 0, 0, 123456)
    out = []
    for i, (state, values) in enumerate(
        [
            (TrialState.COMPLETE, [0.91, 3.5]),
            (TrialState.COMPLETE, [0.5, math.inf]),
            (TrialState.COMPLETE, [-math.inf, 0.0]),
            (TrialState.PRUNED, None),
            (TrialState.FAIL, None),
        ]
    ):
        out.append(
            create_trial(
                state=state,
                values=values,
                params={
                    "op": [None, "conv5", 7, "conv3", "conv3"][i],
                    "width": 8 + 4 * i,
                    "lr": 10 ** (-1 - i / 2),
                },
                distributions=dists,
                user_attrs={"arch": f'{{"i": {i}}}', "nested": {"a": [1, 2.5, None]}, "s": "é"},
                system_attrs={"constraints": [0.0, -1.5]} if i % 2 else {},
                intermediate_values={0: 0.1, 3: math.inf, 4: -math.inf} if i == 3 else {},
            )
        )
        out[-1].datetime_start = start + datetime.timedelta(seconds=i)
        out[-1].datetime_complete = start + datetime.timedelta(seconds=i, milliseconds=250)
    return out


def _fields(t: FrozenTrial) -> tuple:
    return (
        t.number,
        t.state,
        t.values,
        t.params,
        t.distributions,
        t.user_attrs,
        t.system_attrs,
        t.intermediate_values,
        t.datetime_start,
        t.datetime_complete,
    )


def _study(url: str | None, name: str) -> optuna.Study:
    return optuna.create_study(storage=url, study_name=name, directions=["maximize", "minimize"])


@pytest.mark.parametrize("where", ["sqlite", "memory"])
def test_written_trials_read_back_as_add_trials_writes_them(tmp_path: Path, where: str) -> None:
    url = f"sqlite:///{tmp_path / 'db.sqlite'}" if where == "sqlite" else None
    by_optuna, by_us = _study(url, "optuna"), _study(url, "ours")
    assert (rdb_backend(by_us) is not None) == (where == "sqlite")
    trials = _trials()
    # One trial already stored: the batch is numbered after it.
    by_optuna.add_trials(trials[:1])
    assert write_trials(by_us, trials[:1]) == [0]
    by_optuna.add_trials(trials[1:])
    assert write_trials(by_us, trials[1:]) == [1, 2, 3, 4]
    # Read back through fresh handles (no cache of the writing process).
    if url is not None:
        by_optuna = optuna.load_study(storage=url, study_name="optuna")
        by_us = optuna.load_study(storage=url, study_name="ours")
    got, want = by_us.get_trials(), by_optuna.get_trials()
    assert [_fields(t) for t in got] == [_fields(t) for t in want]
    assert [t.number for t in got] == [0, 1, 2, 3, 4]


def test_a_failing_batch_writes_nothing(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'db.sqlite'}"
    study = _study(url, "s")
    write_trials(study, _trials()[:2])
    bad = _trials()[2:]
    bad[1].user_attrs["unserialisable"] = object()  # json.dumps fails mid-batch
    with pytest.raises(TypeError):
        write_trials(study, bad)
    assert [t.number for t in optuna.load_study(storage=url, study_name="s").trials] == [0, 1]
    # The storage is usable afterwards, and numbers go on without a gap.
    assert write_trials(study, _trials()[2:]) == [2, 3, 4]


def test_an_invalid_trial_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'db.sqlite'}"
    study = _study(url, "s")
    trials = _trials()
    trials[2].state = TrialState.RUNNING  # an unfinished trial: Optuna's own check refuses it
    with pytest.raises(ValueError):
        write_trials(study, trials)
    trials = _trials()
    trials[3] = create_trial(
        values=[0.5], params={}, distributions={}
    )  # one value in a two-objective study
    with pytest.raises(ValueError, match="1 values; the study has 2 objectives"):
        write_trials(study, trials)
    assert study.get_trials() == []
