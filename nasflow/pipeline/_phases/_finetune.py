"""Fine-tuning phase: the screened front and the best-scored candidates become ready models
(entry point :func:`run_finetune`; the engine is ``nasflow.pipeline._arch._ready``)."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import optuna
from optuna.trial import FrozenTrial
from scipy.stats import rankdata

from nasflow.data import DataBundle
from nasflow.pipeline._arch._ranking import anchor_labels, rank_candidates
from nasflow.pipeline._arch._ready import (
    CandidateTrainer,
    Finalist,
    _Candidate,
    run_finetuning,
    summary_line,
)
from nasflow.pipeline._context import FineTunePhaseResult, RunContext
from nasflow.pipeline._schedule._tasks import Handler, Task, process_name
from nasflow.record import DUPLICATE_KEY, FineTuned, TrialRecord, study_finetuned, write_record
from nasflow.space import Arch
from nasflow.supernet import Supernet
from nasflow.train.stack import Stack


def by_score(
    trials: Sequence[FrozenTrial],
    rank_by: str = "accuracy",
    labels: Mapping[int, float] | None = None,
) -> list[FrozenTrial]:
    """Screened ``trials`` (with a supernet accuracy), best supernet score first.

    ``rank_by="accuracy"``: by the supernet accuracy. ``"rank_sum"``: by the sum of each
    trial's rank by accuracy (higher first) and by supernet validation cross-entropy
    (lower first), ties broken by the accuracy. Where a screened trial has no recorded
    cross-entropy (a study screened before it was recorded, or a non-finite loss, which
    the storage cannot keep) all are ranked by accuracy alone, the screening score they
    were built on, rather than by ranks some of them lack. ``"ranker"``: by the pairwise
    ranker's score (``nasflow.pipeline._arch._ranking``; ``labels``: the validation
    accuracies of candidates trained from scratch, by trial number, it is refitted on).
    """
    if rank_by == "ranker":
        return rank_candidates(trials, labels).trials
    recs = [(t, TrialRecord.from_trial(t)) for t in trials]
    recs = [(t, r) for t, r in recs if r.supernet_accuracy is not None]
    acc = [float(r.supernet_accuracy) for _, r in recs]  # type: ignore[arg-type]
    losses = [r.supernet_loss for _, r in recs]
    if rank_by == "accuracy" or any(v is None for v in losses):
        key = [(-a, 0.0) for a in acc]
    else:
        acc_rank = rankdata([-a for a in acc])  # 1 = the most accurate; ties share a mean
        loss_rank = rankdata([float(v) for v in losses])  # type: ignore[arg-type]
        key = [(float(a + b), -c) for a, b, c in zip(acc_rank, loss_rank, acc, strict=True)]
    order = sorted(range(len(recs)), key=lambda i: key[i])
    return [recs[i][0] for i in order]


def select_finalists(
    study: optuna.Study, n: int, top: int = 0, rank_by: str = "accuracy"
) -> list[Finalist]:
    """Up to ``n`` distinct screened architectures: the ``top`` best supernet scores
    (protected: fine-tuned through every rung; "best" as :func:`by_score` orders them),
    then the screened Pareto set (best supernet accuracy first), then the next best
    scores."""
    seen: dict[Arch, Finalist] = {}
    front = [t for t in study.best_trials if DUPLICATE_KEY not in t.user_attrs]
    finished = [t for t in study.get_trials(deepcopy=False) if t.state.is_finished()]
    # Duplicates carry their original's numbers: ranked among the others they would
    # share its rank; only original trials enter the ranking.
    labels = anchor_labels(study) if rank_by == "ranker" else None
    rest = by_score([t for t in finished if DUPLICATE_KEY not in t.user_attrs], rank_by, labels)
    best = [(t, True) for t in rest]
    others = [(t, False) for t in sorted(front, key=lambda t: -t.values[0]) + rest]
    for t, protect in best + others:
        if protect and sum(f.protected for f in seen.values()) >= top:
            continue
        rec = TrialRecord.from_trial(t)
        if not rec.screened or rec.supernet_accuracy is None:
            continue
        arch = rec.get_arch()
        if arch not in seen:
            seen[arch] = Finalist(t.number, arch, float(rec.supernet_accuracy), protect)
        if len(seen) == n:
            break
    return list(seen.values())


def predicted_costs(study: optuna.Study, finalists: Sequence[Finalist]) -> dict[int, float]:
    """Each finalist's predicted training cost (its screening trial's ``train_cost``): what
    a deterministic study promotes by instead of measured epoch seconds."""
    trials = {t.number: t for t in study.get_trials(deepcopy=False)}
    out = {}
    for f in finalists:
        cost = TrialRecord.from_trial(trials[f.trial]).train_cost
        out[f.trial] = float(cost) if cost is not None else float("inf")
    return out


#: The fine-tuning phase's task: one candidate fine-tuned to a rung's epochs.
FINETUNE = "finetune"


def finetune_engine(
    ctx: RunContext, data: DataBundle, supernet: Supernet, stack: Stack | None
) -> CandidateTrainer:
    """The fine-tuning engine of the study's recipe (the same in every process)."""
    spec = ctx.spec
    assert spec.finetuning is not None
    return CandidateTrainer(
        supernet,
        spec.space,
        data,
        spec.finetuning.recipe(spec.train),
        spec.bn_batches,
        stack,
        ctx.device,
        spec.seed,
        clock=lambda: time.process_time() - ctx.started_cpu,
        should_stop=ctx.stop.is_set,
    )


