"""Zero-cost anchors: architectures chosen before anything trains, trained first.

Nothing that the one-shot search produces exists before its supernet is trained and
screened (a minute or more on a CPU). The anchors fill that gap: a few architectures
chosen from the space by numbers that cost no training -- parameter count (more is more
accurate: on the generalisation suite the parameter count alone ranks the random
architectures at Kendall tau +0.62 to +0.81, ``benchmarks/RESULTS.md``) and training
FLOPs (fewer is cheaper) -- trained from scratch with the study's recipe before the
supernet. They are ready models within seconds, they span the accuracy-cost front from
its cheap end to its accurate end, and they are the baseline the search's kept model is
compared with.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from nasflow._checks import check_int
from nasflow.search._pareto import non_dominated_sort
from nasflow.space import Arch, SearchSpace

#: How many standard errors of a validation accuracy the best anchor must validate above
#: the search's kept model to be kept instead. Both are trained from scratch with the
#: study's recipe (or the kept model fine-tuned, whose figure is optimistic); the anchor's
#: figure is the best of ``n`` (the expected maximum of four draws of noise is about one
#: standard error). Replayed on B6's 24 end-to-end runs with anchors
#: (``benchmarks/RESULTS.md``, B8): with 1, the kept model beats a mean 84.4% of each
#: ground's random architectures, against 82.7% for the search's own choice, and the worst
#: run 57% against 35%; 0 gives 84.8% but a worst run of 45%; 2, 84.3%. On 6 runs whose
#: search failed (a stack calibrated on a loaded machine): 86.2% against 70.2%.
ANCHOR_MARGIN_SE = 1.0


def kept_anchor(
    kept_val: float, anchors: Sequence[Mapping[str, Any]], samples: int | None
) -> tuple[Mapping[str, Any], float]:
    """The best-validating trained anchor record and the margin (in accuracy) it must
    clear: :data:`ANCHOR_MARGIN_SE` binomial standard errors on ``samples`` validation
    samples. The anchor replaces the search's kept model (validation ``kept_val``) when
    its validation accuracy is above ``kept_val`` by more than the margin."""
    from nasflow.search._finetune import standard_error

    best = max(anchors, key=lambda e: e["val_accuracy"])
    return best, ANCHOR_MARGIN_SE * standard_error(kept_val, best["val_accuracy"], samples)


@dataclass(frozen=True)
class Anchors:
    """How many zero-cost anchors a study trains first, and from how many candidates.

    Attributes:
        n: Anchors trained from scratch before the supernet (each costs one stand-alone
            training with the study's recipe). Chosen on the generalisation suite
            (``benchmarks/anchors.py``, B8 in ``benchmarks/RESULTS.md``): replayed on the
            nine grounds' tables, 4 anchors cover a median 0.87 of each table's
            hypervolume (0.61 to 0.92) for 28 CPU-seconds of training, against 0.84 for 4
            of the table's architectures drawn at random (about the same CPU); 3 anchors
            0.83 (random 0.81), 5 anchors 0.89 (0.85) for 33 CPU-seconds. The best
            validating anchor (usually the largest) beats a median 86% of the table.
        sample: Random architectures drawn from the space (seeded by the study's seed);
            the anchors are spread over the non-dominated set of (parameters up, training
            FLOPs down) among them, evenly in log FLOPs from its cheapest member to its
            largest.
    """

    n: int = 4
    sample: int = 256

    def __post_init__(self) -> None:
        check_int("Anchors.n", self.n, 1)
        check_int("Anchors.sample", self.sample, self.n)


@dataclass(frozen=True)
class Anchor:
    """One zero-cost anchor: the architecture and the numbers that chose it.

    Attributes:
        arch: The architecture.
        params: Trainable parameters of its stand-alone network.
        flops: Forward and backward FLOPs of one training step (the study's batch size).
    """

    arch: Arch
    params: int
    flops: int


def zero_cost_front(
    space: SearchSpace,
    n: int,
    sample: int,
    seed: int,
    batch_size: int,
    candidates: Sequence[Arch] | None = None,
) -> list[Anchor]:
    """Up to ``n`` anchors, cheapest first: of ``sample`` distinct random architectures
    (drawn with ``seed``; or the given ``candidates``), the non-dominated set by
    (parameters up, training FLOPs down), and on it the members nearest to ``n`` points
    evenly spaced in log FLOPs from its cheapest to its largest member (the largest always
    included).

    Parameters and FLOPs come from the cost model's op tracer (shapes only, on the
    ``meta`` device; no table, nothing is measured): about 1.5 CPU-seconds for 256
    candidates of the MNIST-1D space.
    """
    from nasflow.cost import CostModel

    check_int("n", n, 1)
    check_int("sample", sample, 1)
    # A table in memory: the op tracer needs one, nothing is measured or stored in it.
    model = CostModel.for_space(space, batch_size=batch_size, storage_url="sqlite://", share=False)
    archs: dict[Arch, None] = {}
    if candidates is not None:
        archs = dict.fromkeys(candidates)
    else:
        rng = np.random.default_rng(seed)
        for _ in range(20 * sample):  # a small space runs out of distinct architectures
            archs.setdefault(space.sample(rng))
            if len(archs) == sample:
                break
    found = [Anchor(a, model.params(a), model.flops(a).total) for a in archs]
    points = np.array([(-a.params, a.flops) for a in found], dtype=float)
    ranks = non_dominated_sort(points, ["minimize", "minimize"])
    front = sorted((a for a, r in zip(found, ranks, strict=True) if r == 0), key=_by_flops)
    if len(front) <= n:
        return front
    logs = np.log([max(a.flops, 1) for a in front])
    chosen: list[int] = []
    for target in np.linspace(logs[-1], logs[0], n):  # the largest first: n=1 is the largest
        free = [i for i in range(len(front)) if i not in chosen]
        chosen.append(min(free, key=lambda i: (abs(logs[i] - target), i)))
    return [front[i] for i in sorted(chosen)]


def _by_flops(a: Anchor) -> tuple[int, int]:
    return a.flops, -a.params


def describe(anchor: Anchor) -> str:
    """``"12.3k params, 45.6 MFLOPs/step"``."""
    return f"{_si(anchor.params)} params, {_si(anchor.flops)}FLOPs/step"


def _si(x: float) -> str:
    if x <= 0:
        return "0"
    k = min(int(math.log10(x) // 3), 4)
    return f"{x / 1000**k:.3g}{' kMGT'[k].strip()}"
