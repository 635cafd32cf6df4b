"""Trust, measured on the user's own data: does the supernet's ranking hold up?

No one-shot NAS tool tells its user whether the supernet's ranking can be believed on
*their* data. The probe answers it at the cost of a few short trainings: it takes ``k``
screened architectures spread evenly over the supernet's ranking (the best, the worst
and evenly spaced ranks between), trains each briefly and reports Kendall's tau between
the supernet score and the short training's validation accuracy, with a bootstrap
interval over the probed architectures widened by a margin calibrated on the
generalisation suite (``benchmarks/generalisation.py``), so that the interval contains
the tau a full random-architecture table measures in the share of suite runs that
``benchmarks/RESULTS.md`` states.

The short training (``TrustProbe.proxy``) is, by default, ``"finetune"``: each probed
architecture is extracted with its inherited supernet weights and fine-tuned for
``epochs`` epochs of a ``schedule_epochs``-epoch schedule (the fine-tuning phase's). Short
training from scratch (``"scratch"``, the first probe's proxy) rewards what the supernet
rewards too, architectures that learn fast, and over-stated the tau on held-out data
(+0.79 reported where a full table measured +0.33).

Phase 4, after the trainings (nothing the study decides reads the verdict, so the models
a user keeps are not made to wait for it): how far the supernet's ranking can be trusted
on this space (entry point :func:`run_trust`)."""

from __future__ import annotations

import json
import logging
import shutil
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import IO, Any

import numpy as np
import torch
from scipy.stats import kendalltau

from nasflow._files import atomic_write
from nasflow.data import DataBundle
from nasflow.errors import ConfigError
from nasflow.pipeline._context import RunContext, TrustPhaseResult
from nasflow.pipeline._schedule._tasks import Handler, LocalTasks, Task
from nasflow.record import TrialRecord, TrustRecord, study_trust, write_record
from nasflow.search import TrustProbe
from nasflow.space import Arch, SearchSpace
from nasflow.supernet import Supernet, recalibrate_bn
from nasflow.train import (
    Batches,
    EpochTrainer,
    TrainConfig,
    TrainingInterrupted,
    evaluate,
    train_epochs,
    train_standalone,
)

_LOG = logging.getLogger(__name__)


def spread_over_ranking(scored: Sequence[tuple[Arch, float]], k: int) -> list[int]:
    """Indices of ``k`` entries at evenly spaced ranks of ``scored`` by score (best and
    worst included), or all of them when there are at most ``k``."""
    order = sorted(range(len(scored)), key=lambda i: -scored[i][1])
    if len(order) <= k:
        return order
    ranks = np.linspace(0, len(order) - 1, k).round().astype(int)
    return [order[r] for r in ranks]


def bootstrap_tau(
    a: Sequence[float], b: Sequence[float], n: int, seed: int
) -> tuple[float, float, float]:
    """Kendall tau-b of ``a`` and ``b`` and a 90% percentile bootstrap interval.

    Resamples that are constant in either list (tau undefined) are dropped.
    """
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    tau = float(kendalltau(x, y).statistic)
    rng = np.random.default_rng(seed)
    taus = []
    for _ in range(n):
        idx = rng.integers(len(x), size=len(x))
        if np.ptp(x[idx]) == 0 or np.ptp(y[idx]) == 0:
            continue
        taus.append(float(kendalltau(x[idx], y[idx]).statistic))
    if not taus:
        return tau, float("nan"), float("nan")
    low, high = np.percentile(taus, [5, 95])
    return tau, float(low), float(high)


def verdict(tau: float, low: float) -> str:
    """Plain words for a probe's tau and the lower end of its (widened) interval."""
    if np.isnan(tau):
        return "undetermined: the probed architectures scored alike; screen more"
    if low >= 0.3 and tau >= 0.6:
        return "trust it: the supernet ranks these architectures as short training does"
    if tau >= 0.3:
        return (
            "screen more: the ranking is only roughly right here; fine-tune more finalists "
            "(FineTuning(finalists=...)) and keep the one that validates best"
        )
    return (
        "weak: the supernet does not rank this data; train it longer "
        "(SupernetConfig(epochs=...)) and fine-tune more finalists (FineTuning(finalists=...))"
    )


