"""A stop request (a real SIGINT or SIGTERM) is honoured in every phase after screening
and in the two before the supernet: the phase stops between two steps, checkpoints, the
command exits 130 (143), and the next run resumes from the checkpoint.

One study runs five times, stopped once in each phase: the stack calibration, the
zero-cost anchors, fine-tuning (SIGTERM), phase 3's retrains and the trust probe (the last
phase); a sixth run finishes it. Every stopped training is resumed where its checkpoint
says it stopped.
"""

from __future__ import annotations

import re
import signal
from pathlib import Path

import optuna
import pytest

from nasflow.record import FINETUNED_KEY, STACK_KEY, TRUST_KEY, retrain_key, study_kept
from tests._procs import NasflowProcess
from tests._study_template import write_study

# 40 training steps an epoch (400 samples, batches of 10), so every stopped phase is
# mid-training when its line arrives; retrain_top=3 retrains a finalist that no anchor is.
EXTRA = """
from nasflow.search import Anchors, FineTuning, TrustProbe
study = study.replace(
    stack="auto",
    stack_budget=120.0,
    anchors=Anchors(n=2, sample=16),
    trust=TrustProbe(archs=4, epochs=2, schedule_epochs=2, pool=6, bootstrap=100),
    finetuning=FineTuning(finalists=3, rungs=(1, 2), top=1),
    retrain_top=3,
    train=TrainConfig(epochs=2, batch_size=10),
)
"""
STOPPED = re.compile(r"nasflow: stopped on request: (.*?)(?:; checkpoint '([^']+)')?; run the")


def _stop(args: list[str], cwd: Path, line: str, sig: int = signal.SIGINT) -> tuple[str, str]:
    """Run the search, send ``sig`` when ``line`` is logged; (where it stopped, output)."""
    proc = NasflowProcess(args, cwd)
    proc.wait_for(line)
    proc.signal(sig)
    assert proc.finish() == 128 + sig, proc.text
    found = STOPPED.search(proc.text)
    assert found, proc.text
    if found.group(2):  # the checkpoint the stop wrote exists
        assert (cwd / found.group(2)).is_file() or Path(found.group(2)).is_file()
    return found.group(1), proc.text


def _resumed_at(where: str) -> str:
    """``"epoch E, batch B"`` of a stop message (the point a resume must continue from)."""
    found = re.search(r"epoch (\d+), batch (\d+)", where)
    assert found, where
    return found.group(0)


@pytest.mark.slow
def test_a_stop_in_every_phase_exits_130_or_143_and_resumes_from_its_checkpoint(
    tmp_path: Path,
) -> None:
    name = "stops"
    study_file = write_study(tmp_path, name=name, n_trials=6, finetune=0, extra=EXTRA)
    args = ["search", str(study_file), "--retrain", "--no-progress", "--runs", "runs"]
    out = tmp_path / "runs" / name
    storage = f"sqlite:///{out / 'study.db'}"

    # 1. The stack calibration stops after a round: nothing is stored, for the study or
    #    the device.
    where, _ = _stop(args, tmp_path, r"^stack calibration: round 1:")
    assert where.startswith("the stack calibration, after round"), where
    study = optuna.load_study(study_name=name, storage=storage)
    assert STACK_KEY not in study.user_attrs

    # 2. The first anchor's training stops mid-epoch, checkpointed.
    where, text = _stop(args, tmp_path, r"^phase 0: anchor 1/2 \(trial 0\): training")
    assert where.startswith("phase 0: anchor 1/2 (trial 0) at epoch 1, batch"), where
    anchor_at = _resumed_at(where)

    # 3. The anchor resumes there; fine-tuning stops (SIGTERM) in its second rung.
    where, text = _stop(args, tmp_path, r"^fine-tuning rung 1/2", signal.SIGTERM)
    assert f"phase 0: anchor 1/2 (trial 0): resumed from its checkpoint at {anchor_at}" in text
    assert "SIGTERM: finishing the current step" in text
    assert re.match(r"fine-tuning trial \d+ at epoch 2, batch \d+", where), where
    tuned = re.match(r"fine-tuning trial (\d+)", where).group(1)  # type: ignore[union-attr]
    tuned_at = _resumed_at(where)

    # 4. Fine-tuning resumes its candidate; a retrain stops mid-epoch.
    where, text = _stop(args, tmp_path, r"^phase 3: retrain trial \d+: training")
    assert f"fine-tuning: trial {tuned} resumed from its checkpoint at {tuned_at}" in text
    retrained = re.match(r"phase 3: retrain trial (\d+) at epoch \d+, batch \d+", where)
    assert retrained, where
    number = retrained.group(1)

    # 5. The retrain resumes; the trust probe, last, stops in its second architecture.
    where, text = _stop(args, tmp_path, r"^trust probe: 1/4 trained")
    assert (
        f"phase 3: retrain trial {number}: resumed from its checkpoint at "
        f"{_resumed_at(retrained.group(0))}" in text
    )
    assert where.startswith("trust probe: architecture 2/4 at epoch"), where
    trust_at = _resumed_at(where)
    kept = study_kept(optuna.load_study(study_name=name, storage=storage))
    assert kept is not None  # decided before the probe, recorded before it

    # 6. The probe keeps its first architecture and resumes the second, and the study
    #    finishes with every phase's record.
    last = NasflowProcess(args, tmp_path)
    assert last.finish() == 0, last.text
    assert f"trust probe: architecture 2/4: resumed from its checkpoint at {trust_at}" in last.text
    assert "trust probe: 1/4 trained" not in last.text  # not trained again
    study = optuna.load_study(study_name=name, storage=storage)
    for key in (STACK_KEY, TRUST_KEY, FINETUNED_KEY, retrain_key(int(number))):
        assert key in study.user_attrs, key
    assert study_kept(study) == kept  # the probe changed nothing it decides
    assert not (out / "retraining").exists() and not (out / "trust").exists()
