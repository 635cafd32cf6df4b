"""The decision instrument (``benchmarks/paired.py``): its configurations' overrides, the
paired differences and their bootstrap intervals on constructed values (known answers),
the rule's verdicts, what a run's records say it trained, the report from constructed
rows, and one ``--quick`` run end to end (slow)."""

from __future__ import annotations

import csv
import importlib
import json
import math
from dataclasses import asdict
from pathlib import Path

import numpy as np
import optuna
import pytest

from nasflow.record import FineTuned
from nasflow.search import Anchors, load_study_file
from nasflow.space import Arch
from nasflow.train.stack import Stack
from tests._spaces import CellSpace, tiny_mnist1d
from tests.benchmarks.test_benchmark_scripts import _load

ROOT = Path(__file__).resolve().parents[2]
PROVING = "studies/mnist1d_front.py"

paired = _load("paired.py")
# The modules paired.py itself imports (one class of each error, summary and table).
overrides = importlib.import_module("_overrides")
stats = importlib.import_module("_paired_stats")
rules = importlib.import_module("_paired_rule")
trained = importlib.import_module("_trained")
trained = importlib.import_module("_trained")


@pytest.fixture(scope="module")
def spec():  # type: ignore[no-untyped-def]
    return load_study_file(ROOT / PROVING)


# ---------------------------------------------------------------------------- overrides
def test_a_configuration_is_a_name_and_a_json_object_of_overrides() -> None:
    c = overrides.parse_config('retrain2={"retrain_top": 2, "supernet.epochs": 6}')
    assert (c.name, dict(c.overrides), c.kind) == (
        "retrain2",
        {"retrain_top": 2, "supernet.epochs": 6},
        "study",
    )
    assert overrides.parse_config("shipped").overrides == {}
    assert overrides.parse_config("largest").kind == "largest"
    assert overrides.parse_config('ladder={"train.epochs": 3}').kind == "ladder"
    for bad, says in (
        ("x={epochs: 6}", "is not JSON"),
        ("x=[1, 2]", "must be a JSON object"),
        ("a b={}", "write NAME or NAME=JSON"),
        # A baseline's name runs the baseline: an override it never reads is refused.
        ('largest={"anchors.fallback": "largest"}', "'anchors.fallback' would change nothing"),
    ):
        with pytest.raises(overrides.OverrideError, match=says):
            overrides.parse_config(bad)


def test_overrides_set_nested_fields_by_dotted_path(spec) -> None:  # type: ignore[no-untyped-def]
    out = overrides.apply_overrides(
        spec,
        {
            "supernet.epochs": 6,
            "finetuning.finalists": 8,
            "finetuning.rungs": [1, 3],
            "retrain_top": 2,
            "anchors": {"n": 2},
            "stack": {"amp": "bf16"},
            "trust": None,
        },
    )
    assert out.supernet.epochs == 6 and out.supernet.lr == spec.supernet.lr
    assert out.finetuning.finalists == 8 and out.finetuning.rungs == (1, 3)
    # The rungs' share (1 of 3 epochs) of the 8 finalists, ceil(8 / 3): it follows both.
    assert out.finetuning.protected == 3
    assert out.retrain_top == 2 and out.trust is None
    assert out.anchors == Anchors(n=2) and out.stack == Stack(amp="bf16")
    assert spec.supernet.epochs == 12  # the study itself is unchanged (frozen)


