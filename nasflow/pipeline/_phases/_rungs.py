"""The rung schedule phase (``StudySpec.rungs``, entry point :func:`run_rung_schedule`): the
screened candidates, in the study's ranking order, climb one ladder of fidelities in
Optuna, from the screening score through fine-tuning epochs from their inherited weights to
the recipe's full training, promoted by successive halving (``nasflow.pipeline._schedule._ladder``
owns the ladder; this module trains what each rung asks).

It replaces the fine-tuning phase and phase 3: the fine-tuned candidates are ready models
(``RUNS/NAME/ready/trial-N``, as the fine-tuning phase saves them, and the same
``nasflow:finetuned`` record), the top rung's trainings from scratch are retrained winners
(``RUNS/NAME/winners/trial-N`` and ``nasflow:retrain:N``), so the kept decision, the
report and the export read them as before. Every candidate is a trial of the rung study
(``NAME:rungs``) in the study's storage: ``nasflow worker`` processes take the waiting
trials too, each claimed once by the storage, and the process that started the study waits
for them before it decides. How well each rung ranks the next (Kendall tau, free: the rungs
measured it) is the record's trust reading (``nasflow:rungs``)."""

from __future__ import annotations

import statistics
import time
import warnings
from dataclasses import dataclass

import optuna
from optuna.trial import FrozenTrial, TrialState

from nasflow.data import DataBundle
from nasflow.pipeline._arch._ranking import anchor_labels
from nasflow.pipeline._arch._ready import CandidateTrainer, Finalist, _Candidate
from nasflow.pipeline._arch._training import train_winner, winner_identity
from nasflow.pipeline._arch._winners import find_winner
from nasflow.pipeline._context import RunContext, Winner
from nasflow.pipeline._phases._finetune import by_score, record_ranker
from nasflow.pipeline._phases._retrain import retrain_record
from nasflow.pipeline._recovery import heartbeat_settings, sweep_zombies
from nasflow.pipeline._schedule._ladder import (
    Candidate,
    RungPlan,
    enqueue,
    ladder,
    measured_at,
    plan,
    run_rungs,
    rung_study,
    rung_tau,
)
from nasflow.record import (
    DUPLICATE_KEY,
    RUNG_READY_ATTR,
    RUNG_RETRAINED_ATTR,
    FineTuned,
    FineTuneResult,
    RetrainRecord,
    RungEntry,
    RungsRecord,
    RungStep,
    TrialRecord,
    WinnerRecord,
    rung_outcome,
    write_record,
)
from nasflow.search import FineTuning, ParetoSuccessiveHalvingPruner, Rungs
from nasflow.space import Arch
from nasflow.supernet import Supernet
from nasflow.train import NonFiniteLossError
from nasflow.train.stack import Stack

#: Seconds between looks at the rung study while other workers finish their trials.
POLL_SECONDS = 2.0
#: Seconds a worker waits for the study's process to queue the candidates.
QUEUE_WAIT = 600.0


@dataclass(frozen=True)
class RungsPhaseResult:
    """The rung schedule: the fine-tuned candidates, the top rung's winners (best
    retrained validation accuracy first), its record and how long it took (``finetuned``
    and ``record`` are ``None`` in a worker, which leaves the decision to the study's
    process)."""

    finetuned: FineTuneResult | None
    winners: tuple[Winner, ...]
    record: RungsRecord | None
    seconds: float


def finetune_settings(rungs: Rungs, top_epochs: int) -> FineTuning:
    """The fine-tuning recipe the rungs train with, as a ``FineTuning``: its schedule spans
    the last fine-tuning rung (ASHA: a candidate stopped early trained exactly the first
    epochs of the full schedule), or the recipe's ``top_epochs`` where the top rung goes
    on from the inherited weights."""
    steps = tuple(rungs.finetune)
    if rungs.top == "inherited":
        steps = (*(s for s in steps if s < top_epochs), top_epochs)
    return FineTuning(finalists=1, rungs=steps or (1,), keep=1.0 / rungs.reduction)


def rung_pruner(rungs: Rungs, first: int, top: int, objectives: int) -> optuna.pruners.BasePruner:
    """Optuna's successive halving (``"asha"``) or Hyperband with one objective; the
    Pareto-aware successive halving with several (Optuna's refuse several objectives)."""
    if objectives > 1:
        return ParetoSuccessiveHalvingPruner(
            min_resource=first, reduction_factor=rungs.reduction, max_resource=top
        )
    if rungs.pruner == "hyperband":
        return optuna.pruners.HyperbandPruner(
            min_resource=first, max_resource=top, reduction_factor=rungs.reduction
        )
    return optuna.pruners.SuccessiveHalvingPruner(
        min_resource=first, reduction_factor=rungs.reduction
    )


