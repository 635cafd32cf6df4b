"""The end-of-run text and the progress: an excluding budget is said, one row per
architecture with its proposal count, every phase's bar named."""

from __future__ import annotations

import optuna

from nasflow.search import StudyRunner, load_study_file, summary_table
from tests._study_template import write_study

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