@pytest.mark.parametrize(
    ("bad", "says"),
    [
        ({"supernet.epoch": 6}, "SupernetConfig has no field 'epoch' .*epochs"),
        ({"n_trial": 3}, "StudySpec has no field 'n_trial'; its fields: .*n_trials"),
        ({"anchors": {"m": 2}}, "Anchors has no field 'm'; its fields: fallback, n, sample"),
        ({"seed": 3}, "'seed' is fixed: .*--seeds"),
        ({"data": 1}, "'data' is fixed"),
        ({"supernet.epochs": 0}, r"'supernet.epochs': epochs must be an int >= 1, got 0"),
        ({"finetuning.rank_by": "loss"}, "FineTuning.rank_by must be one of"),
        ({"retrain_top": "2"}, "retrain_top must be an int"),
        ({"n_trials.x": 1}, "'n_trials' is 300, not a dataclass"),
        ({"n_trials": {"a": 1}}, "takes <class 'int'>, not a JSON object"),
        ({"trust": None, "trust.epochs": 2}, "'trust' is None in this study; set it whole"),
        ({"supernet..epochs": 1}, "a dotted path of field names"),
    ],
)
def test_a_bad_override_is_one_error_naming_it(spec, bad, says) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(overrides.OverrideError, match=says):
        overrides.apply_overrides(spec, bad)


# ---------------------------------------------------------------------------- statistics
def test_the_bootstrap_interval_of_a_mean_difference_has_known_answers() -> None:
    # Two seeds, differences 0 and 1: a resampled mean is 0, 0.5 or 1 (1/4, 1/2, 1/4).
    assert stats.interval([[0.0, 1.0]]) == (0.5, 0.0, 1.0)
    # Three seeds 0, 0, 1: the resampled mean is k/3, k ~ Binomial(3, 1/3); P(k = 0) =
    # 0.30 > 0.05 and P(k <= 1) = 0.74 < 0.95 <= P(k <= 2) = 0.96.
    mean, low, high = stats.interval([[0.0, 0.0, 1.0]])
    assert (mean, low, high) == pytest.approx((1 / 3, 0.0, 2 / 3))
    assert stats.interval([[0.2, 0.2, 0.2]]) == pytest.approx((0.2, 0.2, 0.2))
    single = stats.interval([[0.3]])
    assert single[0] == 0.3 and math.isnan(single[1]) and math.isnan(single[2])


def test_the_pooled_interval_resamples_within_each_ground() -> None:
    # Every ground's seeds agree: stratified, no resample moves the mean of the means.
    assert stats.interval([[0.0, 0.0, 0.0], [1.0, 1.0, 1.0]]) == pytest.approx((0.5, 0.5, 0.5))
    _, low, high = stats.interval([[0.0, 0.0, 0.0, 1.0, 1.0, 1.0]])  # unstratified
    assert low < 0.5 < high
    # Each ground weighs the same, whatever its number of seeds.
    assert stats.interval([[0.0, 0.0], [1.0, 1.0, 1.0, 1.0]])[0] == pytest.approx(0.5)


def test_summaries_count_the_pairs_and_pool_grounds_with_two_or_more() -> None:
    per, pooled = stats.summarise(
        {
            "g1": [(0.5, 0.6), (0.5, 0.5), (0.7, 0.6)],
            "g2": [(0.2, 0.4), (0.3, 0.4)],
            "g3": [(0.1, 0.9)],  # one pair: no interval, not pooled
        },
        n_resamples=2000,
    )
    g1 = per["g1"]
    assert (g1.n, g1.better, g1.equal, g1.worse) == (3, 1, 1, 1)
    assert g1.mean == pytest.approx(0.0, abs=1e-12)
    assert (g1.a_median, g1.b_median) == (0.5, 0.6)
    assert math.isnan(per["g3"].low) and per["g3"].mean == pytest.approx(0.8)
    assert pooled.n == 5 and pooled.mean == pytest.approx((0.0 + 0.15) / 2)


def _table(name: str = "g") -> object:
    return stats.GroundTable(name, np.array([0.5, 0.7, 0.9]), np.array([1.0, 2.0, 10.0]))