def ranked_candidates(
    study: optuna.Study, rank_by: str = "rank_sum"
) -> list[tuple[FrozenTrial, TrialRecord]]:
    """The screened architectures, each once, in the study's ranking order (``by_score``;
    ``Rungs.rank_by``: by default the rank sum of supernet accuracy and cross-entropy)."""
    finished = [
        t
        for t in study.get_trials(deepcopy=False)
        if t.state.is_finished() and DUPLICATE_KEY not in t.user_attrs
    ]
    out, seen = [], set()
    labels = anchor_labels(study) if rank_by == "ranker" else None
    for t in by_score(finished, rank_by, labels):
        rec = TrialRecord.from_trial(t)
        if not rec.screened or rec.supernet_accuracy is None:
            continue
        arch = rec.get_arch()
        if arch not in seen:
            seen.add(arch)
            out.append((t, rec))
    return out


def _screening_trial(trial: optuna.Trial) -> int:
    number = RungEntry.from_trial(trial).screening_trial
    assert number is not None  # (the schedule queues no anchors here)
    return number


class _RungTrainer:
    """What each rung trains, through the study's stack (``_schedule.RungTrainer``)."""

    def __init__(
        self,
        ctx: RunContext,
        data: DataBundle,
        supernet: Supernet,
        stack: Stack | None,
        screened: dict[int, tuple[FrozenTrial, TrialRecord]],
        retrain: bool,
    ) -> None:
        spec = ctx.spec
        assert spec.rungs is not None
        self.ctx, self.data, self.stack, self.screened = ctx, data, stack, screened
        self.rungs, self.retrain = spec.rungs, retrain
        self.top_epochs = spec.train.epochs
        tuning = finetune_settings(spec.rungs, self.top_epochs)
        self.engine = CandidateTrainer(
            supernet, spec.space, data, tuning.recipe(spec.train), spec.bn_batches, stack,
            ctx.device, spec.seed,
            lambda: time.process_time() - ctx.started_cpu, ctx.stop.is_set,
        )  # fmt: skip
        self.live: dict[int, _Candidate] = {}
        self.scratch_trained: dict[int, bool] = {}

    def _screened(self, trial: optuna.Trial) -> tuple[FrozenTrial, TrialRecord]:
        return self.screened[_screening_trial(trial)]

    def _values(self, trial: optuna.Trial, accuracy: float) -> list[float]:
        """The rung's objective vector: the measured validation accuracy, then the
        screening trial's other objectives (costs fixed by the architecture)."""
        screened = self._screened(trial)[0]
        return [float(accuracy), *(float(v) for v in (screened.values or [])[1:])]

    def _candidate(self, trial: optuna.Trial, arch: Arch) -> _Candidate:
        number = _screening_trial(trial)
        if number not in self.live:
            score = float(self._screened(trial)[1].supernet_accuracy or 0.0)
            self.live[number] = self.engine.candidate(
                Finalist(number, arch, score), self.ctx.folder.ready
            )
        return self.live[number]

    def fine_tune(self, trial: optuna.Trial, arch: Arch, epochs: int) -> list[float]:
        c = self._candidate(trial, arch)
        self.engine.train_to(c, epochs)
        if c.record.status == "diverged":
            raise NonFiniteLossError(f"trial {c.record.trial} diverged in fine-tuning")
        return self._values(trial, c.record.val_curve[min(epochs, c.record.epochs) - 1])

    def top(self, trial: optuna.Trial, arch: Arch) -> list[float]:
        """The recipe's full training: from scratch (a retrained winner) or on from the
        inherited weights (a ready model fine-tuned the recipe's epochs). Without phase 3
        (``--no-retrain``) the last fine-tuning rung stands for it."""
        if self.rungs.top == "inherited":
            return self.fine_tune(trial, arch, self.top_epochs)
        if not self.retrain:
            c = self._candidate(trial, arch)
            return self._values(trial, c.record.val_curve[-1] if c.record.val_curve else 0.0)
        screened, rec = self._screened(trial)
        winner = self._scratch(screened.number, arch, rec)
        self.scratch_trained[screened.number] = True
        trial.set_user_attr(RUNG_RETRAINED_ATTR, retrain_record(winner, self.ctx.out).to_dict())
        return self._values(trial, winner.val_accuracy)

    def _scratch(self, number: int, arch: Arch, rec: TrialRecord) -> Winner:
        """Screening trial ``number``'s architecture trained from scratch (an earlier
        run's saved training of the same identity is reused)."""
        ctx = self.ctx
        identity = winner_identity(ctx.spec, self.data, arch, self.stack)
        folder = ctx.folder.winner(number)
        saved, _ = find_winner(folder, identity)
        cost, params = float(rec.train_cost or 0.0), int(rec.params or 0)
        if saved is not None:
            r = WinnerRecord.from_dict(saved)
            val, test = float(r.val_accuracy or 0.0), float(r.test_accuracy or 0.0)
            measured = float(r.measured_train_cost or 0.0)
            return Winner(number, arch, val, test, cost, measured, params, folder, reused=True)
        desc = f"top rung: trial {number} from scratch"
        res, saved_to = train_winner(
            ctx, self.data, number, arch, self.stack, identity, desc, cost, params
        )
        test = float(res.test_accuracy or 0.0)
        return Winner(number, arch, res.val_accuracy, test, cost, res.seconds, params, saved_to)

    def finish(self, trial: optuna.Trial, arch: Arch) -> None:
        """Save the candidate's fine-tuned model (a ready model) and record it on the
        trial, pruned or promoted."""
        number = _screening_trial(trial)
        c = self.live.pop(number, None)
        if c is not None and c.record.val_curve:
            trial.set_user_attr(RUNG_READY_ATTR, self.engine.finish(c).to_dict())
        top = self.scratch_trained.pop(number, False)
        epochs = c.record.epochs if c is not None else 0
        self.ctx.log(
            f"rungs: trial {number} done here: {epochs} epochs fine-tuned"
            + (", trained from scratch" if top else "")
        )


