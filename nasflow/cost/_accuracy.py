"""How good a step-time predictor is: Kendall tau-b, MAPE, share within a tolerance.

``evaluate_accuracy`` measures each architecture's real training step twice, interleaved
(measurement A and re-measurement B), and scores the cost model, a FLOPs-only baseline
and B itself against A; B against A is the noise floor of the machine, the best any
predictor can be expected to do there.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
from scipy.stats import kendalltau

from nasflow._checks import check_int
from nasflow.cost._cover import fit_line
from nasflow.errors import ConfigError, StateError
from nasflow.space import Arch

if TYPE_CHECKING:
    from nasflow.cost._model import CostModel


def kendall_tau_b(x: Sequence[float], y: Sequence[float]) -> float:
    """Kendall's tau-b rank correlation (ties in either variable corrected for).

    ``scipy.stats.kendalltau`` (its default variant is tau-b), with the shapes checked
    first. NaN when either variable is constant or holds a NaN.

    Raises:
        ValueError: Sequences of different lengths or fewer than 2 values.
    """
    a, b = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if a.shape != b.shape or a.ndim != 1 or a.size < 2:
        raise ConfigError(
            f"kendall_tau_b needs two equal-length sequences of >= 2 values, got "
            f"shapes {a.shape} and {b.shape}"
        )
    return float(kendalltau(a, b).statistic)


@dataclass(frozen=True)
class Agreement:
    """How close predictions are to a reference measurement.

    Attributes:
        kendall_tau: Kendall tau-b between predicted and reference values.
        mape: Mean absolute percentage error, as a fraction (0.05 = 5%).
        within: Share of predictions within ``tolerance`` of the reference.
        tolerance: The relative tolerance of ``within`` (0.10 = ±10%).
        n: Number of architectures.
    """

    kendall_tau: float
    mape: float
    within: float
    tolerance: float
    n: int


def agreement(
    predicted: Sequence[float], reference: Sequence[float], tolerance: float = 0.10
) -> Agreement:
    """Compare predictions with a (positive) reference measurement."""
    p, r = np.asarray(predicted, dtype=float), np.asarray(reference, dtype=float)
    if p.shape != r.shape or p.size < 2:
        raise ConfigError(f"need >= 2 paired values, got shapes {p.shape} and {r.shape}")
    if np.any(r <= 0):
        raise ConfigError(f"reference values must be positive, got min {float(r.min())!r}")
    if not tolerance > 0:
        raise ConfigError(f"tolerance must be > 0, got {tolerance!r}")
    rel = np.abs(p - r) / r
    return Agreement(
        kendall_tau_b(p, r),
        float(rel.mean()),
        float(np.mean(rel <= tolerance + 1e-12)),
        float(tolerance),
        int(p.size),
    )


@dataclass
class AccuracyReport:
    """Predictors scored against measurement A of the same architectures.

    Attributes:
        archs: The architectures, as JSON.
        measured_a: Step seconds, measurement A.
        measured_b: Step seconds, re-measurement B (interleaved with A).
        predicted: The cost model's step seconds.
        flops: Forward+backward FLOPs per step.
        rows: Name to agreement with A: ``"cost model"``, ``"flops (calibrated)"`` (FLOPs
            scaled by a least-squares line fitted on the cost model's calibration steps),
            ``"flops (fit on A)"`` (the same line fitted on A itself: the most a FLOPs
            baseline can do, in-sample) and ``"re-measurement B"`` (the noise floor).
        seconds: Where the time went (measuring A/B, predicting).
        meta: Free-form context (device, batch size...).
    """

    archs: list[str]
    measured_a: list[float]
    measured_b: list[float]
    predicted: list[float]
    flops: list[int]
    rows: dict[str, Agreement] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def hit_rate_ratio(self) -> float:
        """The cost model's ±tolerance hit rate over the re-measurement's."""
        floor = self.rows["re-measurement B"].within
        return self.rows["cost model"].within / floor if floor > 0 else math.inf

    def targets(self, tau: float = 0.9, ratio: float = 0.8) -> dict[str, bool]:
        """Whether tau >= ``tau`` and the hit rate ratio >= ``ratio``."""
        return {
            f"kendall_tau >= {tau}": self.rows["cost model"].kendall_tau >= tau,
            f"hit rate >= {ratio:.0%} of re-measurement": self.hit_rate_ratio >= ratio,
        }

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["rows"] = {k: asdict(v) for k, v in self.rows.items()}
        out["hit_rate_ratio"] = self.hit_rate_ratio
        out["targets"] = self.targets()
        return out

    def table(self) -> str:
        """A plain-text table of the rows."""
        tol = next(iter(self.rows.values())).tolerance
        lines = [f"{'predictor':<22} {'kendall tau':>11} {'MAPE':>7} {f'within ±{tol:.0%}':>11}"]
        for name, r in self.rows.items():
            lines.append(f"{name:<22} {r.kendall_tau:>11.3f} {r.mape:>7.1%} {r.within:>11.0%}")
        return "\n".join(lines)


def evaluate_accuracy(
    model: CostModel,
    archs: Sequence[Mapping[str, Any]],
    *,
    rounds: int = 3,
    iters: int = 3,
    warmup: int = 2,
    tolerance: float = 0.10,
    seed: int = 0,
) -> AccuracyReport:
    """Score a fitted ``CostModel`` against measured steps of ``archs``.

    Each architecture is measured in ``2 * rounds`` rounds; every round visits all of
    them once in a fresh random order, and rounds alternate between A and B, so both
    measurements see the same stretch of machine load and neither is the "first" one.
    A and B are each the best of their rounds' visits (``robust_seconds``, on the clock
    the table is timed with: the thread's CPU time on a CPU).

    Args:
        model: A fitted ``CostModel`` (its calibration must not come from ``archs``).
        archs: At least 2 architectures (the targets are meant for >= 20).
        rounds: Rounds per measurement (A and B each).
        iters: Timed steps per visit.
        warmup: Untimed steps at a network's first visit.
        tolerance: Relative tolerance of the hit rate.
        seed: Seeds the visiting order.
    """
    check_int("rounds", rounds, 1)
    if len(archs) < 2:
        raise ConfigError(f"need >= 2 architectures, got {len(archs)}")
    if model.calibration is None:
        raise StateError("the cost model has no calibration; call fit() first")
    paths = [model.path(a) for a in archs]
    calibration_archs = {p["arch"] for p in model.calibration.points}
    overlap = [p.to_json() for p in paths if p.to_json() in calibration_archs]
    if overlap:
        raise ConfigError(
            f"{len(overlap)} scored architectures were calibration paths (first: "
            f"{overlap[0]}); score the model on other architectures"
        )
    t0 = time.perf_counter()
    predicted = [model.predict_step_seconds(p) for p in paths]
    t_predict = time.perf_counter() - t0
    flops = [model.flops(p).total for p in paths]
    t0 = time.perf_counter()
    steps = model.measure_steps(paths, rounds=2 * rounds, iters=iters, warmup=warmup, seed=seed)
    t_measure = time.perf_counter() - t0
    a, b = np.min(steps[0::2], axis=0), np.min(steps[1::2], axis=0)
    points = model.calibration.points
    cal_flops = [model.flops(Arch.from_json(p["arch"])).total for p in points]
    fs, fi = fit_line(cal_flops, [p["measured"] for p in points])
    os_, oi = fit_line(flops, a)
    rows = {
        "cost model": agreement(predicted, a, tolerance),
        "flops (calibrated)": agreement([fs * f + fi for f in flops], a, tolerance),
        "flops (fit on A)": agreement([os_ * f + oi for f in flops], a, tolerance),
        "re-measurement B": agreement(b, a, tolerance),
    }
    return AccuracyReport(
        [p.to_json() for p in paths],
        [float(v) for v in a],
        [float(v) for v in b],
        [float(v) for v in predicted],
        flops,
        rows,
        {"measure_a_b": t_measure, "predict_all": t_predict},
    )
