"""The batched screening loop: candidates scored from the supernet alone are proposed on an
in-memory study, never repeat an architecture, and are written to the storage in batches;
a crash loses at most the batch in flight; the one-shot multiplier is measured."""

from __future__ import annotations

import os
import re
import sqlite3
import subprocess
import sys
import textwrap
from collections import Counter
from pathlib import Path

import numpy as np
import optuna
import pytest
from optuna.distributions import CategoricalDistribution
from optuna.trial import TrialState

from nasflow.errors import NasflowError
from nasflow.pipeline import StudyRunner
from nasflow.pipeline._multipliers import (
    format_multipliers,
    measured_trainings,
    search_multipliers,
)
from nasflow.pipeline._phases import _proposals, _screening
from nasflow.pipeline._phases._screening import REASK_PROBE, REASK_WINDOW, REASKS
from nasflow.record import (
    ARCH_ATTR,
    PARAMS_ATTR,
    SCORE_SECONDS_ATTR,
    SKIPPED_ATTR,
    SUPERNET_ACCURACY_ATTR,
    SUPERNET_LOSS_ATTR,
    TRAIN_COST_ATTR,
    FineTuned,
    FineTuneResult,
    get_constraints,
)
from nasflow.search import load_study_file
from nasflow.space import FloatRange
from tests._spaces import CellSpace
from tests._study_template import write_study

REPO = Path(__file__).resolve().parents[2]
SCORED = {
    ARCH_ATTR,
    PARAMS_ATTR,
    TRAIN_COST_ATTR,
    SCORE_SECONDS_ATTR,
    SUPERNET_ACCURACY_ATTR,
    SUPERNET_LOSS_ATTR,
}
#: A space of 12 architectures (two ops on two layers, three widths).
TINY_SPACE = (
    "study = study.replace(space=MNIST1DSpace(base_channels=4, layers_per_stage=1, "
    "ops=('k3_e2', 'skip')))"
)


def _runner(tmp_path, logs: list[str] | None = None, n_trials: int = 20, **kw):
    extra, max_params = kw.pop("extra", ""), kw.pop("max_params", None)
    path = write_study(tmp_path, n_trials=n_trials, finetune=0, max_params=max_params, extra=extra)
    spec = load_study_file(path)
    spec = spec.replace(screen_batch=8, **kw)
    log = logs.append if logs is not None else (lambda _: None)
    return StudyRunner(spec, out_dir=tmp_path / "runs", progress=False, log=log)


def _archs(trials) -> list[str]:
    return [t.user_attrs[ARCH_ATTR] for t in trials]


@pytest.mark.slow  # 8-11 CPU-s: trains a supernet, then screens (over 10 on a loaded machine)
def test_a_batched_screening_writes_every_distinct_candidate_with_its_records(tmp_path) -> None:
    logs: list[str] = []
    result = _runner(tmp_path, logs, max_params=900).run(retrain=False)
    stored = optuna.load_study(
        study_name="tiny", storage=f"sqlite:///{tmp_path}/runs/tiny/study.db"
    )
    trials = stored.get_trials()
    assert [t.number for t in trials] == list(range(20))
    assert len(set(_archs(trials))) == 20  # n_trials counts distinct architectures
    assert sorted(result.ran_trials) == list(range(20))
    skipped = [t for t in trials if SKIPPED_ATTR in t.user_attrs]
    scored = [t for t in trials if SKIPPED_ATTR not in t.user_attrs]
    assert skipped and scored
    for t in scored:  # what the per-trial loop wrote for a scored candidate
        assert t.state == TrialState.COMPLETE and len(t.values) == 2
        assert set(t.user_attrs) == SCORED
        assert t.values[1] == t.user_attrs[TRAIN_COST_ATTR]
        assert get_constraints(t)[0] <= 0
        assert "fixed_params" not in t.system_attrs  # random fallbacks look the same
        assert t.datetime_complete >= t.datetime_start
    for t in skipped:  # gated: pruned, never evaluated, its constraint recorded
        assert t.state == TrialState.PRUNED and t.values is None
        assert set(t.user_attrs) == {ARCH_ATTR, PARAMS_ATTR, TRAIN_COST_ATTR, SKIPPED_ATTR}
        assert get_constraints(t)[0] > 0
    for t in trials:
        assert set(t.params) == set(t.distributions) == set(result.spec.space.labels)
    frame = stored.trials_dataframe()
    assert len(frame) == 20
    assert {"values_supernet score", "values_predicted training cost (s)"} <= set(frame.columns)
    assert "user_attrs_supernet_accuracy" in frame.columns
    text = "\n".join(logs)
    for span in ("trials 0-7 written", "trials 8-15 written", "trials 16-19 written"):
        assert span in text
    assert "20 distinct candidates scored by this process, 20 distinct in the study" in text


