"""Phase 3's winners keep their weights: saved beside the study, reused by a re-run, and
exported as exactly the model whose test accuracy the run printed."""

from __future__ import annotations

import copy
import dataclasses
import json
import re
import shutil
from pathlib import Path

import pytest

import nasflow
from nasflow.cli import main
from nasflow.export import ExportInfo
from nasflow.pipeline import StudyRunner, read_winner, summary_table
from nasflow.train import Batches, evaluate
from tests.export.conftest import TinyRun

_PRINTED = re.compile(
    r"^winner: trial (\d+) retrained from scratch: retrained test accuracy (\d\.\d{4}), ",
    re.MULTILINE,
)


def _printed_winner(run: TinyRun) -> tuple[int, float]:
    """The winner's trial number and test accuracy as `nasflow search` printed them."""
    m = _PRINTED.search(run.printed)
    assert m is not None, run.printed
    return int(m.group(1)), float(m.group(2))


def _copy_run(run: TinyRun, tmp_path: Path) -> Path:
    """A private copy of the finished study's folder (database, supernet, winners)."""
    runs = tmp_path / "runs"
    shutil.copytree(run.runs / run.name, runs / run.name)
    return runs


def _files(folder: Path) -> dict[str, tuple[bytes, int]]:
    return {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in sorted(folder.iterdir())}


def test_the_exported_best_model_scores_the_printed_test_accuracy(tiny_run, exported) -> None:
    number, printed = _printed_winner(tiny_run)
    info = ExportInfo.read(exported)
    assert info.study["trial"] == number and info.kind == "retrained"
    model = nasflow.load_exported(exported)  # arch.json + model.safetensors only
    test = Batches(tiny_run.spec.data().test, 512, shuffle=False)
    accuracy, _ = evaluate(model, test)
    assert abs(accuracy - printed) <= 5e-5, (accuracy, printed)  # to the 4th decimal
    assert accuracy == info.metrics["test_accuracy"]  # and exactly the recorded number


def test_phase_3_saves_the_winner_weights_and_record(tiny_run) -> None:
    number, printed = _printed_winner(tiny_run)
    folder = tiny_run.runs / tiny_run.name / "winners" / f"trial-{number}"
    assert sorted(p.name for p in folder.iterdir()) == ["model.safetensors", "record.json"]
    record = read_winner(folder)  # checks the weights' SHA-256
    assert abs(record["test_accuracy"] - printed) <= 5e-5
    assert record["trial"] == number and record["seed"] == tiny_run.spec.seed
    assert record["recipe"] == dataclasses.asdict(tiny_run.spec.train)
    assert 0.0 <= record["val_accuracy"] <= 1.0 and record["measured_train_cost"] > 0
    assert f"weights: {folder / 'model.safetensors'}" in tiny_run.printed


def test_a_second_run_of_the_finished_study_does_not_retrain_the_winner(
    tiny_run, tmp_path
) -> None:
    number, printed = _printed_winner(tiny_run)
    runs = _copy_run(tiny_run, tmp_path)
    folder = runs / tiny_run.name / "winners" / f"trial-{number}"
    before = _files(folder)
    lines: list[str] = []
    runner = StudyRunner(tiny_run.spec, out_dir=runs, progress=False, log=lines.append)
    result = runner.run(retrain=True)
    (w,) = result.winners
    assert w.number == number and w.reused and w.weights == folder
    assert abs(w.test_accuracy - printed) <= 5e-5
    assert _files(folder) == before  # neither weights nor record were written again
    assert f"phase 3: trial {number} was retrained by an earlier run: {folder}" in lines
    assert "retrained from scratch (by an earlier run)" in summary_table(result, tiny_run.spec)
    stored = result.study.user_attrs[f"nasflow:retrain:{number}"]
    assert stored["test_accuracy"] == w.test_accuracy
    assert stored["weights"] == f"winners/trial-{number}/model.safetensors"


@pytest.mark.slow
def test_a_corrupt_or_stale_saved_winner_is_retrained(tiny_run, tmp_path) -> None:
    number, _ = _printed_winner(tiny_run)
    runs = _copy_run(tiny_run, tmp_path)
    folder = runs / tiny_run.name / "winners" / f"trial-{number}"
    weights = folder / "model.safetensors"
    data = bytearray(weights.read_bytes())
    data[-1] ^= 0xFF
    weights.write_bytes(bytes(data))
    lines: list[str] = []
    StudyRunner(tiny_run.spec, out_dir=runs, progress=False, log=lines.append).run()
    assert any(f"retraining trial {number}" in s and "SHA-256" in s for s in lines), lines
    read_winner(folder)  # valid again
    # A winner saved with another training recipe is another winner: retrained, then
    # reused. (The study itself refuses another recipe: it belongs to its identity.)
    record = json.loads((folder / "record.json").read_text())
    record["recipe"]["epochs"] = 1
    (folder / "record.json").write_text(json.dumps(record))
    spec = tiny_run.spec
    lines.clear()
    (w,) = StudyRunner(spec, out_dir=runs, progress=False, log=lines.append).run().winners
    assert not w.reused and any("trained with another ['recipe']" in s for s in lines), lines
    assert read_winner(folder)["recipe"]["epochs"] == spec.train.epochs
    (again,) = StudyRunner(spec, out_dir=runs, progress=False, log=lambda _: None).run().winners
    assert again.reused and again.test_accuracy == w.test_accuracy


