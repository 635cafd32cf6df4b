"""Fine-tuning phase: ready models along the front, from inherited supernet weights.

After screening, the finalists (the screened Pareto set and the best-scored candidates) are
extracted from the supernet with their inherited weights, their batch-norm statistics
re-estimated, and fine-tuned through the study's speedup stack a rung of epochs at a time
under successive halving: after each rung only the best ``keep`` share goes on — by
validation accuracy with one objective, by non-dominated rank (validation accuracy up,
measured training time down) and then validation accuracy with several, as the Pareto
successive-halving pruner promotes. The learning-rate schedule spans the last rung, as in
ASHA, so a candidate stopped early trained exactly the first epochs of the full schedule.

Every fine-tuned candidate is a ready model: its weights (``model.safetensors``) and a
record (``record.json``: validation accuracy after every epoch, test accuracy of the final
weights, every epoch's measured training seconds, and what trained it: space, fingerprint,
recipe, seed, speedup stack, device) are saved under ``RUNS/NAME/ready/trial-N/`` in the
format of phase 3's winners (:func:`read_ready` reads one back, checked).
Progress is checkpointed after every epoch, so a killed study loses at most the epoch in
flight, and a resumed one never fine-tunes a candidate twice. A candidate whose loss turns
NaN or infinite is dropped (recorded as diverged) and the phase goes on."""

from __future__ import annotations

import json
import logging
import math
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import IO, Any

import numpy as np
import torch

from nasflow import names
from nasflow._files import atomic_write
from nasflow.data import DataBundle
from nasflow.pipeline._arch._winners import read_winner, save_winner
from nasflow.record import FineTuned, FineTuneResult, ReadyModelError
from nasflow.search import FineTuning, non_dominated_sort
from nasflow.space import Arch, SearchSpace
from nasflow.supernet import Supernet, recalibrate_bn
from nasflow.train import (
    EpochTrainer,
    NonFiniteLossError,
    Progress,
    TrainConfig,
    TrainingInterrupted,
    evaluate,
    list_checkpoints,
    load_latest,
    save_checkpoint,
)
from nasflow.train.stack import Stack

_LOG = logging.getLogger(__name__)

PROGRESS_FILE = "progress.json"


@dataclass(frozen=True)
class Finalist:
    """A screened candidate chosen for fine-tuning; ``protected`` ones (``FineTuning.top``)
    go through every rung."""

    trial: int
    arch: Arch
    supernet_accuracy: float
    protected: bool = False


def weights_label(rec: FineTuned) -> str:
    """What a fine-tuned candidate's weights are, in words (the ready model's record and
    its export say it)."""
    return names.finetuned_weights(rec.epochs)


def read_ready(folder: os.PathLike | str) -> tuple[FineTuned, dict[str, Any]]:
    """The ready model saved in ``folder`` (``RUNS/NAME/ready/trial-N``): its typed record
    and the record as stored, after checking that both files are regular files and the
    weights match the record's SHA-256.

    Raises:
        WinnerError: A missing or unreadable record, a link or FIFO in place of a file,
            or weights that are missing or do not match their checksum.
        ReadyModelError: A record that is not a fine-tuned candidate with weights.
    """
    record = read_winner(folder, numbers=("test_accuracy",))
    where = str(Path(folder) / "record.json")
    rec = FineTuned.from_dict(record, where)
    if not rec.val_curve or rec.status == "diverged":
        raise ReadyModelError(f"{where} is of a candidate that {rec.status} without weights")
    return rec, record


def _load_progress(folder: Path) -> FineTuned | None:
    path = folder / PROGRESS_FILE
    if not path.is_file():
        return None
    try:
        return FineTuned.from_dict(json.loads(path.read_text()))
    except ValueError:  # (ReadyModelError and JSONDecodeError are ValueErrors)
        return None  # a foreign or damaged file: fine-tune this candidate again


def _write(f: IO[str], text: str) -> None:
    f.write(text)


def _save_progress(folder: Path, rec: FineTuned) -> None:
    text = json.dumps(rec.to_dict(), indent=1) + "\n"
    atomic_write(folder / PROGRESS_FILE, lambda f: _write(f, text), mode="w")


@dataclass
class _Candidate:
    finalist: Finalist
    record: FineTuned
    folder: Path
    trainer: EpochTrainer | None = None