class Stuck(optuna.samplers.BaseSampler):
    """Proposes the first value of every choice, always: every proposal is a repeat."""

    def __init__(self) -> None:
        self.asks = 0

    def infer_relative_search_space(self, study, trial):  # type: ignore[no-untyped-def]
        return {}

    def sample_relative(self, study, trial, search_space):  # type: ignore[no-untyped-def]
        return {}

    def before_trial(self, study, trial) -> None:  # type: ignore[no-untyped-def]
        self.asks += 1

    def sample_independent(self, study, trial, name, distribution):  # type: ignore[no-untyped-def]
        assert isinstance(distribution, CategoricalDistribution)
        return distribution.choices[0]


def test_no_architecture_is_proposed_twice_a_stuck_sampler_falls_back_to_random(
    tmp_path,
) -> None:
    logs: list[str] = []
    sampler = Stuck()
    runner = _runner(tmp_path, logs, n_trials=10, sampler=sampler)
    study = runner.run(retrain=False).study
    archs = _archs(study.get_trials())
    assert len(archs) == len(set(archs)) == 10
    # The first proposal is new; each later one was asked 1 + REASKS times, then drawn.
    assert sampler.asks == 1 + 9 * (1 + REASKS + 1)
    assert (
        f"the sampler proposed scored architectures (asked up to {1 + REASKS} times) 9 "
        "times: 9 drawn at random in their place" in "\n".join(logs)
    )


def test_a_mutating_fallback_proposes_the_nearest_unseen_architectures_first(tmp_path) -> None:
    logs: list[str] = []
    runner = _runner(
        tmp_path, logs, n_trials=10, sampler=Stuck(), repeat_fallback="mutate", extra=TINY_SPACE
    )
    study = runner.run(retrain=False).study
    space = runner.spec.space
    archs = [space.validate(t.params) for t in study.get_trials()]
    assert len({a.to_json() for a in archs}) == 10
    first = archs[0]  # the sampler's only proposal: the first value of every choice
    assert all(first[c.label] == c.values[0] for c in space.choices)
    changed = [sum(a[k] != first[k] for k in first) for a in archs[1:]]
    # 12 architectures: 4 are one choice away from the first, 5 two away, 2 three away.
    # Every one a single change away is proposed before any two away; none is further.
    assert changed == [1] * 4 + [2] * 5
    assert (
        f"the sampler proposed scored architectures (asked up to {1 + REASKS} times) 9 "
        "times: 9 mutated from them (one or two choices changed) in their place"
    ) in "\n".join(logs)