def test_show_prints_a_header_row_and_json(tiny_run, capsys) -> None:
    number, printed = _printed_winner(tiny_run)
    assert main(["show", tiny_run.name, "--runs", str(tiny_run.runs)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split("\t") == [
        "trial",
        "supernet score",
        "predicted training cost (s)",
        "scored with",
        "retrained test accuracy",
        "arch",
    ]
    row = next(line.split("\t") for line in lines[1:] if line.startswith(f"{number}\t"))
    assert row[3] == "supernet, BN-recal." and row[4] == f"{printed:.4f}"
    assert main(["show", tiny_run.name, "--runs", str(tiny_run.runs), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    winner = next(r for r in rows if r["trial"] == number)
    assert set(winner["objectives"]) == {"accuracy", "train_cost"}
    assert abs(winner["retrained"]["test_accuracy"] - printed) <= 5e-5
    assert Path(winner["retrained"]["weights"]).is_dir()
    assert all(r["retrained"] is None for r in rows if r["trial"] != number)


def test_show_trained_lists_every_trained_model_with_the_kept_one_first(tiny_run, capsys) -> None:
    """``--trained``: the models the run trained at their measured numbers, the kept one
    first and marked; the default view (the screening's Pareto set) points to it on stderr,
    so its stdout stays a table."""
    import optuna

    from nasflow.record import study_kept, study_retrains, study_seconds

    number, printed = _printed_winner(tiny_run)
    runs = ["--runs", str(tiny_run.runs)]
    assert main(["show", tiny_run.name, *runs]) == 0
    shown = capsys.readouterr()
    assert f"`nasflow show tiny --runs {tiny_run.runs} --trained`" in shown.err
    assert "--trained" not in shown.out
    assert main(["show", tiny_run.name, *runs, "--trained", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    study = optuna.load_study(
        study_name=tiny_run.name, storage=f"sqlite:///{tiny_run.runs / tiny_run.name / 'study.db'}"
    )
    kept = study_kept(study)
    assert kept is not None and [r["kept"] for r in rows].count(True) == 1
    assert rows[0]["kept"] and rows[0]["trial"] == kept.trial
    retrained = {r["trial"]: r for r in rows if r["kind"] == "retrained"}
    assert set(retrained) == set(study_retrains(study))  # every retrain, once
    assert abs(retrained[number]["test_accuracy"] - printed) <= 5e-5
    assert all(r["measured_train_seconds"] > 0 for r in rows)
    assert main(["show", tiny_run.name, *runs, "--trained"]) == 0
    shown = capsys.readouterr()
    lines = shown.out.splitlines()
    assert lines[0].split("\t")[:5] == [
        "trial", "kept", "weights", "validation accuracy", "test accuracy"
    ]  # fmt: skip
    assert len(lines) == 1 + len(rows) and lines[1].split("\t")[:2] == [str(kept.trial), "kept"]
    assert "validation chose, test reports" in shown.err
    supernet = study_seconds(study)["supernet"]
    assert f"the supernet its weights come from, {supernet:.1f} s measured;" in shown.err


@pytest.mark.parametrize("flag", [[], ["--json"]])
def test_show_of_an_unknown_study_is_one_line(tiny_run, capsys, flag) -> None:
    assert main(["show", "nope", "--runs", str(tiny_run.runs), *flag]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("nasflow: error:")


def test_the_summary_of_an_unregistered_space_exports_through_the_study_file(
    ready_run: TinyRun,
) -> None:
    space = copy.copy(ready_run.spec.space)
    space.name = "registered_nowhere"  # the registry cannot rebuild it from the stored study
    spec = ready_run.spec.replace(space=space)
    file = str(ready_run.study_file)
    short = summary_table(ready_run.result, spec, verbose=False, study_file=file)
    assert f"nasflow export {file} " in short and "nasflow export tinyft " not in short
    long = summary_table(ready_run.result, spec, verbose=True, study_file=file)
    assert f"`nasflow export {file} --ready best --out DIR`" in long
    # A registered space keeps the short form: the stored study rebuilds it.
    same = summary_table(ready_run.result, ready_run.spec, verbose=False, study_file=file)
    assert "nasflow export tinyft " in same


def test_the_verbose_summary_says_what_a_rerun_reproduces(ready_run: TinyRun) -> None:
    text = summary_table(ready_run.result, ready_run.spec, verbose=True)
    assert "reproducibility: " in text
    assert "reproducibility: " not in summary_table(
        ready_run.result, ready_run.spec, verbose=False
    )
