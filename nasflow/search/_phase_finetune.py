"""Fine-tuning phase: the screened front and the best-scored candidates become ready models
(entry point :func:`run_finetune`; the engine is ``nasflow.search._finetune``)."""

from __future__ import annotations

import time
from dataclasses import asdict

import optuna

from nasflow.record import DUPLICATE_KEY, FINETUNED_KEY, TrialRecord
from nasflow.search._context import FineTunePhaseResult, RunContext
from nasflow.search._finetune import Finalist, run_finetuning, summary_line
from nasflow.space import Arch


def select_finalists(study: optuna.Study, n: int, top: int = 0) -> list[Finalist]:
    """Up to ``n`` distinct screened architectures: the ``top`` best supernet scores
    (protected: fine-tuned through every rung), then the screened Pareto set (best supernet
    accuracy first), then the next best scores."""
    seen: dict[Arch, Finalist] = {}
    front = [t for t in study.best_trials if DUPLICATE_KEY not in t.user_attrs]
    rest = sorted(
        (t for t in study.get_trials(deepcopy=False) if t.state.is_finished()),
        key=lambda t: -(TrialRecord.from_trial(t).supernet_accuracy or float("-inf")),
    )
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


def run_finetune(ctx: RunContext) -> FineTunePhaseResult:
    """Fine-tune the finalists from their inherited supernet weights under successive
    halving; record every fine-tuned candidate in the study."""
    t0 = time.perf_counter()
    spec, study = ctx.spec, ctx.study
    assert ctx.data is not None and ctx.supernet is not None and spec.finetuning is not None
    finalists = select_finalists(study, spec.finetuning.finalists, spec.finetuning.top or 0)
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

    result = run_finetuning(
        finalists,
        ctx.supernet,
        spec.space,
        ctx.data,
        spec.train,
        spec.finetuning,
        spec.bn_batches,
        ctx.folder.ready,
        stack=ctx.stack,
        multi_objective=len(spec.objectives) > 1,
        device=ctx.device,
        seed=spec.seed,
        log=ctx.quiet_log,
        on_epoch=tick,
    )
    ctx.close_bar(bar)
    seconds = time.perf_counter() - t0
    mult, spent, full = result.early_stopping_multiplier()
    study.set_user_attr(
        FINETUNED_KEY,
        {
            "candidates": [asdict(c) for c in result.candidates],
            "rungs": list(spec.finetuning.rungs),
            "early_stopping": {"multiplier": mult, "seconds": spent, "full_seconds": full},
            "seconds": seconds,
        },
    )
    ctx.log(summary_line(result, seconds))
    return FineTunePhaseResult(result, seconds)
