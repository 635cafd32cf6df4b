"""``nasflow report`` and the argument handling of ``nasflow dashboard``."""

from __future__ import annotations

from importlib.util import find_spec

import optuna
import pytest

from nasflow.cli import build_parser, main
from tests.conftest import require_or_skip


def _system_attrs(copy) -> dict:
    storage = optuna.storages.RDBStorage(copy.url)
    return storage.get_study_system_attrs(storage.get_study_id_from_name(copy.name))


def _one_error_line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("nasflow: error: ")
    return err[0]


def test_report_writes_the_default_path_next_to_the_study(study_copy, capsys) -> None:
    copy = study_copy()
    assert main(["report", copy.name, "--runs", str(copy.out)]) == 0
    path = copy.out / copy.name / "report.html"
    assert path.is_file() and path.stat().st_size > 1_000_000  # plotly.js is inside
    assert str(path) in capsys.readouterr().out


def test_report_takes_a_storage_url_and_an_output_file(tiny_study, tmp_path) -> None:
    out = tmp_path / "nested" / "r.html"
    argv = ["report", tiny_study.name, "--storage", tiny_study.url, "--out-file", str(out)]
    assert main(argv) == 0
    assert out.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["report", "nope"], "no study file at"),
        (["report", "x", "--storage", "mysql://h/db"], "unknown storage 'mysql://h/db'"),
        (["report", "x", "--storage", "postgresql://u:secret@127.0.0.1:1/db"], "cannot reach"),
    ],
)
def test_report_errors_are_one_line_with_exit_code_2(tmp_path, capsys, argv, message) -> None:
    assert main([*argv, "--runs", str(tmp_path)]) == 2
    line = _one_error_line(capsys)
    assert message in line and "secret" not in line
    assert list(tmp_path.iterdir()) == []  # nothing created


def test_report_on_an_unknown_study_name_lists_the_known_ones(tiny_study, tmp_path, capsys):
    argv = ["report", "other", "--storage", tiny_study.url, "--runs", str(tmp_path)]
    assert main(argv) == 2
    assert "no study 'other'" in _one_error_line(capsys)
    assert not (tmp_path / "other").exists()


@pytest.mark.slow
def test_report_refuses_a_folder_and_a_malformed_record(study_copy, tmp_path, capsys) -> None:
    copy = study_copy()
    assert main(["report", copy.name, "--runs", str(copy.out), "--out-file", str(tmp_path)]) == 2
    assert "is a folder" in _one_error_line(capsys)
    study = optuna.load_study(study_name=copy.name, storage=copy.url)
    study.set_user_attr("nasflow:stack", {"layers": "fast"})
    assert main(["report", copy.name, "--runs", str(copy.out)]) == 2
    assert "'layers'" in _one_error_line(capsys)
    assert not (copy.out / copy.name / "report.html").exists()


def test_dashboard_binds_loopback_unless_told_otherwise() -> None:
    args = build_parser().parse_args(["dashboard", "s"])
    assert (args.host, args.port, args.storage, args.runs) == ("127.0.0.1", 8080, None, "runs")
    args = build_parser().parse_args(["dashboard", "s", "--host", "0.0.0.0", "--port", "0"])
    assert (args.host, args.port) == ("0.0.0.0", 0)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--port", "70000"], "port must be an int from 0 to 65535, got 70000"),
        (["--host", ""], "--host must not be empty"),
        (["--host", "192.0.2.1"], "cannot listen on 192.0.2.1:0"),  # not this machine's
    ],
)
def test_dashboard_bad_addresses_fail_before_anything_is_written(
    study_copy, capsys, extra, message
) -> None:
    require_or_skip(find_spec("optuna_dashboard") is not None, "optuna-dashboard is missing")
    copy = study_copy()
    before = _system_attrs(copy)
    argv = ["dashboard", copy.name, "--runs", str(copy.out), "--port", "0", *extra]
    assert main(argv) == 2
    assert message in _one_error_line(capsys)
    assert _system_attrs(copy) == before