def finetune_args(f: Finalist, epochs: int) -> dict[str, Any]:
    """A fine-tuning task's arguments: finalist ``f`` to ``epochs`` epochs."""
    return {
        "trial": f.trial,
        "arch": f.arch.to_json(),
        "supernet_accuracy": f.supernet_accuracy,
        "protected": f.protected,
        "epochs": epochs,
    }


def finetune_handler(
    engine: CandidateTrainer,
    folder: Path,
    own: Mapping[int, _Candidate] | None = None,
    on_epoch: Callable[[], None] | None = None,
) -> Handler:
    """The fine-tuning task: a candidate trained to the rung's epochs, from the trainer in
    memory (``own``: the study's process's candidates; in a worker, those it trained last
    while no other process has trained them since) or from its checkpoint in ``folder``;
    its record after."""
    kept: dict[int, _Candidate] = {}  # (a worker's candidates, trainers in memory)

    def finetune(args: Mapping[str, Any]) -> dict[str, Any]:
        trial = int(args["trial"])
        c = (own or {}).get(trial)
        if c is None:
            f = Finalist(
                trial,
                Arch.from_json(args["arch"]),
                float(args["supernet_accuracy"]),
                bool(args["protected"]),
            )
            c = engine.candidate(f, folder)  # (its progress as saved: cheap)
            mine = kept.get(trial)
            if mine is not None and mine.record.epochs == c.record.epochs:
                c = mine  # nobody trained it since: go on from the weights in memory
            kept[trial] = c
        engine.train_to(c, int(args["epochs"]), on_epoch)
        return {"record": c.record.to_dict()}

    return finetune


def record_ranker(ctx: RunContext) -> None:
    """Store and log what the ranker that chose the finalists did (its features, weights,
    labels; why it kept the prior)."""
    study = ctx.study
    finished = [t for t in study.get_trials(deepcopy=False) if t.state.is_finished()]
    screened = [t for t in finished if DUPLICATE_KEY not in t.user_attrs]
    record = rank_candidates(screened, anchor_labels(study)).record
    write_record(study, record)
    ctx.log(f"finalists chosen by the {record.line()}")


def run_finetune(
    ctx: RunContext, data: DataBundle, supernet: Supernet, stack: Stack | None
) -> FineTunePhaseResult:
    """Fine-tune the finalists from their inherited ``supernet`` weights on ``data``
    through ``stack`` under successive halving; record every fine-tuned candidate in the
    study."""
    ctx.check_stop("before fine-tuning")
    t0 = time.perf_counter()
    spec, study = ctx.spec, ctx.study
    assert spec.finetuning is not None
    tuning = spec.finetuning
    finalists = select_finalists(study, tuning.finalists, tuning.protected, tuning.rank_by)
    if tuning.rank_by == "ranker":
        record_ranker(ctx)
    total = sum(
        len(finalists) for _ in spec.finetuning.rungs
    )  # an upper bound of the epochs: the bar is a guide
    bar = ctx.bar(total, "fine-tuning")
    done = [0]

    def tick() -> None:
        done[0] += 1
        if bar is not None:
            bar.n = done[0]
            bar.refresh()

    def train_rung(engine: CandidateTrainer, alive: Sequence[_Candidate], epochs: int) -> None:
        """The rung's candidates as tasks: here in turn, or shared with the workers."""
        own = {c.record.trial: c for c in alive}
        tasks = [Task(FINETUNE, finetune_args(c.finalist, epochs)) for c in alive]
        handler = finetune_handler(engine, ctx.folder.ready, own, tick)
        me = process_name()
        for c, r in zip(alive, ctx.tasks.run(tasks, {FINETUNE: handler}), strict=True):
            if r["by"] != me:  # (trained by a worker: its record and checkpoint are newer)
                c.record, c.trainer = FineTuned.from_dict(r["record"]), None

    try:
        result = run_finetuning(
            finalists,
            supernet,
            spec.space,
            data,
            spec.train,
            spec.finetuning,
            spec.bn_batches,
            ctx.folder.ready,
            multi_objective=len(spec.objectives) > 1,
            costs=predicted_costs(study, finalists) if spec.deterministic else None,
            engine=finetune_engine(ctx, data, supernet, stack),
            train_rung=train_rung,
        )
    finally:
        ctx.close_bar(bar)
    seconds = time.perf_counter() - t0
    earlier = study_finetuned(study)  # a resumed phase: the record holds what ran before
    spent = seconds + ((earlier.seconds or 0.0) if earlier is not None else 0.0)
    result = result.finished(spent)
    write_record(study, result)
    ctx.log(summary_line(result, seconds, done[0]))
    return FineTunePhaseResult(result, seconds)