def supernet_score(
    supernet: Supernet,
    space: SearchSpace,
    arch: Arch,
    train: Batches,
    val: Batches,
    bn_batches: int,
    device: torch.device | str = "cpu",
) -> float:
    """An architecture's screening score: its path's inherited weights, batch norm
    re-estimated on ``bn_batches`` training batches, validation accuracy."""
    net = supernet.extract(space.path(arch)).to(device)
    recalibrate_bn(net, train.fixed(bn_batches), bn_batches, device=device)
    return evaluate(net, val, device=device)[0]


#: Scores the pool's architectures, telling ``keep(arch, supernet score)`` each as it comes.
PoolScoring = Callable[[Sequence[Arch], Callable[[Arch, float], None]], None]


class ProbeProgress:
    """What an interrupted probe finished, in ``folder/progress.json``: the pool's scores
    and the probed architectures' accuracies, by architecture, for one ``key`` (the probe's
    settings and what it ranks); a file of another key is ignored. Each probed
    architecture's training is checkpointed in ``folder/arch-N``.

    Args:
        folder: The probe's folder (``None``: nothing is kept).
        key: What the probe is (see :func:`probe_key`).
    """

    def __init__(self, folder: Path | None, key: str) -> None:
        self.folder, self.key = folder, key
        self.pool: dict[str, float] = {}
        self.accuracies: dict[str, float] = {}
        path = None if folder is None else folder / "progress.json"
        if path is not None and path.is_file():
            try:
                saved = json.loads(path.read_text())
            except ValueError:
                saved = None  # a damaged file: probe again
            if isinstance(saved, dict) and saved.get("key") == key:
                self.pool = {str(k): float(v) for k, v in saved.get("pool", {}).items()}
                self.accuracies = {str(k): float(v) for k, v in saved["accuracies"].items()}

    def save(self) -> None:
        if self.folder is None:
            return
        text = json.dumps({"key": self.key, "pool": self.pool, "accuracies": self.accuracies})

        def write(f: IO[str]) -> None:
            f.write(text)

        atomic_write(self.folder / "progress.json", write, mode="w")

    def checkpoints(self, n: int) -> Path | None:
        """Where the ``n``-th probed architecture's training is checkpointed."""
        return None if self.folder is None else self.folder / f"arch-{n}"


def probe_key(probe: TrustProbe, seed: int, recipe: TrainConfig, scored: int) -> str:
    """What a probe run is: its settings, seed and recipe, and how many screened
    architectures it ranks (a resumed study that screened more probes afresh)."""
    what = {"probe": asdict(probe), "seed": seed, "recipe": asdict(recipe), "scored": scored}
    return json.dumps(what, sort_keys=True, default=str)


def random_pool(
    supernet: Supernet,
    space: SearchSpace,
    n: int,
    train: Batches,
    val: Batches,
    bn_batches: int,
    seed: int,
    device: torch.device | str = "cpu",
    should_stop: Callable[[], bool] | None = None,
    progress: ProbeProgress | None = None,
    score_many: PoolScoring | None = None,
) -> list[tuple[Arch, float]]:
    """``n`` distinct random architectures of ``space`` (fewer if the space is smaller)
    with their supernet scores (those in ``progress`` are not scored again; each new one
    is saved there). ``score_many`` scores the rest instead of this loop (the study's
    pipeline shares them with its workers).

    Raises:
        TrainingInterrupted: ``should_stop`` asked to stop, between two architectures.
    """
    rng = np.random.default_rng(seed)
    archs: dict[Arch, None] = {}
    for _ in range(20 * n):
        if len(archs) == n:
            break
        archs.setdefault(space.sample(rng))
    kept = progress or ProbeProgress(None, "")
    if score_many is not None:

        def keep(a: Arch, score: float) -> None:
            kept.pool[a.to_json()] = float(score)
            kept.save()

        score_many([a for a in archs if a.to_json() not in kept.pool], keep)
    for i, a in enumerate(archs):
        if a.to_json() in kept.pool:
            continue
        if should_stop is not None and should_stop():
            raise TrainingInterrupted(f"the trust probe's pool, {i}/{len(archs)} scored")
        kept.pool[a.to_json()] = supernet_score(supernet, space, a, train, val, bn_batches, device)
        kept.save()
    return [(a, kept.pool[a.to_json()]) for a in archs]


