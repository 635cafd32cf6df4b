"""Two real processes on the PostgreSQL server share the trainings after screening of the
default pipeline (trust probe, fine-tuning rungs, retrains): each is trained by one of
them, and the study's process decides."""

from __future__ import annotations

import json
import re
from collections import Counter

import optuna
import pytest
from optuna.trial import TrialState

from nasflow.pipeline import TASKS_SUFFIX
from nasflow.record import study_finetuned, study_kept, study_trust, task_key, task_result
from tests._procs import NasflowProcess
from tests._study_template import write_study

EXTRA = """
from nasflow.search import FineTuning, TrustProbe

study = study.replace(
    trust=TrustProbe(archs=4, epochs=2, schedule_epochs=2, pool=6, bootstrap=100),
    finetuning=FineTuning(finalists=4, rungs=(1, 2), keep=0.5),
    train=TrainConfig(epochs=4, batch_size=50),
    retrain_top=3,
)
"""


@pytest.mark.slow
def test_a_worker_takes_trainings_after_screening_and_none_is_trained_twice(
    tmp_path, postgres_url, unique_name
) -> None:
    # 18 times the template's training split, so that each retrain takes seconds: the
    # worker looks for tasks every second, and with the template's 400 samples a fast
    # study process once finished every task between two of its looks (a full suite run).
    study_file = write_study(
        tmp_path, name=unique_name, n_trials=10, finetune=0, extra=EXTRA, train_samples=7200
    )
    out = tmp_path / "runs"
    common = ["--storage", postgres_url, "--runs", str(out), "--no-progress"]
    # The worker starts first and screens alone; the study's process starts once the worker
    # waits for trainings, so every task it queues meets a worker ready to take it (started
    # together, a worker slowed by a loaded machine could find every task taken).
    worker = NasflowProcess(["worker", str(study_file), *common], tmp_path)
    worker.wait_for(r"^worker: screening done", timeout=400)
    procs = [NasflowProcess(["search", str(study_file), *common], tmp_path), worker]
    codes = [p.finish(timeout=600) for p in procs]
    outputs = [p.text for p in procs]
    for code, text in zip(codes, outputs, strict=True):
        assert code == 0, text
    study = optuna.load_study(study_name=unique_name, storage=postgres_url)
    tasks = optuna.load_study(study_name=unique_name + TASKS_SUFFIX, storage=postgres_url)
    done = [t for t in tasks.get_trials() if t.state == TrialState.COMPLETE]
    keys = Counter(task_key(t) for t in done)
    # Every training ran once: the trust probe's 4, fine-tuning's rungs, 3 retrains.
    assert keys and max(keys.values()) == 1
    kinds = Counter(json.loads(k)["kind"] for k in keys)
    assert kinds["trust"] == 4 and kinds["retrain"] == 3 and kinds["finetune"] >= 4
    assert kinds["trust-pool"] == 1  # (its 6 random architectures: one task of 8 at most)
    assert not [t for t in tasks.get_trials() if t.state in (TrialState.RUNNING,)]
    # Both processes trained some, and the worker says how many of each it ran.
    by = Counter((task_result(t) or {})["by"].split(":")[1] for t in done)
    assert set(by) == {str(procs[0].proc.pid), str(procs[1].proc.pid)}
    line = re.search(r"(?m)^trainings after screening run by this process: (.*)$", outputs[1])
    assert line is not None
    said = sum(int(n) for n in re.findall(r"(\d+)", line.group(1)))
    assert said == by[str(procs[1].proc.pid)]
    # The study's process read back everything and decided once.
    assert study_trust(study) is not None and len(study_trust(study).archs) == 4
    finetuned = study_finetuned(study)
    assert finetuned is not None and len(finetuned.candidates) == 4
    assert study_kept(study) is not None
    winners = sorted(p.name for p in (out / unique_name / "winners").iterdir())
    assert len(winners) == 3
    assert "nasflow export" in outputs[0] and "nasflow export" not in outputs[1]
