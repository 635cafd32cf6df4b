"""A bundle's usual mistakes are one line before anything trains."""

from __future__ import annotations

import pytest
import torch
from torch.utils.data import TensorDataset

from nasflow.cli import main
from nasflow.data import DataBundle, DataError, check_bundle
from tests._study_template import write_study


def _bundle(labels_max: int = 10, shape=(1, 40), n_test: int = 20) -> DataBundle:
    x = torch.randn(60, 1, 40)
    y = torch.arange(60) % labels_max
    ds = lambda a, b: TensorDataset(x[a:b], y[a:b])  # noqa: E731
    return DataBundle(ds(0, 20), ds(20, 40), ds(40, 40 + n_test), shape, 10, "mine")


@pytest.mark.parametrize(
    ("bundle", "says"),
    [
        (_bundle(labels_max=12), "outside 0..9 (num_classes=10)"),
        (_bundle(shape=(1, 20)), "shape [1, 40], the bundle's input_shape is [1, 20]"),
        (_bundle(n_test=0), "the test split is empty"),
    ],
)
def test_the_usual_mistakes_are_one_line(bundle, says) -> None:
    with pytest.raises(DataError, match=r"\S") as info:
        check_bundle(bundle)
    assert says in str(info.value) and "\n" not in str(info.value)
    check_bundle(_bundle())


def test_a_study_whose_labels_are_out_of_range_is_refused_before_training(tmp_path, capsys):
    extra = (
        "import dataclasses\n_d = data\n"
        "study = study.replace(data=lambda: dataclasses.replace(_d(), num_classes=3))"
    )
    study_file = write_study(tmp_path, n_trials=1, finetune=0, extra=extra)
    assert main(["search", str(study_file), "--runs", str(tmp_path / "runs")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "outside 0..2" in err, err
    assert not list((tmp_path / "runs").rglob("*.pt"))
