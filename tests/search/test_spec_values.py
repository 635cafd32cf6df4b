"""Bad values in a study are refused when it is built, in one line naming the value,
before anything is written."""

from __future__ import annotations

import math
import re

import pytest

from nasflow.cli import main
from nasflow.search import Budget, StudyFileError, StudySpec, load_study_file
from nasflow.train import TrainConfig
from tests._study_template import write_study


@pytest.mark.parametrize(
    ("kwargs", "shown"),
    [
        ({"max_params": -5}, "-5"),
        ({"max_params": 0}, "0"),
        ({"max_train_cost": 0}, "0"),
        ({"max_train_cost": -1.5}, "-1.5"),
        ({"max_params": True}, "True"),
        ({"max_params": "1000"}, "'1000'"),
        ({"max_train_cost": [60]}, "[60]"),
        ({"max_train_cost": math.nan}, "nan"),
        ({"max_train_cost": math.inf}, "inf"),
        ({"max_params": -math.inf}, "-inf"),
    ],
)
def test_a_budget_limit_that_is_not_a_positive_number_is_refused(kwargs, shown) -> None:
    (name,) = kwargs
    with pytest.raises(ValueError, match=rf"Budget {name} must be .*got {re.escape(shown)}$"):
        Budget(**kwargs)


def test_good_budgets_still_work() -> None:
    b = Budget(max_params=1000, max_train_cost=2.5)
    assert b.violations(1500, 2.5) == {"params": 0.5, "train_cost": 0.0}
    assert Budget().violations(10**9, 1e9) == {}


@pytest.mark.parametrize("bad", ["-5", "0"])
def test_a_study_file_with_a_bad_budget_fails_in_one_line_writing_nothing(
    tmp_path, capsys, bad
) -> None:
    study_file = write_study(tmp_path, max_params=int(bad))
    assert main(["search", str(study_file), "--runs", str(tmp_path / "runs")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"Budget max_params must be > 0 (a limit), got {bad}" in err
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize(
    ("change", "shown"),
    [
        ("seed='zero'", "seed must be an int from 0 to 4294967295, got 'zero'"),
        ("seed=-1", "got -1"),
        ("seed=True", "got True"),
        ("seed=2**32", "got 4294967296"),
        ("supernet={'epochs': 2}", "supernet must be a SupernetConfig(...), got {'epochs': 2}"),
        ("budget={'max_params': 5}", "budget must be a Budget(...), got {'max_params': 5}"),
        ("train=None", "train must be a TrainConfig(...), got None"),
        (
            "supernet=SupernetConfig(epochs=1, batch_size=50, split='depth')",
            "SupernetConfig(split='depth') names no path choice of space 'mnist1d'",
        ),
        (
            "supernet=SupernetConfig(epochs=1, batch_size=50, split='width', split_from=-0.5)",
            "split_from must be a number in [0, 1), got -0.5",
        ),
        ("finetune_epochs=1", "finetune_epochs=...) was removed: the fine-tuning recipe carries"),
        ("finetune=3", "finetune must be a TrainConfig(...), got 3"),
        ("name=None", "study name must be a non-empty string, got None"),
        ("name=''", "study name must be a non-empty string, got ''"),
        ("name='../..'", "study name '../..' must be one plain folder name"),
        ("name='..'", "study name '..' must be one plain folder name"),
        ("name='/abs/olute'", "study name '/abs/olute' must be one plain folder name"),
        ("name='a\\\\b'", "must be one plain folder name"),
        ("name=' x'", "study name ' x' must be one plain folder name"),
    ],
)
def test_a_bad_study_value_is_refused_before_anything_is_written(
    tmp_path, capsys, change, shown
) -> None:
    study_file = write_study(tmp_path, extra=f"study = study.replace({change})")
    before = sorted(tmp_path.parent.iterdir())
    assert main(["search", str(study_file), "--runs", str(tmp_path / "runs")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("nasflow: error: study file")
    assert shown in err
    assert sorted(p.name for p in tmp_path.iterdir()) == [study_file.name]
    assert sorted(tmp_path.parent.iterdir()) == before


@pytest.mark.parametrize(
    ("args", "shown"),
    [
        (["--seed", "-1"], "--seed: seed must be an int from 0 to 4294967295, got -1"),
        (["--timeout", "-5"], "--timeout must be a number of seconds > 0, got -5.0"),
        (["--timeout", "0"], "--timeout must be a number of seconds > 0, got 0.0"),
        (["--timeout", "nan"], "--timeout must be a number of seconds > 0, got nan"),
        (["--timeout", "inf"], "--timeout must be a number of seconds > 0, got inf"),
    ],
)
def test_bad_command_line_numbers_are_refused_before_anything_is_written(
    tmp_path, capsys, args, shown
) -> None:
    study_file = write_study(tmp_path)
    assert main(["search", str(study_file), "--runs", str(tmp_path / "runs"), *args]) == 2
    err = capsys.readouterr().err
    assert err == f"nasflow: error: {shown}\n"
    assert not (tmp_path / "runs").exists()


def test_fine_tuning_takes_its_epochs_from_its_recipe(tmp_path) -> None:
    spec = load_study_file(write_study(tmp_path, finetune=0))
    assert spec.finetune is None and spec.finetune_epochs == 0
    assert spec.resolved_pruner == "none"
    tuned = spec.replace(finetune=TrainConfig(epochs=4, lr=1e-3))
    assert tuned.finetune_epochs == 4 and tuned.resolved_pruner == "pareto"
    with pytest.raises(StudyFileError, match=r"finetune_epochs=\.\.\.\) was removed"):
        spec.replace(finetune_epochs=4)
    with pytest.raises(TypeError, match="finetune_epochs"):
        StudySpec(name="x", space=spec.space, data=spec.data, finetune_epochs=4)


def test_the_study_seed_reseeds_the_supernet_and_seed_0_keeps_its_old_one(tmp_path) -> None:
    spec = load_study_file(write_study(tmp_path))
    assert spec.seed == 0 and spec.supernet_recipe is spec.supernet  # identity unchanged
    other = spec.replace(seed=3)
    assert other.supernet_recipe.seed == spec.supernet.seed + 3
    assert other.supernet_recipe.identity() != spec.supernet_recipe.identity()
    assert other.supernet_recipe.epochs == spec.supernet.epochs


def test_retrain_top_0_needs_a_last_fine_tuning_rung_at_the_recipes_epochs(tmp_path) -> None:
    """``retrain_top=0`` keeps a fine-tuned finalist as the search's choice, so it must have
    trained the recipe's epochs from its inherited weights: otherwise one error naming the
    recipe's epochs and the last rung."""
    from nasflow.search import FineTuning

    base = load_study_file(write_study(tmp_path)).replace(train=TrainConfig(epochs=12))
    ok = base.replace(finetuning=FineTuning(rungs=(1, 2, 4, 12)), retrain_top=0)
    assert ok.top_rung_inherited
    assert not base.replace(finetuning=FineTuning(rungs=(1, 2, 4, 12))).top_rung_inherited
    with pytest.raises(StudyFileError, match=r"train.epochs=12, FineTuning's last rung 4\)"):
        base.replace(finetuning=FineTuning(rungs=(1, 2, 4)), retrain_top=0)
    with pytest.raises(StudyFileError, match=r"FineTuning's last rung None\)"):
        base.replace(finetuning=None, retrain_top=0)
    with pytest.raises(StudyFileError, match=r"retrain_top must be .*got -1"):
        base.replace(retrain_top=-1)