def test_a_ground_table_measures_share_and_hypervolume_on_its_own_scale() -> None:
    t = _table()
    assert t.ref == pytest.approx((0.5, 11.0))
    # (0.7 - 0.5) * (10 - 2) + (0.9 - 0.5) * (11 - 10)
    assert t.hv_total == pytest.approx(2.0)
    assert t.hypervolume([(0.7, 2.0), (0.9, 10.0)]) == pytest.approx(1.0)
    assert t.hypervolume([(0.9, 1.0)]) == pytest.approx(4.0 / 2.0)
    assert t.hypervolume([(0.4, 1.0), (0.95, 12.0)]) == 0.0  # outside the reference box
    assert t.hypervolume([]) == 0.0
    assert (t.share(0.7), t.share(0.71), t.share(0.95)) == (1 / 3, 2 / 3, 1.0)


def test_a_ground_table_reads_the_architectures_every_seed_holds(tmp_path: Path) -> None:
    cols = ["index", "arch", "test_accuracy", "train_seconds", "train_cpu_seconds"]
    rows = {
        "s0.csv": [[0, "a", 0.5, 1, 1], [1, "b", 0.7, 3, 2], [2, "c", 0.9, 5, 4]],
        "s1.csv": [[0, "a", 0.7, 3, 1], [1, "b", 0.9, 5, 2]],
    }
    for name, rs in rows.items():
        with (tmp_path / name).open("w", newline="") as f:
            w = csv.writer(f)
            w.writerow(cols)
            w.writerows(rs)
    with (tmp_path / "s1.csv").open("a") as f:
        f.write("2,c,0.8")  # a row being written: no cost yet
    t = stats.GroundTable.from_files("g", [tmp_path / "s0.csv", tmp_path / "s1.csv"])
    assert t.test.tolist() == pytest.approx([0.6, 0.8]) and t.cost.tolist() == [2.0, 4.0]
    assert (t.seeds, t.clock) == (2, "train_seconds")


def _run(config: str, kind: str, seed: int, test: float | None, models, cpu=100.0):  # type: ignore[no-untyped-def]
    return {
        "kind": "run",
        "config": config,
        "config_kind": kind,
        "overrides": {},
        "study": PROVING,
        "name": "g",
        "seed": seed,
        "kept_model": None if test is None else {"test": test},
        "trained": [{"test": t, "cost": c, "ready_cpu": r} for t, c, r in models],
        "run_cpu_s": cpu,
    }


def test_the_hypervolume_counts_models_ready_within_the_study_runs_budget() -> None:
    study = _run("s", "study", 0, 0.8, [(0.9, 1.0, 120.0), (0.7, 2.0, 50.0)], cpu=120.0)
    ladder = _run("l", "ladder", 0, 0.7, [(0.7, 2.0, 10.0), (0.9, 10.0, 200.0)], cpu=200.0)
    other = _run("s2", "study", 0, 0.8, [], cpu=60.0)
    assert stats.pair_budget(ladder, study, "study") == 120.0
    assert stats.pair_budget(other, study, "study") == 60.0  # a's, both being studies
    assert stats.pair_budget(ladder, ladder, "study") == math.inf
    assert stats.pair_budget(study, other, "none") == math.inf
    t = _table()
    v = stats.run_values(ladder, t, 120.0)
    assert v == {"share": 1 / 3, "test": 0.7, "hv": pytest.approx(0.9)}  # (0.7, 2) alone
    assert stats.run_values(ladder, t, math.inf)["hv"] == pytest.approx(1.0)
    assert stats.run_values(_run("x", "study", 0, None, []), t, 1.0)["share"] is None


# ---------------------------------------------------------------------------- the rule
def _summary(mean: float, low: float, high: float, a: float = 0.5, b: float = 0.5):  # type: ignore[no-untyped-def]
    return stats.Summary(6, mean, low, high, 3, 1, 2, a, b)