def _finetuned_accuracy(
    supernet: Supernet,
    space: SearchSpace,
    arch: Arch,
    train: Batches,
    val: Batches,
    recipe: TrainConfig,
    probe: TrustProbe,
    bn_batches: int,
    device: torch.device | str,
    resumable: dict[str, Any],
) -> float:
    """Validation accuracy after ``probe.epochs`` epochs of fine-tuning from inherited
    weights (``resumable``: ``train_epochs``'s checkpoint and stop arguments)."""
    net = supernet.extract(space.path(arch))
    recalibrate_bn(net, train.epoch(0), bn_batches, device=device)
    schedule = replace(
        recipe, epochs=probe.schedule_epochs, warmup_epochs=min(recipe.warmup_epochs, 0.5)
    )
    trainer = EpochTrainer(net, train, schedule, device)
    train_epochs(trainer, probe.epochs, **resumable)
    return evaluate(net, val, device=device)[0]


@dataclass(frozen=True)
class ProbeTrainer:
    """One probed architecture's short training (the same in every process that runs
    one): the arguments are :func:`run_trust_probe`'s."""

    space: SearchSpace
    train: Batches
    val: Batches
    recipe: TrainConfig
    probe: TrustProbe
    seed: int = 0
    device: torch.device | str = "cpu"
    supernet: Supernet | None = None
    bn_batches: int = 10
    should_stop: Callable[[], bool] | None = None

    def __call__(self, n: int, arch: Arch, of: int, progress: ProbeProgress) -> float:
        """The validation accuracy of the ``n``-th of ``of`` probed architectures after
        its short training (checkpointed in ``progress``'s folder)."""
        torch.manual_seed(self.seed * 1009 + n)
        resumable: dict[str, Any] = {
            "folder": progress.checkpoints(n),
            "identity": f"{progress.key} {arch.to_json()}",
            "should_stop": self.should_stop,
            "what": f"trust probe: architecture {n + 1}/{of}",
        }
        probe, recipe = self.probe, self.recipe
        if probe.proxy == "finetune":
            assert self.supernet is not None
            acc = _finetuned_accuracy(
                self.supernet, self.space, arch, self.train, self.val, recipe, probe,
                self.bn_batches, self.device, resumable,
            )  # fmt: skip
        else:
            short = replace(
                recipe, epochs=probe.epochs, warmup_epochs=min(recipe.warmup_epochs, 1.0)
            )
            folder = resumable.pop("folder")
            trained = train_standalone(
                self.space.build(arch), self.train, self.val, short, device=self.device,
                checkpoints=folder, **resumable,
            )  # fmt: skip
            acc = trained.val_accuracy
        _LOG.debug(f"trust probe: {n + 1}/{of} trained, val accuracy {acc:.4f}")
        return acc


#: Trains the probe's architectures (``[(n, arch), ...]``), telling ``keep(arch,
#: validation accuracy)`` each as it comes.
PickTraining = Callable[[Sequence[tuple[int, Arch]], Callable[[Arch, float], None]], None]


