"""Stability of the cost model's predictions across fresh studies on a loaded machine.

A study's predicted training cost of an architecture comes from the cost model's op
table and calibration, measured on the device the first time a study needs them. This
benchmark runs several *fresh* studies' cost-table measurement, each in its own process
with its own study database and its own shared-table cache (so nothing is reused), while
another process keeps one core busy, and prints each study's predicted training cost of
the same fixed architectures with the study's recipe, and each architecture's largest
deviation from its median over the studies.

Each study runs exactly what the study runner's scorer runs for its first candidate
(its ``cost="model"`` estimator, ``PredictedCost.model``: ``CostModel.for_space(space,
input_shape, batch_size, storage_url=<the study's database>, ...).fit()``, then
``predict_train_seconds(arch, steps)``), for the default study ``studies/mnist1d.py``
(its space, batch size and training recipe), with torch's default thread count; supernet
training and the search itself are skipped, as they do not touch the cost model.

With ``--baseline REV`` the same studies also run on the code of git revision ``REV``
(exported with ``git archive`` into a temporary folder), interleaved with the current
code's (old, new, new, old, ...), so both see the same stretch of load. A last series,
labelled *shared*, runs the current code's studies again with fresh study databases but
the shared table that fresh study 0 left behind: they reuse its table and measure
nothing (identical by construction; shown to confirm it, and for its cost).

Usage::

    python benchmarks/cost_stability.py                         # 5 studies, 1 busy core
    python benchmarks/cost_stability.py --baseline 56dfc9e --json out.json
    python benchmarks/cost_stability.py --studies 2 --archs 2   # smoke
    python benchmarks/cost_stability.py --clocks 300            # wall vs CPU time, only
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _burn(stop: mp.synchronize.Event) -> None:  # type: ignore[name-defined]
    """Keep one core busy until ``stop`` is set."""
    x = 0
    while not stop.is_set():
        for _ in range(100_000):
            x += 1


def worker(spec: dict) -> dict:
    """One fresh study's cost-table measurement and predictions (run in a subprocess)."""
    import numpy as np
    import torch

    from nasflow.cost import CostModel
    from nasflow.studies.mnist1d import study

    space = study.space
    rng = np.random.default_rng(spec["seed"])
    archs = [space.path(space.sample(rng)) for _ in range(spec["archs"])]
    t0 = time.perf_counter()
    model = CostModel.for_space(
        space,
        input_shape=tuple(space.config["input_shape"]),
        batch_size=study.train.batch_size,
        storage_url=spec["db"],
        device="cpu",
        input_dtype=torch.float32,
    ).fit()
    seconds = time.perf_counter() - t0
    return {
        "archs": [a.to_json() for a in archs],
        "predicted_train_seconds": [model.predict_train_seconds(a, spec["steps"]) for a in archs],
        "fit_seconds": seconds,
        "threads": torch.get_num_threads(),
        "stability": getattr(model, "stability", None),
        "ops_measured": model.stats.measured_ops,
        "calibration": [model.calibration.slope, model.calibration.intercept],
    }