def _checkpoint(c: _Candidate, tr: EpochTrainer) -> Path:
    """Checkpoint a candidate's trainer and record (the newest two files are kept)."""
    state: dict[str, Any] = {
        "arch": c.record.arch,
        "record": json.dumps(c.record.to_dict()),
        "trainer": tr.state_dict(),
    }
    path = save_checkpoint(c.folder / Progress(tr.epoch, tr.batch).filename(), state)
    for _, old in list_checkpoints(c.folder)[2:]:
        old.unlink(missing_ok=True)
    return path


def promote(
    candidates: Sequence[FineTuned],
    keep: float,
    multi_objective: bool,
    epochs: int | None = None,
    costs: Mapping[int, float] | None = None,
) -> list[FineTuned]:
    """The ``ceil(keep * n)`` candidates that go on: by validation accuracy, or with
    several objectives by non-dominated rank of (validation accuracy up, measured epoch
    time down) and then validation accuracy; each judged after ``epochs`` epochs (the
    rung's; ``None``: their last), so a resumed phase decides as the first run did even
    for candidates it has trained further since. ``costs`` (trial -> a cost fixed before
    training, such as its predicted training seconds) replaces the measured epoch time,
    so that no clock decides (a deterministic study)."""

    def at(c: FineTuned) -> tuple[float, float]:
        n = len(c.val_curve) if epochs is None else min(epochs, len(c.val_curve))
        if costs is not None:
            return c.val_curve[n - 1], float(costs[c.trial])
        return c.val_curve[n - 1], float(np.mean(c.epoch_seconds[:n]))

    n = max(1, math.ceil(keep * len(candidates)))
    if not multi_objective:
        return sorted(candidates, key=lambda c: -at(c)[0])[:n]
    points = [list(at(c)) for c in candidates]
    ranks = non_dominated_sort(points, ["maximize", "minimize"])
    order = sorted(range(len(candidates)), key=lambda i: (ranks[i], -points[i][0]))
    return [candidates[i] for i in order[:n]]