def run_trust_probe(
    space: SearchSpace,
    scored: Sequence[tuple[Arch, float]],
    train: Batches,
    val: Batches,
    recipe: TrainConfig,
    probe: TrustProbe,
    seed: int = 0,
    device: torch.device | str = "cpu",
    supernet: Supernet | None = None,
    bn_batches: int = 10,
    should_stop: Callable[[], bool] | None = None,
    progress: ProbeProgress | None = None,
    train_picks: PickTraining | None = None,
) -> TrustRecord:
    """Train ``probe.archs`` architectures of ``scored`` briefly and compare rankings.

    Args:
        space: The study's space (builds the networks).
        scored: ``(arch, supernet score)`` of the screened candidates (higher is better).
        train: Training batches of the short recipe.
        val: Validation batches (never the test split).
        recipe: The study's stand-alone recipe (batch size, rate, weight decay); the
            probe's epochs replace its own.
        probe: How much to spend, and the proxy.
        seed: Seeds the networks' initial weights and the bootstrap.
        device: Where to train.
        supernet: The trained supernet (the ``"finetune"`` proxy's inherited weights).
        bn_batches: Training batches re-estimating batch norm before fine-tuning.
        should_stop: Polled after every training step.
        progress: Where the accuracies found so far are kept and each training is
            checkpointed: a stopped probe resumes there, losing at most a step.
        train_picks: Trains the architectures not probed yet (``None``: each in turn,
            here, with a :class:`ProbeTrainer` of the arguments above; the study's
            pipeline shares them with its workers).

    Raises:
        ValueError: The ``"finetune"`` proxy without a supernet.
        TrainingInterrupted: ``should_stop`` asked to stop (checkpointed).
    """
    if probe.proxy == "finetune" and supernet is None:
        raise ConfigError("TrustProbe(proxy='finetune') needs the trained supernet")
    picks = spread_over_ranking(scored, probe.archs)
    t0 = time.perf_counter()
    kept = progress or ProbeProgress(None, "")
    todo = [(n, scored[i][0]) for n, i in enumerate(picks)]
    todo = [(n, a) for n, a in todo if a.to_json() not in kept.accuracies]

    def keep(arch: Arch, acc: float) -> None:  # (as it comes: a stopped probe resumes after)
        kept.accuracies[arch.to_json()] = float(acc)
        kept.save()

    if train_picks is None:
        trainer = ProbeTrainer(
            space, train, val, recipe, probe, seed, device, supernet, bn_batches, should_stop
        )
        for n, arch in todo:
            keep(arch, trainer(n, arch, len(picks), kept))
    elif todo:
        train_picks(todo, keep)
    accs = [kept.accuracies[scored[i][0].to_json()] for i in picks]
    scores = [scored[i][1] for i in picks]
    tau, raw_low, raw_high = bootstrap_tau(scores, accs, probe.bootstrap, seed)
    low, high = max(-1.0, raw_low - probe.margin), min(1.0, raw_high + probe.margin)
    return TrustRecord(
        tau,
        low,
        high,
        tuple(scored[i][0].to_json() for i in picks),
        tuple(scores),
        tuple(accs),
        probe.epochs,
        time.perf_counter() - t0,
        verdict(tau, low),
        probe.proxy,
        probe.margin,
        (raw_low, raw_high),
    )


def format_trust(record: TrustRecord, run_seconds: float | None = None) -> str:
    """One summary line (what the interval is, what it cost, the verdict)."""
    how = (
        f"{record.epochs} epochs of fine-tuning from inherited weights"
        if record.proxy == "finetune"
        else f"{record.epochs} epochs of stand-alone training"
    )
    interval = (
        f"interval {record.low:+.2f} to {record.high:+.2f}: 90% bootstrap "
        f"{record.margin:+.2f} calibrated margin"
        if record.margin
        else f"90% bootstrap interval {record.low:+.2f} to {record.high:+.2f}"
    )
    # The whole phase where recorded (scoring the random pool from the supernet, then the
    # probe's trainings); older records timed the trainings only.
    seconds = record.spent_seconds
    share = f", {seconds / run_seconds:.0%} of the run" if run_seconds else ""
    return (
        f"trust: Kendall tau {record.tau:+.2f} ({interval}) between supernet score and "
        f"validation accuracy after {how}, {len(record.archs)} architectures spread over "
        f"the ranking, {seconds:.0f}s{share}: {record.verdict}"
    )


#: The trust probe's task: one probed architecture's short training.
TRUST = "trust"


def probe_trainer(ctx: RunContext, data: DataBundle, supernet: Supernet | None) -> ProbeTrainer:
    """The probe's short training as the study's settings make it (every process)."""
    spec = ctx.spec
    assert spec.trust is not None
    return ProbeTrainer(
        spec.space,
        data.batches("train", spec.train.batch_size, spec.seed),
        data.batches("val"),
        spec.train,
        spec.trust,
        spec.seed,
        ctx.device,
        supernet,
        spec.bn_batches,
        ctx.stop.is_set,
    )


def trust_handler(ctx: RunContext, data: DataBundle, supernet: Supernet | None) -> Handler:
    """The trust probe's task: probed architecture ``args["n"]`` trained briefly (and
    checkpointed in the probe's folder); its validation accuracy."""
    trainer = probe_trainer(ctx, data, supernet)

    def trust(args: Mapping[str, Any]) -> dict[str, Any]:
        progress = ProbeProgress(ctx.folder.trust, str(args["key"]))
        arch = Arch.from_json(args["arch"])
        return {"val_accuracy": trainer(int(args["n"]), arch, int(args["of"]), progress)}

    return trust


