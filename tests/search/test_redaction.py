"""A password in the storage URL's query string (or with an unescaped ``@``) is never
shown: not in the study line, errors, the HTML report, nor an export's files."""

from __future__ import annotations

from pathlib import Path

import pytest

from nasflow.cli import main
from tests._study_template import write_study

SECRET = "Qs3cretZ"


def _files_holding(root: Path, text: str) -> list[str]:
    return [
        str(p.relative_to(root))
        for p in root.rglob("*")
        if p.is_file() and text.encode() in p.read_bytes()
    ]


@pytest.mark.slow
def test_a_query_string_password_never_leaks(postgres_url, tmp_path, capsys) -> None:
    url = f"{postgres_url}?sslmode=disable&password={SECRET}"
    safe = f"{postgres_url}?sslmode=disable&password=***"
    study_file = write_study(
        tmp_path, n_trials=2, finetune=0, extra="study = study.replace(cost='measure')"
    )
    runs = tmp_path / "runs"
    store = ["--storage", url, "--runs", str(runs)]
    assert main(["search", str(study_file), *store, "--no-retrain", "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert f"study 'tiny' in {safe}" in out and f"study: {safe}" in out
    assert main(["studies", "--storage", url]) == 0
    assert main(["show", "tiny", *store]) == 0
    assert main(["report", "tiny", *store]) == 0
    report = (runs / "tiny" / "report.html").read_text()
    assert "password=***" in report
    export = tmp_path / "export"
    args = ["export", "tiny", "--storage", url, "--runs", str(runs), "--out", str(export)]
    assert main([*args, "--study", str(study_file), "--no-onnx"]) == 0
    assert "password=***" in (export / "arch.json").read_text()
    assert "password=***" in (export / "README.md").read_text()
    shown = capsys.readouterr()
    assert SECRET not in shown.out + shown.err
    assert _files_holding(tmp_path, SECRET) == []


def test_a_password_with_an_unescaped_at_is_not_partly_printed(tmp_path, capsys) -> None:
    study_file = write_study(tmp_path, n_trials=2, finetune=0)
    url = "postgresql://u:p@ssw0rdTail@127.0.0.1:9/test"  # nothing listens on port 9
    assert main(["search", str(study_file), "--storage", url, "--runs", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cannot reach storage" in err
    assert "ssw0rdTail" not in err and "postgresql://u:***@127.0.0.1:9/test" in err
