"""The trust probe: architectures spread over the ranking, tau with an interval, a verdict."""

from __future__ import annotations

import pytest

from nasflow.pipeline import StudyRunner
from nasflow.pipeline._phases._trust import (
    bootstrap_tau,
    format_trust,
    spread_over_ranking,
    verdict,
)
from nasflow.record import TRUST_KEY, TrustRecord
from nasflow.search import StudyFileError, TrustProbe, load_study_file
from nasflow.space import Arch
from tests._study_template import write_study


def test_the_probe_takes_the_best_the_worst_and_even_ranks_between() -> None:
    scored = [(Arch({"x": i}), float(s)) for i, s in enumerate([5, 1, 9, 3, 7, 2, 8, 0, 6, 4])]
    picks = spread_over_ranking(scored, 4)
    assert [scored[i][1] for i in picks] == [9.0, 6.0, 3.0, 0.0]
    assert sorted(spread_over_ranking(scored[:3], 4)) == [0, 1, 2]  # fewer than k: all


def test_bootstrap_interval_brackets_the_tau_and_tightens_with_agreement() -> None:
    a = list(range(12))
    tau, low, high = bootstrap_tau(a, [v + 0.1 * (v % 2) for v in a], 500, 0)
    assert tau == pytest.approx(1.0) and 0.9 < low <= high
    noisy = [3, 1, 4, 1.5, 5, 9, 2, 6, 5.5, 3.5, 5.8, 9.7]
    tau2, low2, high2 = bootstrap_tau(a, noisy, 500, 0)
    assert low2 <= tau2 <= high2 and high2 - low2 > 0.2 and tau2 < tau


@pytest.mark.parametrize(
    "tau, low, word",
    [(0.8, 0.5, "trust it"), (0.45, 0.0, "screen more"), (0.1, -0.4, "weak")],
)
def test_verdicts(tau: float, low: float, word: str) -> None:
    assert verdict(tau, low).startswith(word)


@pytest.mark.parametrize("kwargs", [{"archs": 3}, {"epochs": 0}, {"bootstrap": True}])
def test_bad_probe_settings_are_refused(kwargs) -> None:
    with pytest.raises(ValueError, match=f"TrustProbe.{next(iter(kwargs))} must be an int"):
        TrustProbe(**kwargs)


@pytest.mark.slow
def test_a_study_with_a_probe_reports_it_once(tmp_path) -> None:
    extra = "from nasflow.search import TrustProbe\nstudy = study.replace(trust=TrustProbe(4, 1))"
    spec = load_study_file(write_study(tmp_path, n_trials=8, finetune=0, extra=extra))
    lines: list[str] = []
    runner = StudyRunner(spec, out_dir=tmp_path / "runs", progress=False, log=lines.append)
    result = runner.run(retrain=False)
    record = result.study.user_attrs[TRUST_KEY]
    assert len(record["archs"]) == 4 and len(record["short_accuracies"]) == 4
    assert record["supernet_scores"] == sorted(record["supernet_scores"], reverse=True)
    assert record["low"] <= record["tau"] <= record["high"] or record["tau"] != record["tau"]
    assert record["epochs"] == 1 and record["verdict"]
    assert sum("trust probe: 4/4 trained" in line for line in lines) == 1
    # A rerun that screens nothing new keeps the record and trains nothing.
    lines.clear()
    runner = StudyRunner(spec, out_dir=tmp_path / "runs", progress=False, log=lines.append)
    again = runner.run(retrain=False)
    assert again.study.user_attrs[TRUST_KEY] == record
    assert not any("trust probe:" in line for line in lines)


def test_trust_must_be_a_probe(tmp_path) -> None:
    spec = load_study_file(write_study(tmp_path, finetune=0))
    with pytest.raises(StudyFileError, match="trust must be a TrustProbe or None, got 8"):
        spec.replace(trust=8)


