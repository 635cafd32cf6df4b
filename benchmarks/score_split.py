"""Where a screened candidate's score goes: extracting its path, re-estimating batch norm,
validating.

For each study given (default: the default study and the image study), samples
``--candidates`` architectures of its space and times, on its supernet (untrained: the
cost is the same), the three steps of the one-shot score as the screening runs them
(``Supernet.extract``, ``recalibrate_bn`` on the study's ``bn_batches`` fixed batches,
``evaluate`` on the whole validation split). Prints the mean milliseconds of each step
and the validation's share: what a staged rung 0 (validating on a slice first, the whole
split for the best) could save at most (issue 43, item 1).

Usage::

    python benchmarks/score_split.py                     # MNIST-1D and CIFAR-10 (NASFLOW_CIFAR10)
    python benchmarks/score_split.py --quick             # MNIST-1D, 5 candidates
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

from nasflow.search import load_study_file
from nasflow.supernet import recalibrate_bn
from nasflow.train import evaluate

ROOT = Path(__file__).resolve().parents[1]
STUDIES = ("studies/mnist1d_front.py", "studies/cifar10_cpu.py")


def split(study: Path, candidates: int) -> tuple[float, float, float]:
    """Mean seconds of extract, batch-norm re-estimation and validation per candidate."""
    spec = load_study_file(study)
    assert spec.data is not None, f"{study}: a tabular study scores nothing"
    data = spec.data()
    train = data.batches("train", spec.train.batch_size, spec.seed)
    val = data.batches("val")
    supernet = spec.space.supernet()
    bn = train.fixed(spec.bn_batches)  # the same images for every path, as the screening
    rng = np.random.default_rng(0)
    totals = np.zeros(3)
    for _ in range(candidates):
        path = spec.space.path(spec.space.sample(rng))
        t0 = time.perf_counter()
        net = supernet.extract(path)
        t1 = time.perf_counter()
        recalibrate_bn(net, bn, spec.bn_batches)
        t2 = time.perf_counter()
        evaluate(net, val)
        totals += (t1 - t0, t2 - t1, time.perf_counter() - t2)
    extract, batch_norm, validate = totals / candidates
    return float(extract), float(batch_norm), float(validate)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("studies", nargs="*", default=list(STUDIES), help="study files")
    p.add_argument("--candidates", type=int, default=20, help="per study (default 20)")
    p.add_argument("--quick", action="store_true", help="the default study, 5 candidates")
    args = p.parse_args(argv)
    if args.quick:
        args.studies, args.candidates = [STUDIES[0]], 5
    if args.candidates < 1:
        p.error(f"--candidates must be >= 1, got {args.candidates}")
    print("| study | extract ms | batch norm ms | validation ms | validation's share |")
    print("|---|---:|---:|---:|---:|")
    for study in args.studies:
        path = Path(study) if Path(study).is_file() else ROOT / study
        e, b, v = split(path, args.candidates)
        print(f"| {path.stem} | {1e3 * e:.1f} | {1e3 * b:.1f} | {1e3 * v:.1f} "
              f"| {v / (e + b + v):.0%} |", flush=True)  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