class CandidateTrainer:
    """Fine-tunes candidates from their inherited supernet weights an epoch at a time,
    checkpointed after every epoch, and saves each as a ready model: the engine of the
    fine-tuning phase (:func:`run_finetuning`) and of the rung schedule's fine-tuning rungs.

    Args:
        supernet: The trained supernet (never modified: candidates are extracted copies).
        space: The study's space.
        data: The study's data (training split trains, validation chooses, test reports).
        recipe: The fine-tuning recipe (its epochs: what the learning-rate schedule spans).
        bn_batches: Training batches that re-estimate batch norm before the first epoch.
        stack: The speedup stack every epoch trains through.
        device: Where to train.
        seed: Seeds each candidate's batch order.
        clock: The run's CPU-seconds so far; read after every epoch into the candidate's
            ``trained_cpu_seconds``.
        should_stop: Polled after every step and every epoch; when true the candidate in
            training is checkpointed where it is (mid-epoch: the next run resumes there).
    """

    def __init__(
        self,
        supernet: Supernet,
        space: SearchSpace,
        data: DataBundle,
        recipe: TrainConfig,
        bn_batches: int,
        stack: Stack | None = None,
        device: torch.device | str = "cpu",
        seed: int = 0,
        clock: Callable[[], float] | None = None,
        should_stop: Callable[[], bool] | None = None,
    ) -> None:
        self.supernet, self.space, self.data, self.recipe = supernet, space, data, recipe
        self.bn_batches, self.stack, self.device, self.seed = bn_batches, stack, device, seed
        self.say = _LOG.debug  # per-candidate detail
        self.clock = clock
        self.stop = should_stop or (lambda: False)
        self.val, self.test = data.batches("val"), data.batches("test")
        self.trained_by = {  # what every ready model's record says trained it
            "space": space.name,
            "fingerprint": space.fingerprint(),
            "recipe": asdict(recipe),
            "seed": seed,
            "stack": (stack or Stack()).to_dict(),
            "device": str(device),
        }

    def candidate(self, f: Finalist, folder: Path) -> _Candidate:
        """Finalist ``f``, with its progress from ``folder / trial-N`` where an earlier run
        left some."""
        sub = folder / f"trial-{f.trial}"
        rec = _load_progress(sub)
        if rec is None or rec.arch != f.arch.to_json():
            rec = FineTuned(f.trial, f.arch.to_json(), f.supernet_accuracy)
        return _Candidate(f, rec, sub)

    def _trainer(self, c: _Candidate) -> EpochTrainer:
        """The candidate's trainer: from its newest checkpoint (which holds its record, so
        a kill between the two writes loses nothing), else from the inherited weights."""
        if c.trainer is not None:
            return c.trainer
        net = self.supernet.extract(self.space.path(c.finalist.arch))
        seed = self.seed * 1_000_003 + c.record.trial
        batches = self.data.batches("train", self.recipe.batch_size, seed)
        recalibrate_bn(net, batches.epoch(0), self.bn_batches, device=self.device)
        # Seeded steps: the rungs interleave candidates' epochs, so a candidate's dropout
        # would otherwise depend on what trained before it in this process.
        c.trainer = EpochTrainer(net, batches, self.recipe, self.device, self.stack, seed)
        found = load_latest(c.folder, on_bad=lambda e: self.say(f"fine-tuning: {e}"))
        if found is not None and found[1].get("arch") == c.record.arch:
            c.trainer.load_state_dict(found[1]["trainer"])
            c.record = FineTuned.from_dict(json.loads(found[1]["record"]))
            if found[0].batch:  # (a stop request's checkpoint, mid-epoch)
                self.say(
                    f"fine-tuning: trial {c.record.trial} resumed from its checkpoint at "
                    f"epoch {found[0].epoch + 1}, batch {found[0].batch}"
                )
        else:
            c.record = replace(c.record, val_curve=(), epoch_seconds=())
        return c.trainer

    def train_to(
        self, c: _Candidate, epochs: int, on_epoch: Callable[[], None] | None = None
    ) -> None:
        """Fine-tune ``c`` until it has trained ``epochs`` epochs (nothing where it has);
        a diverging candidate is marked ``diverged`` and left there.

        Raises:
            TrainingInterrupted: ``should_stop`` asked to stop (checkpointed).
        """
        while c.record.status != "diverged" and c.record.epochs < epochs:
            tr = self._trainer(c)
            if c.record.epochs >= epochs:  # the checkpoint was ahead of progress.json
                break
            before = tr.seconds
            try:
                tr.run_epoch(self.stop)
            except TrainingInterrupted:
                where = f"epoch {tr.epoch + 1}, batch {tr.batch}"
                raise TrainingInterrupted(
                    f"fine-tuning trial {c.record.trial} at {where}", _checkpoint(c, tr)
                ) from None
            except NonFiniteLossError as e:
                c.record = replace(c.record, status="diverged")
                _save_progress(c.folder, c.record)
                self.say(f"fine-tuning: trial {c.record.trial} diverged ({e}); dropped")
                break
            acc, _ = evaluate(tr.model, self.val, device=self.device)
            c.record = replace(
                c.record,
                val_curve=(*c.record.val_curve, acc),
                epoch_seconds=(*c.record.epoch_seconds, tr.seconds - before),
                trained_cpu_seconds=(
                    self.clock() if self.clock is not None else c.record.trained_cpu_seconds
                ),
            )
            path = _checkpoint(c, tr)
            _save_progress(c.folder, c.record)
            if on_epoch is not None:
                on_epoch()
            if self.stop():
                raise TrainingInterrupted(
                    f"fine-tuning, after trial {c.record.trial}'s epoch {tr.epoch}", path
                )

    def finish(self, c: _Candidate) -> FineTuned:
        """Close ``c``: a candidate still running with epochs trained becomes ``ready``,
        is scored on the test split and saved as a ready model; its weights are freed."""
        if c.record.status == "running" and c.record.val_curve:
            c.record = replace(c.record, status="ready")
        if c.record.status != "diverged" and c.record.val_curve and c.record.test_accuracy is None:
            tr = self._trainer(c)
            test_accuracy = evaluate(tr.model, self.test, device=self.device)[0]
            c.record = replace(c.record, test_accuracy=test_accuracy)
            origin = {"weights_origin": weights_label(c.record), **self.trained_by}
            save_winner(c.folder, tr.model, {**origin, **c.record.to_dict()})
        _save_progress(c.folder, c.record)
        c.trainer = None  # free the weights
        return c.record


#: Trains a rung's candidates to its epochs (``engine``, ``candidates``, ``epochs``),
#: leaving each candidate's record as trained.
RungTraining = Callable[["CandidateTrainer", Sequence[_Candidate], int], None]