def run_study(code: Path, folder: Path, cache: Path, args: argparse.Namespace, steps: int) -> dict:
    """One study in a fresh process on the code in ``code``."""
    folder.mkdir(parents=True, exist_ok=True)
    spec = {
        "db": str(folder / "study.db"),
        "archs": args.archs,
        "seed": args.seed,
        "steps": steps,
    }
    env = {
        **os.environ,
        "PYTHONPATH": str(code),
        "NASFLOW_COST_CACHE": str(cache / "cost.db"),
    }
    env.pop("NASFLOW_REMEASURE_COSTS", None)
    out = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "--worker", json.dumps(spec)],
        env=env,
        cwd=code,
        capture_output=True,
        text=True,
        check=False,
    )
    if out.returncode != 0:
        raise RuntimeError(f"study on {code} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def export_revision(rev: str, into: Path) -> Path:
    """The tree of git revision ``rev`` in ``into`` (``git archive``)."""
    into.mkdir(parents=True, exist_ok=True)
    tar = into / "code.tar"
    subprocess.run(
        ["git", "-C", str(ROOT), "archive", "--format=tar", "-o", str(tar), rev],
        check=True,
    )
    with tarfile.open(tar) as t:
        t.extractall(into / "code", filter="data")
    return into / "code"


def deviations(series: list[dict]) -> dict:
    """Per architecture: median prediction and largest |deviation| from it, in %."""
    per_arch = list(zip(*(s["predicted_train_seconds"] for s in series), strict=True))
    rows = []
    for values in per_arch:
        med = statistics.median(values)
        rows.append(
            {
                "median": med,
                "max_dev_pct": max(abs(v - med) / med * 100 for v in values) if med else 0.0,
            }
        )
    return {"per_arch": rows, "max_dev_pct": max(r["max_dev_pct"] for r in rows)}


def print_series(name: str, series: list[dict]) -> None:
    print(f"\n{name}: predicted training cost (s) of the study's recipe, per study")
    n = len(series[0]["predicted_train_seconds"])
    header = "study  " + "  ".join(f"{'arch ' + str(j):>8}" for j in range(n))
    print(header + "   fit s  ops measured  loaded  ref. ratio")
    for i, s in enumerate(series):
        st = s.get("stability") or {}
        ratio = st.get("ratio")
        print(
            f"{i:>5}  "
            + "  ".join(f"{v:>8.2f}" for v in s["predicted_train_seconds"])
            + f"  {s['fit_seconds']:>6.1f}  {s['ops_measured']:>12}  "
            + f"{st.get('loaded', '-')!s:>6}  {'-' if ratio is None else f'{ratio:.2f}':>10}"
        )
    dev = deviations(series)
    print(
        "  max |dev| from median, %: "
        + "  ".join(f"{r['max_dev_pct']:.1f}" for r in dev["per_arch"])
        + f"   (worst {dev['max_dev_pct']:.1f}%)"
    )


def clock_check(iters: int, load: int) -> dict:
    """The reference op's forward+backward timed ``iters`` times on the wall clock and on
    the thread's CPU clock at once, with 1 and with torch's default threads, on the
    machine as it is and then with ``load`` busy processes: what a loaded machine does to
    each clock and to each statistic (median vs best)."""
    import torch

    from nasflow.cost._measure import _OpHarness, reference_unit

    default_threads = torch.get_num_threads()
    out: dict = {}
    for loaded in (False, True):
        stop = mp.Event()
        burners = [mp.Process(target=_burn, args=(stop,), daemon=True) for _ in range(load)]
        for b in burners if loaded else ():
            b.start()
        try:
            time.sleep(0.5 if loaded else 0.0)
            for threads in sorted({1, default_threads}):
                torch.set_num_threads(threads)
                h = _OpHarness(reference_unit(), torch.device("cpu"), "fp32")
                for _ in range(10):
                    h.run()
                wall, cpu = [], []
                for _ in range(iters):
                    w0, c0 = time.perf_counter(), time.thread_time()
                    h.module(h.x).backward(h.grad)
                    wall.append(time.perf_counter() - w0)
                    cpu.append(time.thread_time() - c0)
                key = f"{'loaded' if loaded else 'as is'}, {threads} thread(s)"
                out[key] = {
                    "wall_median_ms": 1e3 * statistics.median(wall),
                    "wall_best_ms": 1e3 * min(wall),
                    "cpu_median_ms": 1e3 * statistics.median(cpu),
                    "cpu_best_ms": 1e3 * min(cpu),
                }
        finally:
            stop.set()
            for b in burners if loaded else ():
                b.join()
            torch.set_num_threads(default_threads)
    print(f"reference op forward+backward, {iters} iterations each (ms):")
    print(f"{'':26}  {'wall median':>11}  {'wall best':>9}  {'CPU median':>10}  {'CPU best':>8}")
    for key, r in out.items():
        print(
            f"{key:26}  {r['wall_median_ms']:>11.3f}  {r['wall_best_ms']:>9.3f}  "
            f"{r['cpu_median_ms']:>10.3f}  {r['cpu_best_ms']:>8.3f}"
        )
    return out


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--studies", type=int, default=5, help="fresh studies per series")
    p.add_argument("--archs", type=int, default=5, help="fixed architectures predicted")
    p.add_argument("--seed", type=int, default=0, help="seed of the fixed architectures")
    p.add_argument("--load", type=int, default=1, help="busy processes while measuring")
    p.add_argument("--baseline", help="git revision whose code runs the same studies too")
    p.add_argument(
        "--baseline-studies",
        type=int,
        help="fresh studies on the --baseline code (default: --studies; interleaved with "
        "the first ones of the current code)",
    )
    p.add_argument("--no-shared", action="store_true", help="skip the shared-table series")
    p.add_argument("--json", type=Path, help="write the results here")
    p.add_argument(
        "--clocks",
        type=int,
        metavar="N",
        help="only time the reference op N times per clock and thread count, as is and "
        "with --load busy processes (wall vs thread CPU time, median vs best)",
    )
    p.add_argument("--worker", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    for name in ("studies", "archs"):
        if getattr(args, name) < 2:
            p.error(f"--{name} must be >= 2, got {getattr(args, name)}")
    if args.baseline_studies is None:
        args.baseline_studies = args.studies
    if args.baseline_studies < 1:
        p.error(f"--baseline-studies must be >= 1, got {args.baseline_studies}")
    if args.load < 0:
        p.error(f"--load must be >= 0, got {args.load}")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.worker is not None:
        print(json.dumps(worker(json.loads(args.worker))))
        return 0
    if args.clocks is not None:
        if args.clocks < 10:
            raise SystemExit(f"--clocks must be >= 10, got {args.clocks}")
        result = clock_check(args.clocks, args.load)
        if args.json is not None:
            args.json.write_text(json.dumps(result, indent=2) + "\n")
        return 0
    from nasflow.studies.mnist1d import study

    data = study.data()
    steps = len(data.train) // study.train.batch_size * study.train.epochs
    series: dict[str, list[dict]] = {"new, fresh": []}
    stop = mp.Event()
    burners = [mp.Process(target=_burn, args=(stop,), daemon=True) for _ in range(args.load)]
    t_start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        old = export_revision(args.baseline, tmp / "old") if args.baseline else None
        if old is not None:
            series["old, fresh"] = []
        for b in burners:
            b.start()
        try:
            time.sleep(1.0)
            for i in range(args.studies):
                order = ["new", "old"] if i % 2 else ["old", "new"]
                for which in order:
                    if which == "old" and (old is None or i >= args.baseline_studies):
                        continue
                    code = ROOT if which == "new" else old
                    folder = tmp / f"{which}-{i}"
                    res = run_study(code, folder, folder / "cache", args, steps)  # type: ignore[arg-type]
                    series[f"{which}, fresh"].append(res)
                    preds = " ".join(f"{v:.2f}" for v in res["predicted_train_seconds"])
                    st = res.get("stability") or {}
                    print(
                        f"{which} study {i}: fit {res['fit_seconds']:.1f} s, predicted {preds}"
                        f" s, loaded {st.get('loaded', '-')}, ratio {st.get('ratio', '-')}",
                        flush=True,
                    )
            if not args.no_shared:
                series["new, shared"] = []
                # Fresh study databases, one shared table: the one fresh study 0 measured.
                for i in range(args.studies):
                    folder = tmp / f"shared-{i}"
                    res = run_study(ROOT, folder, tmp / "new-0" / "cache", args, steps)
                    series["new, shared"].append(res)
        finally:
            stop.set()
            for b in burners:
                b.join()
    total = time.perf_counter() - t_start
    print(
        f"\n{args.studies} fresh studies per series, {args.load} busy process(es); "
        f"recipe: {study.train.epochs} epochs x {steps // study.train.epochs} steps; "
        f"threads {series['new, fresh'][0]['threads']}; {total:.0f} s in all"
    )
    print("archs:")
    for j, a in enumerate(series["new, fresh"][0]["archs"]):
        print(f"  arch {j}: {a}")
    for name in ("old, fresh", "new, fresh", "new, shared"):
        if name in series:
            print_series(name, series[name])
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        doc = {
            "command": " ".join(
                ["python", "benchmarks/cost_stability.py", *(argv or sys.argv[1:])]
            ),
            "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "steps": steps,
            "series": series,
            "deviations": {k: deviations(v) for k, v in series.items()},
        }
        args.json.write_text(json.dumps(doc, indent=2) + "\n")
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
