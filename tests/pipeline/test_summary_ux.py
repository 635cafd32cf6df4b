"""The end-of-run text and the progress: an excluding budget is said, one row per
architecture with its proposal count, every phase's bar named."""

from __future__ import annotations

import optuna
import pytest

from nasflow.pipeline import StudyRunner, summary_table
from nasflow.record import study_multipliers, study_seconds
from nasflow.search import load_study_file
from tests._study_template import write_study

pytestmark = pytest.mark.slow  # every test here runs a study

FAST = "study = study.replace(cost='measure')"


def _run(tmp_path, n_trials: int, log, progress: bool = False, **kw):
    spec = load_study_file(write_study(tmp_path, n_trials=n_trials, finetune=0, extra=FAST, **kw))
    runner = StudyRunner(spec, out_dir=tmp_path / "runs", progress=progress, log=log)
    return spec, runner.run(retrain=False)


def test_a_budget_that_excludes_every_candidate_is_said(tmp_path) -> None:
    lines: list[str] = []
    spec, result = _run(tmp_path, 5, lines.append, max_params=1)
    said = [x for x in lines if x.startswith("warning:") and "budget excludes" in x]
    assert len(said) == 1 and "smallest" in said[0] and "max_params=1" in said[0], lines
    # The batched screening logs no line per candidate: the reasons are in the study.
    skipped = [t for t in result.study.trials if t.state.name == "PRUNED"]
    assert skipped and all("over budget" in t.user_attrs.get("skipped", "") for t in skipped)
    text = summary_table(result, spec)
    assert "excludes" in text and "smallest" in text


def test_the_summary_lists_each_architecture_once_with_its_proposal_count(tmp_path) -> None:
    _run(tmp_path, 2, lambda _: None)
    storage = f"sqlite:///{tmp_path / 'runs' / 'tiny' / 'study.db'}"
    stored = optuna.load_study(study_name="tiny", storage=storage)
    for _ in range(2):  # trial 0's architecture proposed twice more
        stored.enqueue_trial(stored.trials[0].params)
    spec, result = _run(tmp_path, 4, lambda _: None)
    text = summary_table(result, spec)
    table = text.split("\n\n")[0].splitlines()
    assert "proposed" in table[1]
    rows = [r for r in table[2:] if r.split()[0].isdigit()]
    distinct = {t.user_attrs["arch"] for t in result.study.trials if "arch" in t.user_attrs}
    # n_trials counts distinct architectures: 4 rows, trial 0's once.
    assert [r.split()[0] for r in rows].count("0") == 1 and len(rows) == len(distinct) == 4
    row0 = next(r for r in rows if r.split()[0] == "0")
    assert " 3 " in row0, row0


def test_each_phase_bar_names_its_phase(tmp_path, capsys) -> None:
    _run(tmp_path, 2, lambda _: None, progress=True)
    err = capsys.readouterr().err
    assert "phase 1: supernet" in err and "phase 2: screening" in err, err