def test_a_neighbour_changes_one_choice_then_two_and_keeps_a_continuous_one() -> None:
    space = CellSpace()  # 6 edges x 5 ops, a batch size of 2 values, a continuous rate
    rng = np.random.default_rng(0)
    arch = space.sample(rng)
    singles = {
        arch.replace({c.label: v}).to_json()
        for c in space.choices
        if not isinstance(c, FloatRange)
        for v in c.values
        if v != arch[c.label]
    }
    assert len(singles) == 6 * 4 + 1
    seen = {arch.to_json()}
    for _ in range(len(singles)):  # every single change, each once, then none of them
        near = _proposals.unseen_neighbour(space, arch, seen, rng)
        assert near is not None and near.to_json() in singles - seen
        assert near["lr"] == arch["lr"]
        seen.add(near.to_json())
    near = _proposals.unseen_neighbour(space, arch, seen, rng)
    assert near is not None and sum(near[k] != arch[k] for k in arch) == 2
    # A space whose every point is seen has no neighbour left.
    tiny = CellSpace(with_hypers=False)
    everything = {a.to_json() for a in tiny.enumerate()}
    assert _proposals.unseen_neighbour(tiny, tiny.sample(rng), everything, rng) is None


def test_an_unknown_repeat_fallback_is_named(tmp_path) -> None:
    with pytest.raises(NasflowError, match="unknown repeat_fallback 'nearest'"):
        _runner(tmp_path, n_trials=4, repeat_fallback="nearest")


@pytest.mark.slow  # ~10 CPU-s: trains a supernet, then screens
def test_re_asking_stops_while_it_never_pays_and_is_probed_now_and_then(tmp_path) -> None:
    logs: list[str] = []
    sampler = Stuck()
    _runner(tmp_path, logs, n_trials=60, sampler=sampler).run(retrain=False)
    # 59 repeats. The first 22 are re-asked REASKS times each (66 re-asks judged, all
    # repeats); of the 37 after, only every REASK_PROBE-th (the 16th, the 32nd) is.
    assert (REASKS, REASK_WINDOW, REASK_PROBE) == (3, 64, 16)
    reasks = 22 * 3 + 2 * 3
    assert sampler.asks == 60 + 59 + reasks  # first asks, random draws' asks, re-asks
    assert (
        f"(asked up to 4 times) 59 times: 59 drawn at random in their place ({35 * 3} re-asks "
        "skipped: none of 64 in a row"
    ) in "\n".join(logs)


def test_a_run_asked_for_a_thousand_candidates_screens_them_with_evolution(tmp_path) -> None:
    # ``sampler="auto"`` follows the run's n_trials, not only the spec's (the tiny space
    # is exhausted after 12).
    result = _runner(tmp_path, n_trials=20, extra=TINY_SPACE).run(n_trials=1000, retrain=False)
    assert type(result.study.sampler).__name__ == "RegularizedEvolutionSampler"
    assert len(result.study.get_trials()) == 12


def test_an_exhausted_space_stops_the_screening_with_one_line(tmp_path) -> None:
    logs: list[str] = []
    study = _runner(tmp_path, logs, n_trials=20, extra=TINY_SPACE).run(retrain=False).study
    archs = _archs(study.get_trials())
    assert len(archs) == len(set(archs)) == 12
    said = [line for line in logs if line.startswith("search space exhausted")]
    assert said == [
        "search space exhausted: all 12 architectures of space 'mnist1d' are scored; "
        "screening stops at 12 distinct candidates (n_trials=20)"
    ]
    # A rerun proposes nothing: it says so again and adds no trial.
    logs.clear()
    study = _runner(tmp_path, logs, n_trials=20, extra=TINY_SPACE).run(retrain=False).study
    assert len(study.get_trials()) == 12
    assert sum(line.startswith("search space exhausted") for line in logs) == 1


#: A screening process killed (SIGKILL) while scoring its second batch's fourth candidate.
KILLED = """
import os, signal, sys
from nasflow.pipeline import StudyRunner
from nasflow.search import load_study_file
from nasflow.pipeline._arch._scoring import CandidateScorer

spec = load_study_file(sys.argv[1]).replace(screen_batch=8)
score, calls = CandidateScorer.score, []

def dying(self, trial, arch):
    calls.append(1)
    if len(calls) == 12:
        os.kill(os.getpid(), signal.SIGKILL)
    return score(self, trial, arch)

CandidateScorer.score = dying
StudyRunner(spec, out_dir=sys.argv[2], progress=False, log=print).run(retrain=False)
"""