def test_rules_parse_presets_and_refuse_what_does_not_parse() -> None:
    assert rules.parse_rule("adopt").text == "pooled share low > 0 and each share high >= 0"
    r = rules.parse_rule("count(hv low > 0) >= 8 and pooled test b_median >= 0.9")
    assert [c.scope for c in r.clauses] == ["count", "pooled"]
    assert str(r.clauses[0].test) == "hv low > 0" and r.clauses[0].count == 8
    both = rules.parse_rule("above-baselines")
    assert [str(c.test) for c in both.clauses] == [
        "share low > 0", "share high < 0", "hv low > 0", "hv high < 0"
    ]  # fmt: skip
    for bad, says in (
        ("pooled speed low > 0", "unknown measure 'speed'"),
        ("pooled share median > 0", "unknown statistic 'median'"),
        ("each share low = 0", "unknown comparison '='"),
        ("pooled share low > zero", "'zero' is not a number"),
        ("count(share low > 0) >= eight", "N a whole number"),
        ("share low > 0", "does not parse"),
        ("", "an empty rule"),
    ):
        with pytest.raises(rules.RuleError, match=says):
            rules.parse_rule(bad)


def test_rule_verdicts_on_constructed_summaries() -> None:
    per = {
        "share": {
            "g1": _summary(0.05, 0.01, 0.09),
            "g2": _summary(0.02, -0.01, 0.05),
            "g3": _summary(0.03, float("nan"), float("nan")),
        }
    }
    pooled = {"share": _summary(0.03, 0.01, 0.05)}
    adopt = rules.parse_rule("adopt")
    ok, lines = adopt.verdict(per, pooled)
    # g3's interval is undefined: "each share high >= 0" does not hold there.
    assert not ok and lines[0].endswith("yes") and "fails on g3" in lines[1]
    ok, _ = adopt.verdict({"share": {k: per["share"][k] for k in ("g1", "g2")}}, pooled)
    assert ok
    count = rules.parse_rule("count(share low > 0) >= 2")
    assert not count.verdict(per, pooled)[0]  # only g1's interval is above 0
    assert "1 of 3" in count.verdict(per, pooled)[1][0]
    assert rules.parse_rule("count(share low > 0) >= 1").verdict(per, pooled)[0]
    assert not rules.parse_rule("pooled hv low > 0").verdict(per, {"hv": None})[0]


# ---------------------------------------------------------------------------- records
def _study_with_records() -> optuna.Study:
    """A finished run's records: one anchor (trial 0) that phase 3 reused, two fine-tuned
    ready models (one diverged), a retrained winner (trial 2); the fine-tuned weights of
    trial 1 kept."""
    study = optuna.create_study()
    for n in range(3):
        arch = f'{{"x": {n}}}'
        study.add_trial(optuna.trial.create_trial(value=0.0, user_attrs={"arch": arch}))
    study.set_user_attr(
        "nasflow:anchors",
        {"anchors": [{"index": 0, "trial": 0, "arch": '{"x": 0}', "val_accuracy": 0.6,
                      "test_accuracy": 0.61, "measured_train_cost": 3.0,
                      "ready_cpu_seconds": 5.0}]},
    )  # fmt: skip
    ready = FineTuned(1, '{"x": 1}', 0.5, [0.6, 0.7], [1.0, 2.0], 0.72, "ready", 40.0)
    diverged = FineTuned(2, '{"x": 2}', 0.4, [0.1], [1.0], None, "diverged", 30.0)
    study.set_user_attr(
        "nasflow:finetuned",
        {"candidates": [asdict(ready), asdict(diverged)], "rungs": [1, 2], "val_samples": 500},
    )
    for n, test in ((0, 0.61), (2, 0.66)):
        study.set_user_attr(
            f"nasflow:retrain:{n}",
            {"number": n, "val_accuracy": 0.65, "test_accuracy": test,
             "measured_train_cost": 4.0, "predicted_train_cost": 3.0, "params": 10},
        )  # fmt: skip
    study.set_user_attr("nasflow:kept", {"trial": 1, "weights": "fine-tuned", "source": "search"})
    return study


