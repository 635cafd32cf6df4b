"""Phase 2b: how far the supernet's ranking can be trusted on this space (entry point
:func:`run_trust`)."""

from __future__ import annotations

import shutil
import time

from nasflow.record import TRUST_KEY, TrialRecord
from nasflow.search._context import RunContext, TrustPhaseResult
from nasflow.search._trust import (
    ProbeProgress,
    probe_key,
    random_pool,
    run_trust_probe,
    trust_record,
)
from nasflow.space import Arch


def run_trust(ctx: RunContext) -> TrustPhaseResult:
    """Probe the supernet's ranking once per study: a stored record is kept while no new
    candidate was screened."""
    ctx.check_stop("before the trust probe")
    t0 = time.perf_counter()
    spec, study, data = ctx.spec, ctx.study, ctx.data
    assert data is not None and spec.trust is not None, "the trust probe needs data and spec.trust"
    scored: dict[Arch, float] = {}
    for t in study.get_trials(deepcopy=False):
        rec = TrialRecord.from_trial(t)
        if rec.screened:
            scored.setdefault(rec.get_arch(), rec.supernet_accuracy)  # type: ignore[arg-type]
    stored = study.user_attrs.get(TRUST_KEY)
    if isinstance(stored, dict) and stored.get("screened") == len(scored):
        return TrustPhaseResult(False, time.perf_counter() - t0)
    if len(scored) < spec.trust.archs:
        ctx.log(
            f"trust probe skipped: {len(scored)} screened architectures, fewer than "
            f"its {spec.trust.archs}"
        )
        return TrustPhaseResult(False, time.perf_counter() - t0)
    train, val = data.batches("train", spec.train.batch_size, spec.seed), data.batches("val")
    pairs = list(scored.items())
    # What the probe finished so far, and its trainings' checkpoints: a stopped probe
    # resumes there (rank 0 only probes; the folder goes once the record is stored).
    progress = ProbeProgress(
        ctx.folder.trust, probe_key(spec.trust, spec.seed, spec.train, len(scored))
    )
    ctx.quiet_log(
        f"trust probe: {spec.trust.archs} architectures, {spec.trust.epochs} epochs each"
    )
    if spec.trust.proxy == "finetune" and spec.trust.pool and ctx.supernet is not None:
        pairs = random_pool(
            ctx.supernet,
            spec.space,
            spec.trust.pool,
            train,
            val,
            spec.bn_batches,
            seed=spec.seed + 7,
            device=ctx.device,
            should_stop=ctx.stop.is_set,
            progress=progress,
        )
    result = run_trust_probe(
        spec.space,
        pairs,
        train,
        val,
        spec.train,
        spec.trust,
        seed=spec.seed,
        device=ctx.device,
        log=ctx.quiet_log,
        supernet=ctx.supernet,
        bn_batches=spec.bn_batches,
        should_stop=ctx.stop.is_set,
        progress=progress,
    )
    seconds = time.perf_counter() - t0  # the whole phase: the pool's scoring included
    record = {**trust_record(result), "screened": len(scored), "phase_seconds": seconds}
    study.set_user_attr(TRUST_KEY, record)
    shutil.rmtree(ctx.folder.trust, ignore_errors=True)
    return TrustPhaseResult(True, seconds)
