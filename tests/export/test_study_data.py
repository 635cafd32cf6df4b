"""Export and retrain use the study's own data, never another study's matched by the
space's name: a custom study without --study is refused in one line."""

from __future__ import annotations

from nasflow.cli import main
from tests._study_template import write_study
from tests.export.conftest import export_args


def _args_without_study(run, out) -> list[str]:
    args = export_args(run, out, "--weights", "supernet", "--no-onnx")
    i = args.index("--study")
    return args[:i] + args[i + 2 :]


def test_a_custom_study_is_not_recalibrated_on_a_registered_studys_data(
    tiny_run, tmp_path, capsys
) -> None:
    out = tmp_path / "e"
    assert main(_args_without_study(tiny_run, out)) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--study" in err and "mnist1d" not in err, err
    assert not out.exists()
    assert main(export_args(tiny_run, out, "--weights", "supernet", "--no-onnx")) == 0
    printed = capsys.readouterr().out
    assert f"training data of study file {str(tiny_run.study_file)!r}" in printed


def test_a_study_file_with_other_data_is_refused(tiny_run, tmp_path, capsys) -> None:
    other = write_study(
        tmp_path,
        n_trials=4,
        finetune=0,
        extra="_d = data\nimport dataclasses\n"
        "study = study.replace(data=lambda: dataclasses.replace(_d(), name='other'))",
    )
    args = export_args(tiny_run, tmp_path / "e", "--weights", "supernet", "--no-onnx")
    args[args.index("--study") + 1] = str(other)
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not the data" in err, err