def test_a_runs_trained_and_kept_models_are_read_from_its_records() -> None:
    study = _study_with_records()
    models = trained.trained_models(study, recipe_epochs=12, run_cpu=35.0)
    got = [(m["kind"], m["trial"], m["test"], m["cost"], m["cost_measured"], m["ready_cpu"])
           for m in models]  # fmt: skip
    assert got == [
        ("anchor", 0, 0.61, 3.0, True, 5.0),
        # The estimate: mean measured epoch seconds x the recipe's 12 epochs; ready at
        # 40 CPU-s, past the run's 35 that the row records: counted at its end.
        ("fine-tuned", 1, 0.72, 18.0, False, 35.0),
        # Trial 0's retrain is the anchor's training: counted once.
        ("retrained", 2, 0.66, 4.0, True, 35.0),
    ]
    assert models[2]["arch"] == '{"x": 2}'
    kept = trained.kept_model(study)
    assert (kept["trial"], kept["weights"], kept["val"], kept["test"]) == (1, "fine-tuned",
                                                                           0.7, 0.72)  # fmt: skip
    study.set_user_attr("nasflow:kept", {"trial": 0, "weights": "retrained", "source": "anchor"})
    assert trained.kept_model(study)["test"] == 0.61
    study.set_user_attr("nasflow:kept", {"trial": 2, "weights": "retrained", "source": "search"})
    assert trained.kept_model(study)["test"] == 0.66


def test_the_param_ladder_is_the_largest_architecture_at_each_width() -> None:
    space = tiny_mnist1d()
    b7 = _load("largest.py")
    rungs = paired.ladder(space)
    assert [a["width"] for a in rungs] == [0.5, 0.75, 1.0]
    params = [b7.n_params(space, a) for a in rungs]
    assert params == sorted(params) and rungs[-1] == b7.largest(space)[0]
    for arch in rungs:  # no single change at the same width adds parameters
        for c in space.choices:
            for v in c.values if c.label != "width" else ():
                more = Arch({**dict(arch), c.label: v})
                assert b7.n_params(space, more) <= b7.n_params(space, arch)
    with pytest.raises(ValueError, match="has no width choice"):
        paired.ladder(CellSpace())


# ---------------------------------------------------------------------------- report
def _rows() -> list[dict]:
    """Two grounds x three seeds: b keeps a model 2 points better on g1, equal on g2."""
    rows = []
    for ground in ("g1", "g2"):
        for seed, base in enumerate((0.6, 0.69, 0.8)):
            for config, test in (("a", base), ("b", base + (0.02 if ground == "g1" else 0))):
                r = _run(config, "study", seed, test, [(test, 2.0, 10.0)])
                rows.append({**r, "name": ground})
    return rows


def test_the_report_pairs_runs_and_states_the_rules_verdict() -> None:
    tables = {g: _table(g) for g in ("g1", "g2")}
    rows = [*_rows(), {**_rows()[0], "seed": 9}]  # a run without its partner
    out = paired.report(rows, "a", "b", tables, rules.parse_rule("adopt"), n_resamples=2000)
    lines = out.splitlines()
    assert "6 pairs on 2 grounds (1 ground-seeds with one side only)" in lines[0]
    g1 = next(x for x in lines if x.startswith("| g1 "))
    assert "| 3 | 3 |" in g1  # 3 table architectures, 3 pairs
    assert "+2.00 [+2.00, +2.00] | 3/0/0" in g1  # test difference, in points
    g2 = next(x for x in lines if x.startswith("| g2 "))
    assert "+0.00 [+0.00, +0.00] | 0/3/0" in g2
    pooled = next(x for x in lines if x.startswith("| pooled"))
    assert "+1.00 [+1.00, +1.00]" in pooled
    # Shares of the table (0.5, 0.7, 0.9): a 1/3, 1/3, 2/3; b (0.62, 0.71, 0.82) 1/3, 2/3,
    # 2/3. Differences 0, 1/3, 0: the interval's ends are 0 and 2/9 (see above).
    assert "+11.1 [+0.0, +22.2] | 1/2/0" in g1
    assert "  g1: a 33% (no), b 67% (no)" in lines
    assert lines[-1] == "verdict: keep a (a)"  # pooled share low is not above 0
    late = rules.parse_rule("pooled test low > 0")
    out = paired.report(rows, "a", "b", tables, rules.parse_rule("adopt"), late_rule=late)
    assert "rule (given after the runs): pooled test low > 0" in out
    assert out.splitlines()[-1] == "verdict: adopt b (b)"
    with pytest.raises(ValueError, match="no ground and seed holds runs of both"):
        paired.report(rows, "a", "c", tables, late)


