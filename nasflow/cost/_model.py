"""``CostModel``: predicted training-step seconds of any path, from a measured op table.

Prediction: ``step(arch) = slope * sum(op seconds on the path) + intercept``. An op's
seconds are its *marginal* cost in a step, taken from the latency table: its measured
forward+backward minus that of an identity at the same input (the harness's own
overhead), plus its AdamW step minus an AdamW step over a single scalar (the call's
fixed overhead). ``slope`` and ``intercept`` are fitted by least squares on a few
whole-network steps measured on this device; the intercept is the per-step overhead
(loss, one optimizer call, what containers do between ops) and is kept >= 0 (a negative
one, which only noise produces, is replaced by a fit through the origin). Once the table and the
calibration exist a prediction runs nothing on the device: a ``meta``-device shape pass
and a dictionary look-up per op.

Where the numbers come from, in order: the study's own database (a resumed study keeps
its table), then the shared table (``shared_table_url``: a table measured by an earlier
study on the same device fingerprint, copied into the study's database), and only then
the device (stored in both). A table measured once and reused is what makes the same
architecture's prediction the same number in every study on a machine; ``fit(remeasure=
True)`` measures it again and replaces it in both places, and so does a study that would
reuse a shared table whose reference op flagged a loaded machine (a loaded measurement is
the one most likely to be off, so it is not passed on). ``stability`` says which of
these happened and how steady the machine was when the table was measured.
"""

from __future__ import annotations

import hashlib
import json
import time
import warnings
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

import numpy as np
import torch
from torch import nn

from nasflow._checks import check_int
from nasflow.cost._analytic import (
    FlopCount,
    activation_bytes,
    check_shape,
    count_flops,
    count_params,
)
from nasflow.cost._cover import covering_archs, fit_line, spread_indices
from nasflow.cost._fingerprint import DeviceFingerprint
from nasflow.cost._measure import (
    STATISTIC,
    OpTiming,
    Stability,
    load_reasons,
    measure_ops,
    robust_seconds,
    time_steps,
    timer_name,
)
from nasflow.cost._stats import (
    MEASURED,
    SHARED,
    STORED,
    CostStats,
    LoadedMachineWarning,
    MissingLatencyError,
)
from nasflow.cost._tables._store import from_shared, store_everywhere
from nasflow.cost._tables._table import Calibration, LatencyTable
from nasflow.cost._trace import PathTracer, meta_supernet
from nasflow.cost._units import OpInstance, null_optimizer_unit, null_unit
from nasflow.errors import ConfigError, StateError
from nasflow.space import Arch, SearchSpace
from nasflow.train.stack import device_clock

#: Path architectures whose op instances are kept in memory.
_UNIT_CACHE = 4096


