"""The ceiling of issue 41's end-to-end targets: what keeping by validation can reach.

Issue 41 asks, on every ground, for the kept model's median share of the ground's random
architectures at 90% or more, and for the kept model above the space's largest
architecture trained once (B7), its paired interval above zero on 8 of 10 grounds. A
study keeps the model with the best validation accuracy among those it trained; one
training's validation accuracy is noisy, and it chooses. This benchmark replays that
choice on the tables themselves, where every architecture is trained twice (two training
seeds), without training anything:

- **whole table**: every architecture of the table trained once (one table seed), the
  best-validating one kept; its test accuracy (the same training) as a share of the
  table's architectures beaten (their mean test accuracy over the seeds, as
  ``benchmarks/paired.py`` counts shares): what a search whose ranking were perfect up
  to training everything would keep. It is not an upper bound for every search: where
  validation is noisy (a small validation split), the best-validating of more models is
  more often a lucky one, and ``k`` random can keep better (the winner's curse).
- **k random**: ``k`` architectures of the table drawn at random, the best-validating
  kept (median share and the share of draws at 90% or more, over ``--draws`` draws of
  each table seed): a search that trains ``k`` models without a ranking at all.
- **largest**: the space's largest architecture (``nasflow.space.largest_arch``) as B7
  and the param ladder trained it (rows of ``--largest-from``: ``benchmarks/largest.py``
  rows and ``benchmarks/paired.py``'s ``ladder`` runs, whose widest rung it is), and the
  table's own trainings of it where the table holds it.

The difference "most random − largest" (the mean share of the largest ``--k``'s draws
against the largest's mean) is what training most of the table and keeping by
validation gains on B7 here (the whole table is one draw of each seed's noise: two
values; ``k`` random averages over draws); where it is at or below zero, or within the
largest's own seed-to-seed spread, a paired interval above zero cannot be expected from
a study that keeps by validation, whatever ranks its candidates.

Usage::

    python benchmarks/ceiling.py   # every ground with a two-seed table
    python benchmarks/ceiling.py --studies studies/mnist1d_front.py --k 4 10 20 50
"""

from __future__ import annotations

import argparse
import csv
import json
import statistics
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _paired_stats import GroundTable

from nasflow.search import StudySpec, load_study_file
from nasflow.space import Arch, largest_arch

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "benchmarks" / "data"
#: The grounds of issue 41 (the proving ground, the suite, CIFAR-10, Shakespeare).
DEFAULT_STUDIES = [
    ROOT / "studies" / "mnist1d_front.py",
    *sorted((ROOT / "benchmarks" / "suite").glob("*.py")),
    ROOT / "studies" / "cifar10_cpu.py",
    ROOT / "studies" / "shakespeare_cpu.py",
]
DEFAULT_LARGEST = [DATA / "b7_largest.jsonl", *sorted(DATA.glob("paired_*.jsonl"))]
#: The share issue 41 asks of the kept model's median.
BAR = 0.9


def table_seeds(paths: Sequence[Path]) -> list[dict[str, tuple[float, float]]]:
    """Per table file (training seed): arch JSON -> (validation, test accuracy)."""
    out = []
    for path in paths:
        with Path(path).open(newline="") as f:
            rows = {}
            for r in csv.DictReader(f):
                try:
                    rows[r["arch"]] = (float(r["val_accuracy"]), float(r["test_accuracy"]))
                except (KeyError, ValueError):
                    continue  # a row being written
            out.append(rows)
    return out


def kept_share(val: np.ndarray, share: np.ndarray) -> float:
    """The expected share of the best-validating architecture, ties broken at random:
    the mean share over every architecture at the highest validation accuracy (on a
    validation split of a few hundred samples, ties at the top are common)."""
    return float(share[val == val.max()].mean())


def largest_tests(name: str, arch: Arch, files: Sequence[Path]) -> list[float]:
    """Test accuracies of ``arch`` (the space's largest) trained for ground ``name``:
    ``benchmarks/largest.py`` rows and the widest rung of ``paired.py``'s ladder runs."""
    key = arch.to_json()
    tests = []
    for path in files:
        if not path.exists():
            continue
        for line in path.read_text().splitlines():
            row = json.loads(line) if line.strip() else {}
            if row.get("name") != name:
                continue
            if row.get("config") == "ladder" and row.get("trained"):
                top = row["trained"][-1]
                if Arch.from_json(top["arch"]).to_json() == key:
                    tests.append(float(top["test"]))
            elif "beats" in row and "test" in row and Arch.from_json(row["arch"]).to_json() == key:
                tests.append(float(row["test"]))
    return tests