def test_a_runs_proposals_are_read_from_its_screening_line_and_reported() -> None:
    old = "screening: 296 distinct candidates scored by this process, 300 distinct in the "
    rows = []
    for seed, (mutated, random) in enumerate(((200, 10), (220, 0), (150, 30))):
        for config, line in (
            ("a", f"{old}study; 250 drawn at random after the sampler proposed scored "
                  "architectures (asked up to 4 times) (681 re-asks skipped: ...)"),
            ("b", f"{old}study; the sampler proposed scored architectures (asked up to 4 "
                  f"times) {mutated + random} times: {mutated} mutated from them (one or two "
                  f"choices changed), {random} drawn at random in their place"),
        ):  # fmt: skip
            r = _run(config, "study", seed, 0.7, [(0.7, 2.0, 10.0)])
            rows.append({**r, "name": "g1", "summary": ["supernet epoch 1/2", line]})
    assert stats.proposals(rows[0]) == stats.Proposals(296, 0, 250)
    assert stats.proposals(rows[1]) == stats.Proposals(296, 200, 10)
    assert stats.proposals(rows[1]).sampler == 86
    assert stats.proposals({"summary": ["trained the largest"]}) is None
    out = paired.report(rows, "a", "b", {"g1": _table("g1")}, rules.parse_rule("adopt"))
    # b's medians: sampler (86, 76, 116)/296 -> 29%, mutated 200/296 -> 68%, random 10/296.
    assert "  g1: a 16% / 0% / 84%; b 29% / 68% / 3%" in out.splitlines()


def test_pairs_on_other_cost_tables_are_named_and_can_be_left_out() -> None:
    """A deterministic study screens identically only on one cost table: the report names
    the pairs whose runs used two (another device, or two measurements), and
    ``same_table`` leaves them out; a run that measured the table itself matches any
    table of its device."""
    line = "cost table (CPU {d} (cpu, 1 threads, fp32)): {how}; best of rounds, thread CPU time"
    reused = "reused from the shared table sqlite:////x/cost.db (measured {t})"
    tables = {
        ("a", 0): line.format(d="X", how=reused.format(t="T1")),
        ("b", 0): line.format(d="X", how=reused.format(t="T2")),  # measured again: crossed
        ("a", 1): line.format(d="X", how="measured by this study"),
        ("b", 1): line.format(d="X", how=reused.format(t="T1")),  # the same device: same
        ("a", 2): line.format(d="Y", how="measured by this study"),
        ("b", 2): line.format(d="X", how=reused.format(t="T1")),  # another device: crossed
    }
    assert trained.cost_table_of({"summary": [tables[("a", 0)]]}) == (
        "CPU X (cpu, 1 threads, fp32)",
        "T1",
    )
    assert trained.cost_table_of({"summary": [tables[("a", 1)]]}) == (
        "CPU X (cpu, 1 threads, fp32)",
        None,
    )
    assert trained.cost_table_of({"summary": ["trained the largest"]}) is None
    rows = [
        {**_run(c, "study", seed, 0.7 + 0.01 * (c == "b"), [(0.7, 2.0, 10.0)]),
         "name": "g1", "summary": [tables[(c, seed)]]}
        for seed in range(3) for c in ("a", "b")
    ]  # fmt: skip
    kw = {"n_resamples": 200}
    rule, table = rules.parse_rule("adopt"), {"g1": _table("g1")}
    out = paired.report(rows, "a", "b", table, rule, **kw)
    assert "independent runs of the seed): g1 seed 0, g1 seed 2" in out
    assert "| g1 | 3 | 3 |" in out
    kept = paired.report(rows, "a", "b", table, rule, same_table=True, **kw)
    assert "left out (--same-cost-table): g1 seed 0, g1 seed 2" in kept
    assert "| g1 | 3 | 1 |" in kept


