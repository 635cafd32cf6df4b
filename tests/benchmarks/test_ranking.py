"""B2 where the choice is made (``benchmarks/ranking.py``): tau-b on resamples, the cells
(cost quartiles, widths), the intervals and the study-minus-best-free difference, the
study's rank sum, the merged tables and the saved feature rows. No training here: the
smoke run of the whole script is ``test_b2_quick...`` in ``test_benchmark_scripts.py``."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch
from scipy.stats import kendalltau

from nasflow.ranker import SUITE_PRIOR
from nasflow.search import load_study_file
from nasflow.space import Arch
from tests.benchmarks._load import B2_COLUMNS, load_benchmark

ROOT = Path(__file__).resolve().parents[2]


_load = load_benchmark


b2 = _load("ranking.py")  # puts benchmarks/ on the path: its helpers import as modules
import _ranking_features as feats  # noqa: E402
import _ranking_stats as stats  # noqa: E402


# ---------------------------------------------------------------------------- tau-b
def test_tau_b_on_resamples_is_scipys_tau_b_on_the_resampled_lists() -> None:
    rng = np.random.default_rng(1)
    a = rng.integers(0, 5, 30).astype(float)  # many ties
    b = a + rng.integers(0, 3, 30)
    idx = rng.integers(0, 30, (7, 30))  # architectures drawn more than once
    got = stats.tau_b_resampled(stats.sign_matrix(a), stats.sign_matrix(b), idx)
    want = [kendalltau(a[row], b[row]).statistic for row in idx]
    assert np.allclose(got, want)
    const = stats.tau_b_resampled(stats.sign_matrix(np.ones(30)), stats.sign_matrix(b), idx)
    assert np.isnan(const).all()  # a constant ranking has no tau


# ---------------------------------------------------------------------------- cells
def test_broken_ties_count_a_coarse_rankings_tied_pairs_as_random_choices() -> None:
    truth = np.arange(8.0)
    coarse = np.array([0, 0, 0, 0, 1, 1, 1, 1.0])  # two values: 12 of 28 pairs tied
    st, sc = stats.sign_matrix(truth), stats.sign_matrix(coarse)
    whole = np.arange(8)[None, :]
    assert stats.tau_b_resampled(sc, st, whole)[0] == pytest.approx(
        kendalltau(coarse, truth).statistic
    )
    # Broken at random: the 16 untied pairs are concordant, the 12 tied ones add 0 and
    # count: 16 / 28 (expected over every tie-breaking, checked by enumerating them).
    broken = stats.tau_b_resampled(sc, st, whole, broken=True)[0]
    assert broken == pytest.approx(16 / 28)
    rng = np.random.default_rng(0)
    draws = [kendalltau(coarse + rng.random(8) * 0.5, truth).statistic for _ in range(4000)]
    assert broken == pytest.approx(np.mean(draws), abs=0.01)
    # A ranking without ties is the same either way; a constant one chooses at random.
    assert stats.tau_b_resampled(st, st, whole, broken=True)[0] == pytest.approx(1.0)
    const = stats.sign_matrix(np.zeros(8))
    assert np.isnan(stats.tau_b_resampled(const, st, whole)[0])
    assert stats.tau_b_resampled(const, st, whole, broken=True)[0] == 0.0
    # A resample that draws one architecture twice leaves that pair out of both.
    twice = np.array([[0, 0, 1, 2, 5, 6, 7, 7]])
    got = stats.tau_b_resampled(st, st, twice, broken=True)[0]
    assert got == pytest.approx(stats.tau_b_resampled(st, st, twice)[0])


def test_cost_quartiles_and_width_cells() -> None:
    cost = [8.0, 1.0, 2.0, 7.0, 3.0, 6.0, 4.0, 5.0]
    quartile, edges = stats.cost_quartiles(cost)
    assert np.allclose(edges, [2.75, 4.5, 6.25])
    assert quartile.tolist() == [3, 0, 0, 3, 1, 2, 1, 2]
    found = stats.cells(cost, [16, 32, 16, 32, 16, 32, 16, 32], "n_embd")
    assert list(found) == [
        "all",
        "cost Q1",
        "cost Q2",
        "cost Q3",
        "cost Q4",
        "n_embd=16",
        "n_embd=32",
    ]
    assert found["cost Q1"].tolist() == [1, 2] and found["n_embd=16"].tolist() == [0, 2, 4, 6]
    assert list(stats.cells(cost, None, None)) == [
        "all",
        "cost Q1",
        "cost Q2",
        "cost Q3",
        "cost Q4",
    ]


def test_a_ranker_that_only_knows_the_cost_level_is_exposed_within_each_quartile() -> None:
    """The truth rises with cost but is reversed inside every quartile: ranking by cost
    gets 24 of 28 pairs right globally (tau (24 - 4) / 28) and every pair wrong within a
    quartile; a ranker equal to the truth is right everywhere."""
    cost = np.arange(8.0)
    truth = np.array([1.0, 0.0, 3.0, 2.0, 5.0, 4.0, 7.0, 6.0])
    scores = {"rank sum": truth[None, :].copy(), "params": cost[None, :]}
    found = {
        name: stats.cell_taus(scores, truth, members, study="rank sum", free=("params",), reps=50)
        for name, members in stats.cells(cost, None, None).items()
    }
    assert found["all"].taus["params"].point == pytest.approx((24 - 4) / 28)
    for q in range(1, 5):
        cell = found[f"cost Q{q}"]
        assert cell.n == 2 and cell.taus["params"].point == -1.0
        assert cell.taus["rank sum"].point == 1.0 and cell.best_free == "params"
        assert cell.difference.point == 2.0
    assert found["all"].difference.point == pytest.approx(1 - 20 / 28)


def test_the_difference_interval_is_paired_and_the_seeds_are_averaged() -> None:
    rng = np.random.default_rng(0)
    truth = rng.normal(size=60)
    noisy = truth + rng.normal(scale=1.0, size=(3, 60))  # three supernets
    scores = {"rank sum": noisy, "params": noisy[:1].copy(), "FLOPs": -truth[None, :]}
    cell = stats.cell_taus(
        scores, truth, np.arange(60), study="rank sum", free=("params", "FLOPs"), reps=300
    )
    per_seed = [kendalltau(row, truth).statistic for row in noisy]
    assert cell.taus["rank sum"].point == pytest.approx(np.mean(per_seed))
    assert cell.taus["params"].point == pytest.approx(per_seed[0])
    assert cell.best_free == "params"  # FLOPs ranks backwards
    diff = cell.difference
    assert diff.point == pytest.approx(np.mean(per_seed) - per_seed[0])
    assert diff.low <= diff.point <= diff.high and diff.high - diff.low < 0.3
    # A ranker against itself: the paired difference is exactly 0 on every resample.
    same = stats.cell_taus(
        {"rank sum": noisy[:1], "params": noisy[:1]}, truth, np.arange(60),
        study="rank sum", free=("params",), reps=100,
    )  # fmt: skip
    assert (same.difference.point, same.difference.low, same.difference.high) == (0, 0, 0)
    assert same.taus["params"].low < same.taus["params"].point < same.taus["params"].high


def test_the_ceiling_is_one_retrain_against_another() -> None:
    truth = np.arange(10.0)
    other = truth[::-1].copy()
    cell = stats.cell_taus(
        {"params": truth[None, :]}, truth, np.arange(10), retrains=[truth, other]
    )
    assert cell.ceiling.point == -1.0 and cell.difference is None


def test_the_oracle_is_1_without_noise_0_without_signal_and_above_one_table() -> None:
    assert stats.oracle_tau(1.0) == pytest.approx(1.0)
    assert stats.oracle_tau(0.0) == 0.0 and stats.oracle_tau(-0.3) == 0.0
    assert np.isnan(stats.oracle_tau(np.nan))
    between = np.array([0.2, 0.5, 0.8])
    est = stats.oracle_tau(between)
    assert (est > between).all() and (np.diff(est) > 0).all()
    # The mean of more tables is less noisy: the same agreement means a higher oracle.
    assert (stats.oracle_tau(between, seeds=4) > est).all()
    assert stats.oracle_tau(between, seeds=1) == pytest.approx(
        2 / np.pi * np.arcsin(np.sqrt(np.sin(np.pi * between / 2)))
    )


@pytest.mark.parametrize("noise", [(0.5, 0.5, 0.5, 0.5), (1.5, 0.8, 0.3, 0.15)])
def test_the_oracle_estimate_recovers_an_exact_rankings_tau_on_simulated_tables(noise) -> None:
    """Known expected accuracies, two tables drawn with training noise (the same size in
    every cell, or a different size per cell, as the tables' cheap architectures are
    noisier): the estimate from one table against the other is, on average over draws,
    the tau of the expected accuracies against the tables' mean, in every cell and over
    all of them."""
    rng = np.random.default_rng(1)
    n, draws = 200, 150
    cell = np.repeat(np.arange(4), n // 4)
    mu = cell * 1.0 + rng.normal(size=n)  # the cells differ, as cost quartiles do
    sd = np.asarray(noise)[cell]
    members = {"all": np.arange(n), **{f"Q{q}": np.flatnonzero(cell == q) for q in range(4)}}
    err: dict[str, list[float]] = {k: [] for k in members}
    for _ in range(draws):
        a, b = mu + rng.normal(size=n) * sd, mu + rng.normal(size=n) * sd
        mean = (a + b) / 2
        for k, m in members.items():
            exact = kendalltau(mu[m], mean[m]).statistic
            est = stats.oracle_tau(kendalltau(a[m], b[m]).statistic)
            err[k].append(float(est) - exact)
    for k, e in err.items():
        assert abs(np.mean(e)) < 0.03, (k, np.mean(e))
    # The statistic this corrects: one table against another is far below the oracle.
    a, b = mu + rng.normal(size=n) * sd, mu + rng.normal(size=n) * sd
    assert kendalltau(a, b).statistic < kendalltau(mu, (a + b) / 2).statistic - 0.05


def test_on_skewed_expected_accuracies_the_oracle_estimate_errs_high_not_low() -> None:
    """Expected accuracies far from Gaussian (log-normal: a long tail of good
    architectures) break the estimate's model: it then overestimates the oracle, by a few
    hundredths, which makes the headroom larger, never smaller (a cell found short of the
    target stays short)."""
    rng = np.random.default_rng(3)
    err = []
    for _ in range(200):
        mu = rng.lognormal(sigma=1.0, size=50)
        a, b = mu + rng.normal(size=50), mu + rng.normal(size=50)
        est = float(stats.oracle_tau(kendalltau(a, b).statistic))
        err.append(est - kendalltau(mu, (a + b) / 2).statistic)
    assert 0.0 < np.mean(err) < 0.06


def test_the_headroom_is_the_oracle_above_the_best_free_baseline_paired() -> None:
    rng = np.random.default_rng(2)
    mu = rng.normal(size=80)
    a, b = mu + rng.normal(scale=0.5, size=80), mu + rng.normal(scale=0.5, size=80)
    truth = (a + b) / 2
    params = mu + rng.normal(scale=0.7, size=80)  # free, noisier than the oracle
    cell = stats.cell_taus(
        {"params": params[None, :]}, truth, np.arange(80), retrains=[a, b], free=("params",),
        reps=300,
    )  # fmt: skip
    assert cell.oracle.point == pytest.approx(float(stats.oracle_tau(cell.ceiling.point)))
    assert cell.headroom.point == pytest.approx(cell.oracle.point - cell.taus["params"].point)
    assert cell.headroom.low <= cell.headroom.point <= cell.headroom.high
    assert cell.oracle.point > cell.ceiling.point
    # The truth as the mean of four tables (two given): a higher oracle from the same two.
    four = stats.cell_taus(
        {"params": params[None, :]}, truth, np.arange(80), retrains=[a, b], free=("params",),
        reps=50, truth_seeds=4,
    )  # fmt: skip
    assert four.oracle.point > cell.oracle.point


# ---------------------------------------------------------------------------- the study
def test_the_study_rank_sum_breaks_ties_by_accuracy_and_falls_back_to_accuracy() -> None:
    # acc ranks 1, 2.5, 2.5, 4; loss ranks 3, 2, 4, 1; sums 4, 4.5, 6.5, 5.
    score = stats.study_rank_score([0.9, 0.8, 0.8, 0.7], [0.5, 0.3, 0.6, 0.2])
    assert list(np.argsort(-score)) == [0, 1, 3, 2]
    tied = stats.study_rank_score([0.8, 0.9], [0.5, 0.6])  # sums 3 and 3: accuracy decides
    assert tied[1] > tied[0]
    assert stats.study_rank_score([0.8, 0.9], [0.5, None]).tolist() == [0.8, 0.9]


def test_supernet_overrides_are_any_supernet_config_field() -> None:
    study = load_study_file(ROOT / "studies/mnist1d_front.py")
    cfg = feats.supernet_config(study, {"epochs": 6, "lr": 0.01}, seed=2)
    assert (cfg.epochs, cfg.lr, cfg.seed) == (6, 0.01, 2)
    assert cfg.warmup_epochs == study.supernet.warmup_epochs * 6 / study.supernet.epochs
    assert feats.supernet_config(study, {"warmup_epochs": 0.0, "epochs": 6}, 0).warmup_epochs == 0
    with pytest.raises(SystemExit, match=r"unknown field\(s\) \['distil'\]"):
        feats.supernet_config(study, {"distil": 1.0}, 0)
    with pytest.raises(SystemExit, match="sampler must be"):
        feats.supernet_config(study, {"sampler": "greedy"}, 0)


# ---------------------------------------------------------------------------- tables, rows
def _table(path: Path, rows: list[tuple[int, str, float]], tail: str = "") -> Path:
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["index", "arch", "val_accuracy", "test_accuracy", "params"])
        for i, arch, acc in rows:
            w.writerow([i, arch, acc, acc, 100 + i])
    if tail:
        with path.open("a") as f:
            f.write(tail)
    return path


def test_tables_merge_over_the_architectures_present_in_all(tmp_path: Path) -> None:
    arch = [json.dumps({"w": i}) for i in range(5)]
    a = _table(tmp_path / "a.csv", [(i, arch[i], 0.5 + i / 10) for i in (3, 0, 1, 2)])
    b = _table(tmp_path / "b.csv", [(i, arch[i], 0.4) for i in (0, 2, 3, 4)], tail='5,"{""w')
    table = feats.load_tables([a, b])
    assert table.indices == [0, 2, 3] and table.archs == [
        Arch({"w": 0}),
        Arch({"w": 2}),
        Arch({"w": 3}),
    ]
    assert table.test_mean == pytest.approx([0.45, 0.55, 0.6]) and table.skipped == (0, 1)
    assert feats.load_tables([a, b], limit=2).indices == [0, 2]
    c = _table(tmp_path / "c.csv", [(0, json.dumps({"w": 9}), 0.5)])
    with pytest.raises(SystemExit, match="disagree on architecture 0"):
        feats.load_tables([a, c])


def _rows() -> list[dict]:
    rng = np.random.default_rng(0)
    truth = rng.normal(size=12)
    rows = []
    for seed in (0, 1):
        for i in range(12):
            rows.append(
                {
                    "ground": "g", "supernet_seed": seed, "index": i,
                    "arch": json.dumps({"width": [0.5, 1.0][i % 2]}),
                    "supernet_accuracy": float(truth[i] + rng.normal()),
                    "supernet_loss": 1.0 - i / 12,
                    "params": float(i + 1), "flops": float(2 * i), "width": [0.5, 1.0][i % 2],
                    "width_label": "width",
                    "predicted_cost": float(i), "synflow": None if i == 3 else float(i),
                    "nwot": float(-truth[i]), "test_seed0": truth[i], "test_seed1": truth[i] + 0.1,
                    "test_mean": truth[i] + 0.05, "val_mean": truth[i], "supernet_config": "{}",
                }
            )  # fmt: skip
    return rows


def test_depth_counts_the_layers_whose_op_is_not_the_given_one() -> None:
    arch = {"a": "skip", "b": "k3", "c": "k5", "width": 0.5}
    assert b2.depth(arch, "skip") == 2 and b2.depth(json.dumps(arch), "k3") == 2
    assert b2.depth(arch, "none") == 3  # the width is a number, not a layer


def test_depth_lines_set_each_rankings_preference_for_depth_beside_the_tables() -> None:
    """The supernet's accuracy grows with depth, the tables' accuracy falls with it: the
    supernet's column reads +1, the tables' close to -1 (tau-b: the tables break the
    depth's ties, which a ranking with the same ties does not)."""
    rows = _rows()
    for r in rows:
        i = r["index"]
        layers = {f"l{k}": ("k3" if k < i % 4 else "skip") for k in range(3)}
        r["arch"] = json.dumps({**layers, "width": r["width"]})
        r["supernet_accuracy"] = float(i % 4) + r["supernet_seed"] * 0.01
        r["test_mean"] = -float(i % 4) - i * 1e-3
    lines = b2.depth_lines(rows, "width", "skip", reps=30)
    head = next(line for line in lines if line.startswith("| cell"))
    assert head.split(" | ")[2:4] == ["tables ~ depth", "acc ~ depth"]
    row = next(line for line in lines if line.startswith("| all |"))
    cells = row.strip("| ").split(" | ")
    assert float(cells[2].split()[0]) < -0.85 and cells[3].startswith("+1.00")
    assert any(line.startswith("| width=0.5 |") for line in lines)
    for r in rows:
        r["arch"] = json.dumps({"l0": "k3", "width": r["width"]})
    with pytest.raises(SystemExit, match="--depth-op 'skip': every architecture has the same"):
        b2.depth_lines(rows, "width", "skip", reps=30)


@pytest.mark.parametrize("suffix", [".jsonl", ".csv"])
def test_feature_rows_round_trip(tmp_path: Path, suffix: str) -> None:
    rows = _rows()
    path = tmp_path / f"rows{suffix}"
    feats.write_rows(path, rows)
    back = feats.read_rows(path)
    assert len(back) == len(rows) and back[3]["synflow"] is None
    for got, want in zip(back, rows, strict=True):
        assert set(got) == set(want)
        for k, v in want.items():
            assert got[k] == (pytest.approx(v) if isinstance(v, float) else v), k


def test_analyse_reads_every_ranker_from_the_rows() -> None:
    rows = _rows()
    result = b2.analyse(rows, "width", reps=50)
    found = result["cells"]
    assert result["seeds"] == [0, 1] and result["archs"] == 12
    assert list(found) == [
        "all",
        "cost Q1",
        "cost Q2",
        "cost Q3",
        "cost Q4",
        "width=0.5",
        "width=1.0",
    ]
    assert set(found["all"].taus) == B2_COLUMNS
    assert found["all"].taus["NWOT"].point == -1.0 and found["all"].ceiling.point == 1.0
    assert math.isnan(found["width=0.5"].taus["width"].point)  # constant inside its own cell
    # synflow failed on architecture 3: ranked last, below architecture 0's score 0.
    synflow = b2.ranker_scores(rows)[0]["synflow"]
    assert synflow.shape == (2, 12) and (synflow[:, 3] < 0).all() and synflow[0, 0] == 0
    rows[5]["index"] = 99  # seed 1 scored another architecture
    with pytest.raises(SystemExit, match="different architectures"):
        b2.analyse(rows, "width", reps=10)


def test_the_ranker_column_is_the_suite_prior_over_each_supernets_candidates() -> None:
    """The ranker's column (``FineTuning.rank_by="ranker"`` before it has labels):
    ``SUITE_PRIOR``'s weights over accuracy, log parameters and the width, standardised
    over the architectures one supernet scored; without a numeric width, the other two."""
    rows = _rows()
    scores = b2.ranker_scores(rows)[0]["ranker"]
    assert scores.shape == (2, 12)
    w = [SUITE_PRIOR[k] for k in ("supernet_accuracy", "log_params", "width")]
    for s in (0, 1):
        mine = [r for r in rows if r["supernet_seed"] == s]
        x = np.array([[r["supernet_accuracy"], np.log(r["params"]), r["width"]] for r in mine])
        want = (x - x.mean(0)) / x.std(0) @ w
        assert list(np.argsort(-scores[s])) == list(np.argsort(-want))
        assert not np.allclose(scores[s], scores[1 - s])  # each supernet its own accuracy
    for r in rows:
        r["width"] = None
    bare = b2.ranker_scores(rows)[0]["ranker"]
    x = np.array([[r["supernet_accuracy"], np.log(r["params"])] for r in rows[:12]])
    want = (x - x.mean(0)) / x.std(0) @ w[:2]
    assert list(np.argsort(-bare[0])) == list(np.argsort(-want))


def test_from_scores_prints_the_cells_and_the_target(tmp_path: Path, capsys) -> None:
    path = tmp_path / "rows.jsonl"
    feats.write_rows(path, _rows())
    out = tmp_path / "b2.json"
    assert b2.main(["--from-scores", str(path), "--bootstrap", "50", "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "| all | 12 |" in text and "rank sum − best free" in text and "target (" in text
    assert "oracle − best free" in text and "headroom (the oracle above" in text
    report = json.loads(out.read_text())
    assert report["cells"]["all"]["best_free"] in ("params", "FLOPs", "width", "synflow", "NWOT")
    assert report["retrain_tau"] == [1.0] and report["width_label"] == "width"
    assert report["cells"]["all"]["oracle"][0] == pytest.approx(1.0)  # the tables agree
    best = report["cells"]["all"]["best_free"]
    assert report["cells"]["all"]["headroom"][0] == pytest.approx(
        1.0 - report["cells"]["all"]["taus"][best][0]
    )
    assert "| width=0.5 | 6 |" in text and "tau(synflow, params) +0.91" in text
    # synflow = params but for architecture 3 (failed, ranked last): 3 of 66 pairs reversed.
    assert report["proxy_vs_params"]["synflow"] == pytest.approx(60 / 66)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--supernet", '{"epochs": 3}', "--epochs", "4"], "--epochs 4 contradicts --supernet's"),
        (["--supernet", "[1]"], "--supernet must be a JSON object"),
        (["--bn-batches", "0", "10"], "--bn-batches: one number"),
        (["--bootstrap", "0"], "--bootstrap must be >= 1, got 0"),
        (["--proxy-batch", "1"], "--proxy-batch must be >= 2"),
        (["--width-label", "depth", "--no-supernet"], "'depth' is not a choice of space"),
        (["--no-supernet", "--from-json", "x.json"], "--from-json and --no-supernet exclude"),
    ],
)
def test_a_bad_option_is_one_error_before_anything_runs(argv, message, capsys) -> None:
    with pytest.raises(SystemExit) as caught:
        b2.main(argv)
    assert caught.value.code == 2 and message in capsys.readouterr().err


def test_uniform_sampling_keeps_equal_compute_and_one_sampler_per_run() -> None:
    study = load_study_file(ROOT / "studies/mnist1d_front.py")
    p = b2._parser(study)
    m = max(len(c.values) for c in study.space.path_choices)
    args = p.parse_args(["--samplers", "uniform", "--epochs", "2", "--lr", "0.01"])
    assert b2._overrides(args, p, study) == {"epochs": 2 * m, "lr": 0.01, "sampler": "uniform"}
    args = p.parse_args(["--split", "none"])
    assert b2._overrides(args, p, study) == {"split": None, "split_from": 0.0}
    with pytest.raises(SystemExit):
        b2._overrides(p.parse_args(["--samplers", "fair", "uniform"]), p, study)


def test_an_earlier_b2_json_gives_its_fair_supernets_scores(tmp_path: Path) -> None:
    """The earlier B2's ``--json`` (fair against uniform, scores per BN size, cross-entropy
    stored negated) still feeds the tables: ``--from-json``."""
    old = {
        "results": {
            "fair": [
                {"seed": 1, "scores": {"0": [0.1, 0.2], "10": [0.3, 0.4]},
                 "loss_scores": {"0": [-2.0, -1.0], "10": [-1.5, -0.5]}},
            ],
            "uniform": [{"seed": 1, "scores": {"10": [0.9, 0.9]}}],
        }
    }  # fmt: skip
    path = tmp_path / "old.json"
    path.write_text(json.dumps(old))
    scores, line = feats.rows_from_old_json(path, bn_batches=10)
    assert scores == {1: ([0.3, 0.4], [1.5, 0.5])} and "fair supernets' scores at 10" in line
    assert feats.rows_from_old_json(path, bn_batches=50)[0] == {1: ([0.1, 0.2], [2.0, 1.0])}


def test_a_space_the_cost_model_cannot_predict_gets_flops_and_flops_quartiles() -> None:
    """GPT-2's supernet is one module: the cost model's tracer finds no op in it, so there
    is no predicted cost; FLOPs are counted on the whole networks and the cost quartiles
    are FLOPs quartiles, and the report says so."""
    from types import SimpleNamespace

    from nasflow.search_spaces.gpt2 import GPT2Space
    from nasflow.train import TrainConfig

    space = GPT2Space(vocab_size=11, block_size=8, n_layer=(1, 2), n_embd=(8, 16), n_head=(2,))
    study = SimpleNamespace(space=space, stack=None, train=TrainConfig(batch_size=4))
    archs = [
        Arch({"n_layer": n, "n_embd": e, "n_head": 2, "mlp_ratio": 2})
        for n, e in ((1, 8), (2, 16))
    ]
    flops, cost, source = feats.cost_features(
        study, archs, torch.zeros(4, 8, dtype=torch.long), 10, True
    )
    assert cost == [None, None] and 0 < flops[0] < flops[1] and "no predicted cost" in source
    rows = _rows()
    for r in rows:
        r["predicted_cost"] = None
        r["flops"] = float(11 - r["index"])  # the FLOPs order the cells now
    result = b2.analyse(rows, None, reps=10)
    assert "training FLOPs" in result["cost_basis"]
    assert result["cells"]["cost Q1"].n == 3 and list(result["cells"]) == [
        "all",
        *(f"cost Q{q}" for q in range(1, 5)),
    ]


def test_late_checkpoint_averaging_is_the_mean_of_the_last_epochs_parameters(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from nasflow.train._checkpoint import save_checkpoint

    net = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.BatchNorm1d(2))
    for epoch, value in ((1, 0.0), (2, 1.0), (3, 2.0), (4, 6.0)):
        state = {k: torch.full_like(v, value) if v.is_floating_point() else v
                 for k, v in net.state_dict().items()}  # fmt: skip
        save_checkpoint(tmp_path / f"epoch-{epoch}.pt", {"model": state})
    # A mid-epoch file is not an epoch's end: it is left out.
    save_checkpoint(tmp_path / "epoch-4-batch-3.pt", {"model": net.state_dict()})
    final = {k: v.clone() for k, v in net.state_dict().items()}
    out = feats.averaged_supernet(net, tmp_path, last=3)
    assert torch.allclose(out[0].weight, torch.full((2, 2), 3.0))  # (1 + 2 + 6) / 3
    assert torch.allclose(out[1].weight, torch.full((2,), 3.0))
    # Buffers are the newest epoch's, not averaged (screening re-estimates batch norm).
    assert torch.equal(out[1].running_mean, torch.full((2,), 6.0))
    assert torch.equal(net[1].running_mean, final["1.running_mean"])  # the input untouched
    with pytest.raises(SystemExit, match="--average-last 5: only 4 epoch checkpoints"):
        feats.averaged_supernet(net, tmp_path, last=5)