def test_the_summary_stays_short_at_ten_thousand_candidates(tmp_path) -> None:
    """Issue 27's "reads cleanly at 10,000 candidates": the text's length is bounded by
    the tables' caps and the Pareto set, not by the number of candidates. 10,000 distinct
    architectures of the proving ground's space (62,500) are added to an in-memory study
    holding a real run's records (the tiny study's space has only 243)."""
    import dataclasses

    import numpy as np

    from nasflow.pipeline import pareto_trials
    from nasflow.record import ARCH_ATTR, SUPERNET_ACCURACY_ATTR, TRAIN_COST_ATTR
    from nasflow.studies.mnist1d_front import study as front

    _, result = _run(tmp_path, 2, lambda _: None)
    first = result.study.trials[0]
    spec = front.replace(name=result.study.study_name)
    rng = np.random.default_rng(0)
    archs: dict[str, object] = {}
    while len(archs) < 10_000:  # distinct architectures, as n_trials counts them
        arch = spec.space.sample(rng)
        archs.setdefault(arch.to_json(), arch)
    study = optuna.create_study(directions=result.study.directions)
    for key, value in result.study.user_attrs.items():
        study.set_user_attr(key, value)
    probe = study.ask()
    spec.space.suggest(probe)  # the space's distributions, as the screening records them
    distributions = probe.distributions
    study.tell(probe, state=optuna.trial.TrialState.FAIL)
    trials = []
    for key, arch in archs.items():
        accuracy, cost = float(rng.uniform(0.1, 0.9)), float(rng.uniform(1.0, 20.0))
        attrs = {
            **first.user_attrs,
            ARCH_ATTR: key,
            SUPERNET_ACCURACY_ATTR: accuracy,
            TRAIN_COST_ATTR: cost,
        }
        trials.append(
            optuna.trial.create_trial(
                params=arch.to_dict(),  # type: ignore[attr-defined]
                distributions=distributions,
                values=[accuracy, cost],
                user_attrs=attrs,
            )
        )
    study.add_trials(trials)
    big = dataclasses.replace(
        result, study=study, pareto=pareto_trials(study), ran_trials=list(range(1, 10_001))
    )
    lines = summary_table(big, spec).splitlines()
    assert 0 < len(big.pareto) < 40
    # Ten most accurate, the Pareto set, a line each for the records: none per candidate.
    assert len(lines) < 60 + len(big.pareto), len(lines)
    # Rows and records stay narrow (the legend and the "next:" hint are paragraphs; the
    # result's export line holds two commands with their paths).
    narrow = [
        line for line in lines if not line.startswith(("Most accurate", "next:", "  export:"))
    ]
    assert max(len(line) for line in narrow) < 200, [x for x in narrow if len(x) >= 200]
    assert "trials run by this process: 1-10000 (10000 trials)" in lines
    assert sum(line.startswith("Most accurate of the 10000 evaluated") for line in lines) == 1


def test_nasflow_search_ends_with_the_result_and_prints_the_detail_on_request(
    tmp_path, capsys
) -> None:
    from nasflow.cli import main

    study_file = write_study(tmp_path, n_trials=2, finetune=0, extra=FAST)
    args = ["search", str(study_file), "--runs", str(tmp_path / "runs"), "--no-progress"]
    assert main([*args, "--no-retrain"]) == 0
    short = capsys.readouterr().out.split("\n\n")[-1].splitlines()
    # Nothing was retrained: the result says so, names the best screened trial by its
    # supernet score (not a trained accuracy) and how to export it.
    assert short[0].startswith("result: study 'tiny' keeps no model: nothing was trained")
    assert short[1].startswith("  best by supernet score: trial ")
    assert short[-1].startswith(
        f"  export: `nasflow export tiny --runs {tmp_path / 'runs'} --best"
    )
    assert len(short) <= 6
    assert main(args) == 0  # the finished search retrains its winner; the detail on request
    text = capsys.readouterr().out
    storage = f"sqlite:///{tmp_path / 'runs' / 'tiny' / 'study.db'}"
    before = study_seconds(optuna.load_study(study_name="tiny", storage=storage))
    assert "Pareto set of study" not in text and "winner: trial" not in text
    # The detail's hint names the command that prints it (``show`` has no --verbose).
    assert "the tables and records: this `nasflow search` again with --verbose" in text
    assert main([*args, "--verbose"]) == 0
    rerun = capsys.readouterr()
    verbose = rerun.out
    # ...and trains nothing more: the winner is the one the run before saved.
    assert "was retrained by an earlier run" in rerun.out + rerun.err
    assert "0 to go" in rerun.out + rerun.err
    assert "Pareto set of study 'tiny'" in verbose and "winner: trial" in verbose
    # The rerun's ~0 s do not replace the study's costs: they add to them, and the one-shot
    # multiplier and the regime are still built on the supernet and screening that ran.
    study = optuna.load_study(study_name="tiny", storage=storage)
    after = study_seconds(study)
    assert after["supernet"] >= before["supernet"] > 0 and after["total"] > before["total"]
    one_shot = study_multipliers(study).part("one_shot")  # type: ignore[union-attr]
    assert one_shot.actual_seconds == pytest.approx(after["supernet"] + after["search"])
    assert "time, the study's finished runs together: " in verbose
    # ...and its trials were scored by the first run: no worker's interleaving decided them.
    assert "scored by other processes" not in verbose
    assert f"the supernet and the screening took {one_shot.actual_seconds:.0f}s" in verbose
    closing = verbose.rstrip("\n").splitlines()[-6:]
    assert closing == text.rstrip("\n").splitlines()[-6:]
    assert closing[0].startswith("result: study 'tiny' keeps trial ")
    assert closing[1].startswith("  test accuracy ") and "(test split; validation" in closing[1]
