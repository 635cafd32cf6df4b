"""``benchmarks/generalisation.py``: the top rung's reading (the recipe from inherited
weights against the table's trainings from scratch, per ground)."""

from __future__ import annotations

import pytest

from tests.benchmarks._load import load_benchmark


@pytest.fixture(scope="module")
def gen():  # type: ignore[no-untyped-def]
    return load_benchmark("generalisation.py")


def _run(seed: int, ft_test: list[float], gt_test: list[float]) -> dict:
    """One measured run of four table architectures of the proving ground, fine-tuned the
    recipe's 12 epochs (one validation reading per epoch) at the study's lr."""
    n = len(gt_test)
    return {
        "study": "studies/mnist1d_front.py",
        "seed": seed,
        "n_archs": n,
        "gt_tables": 2,
        "gt_val": gt_test,
        "gt_test": gt_test,
        "gt_cpu": [6.0] * n,
        "scores_by_epoch": {"12": [0.5 + 0.1 * i for i in range(n)]},
        "supernet_cpu": 30.0,
        "fine_tuned": {
            "0.003": {
                "ft_val": [[0.5] * 12 for _ in range(n)],
                "ft_test": ft_test,
                "ft_cpu": [[0.5] * 12 for _ in range(n)],
            }
        },
    }


def test_the_top_rung_reads_the_paired_difference_per_ground(gen, capsys) -> None:  # type: ignore[no-untyped-def]
    gt = [0.80, 0.85, 0.90, 0.95]
    runs = [
        _run(0, [0.82, 0.86, 0.93, 0.96], gt),  # +2, +1, +3, +1 points
        _run(1, [0.81, 0.87, 0.91, 0.94], gt),  # +1, +2, +1, -1 points
    ]
    gen.top_rung(runs, "0.003")
    line = next(s for s in capsys.readouterr().out.splitlines() if "mnist1d_front" in s)
    assert "2 run(s), 8 archs, [12] epochs: +1.2 [" in line
    assert "higher 7 / lower 1" in line
    assert "CPU-s per training 6.0 inherited vs 6.0 scratch" in line
    low, high = (float(v) for v in line.split("[", 2)[2].split("]")[0].split(","))
    assert 0 < low < 1.25 < high


def test_a_run_without_the_requested_lr_reads_its_own(gen) -> None:  # type: ignore[no-untyped-def]
    run = _run(0, [0.82, 0.86, 0.93, 0.96], [0.80, 0.85, 0.90, 0.95])
    run["fine_tuned"] = {"0.01": run["fine_tuned"]["0.003"]}
    assert gen.tuned_lr(run, "0.003") == "0.01"
    assert gen.tuned_at(run, "0.003")["ft_test"] == [0.82, 0.86, 0.93, 0.96]
    got = gen.replay(run, 2, 1, 1, "0.003")
    assert got["ft_minus_scratch"] == pytest.approx(0.0175)
    run["fine_tuned"]["0.003"] = run["fine_tuned"]["0.01"]  # two lrs: the one asked for
    assert gen.tuned_lr(run, "0.003") == "0.003"