@pytest.mark.slow
def test_a_screening_killed_mid_batch_resumes_without_duplicates_or_gaps(tmp_path) -> None:
    study_file = write_study(tmp_path, n_trials=20, finetune=0)
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(KILLED), str(study_file), str(tmp_path / "runs")],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=600,
    )
    assert proc.returncode == -9, proc.stdout + proc.stderr
    url = f"sqlite:///{tmp_path}/runs/tiny/study.db"
    before = optuna.load_study(study_name="tiny", storage=url).get_trials()
    assert len(before) == 8  # the first batch; the one in flight (3 scored) is lost
    logs: list[str] = []
    result = _runner(tmp_path, logs).run(retrain=False)
    trials = result.study.get_trials()
    assert [t.number for t in trials] == list(range(20))  # no gap
    archs = _archs(trials)
    assert len(set(archs)) == 20  # no duplicate
    assert archs[:8] == _archs(before)  # the stored batch is kept as it was
    assert "resuming: 8 distinct candidates kept from an earlier run, 12 to go" in logs
    assert sorted(result.ran_trials) == list(range(8, 20))


def _trial(number: int, arch: str, cost: float, duplicate: bool = False):
    attrs = {ARCH_ATTR: arch, TRAIN_COST_ATTR: cost, SUPERNET_ACCURACY_ATTR: 0.5}
    t = optuna.trial.create_trial(
        values=[0.5, cost],
        params={"x": 1},
        distributions={"x": optuna.distributions.IntDistribution(0, 2)},
        user_attrs=attrs,
    )
    t.number = number
    if duplicate:
        t.user_attrs["duplicate_of"] = 0
    return t


def test_the_one_shot_multiplier_is_measured_from_the_studys_trainings() -> None:
    trials = [
        _trial(0, "a", 10.0),
        _trial(1, "b", 20.0),
        _trial(2, "c", 30.0),
        _trial(3, "a", 10.0, duplicate=True),  # a repeat: never counted
    ]
    finetuned = FineTuneResult(  # ready models: trial 1 (also retrained: counted once), 2
        (
            FineTuned(1, "b", 0.5, (0.5, 0.5), (9.0, 9.0)),
            FineTuned(2, "c", 0.5, (0.5, 0.5, 0.5), (1.0, 2.0, 3.0)),
        ),
        3,
    )
    runs = measured_trainings(trials, 12, winners=[(1, 30.0)], finetuned=finetuned)
    assert [(r["trial"], r["source"]) for r in runs] == [
        (1, "retrained"),
        (2, "fine-tuned epochs"),
    ]
    assert runs[1]["seconds"] == pytest.approx(2.0 * 12)  # mean epoch x the recipe's epochs
    seconds = {"supernet": 6.0, "search": 4.0, "total": 12.0}
    record = search_multipliers(trials, seconds, 0, measured_runs=runs)
    m = record.to_dict()
    one = m["one_shot"]
    assert one["label"] == "MEASURED" and one["estimate"] is False
    assert one["sample"] == 2 and one["distinct_candidates"] == 3
    # Measured 30 + 24 = 54 s where the cost model predicted 20 + 30 = 50 s: x1.08 over
    # the 60 s predicted for the 3 distinct candidates (a's repeat not counted) = 64.8 s.
    assert one["scale"] == pytest.approx(54 / 50)
    assert one["measured_standalone_seconds"] == pytest.approx(64.8)
    assert one["multiplier"] == pytest.approx(6.48)
    assert "one_shot" in m["compounded"]["measured"]
    lines = format_multipliers(record)
    one_line = next(line for line in lines if "one-shot" in line)
    assert "MEASURED" in one_line and "n=2 trainings measured by this study" in one_line
    assert "3 distinct candidates" in one_line
    compounded = lines.index(next(line for line in lines if "compounded" in line))
    assert compounded > lines.index(one_line)
    # Without trainings measured by the study it stays an estimate, repeats still once.
    plain = search_multipliers(trials, seconds, 0).to_dict()["one_shot"]
    assert plain["label"] == "ESTIMATE" and plain["estimated_standalone_seconds"] == 60.0


