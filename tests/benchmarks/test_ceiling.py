"""``benchmarks/ceiling.py``: keeping by validation replayed on a table, against the largest."""

from __future__ import annotations

import csv
import importlib.util
import json
import sys
from pathlib import Path

import numpy as np
import pytest

from nasflow.search import load_study_file
from nasflow.space import largest_arch
from tests._study_template import write_study

ROOT = Path(__file__).resolve().parents[2]


def _ceiling():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location(
        "bench_ceiling", ROOT / "benchmarks" / "ceiling.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _table(path: Path, rows: list[tuple[str, float, float]]) -> None:
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["index", "arch", "val_accuracy", "test_accuracy", "train_seconds"])
        for i, (arch, val, test) in enumerate(rows):
            w.writerow([i, arch, val, test, 1.0 + i])


def test_the_ceiling_keeps_the_best_validating_and_reads_the_largest(tmp_path) -> None:
    ceiling = _ceiling()
    spec = load_study_file(write_study(tmp_path))
    rng = np.random.default_rng(0)
    archs = list(dict.fromkeys(spec.space.sample(rng) for _ in range(40)))[:6]
    big = largest_arch(spec.space)
    archs = [*[a for a in archs if a != big][:5], big]
    js = [a.to_json() for a in archs]
    # Seed 0: arch 2 validates best (and tests 0.70); seed 1: archs 1 and 3 tie at the top.
    test = [0.50, 0.60, 0.70, 0.40, 0.30, 0.80]
    for name, val in (
        ("t0", [0.5, 0.6, 0.9, 0.4, 0.3, 0.7]),
        ("t1", [0.5, 0.9, 0.6, 0.9, 0.3, 0.7]),
    ):
        _table(tmp_path / f"{name}.csv", list(zip(js, val, test, strict=True)))
    spec = spec.replace(baseline=(str(tmp_path / "t0.csv"), str(tmp_path / "t1.csv")))
    ladder = tmp_path / "ladder.jsonl"
    row = {"config": "ladder", "name": spec.name, "trained": [{"arch": js[-1], "test": 0.65}]}
    ladder.write_text(json.dumps(row) + "\n")
    r = ceiling.ground(spec, [2, 6], 50, [ladder])
    # Mean test per arch: .5 .6 .7 .4 .3 .8. Seed 0 keeps arch 2 (0.70 beats 4 of 6);
    # seed 1 ties archs 1 (0.60 beats 3) and 3 (0.40 beats 1): the expected share, 2 of 6.
    assert r["whole"] == [4 / 6, 2 / 6]
    # Six of six drawn is the whole table: half the draws from each seed.
    assert r["k_random"][6] == pytest.approx((0.5, 0.0, 0.5))
    # The largest: the ladder's widest rung (0.65 beats 4 of 6) and the table's two
    # trainings of it (0.80 beats 5 of 6, twice).
    assert sorted(r["largest"]) == [4 / 6, 5 / 6, 5 / 6]
    lines = ceiling.table_lines([r], [2, 6])
    assert lines[2].startswith(f"| {spec.name} | 6 | 50% (67% / 33%) |")
    # Six random (the whole table) against the largest's mean share (0.778): -27.8 points.
    assert lines[2].endswith("| -27.8 pts |")
    assert "whole table at or above 90%: 0 of 1 grounds" in lines[-1]