#: The trust probe's pool task: a few random architectures scored from the supernet.
POOL = "trust-pool"
#: Architectures a pool task scores.
POOL_CHUNK = 8


def pool_handler(ctx: RunContext, data: DataBundle, supernet: Supernet) -> Handler:
    """The pool task: architectures ``args["archs"]`` scored from the ``supernet`` as the
    screening scores them; their scores, in order."""
    spec = ctx.spec
    train, val = data.batches("train", spec.train.batch_size, spec.seed), data.batches("val")

    def score(args: Mapping[str, Any]) -> dict[str, Any]:
        archs = [Arch.from_json(a) for a in args["archs"]]
        return {
            "scores": [
                supernet_score(supernet, spec.space, a, train, val, spec.bn_batches, ctx.device)
                for a in archs
            ]
        }

    return score


def pool_scoring(ctx: RunContext, data: DataBundle, supernet: Supernet) -> PoolScoring:
    """The pool's scoring as tasks of ``POOL_CHUNK`` architectures, shared with the
    workers (the supernet is the one every process of the study loaded)."""

    def score_many(archs: Sequence[Arch], keep: Callable[[Arch, float], None]) -> None:
        chunks = [archs[i : i + POOL_CHUNK] for i in range(0, len(archs), POOL_CHUNK)]
        tasks = [Task(POOL, {"archs": [a.to_json() for a in c]}) for c in chunks]

        def told(i: int, r: dict[str, Any]) -> None:
            for a, score in zip(chunks[i], r["scores"], strict=True):
                keep(a, score)

        ctx.tasks.run(tasks, {POOL: pool_handler(ctx, data, supernet)}, told)

    return score_many


def run_trust(ctx: RunContext, data: DataBundle, supernet: Supernet | None) -> TrustPhaseResult:
    """Probe the ``supernet``'s ranking on ``data`` once per study: a stored record is
    kept while no new candidate was screened."""
    ctx.check_stop("before the trust probe")
    t0 = time.perf_counter()
    spec, study = ctx.spec, ctx.study
    assert spec.trust is not None, "the trust probe needs spec.trust"
    scored: dict[Arch, float] = {}
    for t in study.get_trials(deepcopy=False):
        rec = TrialRecord.from_trial(t)
        if rec.screened:
            scored.setdefault(rec.get_arch(), rec.supernet_accuracy)  # type: ignore[arg-type]
    stored = study_trust(study)
    if stored is not None and stored.screened == len(scored):
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
    if spec.trust.proxy == "finetune" and spec.trust.pool and supernet is not None:
        pairs = random_pool(
            supernet,
            spec.space,
            spec.trust.pool,
            train,
            val,
            spec.bn_batches,
            seed=spec.seed + 7,
            device=ctx.device,
            should_stop=ctx.stop.is_set,
            progress=progress,
            score_many=(
                None if isinstance(ctx.tasks, LocalTasks) else pool_scoring(ctx, data, supernet)
            ),
        )
    handlers = {TRUST: trust_handler(ctx, data, supernet)}

    def train_picks(todo: Sequence[tuple[int, Arch]], keep: Callable[[Arch, float], None]) -> None:
        """The probe's trainings as tasks: here in turn, or shared with the workers."""
        of = spec.trust.archs  # type: ignore[union-attr]
        tasks = [
            Task(TRUST, {"n": n, "arch": a.to_json(), "of": of, "key": progress.key})
            for n, a in todo
        ]
        ctx.tasks.run(tasks, handlers, lambda i, r: keep(todo[i][1], r["val_accuracy"]))

    result = run_trust_probe(
        spec.space,
        pairs,
        train,
        val,
        spec.train,
        spec.trust,
        seed=spec.seed,
        device=ctx.device,
        supernet=supernet,
        bn_batches=spec.bn_batches,
        should_stop=ctx.stop.is_set,
        progress=progress,
        train_picks=train_picks,
    )
    seconds = time.perf_counter() - t0  # the whole phase: the pool's scoring included
    write_record(study, replace(result, screened=len(scored), phase_seconds=seconds))
    shutil.rmtree(ctx.folder.trust, ignore_errors=True)
    return TrustPhaseResult(True, seconds)