def run_finetuning(
    finalists: Sequence[Finalist],
    supernet: Supernet,
    space: SearchSpace,
    data: DataBundle,
    recipe: TrainConfig,
    config: FineTuning,
    bn_batches: int,
    folder: Path,
    stack: Stack | None = None,
    multi_objective: bool = True,
    device: torch.device | str = "cpu",
    seed: int = 0,
    on_epoch: Callable[[], None] | None = None,
    clock: Callable[[], float] | None = None,
    should_stop: Callable[[], bool] | None = None,
    costs: Mapping[int, float] | None = None,
    engine: CandidateTrainer | None = None,
    train_rung: RungTraining | None = None,
) -> FineTuneResult:
    """Fine-tune ``finalists`` from their inherited weights under successive halving.

    Args:
        finalists: The screened candidates to fine-tune (order breaks ties).
        supernet, space, data, bn_batches, stack, device, seed, clock, should_stop:
            As :class:`CandidateTrainer` takes them.
        recipe: The study's stand-alone recipe (batch size, weight decay, smoothing).
        config: Finalists, rungs, promotion share, learning rate.
        folder: ``RUNS/NAME/finetune``: one sub-folder per candidate.
        multi_objective: Promote on (accuracy, time) fronts rather than accuracy alone.
        on_epoch: Called after every epoch trained (progress bars).
        costs: Trial -> a cost fixed before training (the predicted training seconds),
            promoting by it instead of the measured epoch time (see :func:`promote`).
        engine: The fine-tuning engine (``None``: one built from the arguments above).
        train_rung: Trains a rung's candidates to its epochs (``None``: each in turn,
            here; the study's pipeline shares them with its workers).

    Raises:
        TrainingInterrupted: ``should_stop`` asked to stop (checkpointed).
    """
    say = _LOG.debug
    by = {"rank_sum": " by accuracy and cross-entropy", "ranker": " by the ranker"}.get(
        config.rank_by, ""
    )
    if engine is None:
        engine = CandidateTrainer(
            supernet, space, data, config.recipe(recipe), bn_batches, stack, device, seed,
            clock, should_stop,
        )  # fmt: skip
    alive = [engine.candidate(f, folder) for f in finalists]
    every = list(alive)
    for r, epochs in enumerate(config.rungs):
        if train_rung is not None:
            train_rung(engine, alive, epochs)
        else:
            for c in alive:
                engine.train_to(c, epochs, on_epoch)
        survivors = [c for c in alive if c.record.status != "diverged" and c.record.val_curve]
        if r + 1 < len(config.rungs):
            halved = [c.record for c in survivors if not c.finalist.protected]
            promoted = (
                promote(halved, config.share(r), multi_objective, epochs, costs) if halved else []
            )
            kept = {rec.trial for rec in promoted}
            kept |= {c.record.trial for c in survivors if c.finalist.protected}
            for c in survivors:
                if c.record.trial not in kept and c.record.status == "running":
                    c.record = replace(c.record, status="stopped")
            alive = [c for c in survivors if c.record.trial in kept]
            protected = sum(c.finalist.protected for c in alive)
            say(
                f"fine-tuning rung {r + 1}/{len(config.rungs)} "
                f"({epochs} epoch{'s' if epochs != 1 else ''}): "
                f"{len(alive)} of {len(survivors)} go on to {config.rungs[r + 1]} epochs"
                + (f" ({protected} best supernet scores{by}, not halved)" if protected else "")
            )
    records = tuple(engine.finish(c) for c in every)
    val_samples = len(data.val)  # type: ignore[arg-type]
    return FineTuneResult(records, config.rungs[-1], val_samples, tuple(config.rungs))


def summary_line(result: FineTuneResult, seconds: float, trained_now: int | None = None) -> str:
    """The phase's closing log line: ``seconds`` and ``trained_now`` epochs are this run's
    (``None``: all of them); a resumed or shared phase says how many epochs it did not
    train (an earlier run's or a ``nasflow worker``'s)."""
    epochs = sum(c.epochs for c in result.candidates)
    earlier = epochs - trained_now if trained_now is not None else 0
    how = f"{epochs} epochs in all, {seconds:.0f}s"
    if earlier > 0:
        how = (
            f"{epochs} epochs in all, {earlier} of them by an earlier run or a worker; this "
            f"process {seconds:.0f}s"
        )
    return (
        f"fine-tuning: {len(result.candidates)} finalists fine-tuned from inherited supernet "
        f"weights ({how}); {len(result.ready)} ready models"
    )