@pytest.mark.slow
def test_workers_on_postgresql_share_one_batched_screening(
    tmp_path, postgres_url, unique_name
) -> None:
    n = 30
    study_file = write_study(tmp_path, name=unique_name, n_trials=n, finetune=0)
    study_file.write_text(study_file.read_text() + "\nstudy = study.replace(screen_batch=4)\n")
    out = tmp_path / "runs"
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    common = ["--storage", postgres_url, "--runs", str(out), "--no-progress"]
    cli = [sys.executable, "-m", "nasflow.cli"]
    procs = [
        subprocess.Popen(
            [*cli, "search", str(study_file), "--no-retrain", *common]
            if i == 0
            else [*cli, "worker", str(study_file), *common],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=env,
            cwd=tmp_path,
        )
        for i in range(3)
    ]
    outputs = [p.communicate(timeout=600)[0] for p in procs]
    try:
        for p, text in zip(procs, outputs, strict=True):
            assert p.returncode == 0, text
        trials = optuna.load_study(study_name=unique_name, storage=postgres_url).get_trials()
        assert sorted(t.number for t in trials) == list(range(len(trials)))
        archs = Counter(_archs(trials))
        assert all(c == 1 for c in archs.values()), archs.most_common(3)  # none scored twice
        assert len(trials) == n  # n_trials caps the distinct architectures stored
        ran = 0  # each stored trial was written by one process: the counts add up to n
        for text in outputs:
            line = next(x for x in text.splitlines() if x.startswith("trials run by this process"))
            found = re.search(r"(\d+) trials?\b", line)
            ran += int(found.group(1)) if found else 0
        assert ran == n
    finally:
        optuna.delete_study(study_name=unique_name, storage=postgres_url)


@pytest.mark.slow  # ~10 CPU-s: trains a supernet, then screens
def test_a_storage_failing_mid_batch_is_retried_or_reported_never_half_written(
    tmp_path, monkeypatch
) -> None:
    _runner(tmp_path, n_trials=8).run(retrain=False)  # one batch stored
    db = tmp_path / "runs" / "tiny" / "study.db"
    url = f"sqlite:///{db}"
    # A real failure inside the batch's transaction: the trial rows are inserted, then
    # the database refuses their attributes.
    with sqlite3.connect(db) as conn:
        conn.execute(
            "CREATE TRIGGER refuse BEFORE INSERT ON trial_user_attributes "
            "WHEN (SELECT count(*) FROM trials) > 8 BEGIN SELECT RAISE(ABORT, 'disk full'); END"
        )
    logs: list[str] = []
    with pytest.raises(NasflowError, match=r"a batch of 8 scored candidates .* after 3 tries"):
        _runner(tmp_path, logs, n_trials=20).run(retrain=False)
    assert sum("trying again" in line for line in logs) == 2
    assert len(optuna.load_study(study_name="tiny", storage=url).get_trials()) == 8
    with sqlite3.connect(db) as conn:
        conn.execute("DROP TRIGGER refuse")
    # A failure that passes: the batch is written on the next try.
    calls = []
    real = _screening.write_trials

    def flaky(study, trials):
        calls.append(len(trials))
        if len(calls) == 1:
            raise optuna.exceptions.StorageInternalError("database is locked")
        return real(study, trials)

    monkeypatch.setattr(_screening, "write_trials", flaky)
    logs.clear()
    result = _runner(tmp_path, logs, n_trials=20).run(retrain=False)
    assert calls[:2] == [8, 8]
    assert any("database is locked" in line and "trying again" in line for line in logs)
    trials = result.study.get_trials()
    assert [t.number for t in trials] == list(range(20))  # no gap
    assert len(set(_archs(trials))) == 20  # no duplicate