def test_the_winner_is_compared_with_the_median_random_architecture(tmp_path) -> None:
    from nasflow.pipeline._result._summary import baseline_line

    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    a.write_text("index,test_accuracy\n0,0.90\n1,0.95\n")
    b.write_text("index,test_accuracy\n0,0.97\n1,0.99\n")
    line = baseline_line(0.98, (a, b, tmp_path / "missing.csv"))
    assert "median of 0.9600 over 4 stand-alone trainings" in line
    assert "+2.00 points; better than 75% of them" in line
    assert "0.9800 (retrained) against" in line
    kept = baseline_line(0.98, (a, b), "kept: fine-tuned 4 epochs")
    assert "0.9800 (kept: fine-tuned 4 epochs) against" in kept
    assert "no readable table" in baseline_line(0.98, (tmp_path / "missing.csv",))


@pytest.mark.slow
def test_the_default_proxy_fine_tunes_inherited_weights_and_widens_by_the_margin(
    tmp_path,
) -> None:
    extra = "from nasflow.search import TrustProbe\nstudy = study.replace(trust=TrustProbe(4, 1))"
    spec = load_study_file(write_study(tmp_path, n_trials=8, finetune=0, extra=extra))
    runner = StudyRunner(spec, out_dir=tmp_path / "runs", progress=False, log=lambda _: None)
    record = runner.run(retrain=False).study.user_attrs[TRUST_KEY]
    assert record["proxy"] == "finetune" and record["margin"] == TrustProbe().margin > 0
    raw_low, raw_high = record["raw_interval"]
    if record["tau"] == record["tau"]:  # not NaN
        assert record["low"] == pytest.approx(max(-1.0, raw_low - record["margin"]))
        assert record["high"] == pytest.approx(min(1.0, raw_high + record["margin"]))


def test_the_fine_tuned_proxy_needs_the_supernet() -> None:
    from nasflow.pipeline._phases._trust import run_trust_probe

    with pytest.raises(ValueError, match="needs the trained supernet"):
        run_trust_probe(None, [], None, None, None, TrustProbe())  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"proxy": "magic"}, "TrustProbe.proxy"),
        ({"margin": -0.1}, "TrustProbe.margin"),
        ({"epochs": 5, "schedule_epochs": 4}, "TrustProbe.schedule_epochs"),
    ],
)
def test_bad_proxy_settings_are_refused(kwargs, match) -> None:
    with pytest.raises(ValueError, match=match):
        TrustProbe(**kwargs)


@pytest.mark.slow  # 8-15 CPU-s: runs a study with its trust probe (over 10 on a loaded machine)
def test_the_probe_spreads_over_random_architectures_not_the_screened_ones(tmp_path) -> None:
    extra = (
        "from nasflow.search import TrustProbe\n"
        "study = study.replace(trust=TrustProbe(4, 1, pool=12))"
    )
    spec = load_study_file(write_study(tmp_path, n_trials=6, finetune=0, extra=extra))
    runner = StudyRunner(spec, out_dir=tmp_path / "runs", progress=False, log=lambda _: None)
    result = runner.run(retrain=False)
    record = result.study.user_attrs[TRUST_KEY]
    screened = {t.user_attrs["arch"] for t in result.study.trials}
    import numpy as np

    rng = np.random.default_rng(spec.seed + 7)
    pool: dict = {}
    while len(pool) < 12:
        pool.setdefault(spec.space.sample(rng).to_json())
    assert set(record["archs"]) <= set(pool)  # drawn from the seeded random pool
    # The cost the summary states is the whole phase's (the pool's scoring included).
    assert record["phase_seconds"] == pytest.approx(result.seconds["trust"])
    assert record["phase_seconds"] >= record["seconds"]
    line = format_trust(TrustRecord.from_dict(record), result.seconds["total"])
    assert f"{record['phase_seconds']:.0f}s, " in line and "of the run" in line
    assert len(set(record["archs"]) - screened) > 0 or len(screened) >= 12