def _write(path: Path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_from_json_reports_with_the_rule_fixed_in_the_files_header(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    header = {"kind": "header", "a": {"name": "a"}, "b": {"name": "b"},
              "rule": "pooled test low > 0", "hv_budget": "study"}  # fmt: skip
    rows = [{**r, "name": "mnist1d_front", "study": PROVING} for r in _rows() if r["name"] == "g1"]
    _write(tmp_path / "runs.jsonl", [header, *rows])
    assert paired.main(["--from-json", str(tmp_path / "runs.jsonl"), "--rule", "adopt"]) == 0
    out = capsys.readouterr().out
    assert "rule (fixed before the runs): pooled test low > 0" in out
    assert "rule (given after the runs): pooled share low > 0" in out
    assert "| mnist1d_front | " in out  # measured against the proving ground's table


def test_an_alias_reads_an_adopted_configurations_runs_as_shipped(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    rows = [{**r, "name": "mnist1d_front", "study": PROVING} for r in _rows() if r["name"] == "g1"]
    header = {"kind": "header", "a": {"name": "a"}, "b": {"name": "b"},
              "rule": "pooled test low > 0", "hv_budget": "study"}  # fmt: skip
    # The b runs were recorded as "adopted"; an older file holds other "b" runs of the same
    # seeds, which come second and must not count.
    adopted = [{**r, "config": "adopted"} for r in rows if r["config"] == "b"]
    older = [
        {**r, "kept_model": {**r["kept_model"], "test": 0.0}} for r in rows if r["config"] == "b"
    ]
    _write(tmp_path / "a.jsonl", [header, *[r for r in rows if r["config"] == "a"]])
    _write(tmp_path / "new.jsonl", adopted)
    _write(tmp_path / "old.jsonl", older)
    files = [str(tmp_path / f) for f in ("a.jsonl", "new.jsonl", "old.jsonl")]
    assert paired.main(["--from-json", *files, "--alias", "adopted=b"]) == 0
    out = capsys.readouterr().out
    assert "+2.00 [+2.00, +2.00] | 3/0/0" in out  # the adopted runs' test, not the older 0.0
    assert paired.aliased([{"config": "x"}], ["x=y"]) == [{"config": "y"}]
    for bad, says in (("x", "OLD=NEW"), ("x=x", "two different"), ("z=y", r"\['z'\] no run")):
        with pytest.raises(ValueError, match=says):
            paired.aliased([{"config": "x"}], [bad])
    with pytest.raises(SystemExit):
        paired.main(["--from-json", *files, "--alias", "nothing=b"])
    assert "--alias names configurations ['nothing']" in capsys.readouterr().err


def test_a_run_is_refused_before_anything_trains(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "runs.jsonl"
    base = ["--grounds", PROVING, "--json", str(out)]
    for args, says in (
        (["--a", "x", "--b", "x"], "both named 'x'"),
        (["--a", "x", "--b", 'y={"supernet.epoch": 2}'], "has no field 'epoch'"),
        (["--a", "x", "--b", "y", "--rule", "pooled share > 0"], "does not parse"),
        (["--a", "x", "--b", "y", "--seeds", "0", "0"], "distinct search seeds"),
    ):
        with pytest.raises(SystemExit) as e:
            paired.main(args + base)
        assert e.value.code == 2 and says in capsys.readouterr().err
        assert not out.exists()  # nothing written
    _write(out, [{"kind": "header", "a": {"name": "x", "kind": "study", "overrides": {}}}])
    with pytest.raises(SystemExit):
        paired.main(["--a", "x", "--b", "y", *base])
    assert "holds another comparison: its b is None" in capsys.readouterr().err


@pytest.mark.slow
def test_quick_runs_a_study_and_the_ladder_paired_and_resumes(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "runs.jsonl"
    assert paired.main(["--quick", "--seeds", "0", "--json", str(out)]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    header, runs = rows[0], rows[1:]
    assert header["kind"] == "header" and header["rule"] == rules.PRESETS["adopt"]
    assert header["set"]["n_trials"] == 8 and "--quick" in header["command"]
    assert [(r["config"], r["config_kind"]) for r in runs] == [
        ("shipped", "study"),
        ("ladder", "ladder"),
    ]
    for r in runs:
        assert 0.0 <= r["kept_model"]["test"] <= 1.0 and r["run_cpu_s"] > 0
        assert all(0 <= m["ready_cpu"] <= r["run_cpu_s"] and m["cost"] > 0 for m in r["trained"])
    study, ladder = runs
    assert {m["kind"] for m in study["trained"]} >= {"anchor", "fine-tuned"}
    assert [json.loads(m["arch"])["width"] for m in ladder["trained"]] == [0.25, 0.5, 0.75, 1.0]
    assert ladder["kept_model"]["arch"] == ladder["trained"][-1]["arch"]  # the largest (B7)
    report = capsys.readouterr().out
    assert "| mnist1d_front | " in report and "verdict: keep a (shipped)" in report
    # Resumed: nothing runs twice; without --skip-done the file is refused.
    assert paired.main(["--quick", "--seeds", "0", "--json", str(out), "--skip-done"]) == 0
    assert len(out.read_text().splitlines()) == 3
    with pytest.raises(SystemExit):
        paired.main(["--quick", "--seeds", "0", "--json", str(out)])
    assert "pass --skip-done to resume it" in capsys.readouterr().err
    # One side only (the ladder), reported with the other file's shipped run.
    only = tmp_path / "ladder.jsonl"
    argv = ["--quick", "--a", "ladder", "--b", "shipped", "--only", "a", "--seeds", "0"]
    assert paired.main([*argv, "--json", str(only)]) == 0
    rows = [json.loads(line) for line in only.read_text().splitlines()]
    assert rows[0]["only"] == "a" and [r["config"] for r in rows[1:]] == ["ladder"]
    assert "holds a's runs only (shipped's are in another file)" in capsys.readouterr().out
    assert paired.main(["--from-json", str(only), str(out)]) == 0
    report = capsys.readouterr().out
    assert report.startswith("b = shipped (study;") and "1 pairs on 1 grounds" in report


def test_the_report_counts_kept_models_from_the_search_and_from_anchors() -> None:
    rows = _rows()
    sources = iter(["search", "anchor", "search", "anchor", "anchor", "anchor"] * 2)
    for r in rows:  # g1 and g2: seeds 0-2, a then b
        r["kept_record"] = {"trial": 1, "weights": "retrained", "source": next(sources)}
    rows[0]["kept_record"] = None  # an older row without the record
    out = paired.report(rows, "a", "b", {g: _table(g) for g in ("g1", "g2")},
                        rules.parse_rule("adopt"), n_resamples=200)  # fmt: skip
    lines = out.splitlines()
    at = lines.index("kept models chosen by the search / kept from a zero-cost anchor:")
    assert lines[at + 1] == "  g1: a 1 / 1 (1 not recorded); b 0 / 3"
    assert lines[at + 2] == "  g2: a 2 / 1; b 0 / 3"
    # Baselines record no source: no line.
    for r in rows:
        r["kept_record"] = None
    assert "kept models chosen" not in paired.report(
        rows, "a", "b", {g: _table(g) for g in ("g1", "g2")}, rules.parse_rule("adopt"),
        n_resamples=200,
    )  # fmt: skip