def _wait_for_queue(ctx: RunContext, study: optuna.Study) -> None:
    """A worker waits (at most ``QUEUE_WAIT`` seconds) for the study's process to queue
    the candidates: its screening may end after the worker's."""
    waited = 0.0
    while not study.get_trials(deepcopy=False) and waited < QUEUE_WAIT:
        ctx.check_stop("the rungs, waiting for the queue")
        time.sleep(POLL_SECONDS)
        waited += POLL_SECONDS
    if not study.get_trials(deepcopy=False):
        ctx.log(f"rungs: no candidate was queued within {QUEUE_WAIT:.0f}s; nothing to train")


def _wait_for_workers(ctx: RunContext, study: optuna.Study) -> bool:
    """Wait while other workers still train rung trials; whether trials wait to be
    trained again (a dead worker's trial, failed by the storage's heartbeat and queued
    again)."""
    said = False
    while not ctx.stop.is_set():
        with warnings.catch_warnings():  # (experimental since Optuna 2.9, unchanged since)
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            optuna.storages.fail_stale_trials(study)
        if study.get_trials(deepcopy=False, states=(TrialState.WAITING,)):
            return True
        running = study.get_trials(deepcopy=False, states=(TrialState.RUNNING,))
        if not running:
            return False
        if not said:
            ctx.log(f"rungs: waiting for {len(running)} candidates other workers are training")
            said = True
        time.sleep(POLL_SECONDS)
    ctx.check_stop("the rungs, waiting for other workers")
    return False


def _read_back(
    ctx: RunContext,
    trials: list[FrozenTrial],
    screened: dict[int, tuple[FrozenTrial, TrialRecord]],
) -> tuple[list[FineTuned], list[Winner]]:
    """Every candidate's fine-tuned record and top-rung winner, from the rung study
    (whichever worker trained them)."""
    tuned: list[FineTuned] = []
    winners: list[Winner] = []
    for t in trials:
        ft, retrained = rung_outcome(t)
        if ft is not None:
            tuned.append(ft)
        if retrained is not None and retrained.number in screened:
            winners.append(_winner(ctx, retrained, screened[retrained.number][1]))
    winners.sort(key=lambda w: -w.val_accuracy)
    return tuned, winners


def _winner(ctx: RunContext, r: RetrainRecord, rec: TrialRecord) -> Winner:
    return Winner(
        r.number,
        rec.get_arch(),
        float(r.val_accuracy or 0.0),
        float(r.test_accuracy or 0.0),
        float(r.predicted_train_cost or 0.0),
        float(r.measured_train_cost or 0.0),
        int(r.params or 0),
        ctx.out / r.weights if r.weights else None,
    )


def _record(rungs: Rungs, p: RungPlan, trials: list[FrozenTrial], seconds: float) -> RungsRecord:
    """The schedule's record: how many reached each rung, each rung's tau with the next."""
    ladder_steps = [0, *p.steps, p.top]
    whats = ["screening score"]
    whats += [f"fine-tuned {s} epoch{'s' * (s != 1)}" for s in p.steps]
    whats.append("trained from scratch" if rungs.top == "scratch" else "full recipe, inherited")
    steps = []
    for i, (step, what) in enumerate(zip(ladder_steps, whats, strict=True)):
        nxt = ladder_steps[i + 1] if i + 1 < len(ladder_steps) else None
        reached = measured_at(trials, step)
        if nxt is None:
            steps.append(RungStep(step, what, reached))
            continue
        tau = rung_tau(trials, step, nxt)
        ok = tau.pairs >= 3
        steps.append(
            RungStep(
                step, what, reached,
                tau.tau if ok else None,
                tau.interval[0] if ok else None,
                tau.interval[1] if ok else None,
            )
        )  # fmt: skip
    return RungsRecord(rungs.top, rungs.reduction, p.candidates, tuple(steps), seconds)