class CostModel:
    """Predicts a path's training-step seconds on one device from measured op latencies.

    Use ``CostModel.for_space(...)``, then ``fit()`` once (it measures only what the table
    lacks), then ``predict_step_seconds(arch)`` for each candidate. A model is meant for
    one thread: its shape pass briefly patches the ``meta`` supernet it owns.

    Args:
        space: The search space.
        input_shape: One sample's shape (no batch dimension), e.g. ``(1, 40)``.
        batch_size: Samples per training step.
        table: The latency table (shared by every model on this database): the study's.
        device: Where the candidates train.
        precision: ``"fp32"``, ``"bf16"`` or ``"fp16"``: the training precision predicted
            for (the study's ``Stack.amp``; ops and calibration steps run under its
            autocast, and the table keys rows by it).
        input_dtype: Input dtype (``torch.long`` for token ids).
        measure_missing: Measure op instances missing from the table when a prediction
            needs them (else raise ``MissingLatencyError``).
        rounds: Visits per op instance when measuring (see ``time_ops``).
        iters: Timed iterations per visit.
        seed: Seeds the measuring order and the calibration paths.
        shared: The table shared between studies (``None``: share nothing). Rows and
            calibrations missing from ``table`` are looked up there (and copied into
            ``table``) before anything is measured; what is measured is stored in both.
    """

    #: Take a shared table as stored even where it was measured on a loaded machine,
    #: rather than measure it again in ``fit`` (a deterministic study sets it: the same
    #: table every run).
    keep_loaded: bool = False

    def __init__(
        self,
        space: SearchSpace,
        input_shape: Sequence[int],
        batch_size: int,
        table: LatencyTable,
        device: torch.device | str = "cpu",
        precision: str = "fp32",
        *,
        input_dtype: torch.dtype = torch.float32,
        measure_missing: bool = True,
        rounds: int = 10,
        iters: int = 3,
        seed: int = 0,
        shared: LatencyTable | None = None,
    ) -> None:
        if not isinstance(space, SearchSpace):
            raise ConfigError(f"space must be a SearchSpace, got {type(space).__name__}")
        self.space = space
        self.input_shape = check_shape(input_shape)
        self.batch_size = check_int("batch_size", batch_size, 1)
        self.rounds = check_int("rounds", rounds, 1)
        self.iters = check_int("iters", iters, 1)
        self.table, self.device = table, torch.device(device)
        self.input_dtype, self.measure_missing, self.seed = input_dtype, measure_missing, seed
        self.fingerprint = DeviceFingerprint.current(
            self.device, precision, timer_name(self.device)
        )
        self.precision = precision
        self.shared = shared if shared is not None and shared.url != table.url else None
        self.stats = CostStats()
        self._supernet = meta_supernet(space)
        self._tracer = PathTracer(self._supernet)
        self._units: OrderedDict[Arch, list[OpInstance]] = OrderedDict()
        self._timings: dict[str, OpTiming] = {}
        self._flops: dict[str, FlopCount] = {}
        self._null_opt = null_optimizer_unit()
        self.calibration = table.load_calibration(self.fingerprint, self.context_key)
        #: How stable the table is (see ``fit``): ``None`` until fitted or loaded.
        self.stability: dict[str, Any] | None = table.load_stability(
            self.fingerprint, self.context_key
        )
        self._measured: Stability | None = None
        self._calibration_ratio: float | None = None
        self._reused = 0
        #: Whether ``fit`` waited for another process measuring into the same table.
        self._waited = False

    @classmethod
    def for_space(
        cls,
        space: SearchSpace,
        input_shape: Sequence[int] | None = None,
        batch_size: int = 64,
        storage_url: str | None = None,
        device: torch.device | str = "cpu",
        precision: str = "fp32",
        share: bool = True,
        **kwargs: Any,
    ) -> CostModel:
        """A cost model over a table in ``storage_url`` (a study's SQLite or PostgreSQL
        URL) or, when ``None``, in the local cache file; with ``share``, also over the
        shared table (``shared_table_url()``) that studies on this device reuse.

        Args:
            space: The search space.
            input_shape: One sample's shape; default ``space.config["input_shape"]``.
            batch_size: Samples per training step.
            storage_url: ``None``, a file path, ``sqlite:///FILE`` or ``postgresql://...``.
            device: Where the candidates train.
            precision: ``"fp32"``, ``"bf16"`` or ``"fp16"``.
            share: Reuse (and feed) the shared table.
            **kwargs: Passed to ``CostModel``; ``input_dtype`` defaults to the space's
                (``SearchSpace.input_dtype``: token ids for a language space).

        Raises:
            ConfigError: No ``input_shape`` given or in the space's config.
        """
        if "input_dtype" not in kwargs:
            kwargs["input_dtype"] = space.input_dtype
        if input_shape is None:
            input_shape = space.config.get("input_shape")
            if input_shape is None:
                raise ConfigError(
                    f"space {space.name!r} has no config['input_shape']; pass input_shape"
                )
        table = LatencyTable(storage_url)
        shared = LatencyTable.shared_for(table) if share else None
        return cls(
            space, input_shape, batch_size, table, device, precision, shared=shared, **kwargs
        )

    # ------------------------------------------------------------------ structure
    @property
    def context_key(self) -> str:
        """What a calibration is valid for: this space, input and batch size."""
        blob = json.dumps(
            [self.space.fingerprint(), list(self.input_shape), self.batch_size],
            separators=(",", ":"),
        )
        return hashlib.sha256(blob.encode()).hexdigest()[:32]

    @property
    def batch_shape(self) -> tuple[int, ...]:
        return (self.batch_size, *self.input_shape)

    def path(self, arch: Mapping[str, Any]) -> Arch:
        """The supernet path of ``arch`` (a path, or a full arch with hyper-parameters)."""
        if len(arch) == len(self.space.path_choices):
            return self.space.validate(arch, path_only=True)
        return self.space.path(arch)

    def network(self, arch: Mapping[str, Any]) -> nn.Module:
        """The stand-alone network of ``arch`` on the ``meta`` device (shapes only)."""
        with torch.device("meta"):
            return self._supernet.extract(self.path(arch))

    def units(self, arch: Mapping[str, Any]) -> list[OpInstance]:
        """The op instances a training step of ``arch`` runs, in execution order."""
        path = self.path(arch)
        if path in self._units:
            self._units.move_to_end(path)
            return self._units[path]
        units = self._tracer.units(path, self.batch_shape, self.input_dtype)
        self._units[path] = units
        if len(self._units) > _UNIT_CACHE:
            self._units.popitem(last=False)
        return units

    def _with_nulls(self, units: Iterable[OpInstance]) -> list[OpInstance]:
        out = {u.key: u for u in units}
        for u in list(out.values()):
            null = null_unit(u.input_shape, u.input_requires_grad, u.input_dtype)
            out.setdefault(null.key, null)
        out.setdefault(self._null_opt.key, self._null_opt)
        return list(out.values())

    # ------------------------------------------------------------------ the table
    def ensure(self, archs: Iterable[Mapping[str, Any]], *, remeasure: bool = False) -> int:
        """Make sure every op instance of ``archs`` has a latency: from the study's table,
        else the shared one (copied into the study's), else measured now (stored in both).

        Args:
            archs: Paths (or full archs).
            remeasure: Measure all of their op instances now and replace stored rows.

        Returns:
            The number of op instances measured now.
        """
        needed = self._with_nulls(u for a in archs for u in self.units(a))
        missing = needed if remeasure else [u for u in needed if u.key not in self._timings]
        if missing and not remeasure:
            self._timings.update(self.table.lookup(self.fingerprint, [u.key for u in missing]))
            missing = [u for u in missing if u.key not in self._timings]
        if missing and not remeasure:
            found = from_shared(
                self.table,
                self.shared,
                lambda t: t.lookup(self.fingerprint, [u.key for u in missing]),
                copy=lambda t, rows: t.store(self.fingerprint, rows),
            )
            if found:
                self._timings.update(found)
                self._reused += len(found)
                missing = [u for u in missing if u.key not in self._timings]
        if not missing:
            return 0
        t0 = time.perf_counter()
        run = measure_ops(
            missing,
            self.device,
            self.precision,
            rounds=self.rounds,
            iters=self.iters,
            seed=self.seed,
        )
        measured = run.timings
        self._measured = run.stability
        rows = {}
        for u in missing:
            t = measured[u.key]
            rows[u.key] = OpTiming(
                t.fwd_bwd,
                t.optimizer,
                t.spread,
                t.samples,
                self._unit_flops(u).total,
                count_params(u.module),
                f"{u.name} in={list(u.input_shape)} grad={int(u.input_requires_grad)}: "
                f"{u.module!r}"[:2000],
            )
        store_everywhere(
            self.table, self.shared, lambda t: t.store(self.fingerprint, rows, replace=remeasure)
        )
        self._timings.update(rows)
        self.stats.measured_ops += len(missing)
        self.stats.seconds_measuring += time.perf_counter() - t0
        return len(missing)

    def measure_space(self, *, remeasure: bool = False) -> int:
        """Measure the op instances of a pairwise covering set of paths (see
        ``covering_archs``) that no table has (all of them with ``remeasure``). Returns
        the number measured now."""
        return self.ensure(covering_archs(self.space, self.seed), remeasure=remeasure)

    def op_seconds(self, arch: Mapping[str, Any]) -> float:
        """Sum of the marginal op seconds on the path (uncalibrated)."""
        units = self.units(arch)
        needed = self._with_nulls(units)
        if any(u.key not in self._timings for u in needed):
            if not self.measure_missing:
                self._timings.update(self.table.lookup(self.fingerprint, [u.key for u in needed]))
                absent = [u.name for u in needed if u.key not in self._timings]
                if absent:
                    raise MissingLatencyError(
                        f"no latency stored for {absent[:3]} on {self.fingerprint.describe()}; "
                        "call fit() or allow measure_missing"
                    )
            else:
                self.ensure([arch])
        return sum(self.marginal_seconds(u) for u in units)

    def marginal_seconds(self, unit: OpInstance) -> float:
        """One op instance's seconds in a step: its timing minus the harness overheads."""
        t = self._timings[unit.key]
        if unit.is_identity:
            return 0.0
        null = self._timings[
            null_unit(unit.input_shape, unit.input_requires_grad, unit.input_dtype).key
        ]
        seconds = max(0.0, t.fwd_bwd - null.fwd_bwd)
        if t.params:
            seconds += max(0.0, t.optimizer - self._timings[self._null_opt.key].optimizer)
        return seconds

    # ------------------------------------------------------------------ calibration
    def measure_steps(
        self,
        archs: Sequence[Mapping[str, Any]],
        *,
        rounds: int = 3,
        iters: int = 3,
        warmup: int = 2,
        seed: int = 0,
    ) -> np.ndarray:
        """Measured training-step seconds of ``archs`` (fresh ``space.build`` networks),
        interleaved in rounds: an array ``(rounds, len(archs))`` of each visit's best step
        (``time_steps``; the thread's CPU time on a CPU)."""
        paths = [self.path(a) for a in archs]
        out_shape = self.network(paths[0])(
            torch.empty(self.batch_shape, device="meta", dtype=self.input_dtype)
        ).shape
        gen = torch.Generator().manual_seed(seed)
        if self.input_dtype.is_floating_point:
            x = torch.randn(self.batch_shape, generator=gen)
        else:
            x = torch.zeros(self.batch_shape, dtype=self.input_dtype)
        y = torch.randint(0, out_shape[-1], tuple(out_shape[:-1]), generator=gen)
        t0 = time.perf_counter()
        result = time_steps(
            [lambda p=p: self.space.build(p) for p in paths],
            (x, y),
            self.device,
            self.precision,
            warmup=warmup,
            rounds=rounds,
            iters=iters,
            seed=seed,
        )
        self.stats.measured_steps += result.size * (iters + 1) + len(paths) * warmup
        self.stats.seconds_measuring += time.perf_counter() - t0
        return result

    def calibrate(
        self, n: int = 8, pool: int = 48, *, rounds: int = 3, iters: int = 3
    ) -> Calibration:
        """Fit ``slope`` and ``intercept`` on ``n`` measured whole-network steps and store
        the fit in the table (replacing an older one of this context).

        The ``n`` paths are picked from ``pool`` random ones at evenly spaced ranks of
        their summed op seconds, so the fit spans the space from its cheapest to its
        most expensive paths.
        """
        check_int("n", n, 2)
        check_int("pool", pool, n)
        rng = np.random.default_rng(self.seed + 7919)
        candidates = list(
            dict.fromkeys(self.space.path(self.space.sample(rng)) for _ in range(pool))
        )
        self.ensure(candidates)
        sums = [self.op_seconds(a) for a in candidates]
        picked = [candidates[i] for i in spread_indices(sums, n)]
        ops = [sums[candidates.index(a)] for a in picked]
        steps = self.measure_steps(picked, rounds=rounds, iters=iters)
        measured = np.array([robust_seconds(steps[:, j]) for j in range(steps.shape[1])])
        # How much the typical round was slower than the best one, per path: a second
        # load gauge, on whole steps (reported with the reference op's).
        self._calibration_ratio = float(np.median(np.median(steps, axis=0) / measured))
        slope, intercept = fit_line(ops, measured, nonnegative_intercept=True)
        points = tuple(
            {"arch": a.to_json(), "ops": float(o), "measured": float(m)}
            for a, o, m in zip(picked, ops, measured, strict=True)
        )
        self.calibration = Calibration(slope, intercept, points)
        calibration = self.calibration
        store_everywhere(
            self.table,
            self.shared,
            lambda t: t.store_calibration(self.fingerprint, self.context_key, calibration),
        )
        return self.calibration

    def fit(
        self,
        *,
        recalibrate: bool = False,
        remeasure: bool = False,
        n: int = 8,
        rounds: int = 3,
        iters: int = 3,
    ) -> CostModel:
        """Get the table and calibration this space needs: from the study's table, else
        the shared one, else by measuring (the op instances of a covering set of paths,
        then ``calibrate(n, rounds=rounds, iters=iters)``). Sets ``stability``.

        Args:
            recalibrate: Calibrate again even where a calibration is stored.
            remeasure: Measure the covering set's op instances and calibrate again, and
                replace what the study's and the shared table hold (for a table measured
                on a loaded machine, or after the machine changed in a way its
                fingerprint does not see).
            n: Calibration steps.
            rounds: Rounds of calibration steps.
            iters: Timed steps per visit.

        Two processes fitting over one shared table (or one study's table) take turns
        (``DeviceStore.measuring``): the second finds what the first measured and reuses
        it, so both predict the same cost for the same architecture.

        Returns:
            ``self``.
        """
        with (self.shared or self.table).measuring() as waited:
            self._waited = waited
            return self._fit(recalibrate, remeasure, n, rounds, iters)

    def _fit(
        self, recalibrate: bool, remeasure: bool, n: int, rounds: int, iters: int
    ) -> CostModel:
        self._timings.update(self.table.lookup(self.fingerprint))
        why = "on request" if remeasure else None
        if not remeasure and self._shared_was_loaded():
            # A shared table measured while the machine looked loaded is not passed on:
            # this study measures again and replaces it, until a steady one is stored.
            remeasure, why = True, "the shared table was measured on a loaded machine"
        before = self._reused
        measured = self.measure_space(remeasure=remeasure)
        source = MEASURED if measured else SHARED if self._reused > before else STORED
        if self.calibration is None and not remeasure:
            found = from_shared(
                self.table,
                self.shared,
                lambda t: t.load_calibration(self.fingerprint, self.context_key),
                copy=lambda t, c: t.store_calibration(self.fingerprint, self.context_key, c),
                usable=lambda _c: True,
            )
            if found is not None:
                self.calibration = found
                source = SHARED if source == STORED else source
        if self.calibration is None or recalibrate or remeasure:
            self.calibrate(n=n, rounds=rounds, iters=iters)
            source = MEASURED
        self._record_stability(source, measured, why)
        return self

    def _shared_was_loaded(self) -> bool:
        """Whether this study would take its table from a shared one flagged loaded (a
        study whose own database already has a calibration keeps what it has), unless
        another process measured it while this one waited (a search started together with
        this one, under the same load): that one is reused."""
        if self.shared is None or self.calibration is not None or self.keep_loaded:
            return False
        record = self.shared.load_stability(self.fingerprint, self.context_key)
        return bool(record and record.get("loaded")) and not self._waited

    def _record_stability(self, source: str, measured: int, remeasured: str | None) -> None:
        """Set ``stability`` and store it (study table; shared table when measured now)."""
        fp, ctx = self.fingerprint, self.context_key
        if source == STORED and self.stability is not None:
            self.stability = {**self.stability, "source": STORED, "precision": self.precision}
            return
        previous: dict[str, Any] | None = None
        if source == SHARED and self.shared is not None:
            previous = self.shared.load_stability(fp, ctx)
        elif source == MEASURED and self._measured is None:
            previous = self.stability or (
                self.shared.load_stability(fp, ctx) if self.shared is not None else None
            )
        record: dict[str, Any] = dict(previous or {})
        if source == MEASURED and self._measured is not None:
            record.update(self._measured.to_dict())
        record.setdefault("clock", device_clock(self.device, cpu_time=True)[0])
        record.setdefault("statistic", STATISTIC)
        if self._calibration_ratio is not None:
            record["calibration_ratio"] = self._calibration_ratio
            record["calibrated_at"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
        record.update(
            {
                "source": source,
                "remeasured": remeasured,
                "ops_measured_now": int(measured),
                "ops_reused_from_shared": int(self._reused),
                "shared_table": self.shared.safe_url if self.shared is not None else None,
                "device": fp.describe(),
                "precision": self.precision,
            }
        )
        self.stability = record
        if source == MEASURED:
            store_everywhere(self.table, self.shared, lambda t: t.store_stability(fp, ctx, record))
        else:
            self.table.store_stability(fp, ctx, record)
        if source == MEASURED and record.get("loaded"):
            why = load_reasons(record.get("ratio"), record.get("rounds"), record.get("core_share"))
            warnings.warn(
                f"cost table: the machine looked loaded while it was measured ({why}); "
                f"figures are best-of-rounds {record['clock']}, but "
                "re-measuring on a quiet machine is safer (fit(remeasure=True), "
                "`nasflow search --remeasure-costs`)",
                LoadedMachineWarning,
                stacklevel=2,
            )

    # ------------------------------------------------------------------ predictions
    def predict_step_seconds(self, arch: Mapping[str, Any]) -> float:
        """Predicted seconds of one training step of ``arch`` on this device.

        Raises:
            RuntimeError: No calibration yet (call ``fit()``).
        """
        if self.calibration is None:
            raise StateError(
                f"cost model of space {self.space.name!r} on {self.fingerprint.describe()} "
                "has no calibration; call fit() or calibrate() first"
            )
        return max(0.0, self.calibration.predict(self.op_seconds(arch)))

    def predict_train_seconds(self, arch: Mapping[str, Any], steps: int) -> float:
        """Predicted seconds of ``steps`` training steps of ``arch`` (its training cost)."""
        check_int("steps", steps, 0)
        return self.predict_step_seconds(arch) * steps

    def _unit_flops(self, unit: OpInstance) -> FlopCount:
        if unit.key not in self._flops:
            self._flops[unit.key] = count_flops(
                unit.module,
                unit.input_shape,
                input_requires_grad=unit.input_requires_grad,
                input_dtype=unit.input_dtype,
            )
        return self._flops[unit.key]

    def flops(self, arch: Mapping[str, Any]) -> FlopCount:
        """Forward and backward FLOPs of one training step of ``arch``: the sum over its op
        instances (each counted once per process), which equals counting the whole
        network since containers add no matrix products."""
        counts = [self._unit_flops(u) for u in self.units(arch)]
        return FlopCount(sum(c.forward for c in counts), sum(c.backward for c in counts))

    def params(self, arch: Mapping[str, Any]) -> int:
        """Trainable parameter elements of ``arch``'s stand-alone network."""
        return sum(count_params(u.module) for u in self.units(arch))

    def activation_bytes(self, arch: Mapping[str, Any]) -> int:
        """Estimated bytes of activations kept for the backward pass (see
        ``activation_bytes``); proportional to the batch size."""
        return activation_bytes(self.network(arch), self.batch_shape, input_dtype=self.input_dtype)

    def memory_bytes(self, arch: Mapping[str, Any]) -> int:
        """Estimated training memory: activations plus fp32 weights, gradients and AdamW's
        two moments (4 copies of the parameters)."""
        return self.activation_bytes(arch) + 4 * 4 * self.params(arch)

    def __repr__(self) -> str:
        calibrated = "calibrated" if self.calibration is not None else "not calibrated"
        return (
            f"CostModel(space={self.space.name!r}, batch={self.batch_shape}, "
            f"device={self.fingerprint.describe()!r}, {calibrated}, table={self.table.safe_url!r})"
        )