def ground(spec: StudySpec, ks: Sequence[int], draws: int, files: Sequence[Path]) -> dict:
    """One ground's ceiling, k-random and largest figures (module docstring)."""
    paths = [Path(p) for p in spec.baseline]
    table = GroundTable.from_files(spec.name, paths)
    seeds = table_seeds(paths)
    common = sorted(set.intersection(*(set(s) for s in seeds)))
    whole = []
    rng = np.random.default_rng(0)
    k_random: dict[int, list[float]] = {k: [] for k in ks}
    for rows in seeds:
        val = np.array([rows[a][0] for a in common])
        share = np.array([table.share(rows[a][1]) for a in common])
        whole.append(kept_share(val, share))
        for k in ks:
            for _ in range(draws):
                pick = rng.choice(len(common), size=min(k, len(common)), replace=False)
                k_random[k].append(kept_share(val[pick], share[pick]))
    arch = largest_arch(spec.space)
    tests = largest_tests(spec.name, arch, files)
    in_table = [rows[arch.to_json()][1] for rows in seeds if arch.to_json() in rows]
    largest = [table.share(t) for t in tests + in_table]
    return {
        "name": spec.name,
        "archs": len(common),
        "whole": whole,
        "k_random": {
            k: (statistics.median(v), float(np.mean(np.array(v) >= BAR)), float(np.mean(v)))
            for k, v in k_random.items()
        },
        "largest": largest,
        "largest_sources": f"{len(tests)} trainings + {len(in_table)} in the table",
    }


def table_lines(results: Sequence[dict], ks: Sequence[int]) -> list[str]:
    """The Markdown table and the two targets' counts."""
    kmax = max(ks)
    head = (
        "| ground | archs | whole table: share kept (per table seed) | "
        + " | ".join(f"{k} random: median (P ≥ 90%)" for k in ks)
        + f" | largest: mean share (min–max; trainings) | {kmax} random − largest (means) |"
    )
    lines = [head, "|" + "---|" * (5 + len(ks))]
    above = at_bar = 0
    for r in results:
        whole = float(np.mean(r["whole"]))
        per = " / ".join(f"{w:.0%}" for w in r["whole"])
        ks_cells = " | ".join(f"{m:.0%} ({p:.0%})" for m, p, _ in (r["k_random"][k] for k in ks))
        if r["largest"]:
            lar = float(np.mean(r["largest"]))
            lcell = (
                f"{lar:.0%} ({min(r['largest']):.0%}–{max(r['largest']):.0%}; "
                f"{r['largest_sources']})"
            )
            gain = r["k_random"][kmax][2] - lar
            diff = f"{100 * gain:+.1f} pts"
            above += gain > 0
        else:
            lcell, diff = "— (not trained)", "—"
        at_bar += statistics.median(r["whole"]) >= BAR
        lines.append(
            f"| {r['name']} | {r['archs']} | {whole:.0%} ({per}) | {ks_cells} | {lcell} | {diff} |"
        )
    lines.append(
        f"whole table at or above {BAR:.0%}: {at_bar} of {len(results)} grounds; "
        f"{kmax} random above the largest's mean share: {above} of "
        f"{sum(bool(r['largest']) for r in results)} grounds with the largest trained"
    )
    return lines


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--studies", type=Path, nargs="+", default=DEFAULT_STUDIES)
    p.add_argument(
        "--k", type=int, nargs="+", default=[10, 50, 150], help="random archs kept from"
    )
    p.add_argument("--draws", type=int, default=2000, help="random draws per table seed")
    p.add_argument("--largest-from", type=Path, nargs="+", default=DEFAULT_LARGEST)
    p.add_argument("--json", type=Path, help="write the figures here")
    args = p.parse_args(argv)
    results = []
    for path in args.studies:
        spec = load_study_file(path)
        if len(spec.baseline) < 2:
            print(f"{spec.name}: skipped, its table has {len(spec.baseline)} training seed(s)")
            continue
        results.append(ground(spec, args.k, args.draws, args.largest_from))
    print("\n".join(table_lines(results, args.k)))
    if args.json:
        args.json.write_text(json.dumps(results, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