def _plan(rungs: Rungs, ranked: list[tuple[FrozenTrial, TrialRecord]], epochs: int) -> RungPlan:
    """How many candidates enter, from the budget and their median predicted costs."""
    costs = [float(r.train_cost) for _, r in ranked if r.train_cost]
    full = statistics.median(costs) if costs else 1.0
    epoch_cost = full / max(1, epochs)
    steps, _ = ladder(rungs.finetune, rungs.reduction)
    top_cost = full if rungs.top == "scratch" else epoch_cost * max(1, epochs - steps[-1])
    return plan(
        steps, rungs.reduction, epoch_cost, top_cost, rungs.budget, len(ranked), rungs.candidates
    )


def run_rung_schedule(
    ctx: RunContext,
    data: DataBundle,
    supernet: Supernet,
    stack: Stack | None,
    worker: bool = False,
    retrain: bool = True,
) -> RungsPhaseResult:
    """Run the rung schedule: queue the screened candidates in ranking order (the study's
    process; a worker takes waiting trials only), train the rungs the pruner promotes,
    and (the study's process) read back every candidate, write the fine-tuning, retrain
    and rung records, and return the winners."""
    ctx.check_stop("before the rungs")
    t0 = time.perf_counter()
    spec = ctx.spec
    rungs = spec.rungs
    assert rungs is not None
    ranked = ranked_candidates(ctx.study, rungs.rank_by)
    if rungs.rank_by == "ranker":
        record_ranker(ctx)
    if not ranked:
        ctx.log("rungs: no screened candidate to train")
        return RungsPhaseResult(None, (), None, time.perf_counter() - t0)
    screened = {t.number: (t, r) for t, r in ranked}
    p = _plan(rungs, ranked, spec.train.epochs)
    # Promoted by accuracy alone: the rung study holds the first objective only.
    promoted_by = len(spec.objectives) if rungs.promote == "front" else 1
    pruner = rung_pruner(rungs, p.steps[0] if p.steps else 1, p.top, promoted_by)
    directions = [d.name.lower() for d in ctx.study.directions][:promoted_by]
    # (the screening study's storage: the rung study lives beside it, shared by workers)
    study = rung_study(ctx.study._storage, spec.name, directions, pruner)
    if not worker:
        # Trials a killed run of this study left running: failed and queued once more.
        sweep_zombies(study, ctx.storage.kind, heartbeat_settings()[1])
        queue = [Candidate(r.get_arch(), r.supernet_accuracy, t.number) for t, r in ranked]
        queued = enqueue(study, queue[: p.candidates], p.top)
        steps = ", ".join(str(s) for s in p.steps)
        ctx.log(
            f"rungs: {p.candidates} candidates in ranking order ({queued} new), fine-tuned "
            f"{steps} epochs then the full recipe ({rungs.top}), keeping 1/{p.reduction}"
            + (" by validation accuracy" if promoted_by == 1 else " by Pareto rank")
        )
    else:
        _wait_for_queue(ctx, study)
    trainer = _RungTrainer(ctx, data, supernet, stack, screened, retrain)
    while True:
        run_rungs(study, trainer, p, stop=ctx.stop.is_set, catch=(NonFiniteLossError,))
        ctx.check_stop("the rungs, between candidates")
        # The study's process waits for the workers; a dead worker's trial comes back as
        # a waiting retry (heartbeat) and is trained here.
        if worker or not _wait_for_workers(ctx, study):
            break
    if worker:
        return RungsPhaseResult(None, (), None, time.perf_counter() - t0)
    trials = [
        t
        for t in study.get_trials(deepcopy=False)
        if t.state.is_finished() and RungEntry.find(t) is not None
    ]
    tuned, winners = _read_back(ctx, trials, screened)
    seconds = time.perf_counter() - t0
    finetuned = None
    if tuned:
        full = p.steps[-1] if p.steps else 1
        if rungs.top == "inherited":
            full = spec.train.epochs
        ft_rungs = finetune_settings(rungs, spec.train.epochs).rungs
        finetuned = FineTuneResult(tuple(tuned), full, len(data.val), ft_rungs)  # type: ignore[arg-type]
        finetuned = finetuned.finished(seconds)
        write_record(ctx.study, finetuned)
    for w in winners:
        write_record(ctx.study, retrain_record(w, ctx.out))
    record = _record(rungs, p, trials, seconds)
    write_record(ctx.study, record)
    ctx.log(record.line())
    return RungsPhaseResult(finetuned, tuple(winners), record, seconds)
