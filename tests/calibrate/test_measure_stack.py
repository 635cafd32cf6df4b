"""The measurement harness, ``stack="auto"`` and the trainer-overhead comparison.

These check what is measured and how it is reported, never how fast anything is: speed
is only ever compared within one interleaved run (benchmarks/stack.py).
"""

from __future__ import annotations

import json
import math
import re
import time
from pathlib import Path

import optuna
import pytest
import torch
from torch import nn
from torch.utils.data import TensorDataset

from nasflow.calibrate._auto import auto_stack, choose_final, decide_layer
from nasflow.calibrate._harness import BASELINE, REPLICA
from nasflow.calibrate._interleave import RunConfig, run_interleaved
from nasflow.calibrate._overhead import HAND, trainer_overhead
from nasflow.cli import main
from nasflow.errors import ConfigError
from nasflow.report import stack_data
from nasflow.train import Batches
from nasflow.train.stack import LAYERS, Stack
from tests._study_template import write_study


@pytest.mark.slow
def test_quick_harness_measures_every_layer_alone_and_cumulatively(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "bench.json"
    figure = tmp_path / "waterfall.html"
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # two threads on a busy 2-core machine make tiny convs crawl
    try:
        rc = main(["measure-stack", "--quick", "--save-json", str(out), "--figure", str(figure)])
    finally:
        torch.set_num_threads(threads)
    assert rc == 0
    table = capsys.readouterr().out
    result = json.loads(out.read_text())
    names = [v["name"] for v in result["variants"]]
    cumulative = ["+".join(LAYERS[:i]) for i in range(2, len(LAYERS) + 1)]
    assert names == [BASELINE, REPLICA, *LAYERS, *cumulative]
    rows = {v["name"]: v for v in result["variants"]}
    assert rows[BASELINE]["multiplier"] == 1.0  # paired with itself
    for name in names:
        row = rows[name]
        assert row["error"] is None, (name, row["error"])
        assert row["multiplier"] > 0 and row["multiplier_q25"] <= row["multiplier_q75"]
        assert row["samples_per_s"] > 0 and row["peak_memory_bytes"] > 0
        assert 0 <= row["final_accuracy"] <= 1
        assert row["quality_flag"] == (row["accuracy_delta"] < -0.005 - 1e-9)
    # Layers behave as the layers they are: compile compiles, checkpointing saves memory,
    # accumulation takes half the optimizer steps, and off means off.
    assert rows["compile"]["compilations"] >= 1 and rows[BASELINE]["compilations"] == 0
    assert rows["checkpointing"]["activation_bytes"] < rows[BASELINE]["activation_bytes"]
    assert rows["accumulation"]["optimizer_steps"] * 2 == rows[BASELINE]["optimizer_steps"]
    assert rows[BASELINE]["layers"] == [] and rows[cumulative[-1]]["layers"] == list(LAYERS)
    record = result["waterfall"]
    assert [r["name"] for r in record["layers"]] == list(LAYERS)
    assert record["product"] == pytest.approx(math.prod(r["alone"] for r in record["layers"]))
    assert record["end_to_end"] == rows[cumulative[-1]]["multiplier"]
    assert record["layers"][-1]["cumulative"] == record["end_to_end"]
    assert "product of the layers alone" in table and "noise floor" in table
    # The host time of producing the batches is part of each timed chunk, round by round
    # (so its median per batch is at most the step's), and said.
    for name in names:
        assert 0 < rows[name]["data_seconds_per_batch"] <= rows[name]["batch_seconds"]
    assert "producing the batches" in table
    assert figure.read_text().count("<script") >= 1  # offline: plotly.js inlined


def test_measure_stack_refuses_unknown_layers(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["measure-stack", "--quick", "--layers", "amp,warp"]) == 2
    assert "warp" in capsys.readouterr().err


def test_measure_stack_on_a_study_files_space_and_data(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--study``: the candidate comes from the study's space, the batches from its data."""
    study = write_study(tmp_path, channels=4)
    arch = '{"s1/l0":"k5_e2","s1/l1":"skip","s2/l0":"k3_e2","s2/l1":"skip","width":0.5}'
    out = tmp_path / "stack.json"
    options = ["--arch", arch, "--quick", "--layers", "amp", "--batch-size", "20"]
    rc = main(["measure-stack", "--study", str(study), *options, "--save-json", str(out)])
    captured = capsys.readouterr()
    assert rc == 0, captured.err
    assert re.search(r"producing the batches .*: \d+\.\d of the baseline's", captured.out)
    result = json.loads(out.read_text())
    assert result["candidate"]["space"] == "mnist1d"
    assert result["candidate"]["arch"] == json.loads(arch)
    rows = {v["name"]: v for v in result["variants"]}
    assert set(rows) == {BASELINE, REPLICA, "amp"} and rows["amp"]["error"] is None
    # The study's data is 400 training sequences of the template (--quick keeps 512 at
    # most): 20 batches of 20 in its one epoch, one optimizer step each.
    assert rows[BASELINE]["optimizer_steps"] == 20
    assert main(["measure-stack", "--study", str(tmp_path / "none.py"), "--quick"]) == 2
    err = capsys.readouterr().err
    assert "none.py" in err and "does not exist" in err
    # A ready study by name: its file (here a name that is none).
    assert main(["measure-stack", "--study", "no_such_study", "--quick"]) == 2
    assert "no_such_study" in capsys.readouterr().err


def _tiny() -> nn.Module:
    return nn.Sequential(
        nn.Conv1d(1, 4, 3, padding=1), nn.ReLU(), nn.Flatten(), nn.Linear(160, 10)
    )


def _data(n: int) -> Batches:
    g = torch.Generator().manual_seed(0)
    x = torch.randn(n, 1, 40, generator=g)
    y = (x.mean(dim=(1, 2)) > 0).long()  # a learnable label
    return Batches(TensorDataset(x, y), 16, shuffle=True, seed=0, drop_last=True)


def test_auto_stack_record_fits_the_study_schema_and_is_never_slower() -> None:
    train, val = _data(256), _data(64)
    result = auto_stack(_tiny, train, val, candidates=("amp", "denormal"), calibration_batches=12)
    rec = result.record
    assert {c["name"] for c in rec["candidates"]} == {"amp", "denormal"}
    for c in rec["candidates"]:
        assert c["reason"] and isinstance(c["kept"], bool)
        if c["kept"]:
            assert c["alone"] >= 1.05
    assert result.stack.enabled == tuple(rec["chosen"])
    if rec["chosen"]:
        assert rec["chosen_multiplier"] >= 1.05  # measured against the same run's baseline
    else:
        assert result.stack == Stack() and rec["chosen_multiplier"] is None
    assert Stack.from_dict(rec["stack"]) == result.stack
    # The waterfall: every candidate alone and stacked cumulatively, in the first phase.
    assert rec["schema"] == 2 and [x["name"] for x in rec["layers"]] == ["amp", "denormal"]
    amp, denormal = rec["layers"]
    assert amp["cumulative"] == amp["alone"] > 0  # the first layer stacked is itself
    assert rec["end_to_end"] == denormal["cumulative"] > 0  # amp+denormal, measured
    assert rec["product"] == pytest.approx(amp["alone"] * denormal["alone"])
    assert rec["interaction"] == pytest.approx(rec["end_to_end"] / rec["product"])
    assert [x["kept"] for x in rec["layers"]] == [n in rec["chosen"] for n in ("amp", "denormal")]
    assert rec["calibration"]["variants"] >= 5  # baseline, replica, 2 alone, 1 cumulative
    study = optuna.create_study()
    study.set_user_attr("nasflow:stack", json.loads(json.dumps(rec)))  # JSON-able
    data = stack_data(study)  # the report reads it
    assert data.measured and [x.name for x in data.layers] == ["amp", "denormal"]
    assert data.chosen == rec["chosen"] and data.interaction == pytest.approx(rec["interaction"])


def test_a_passed_deadline_stops_between_rounds_and_measures_nothing() -> None:
    train, val = _data(256), _data(64)
    variants = {BASELINE: Stack(), REPLICA: Stack(), "amp": Stack(amp="bf16")}
    cfg = RunConfig(chunk=2, max_batches=12, evals_per_epoch=1)
    records = run_interleaved(
        variants, _tiny, train, val, cfg, reseeded=(REPLICA,), deadline=time.perf_counter()
    )
    for rec in records.values():  # one round (the warm-up), then every variant evaluated
        assert rec.batches == 2 and rec.chunk_seconds == {}
        assert [e["batches"] for e in rec.evals] == [2]
    result = auto_stack(
        _tiny, train, val, candidates=("amp", "denormal"), calibration_batches=12, deadline=0.0
    )
    rec = result.record
    assert result.stack == Stack() and rec["layers"] == [] and rec["chosen_multiplier"] is None
    assert "stopped at the time budget after 4 of 12 batches" in rec["skipped"]  # chunk 4


def _row(mult: float | None, acc: float = 0.0, warm: float = 0.1, batch: float = 0.01) -> dict:
    return {
        "multiplier": mult,
        "multiplier_q25": mult,
        "multiplier_q75": mult,
        "accuracy_delta": acc,
        "warmup_seconds": warm,
        "batch_seconds": batch,
        "error": None,
    }


def test_auto_keeps_only_layers_that_gain_without_losing_accuracy() -> None:
    base = _row(1.0)
    assert decide_layer(_row(1.2), "amp", base, None, 1.05, 0.005)["kept"]
    assert not decide_layer(_row(0.8), "amp", base, None, 1.05, 0.005)["kept"]
    lossy = decide_layer(_row(1.3, acc=-0.02), "amp", base, None, 1.05, 0.005)
    assert not lossy["kept"] and "accuracy" in lossy["reason"]
    # A 60 s compilation for a 1.2x gain on 100 batches of 10 ms never pays back.
    slow_start = _row(1.2, warm=60.0, batch=0.01 / 1.2)
    assert decide_layer(slow_start, "compile", base, None, 1.05, 0.005)["kept"]
    assert not decide_layer(slow_start, "compile", base, 100, 1.05, 0.005)["kept"]
    failed = {**_row(None), "error": "RuntimeError: boom"}
    assert "boom" in decide_layer(failed, "compile", base, None, 1.05, 0.005)["reason"]


def test_auto_falls_back_to_the_baseline_when_the_combination_is_slower() -> None:
    rows = {BASELINE: _row(1.0), REPLICA: _row(1.3), "amp+compile": _row(0.9)}
    assert choose_final(rows, 1.05, None) == BASELINE  # the replica is never a choice
    rows["amp"] = _row(1.1)
    assert choose_final(rows, 1.05, None) == "amp"
    rows["amp+compile"] = _row(1.4)
    assert choose_final(rows, 1.05, None) == "amp+compile"


def test_trainer_overhead_compares_three_trainers_on_the_same_batches() -> None:
    result = trainer_overhead(_tiny, _data(128), epochs=1, chunk=2)
    rows = {r["name"]: r for r in result["rows"]}
    assert set(rows) == {HAND, "nasflow StackStep", "EpochTrainer"}
    assert rows[HAND]["ratio"] == 1.0 and rows[HAND]["rounds"] == 3
    assert all(r["ms_per_batch"] > 0 and r["ratio"] > 0 for r in rows.values())


def test_trainer_overhead_with_nothing_to_time_names_the_batches() -> None:
    with pytest.raises(ConfigError, match=r"1 epoch\(s\) of 2 batches give 2"):
        trainer_overhead(_tiny, _data(32), epochs=1, chunk=2)


def test_the_harness_with_nothing_to_time_names_the_batches() -> None:
    from nasflow.calibrate._harness import measure_stack

    cfg = RunConfig(epochs=1, chunk=2)
    with pytest.raises(ConfigError, match=r"1 epoch\(s\) of 4 batches give 4: use a smaller"):
        measure_stack(_tiny, _data(64), _data(32), cfg, layers=("amp",))


def _slowed(monkeypatch: pytest.MonkeyPatch, layer: str, seconds: float) -> None:
    """Every variant holding ``layer`` sleeps ``seconds`` per chunk: hopelessly slow."""
    from nasflow.calibrate import _interleave

    run_chunk = _interleave._Runner.run_chunk

    def slow(self, n, meter, last):  # type: ignore[no-untyped-def]
        if layer in self.record.name.split("+"):
            time.sleep(seconds)
        return run_chunk(self, n, meter, last)

    monkeypatch.setattr(_interleave._Runner, "run_chunk", slow)


def test_a_hopelessly_slow_variant_is_cut_after_two_timed_rounds(monkeypatch) -> None:
    """A variant whose first two timed rounds both ran below half the baseline's speed
    stops there, unevaluated, and its layer is dropped saying so; the others, the
    baseline's replica included, run to the end; without the cut every variant does."""
    train, val = _data(256), _data(64)
    _slowed(monkeypatch, "amp", 0.05)  # chunks of 2 tiny batches take ~1 ms: x0.02 or so
    kwargs = {"candidates": ("amp", "denormal"), "calibration_batches": 16}
    kwargs["cfg"] = RunConfig(chunk=2, evals_per_epoch=1)
    rec = auto_stack(_tiny, train, val, **kwargs).record  # type: ignore[arg-type]
    assert rec["calibration"]["cut"] == ["amp", "amp+denormal"]
    amp = next(c for c in rec["candidates"] if c["name"] == "amp")
    assert not amp["kept"] and amp["accuracy_delta"] is None
    assert re.fullmatch(r"cut after 2 timed rounds, all below x0\.50 \(x0\.\d\d\); needs x1\.05",
                        amp["reason"]), amp["reason"]  # fmt: skip
    full = auto_stack(_tiny, train, val, cut_below=None, **kwargs).record  # type: ignore[arg-type]
    assert full["calibration"]["cut"] == []
    assert rec["chosen"] == full["chosen"]  # the slow layer was never going to be kept
    records = run_interleaved(
        {BASELINE: Stack(), REPLICA: Stack(), "amp": Stack(amp="bf16"), "denormal": Stack()},
        _tiny, train, val, RunConfig(chunk=2, max_batches=16, evals_per_epoch=1),
        reseeded=(REPLICA,), cut=(BASELINE, 0.5, 2),
    )  # fmt: skip
    cut = records["amp"].cut
    assert (
        cut is not None and cut.after_round == 3 and sorted(records["amp"].chunk_seconds) == [2, 3]
    )
    assert records["amp"].batches == 8 and records["amp"].evals == []  # rounds 0-3, no eval
    for name in (BASELINE, REPLICA, "denormal"):
        assert records[name].cut is None and records[name].batches == 16, name
    bad = re.escape("cut_below must be in (0, 1) or None, got 1.5")
    with pytest.raises(ConfigError, match=bad):
        auto_stack(_tiny, train, val, cut_below=1.5, **kwargs)  # type: ignore[arg-type]


def test_a_variant_slow_in_one_round_only_is_not_cut() -> None:
    """The cut needs every one of the first two timed rounds below the bar: one stalled
    round (another process took the core) does not stop a variant."""
    from nasflow.calibrate._interleave import VariantRecord, _cut_slow

    def rec(name: str, seconds: dict[int, float]) -> VariantRecord:
        return VariantRecord(name, Stack(), dict(seconds), {r: 2 for r in seconds})

    records = {
        BASELINE: rec(BASELINE, {2: 0.01, 3: 0.01}),
        REPLICA: rec(REPLICA, {2: 0.05, 3: 0.05}),  # the noise floor: never cut
        "stalled": rec("stalled", {2: 0.05, 3: 0.01}),
        "slow": rec("slow", {2: 0.05, 3: 0.03}),
    }
    runners = dict.fromkeys(records)  # what _cut_slow removes from
    _cut_slow(runners, records, (BASELINE, 0.5, 2), (REPLICA,), 3)  # type: ignore[arg-type]
    assert sorted(runners) == sorted([BASELINE, REPLICA, "stalled"])
    assert records["slow"].cut is not None and records["stalled"].cut is None
