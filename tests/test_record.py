"""The study record: identity written and checked, the stored space, the one loader and
its one error, the run folder."""

from __future__ import annotations

from pathlib import Path

import optuna
import pytest

from nasflow import record
from nasflow.record import RunFolder, StudyMismatchError, StudyRecordError
from tests._spaces import tiny_mnist1d

DIRECTIONS = ["maximize", "minimize"]
NAMES = ["supernet score", "predicted training cost (s)"]


def _identity(space, epochs: int = 1) -> dict[str, str]:
    ident = record.supernet_identity(space.fingerprint(), {"epochs": epochs})
    return record.study_identity(space, ["accuracy", "train_cost"], ident)


def _study(tmp_path: Path, name: str = "s") -> tuple[optuna.Study, str]:
    url = f"sqlite:///{tmp_path / 'study.db'}"
    study = optuna.create_study(study_name=name, storage=url, directions=DIRECTIONS)
    return study, url


def test_run_folder_names_every_file_of_a_run(tmp_path) -> None:
    run = RunFolder.of(tmp_path, "s")
    assert run.root == tmp_path / "s"
    assert run.database == tmp_path / "s" / "study.db"
    assert (run.supernet, run.finetune) == (run.root / "supernet", run.root / "finetune")
    assert run.winner(3) == run.root / "winners" / "trial-3"
    assert {run.supernet_lock.name, run.stack_lock.name} == {"supernet.lock", "stack.lock"}


def test_identity_is_written_once_and_a_changed_study_is_refused(tmp_path) -> None:
    space = tiny_mnist1d()
    study, url = _study(tmp_path)
    assert not record.has_identity(study)
    record.write_identity(study, _identity(space), space.config)
    record.check_identity(study, _identity(space), DIRECTIONS, NAMES, url)
    assert record.stored_space(study).fingerprint() == space.fingerprint()
    assert record.study_metric_names(study) == NAMES
    with pytest.raises(StudyMismatchError, match=r"another supernet \(epochs 1 in the study"):
        record.check_identity(study, _identity(space, epochs=2), DIRECTIONS, NAMES, url)
    with pytest.raises(StudyMismatchError, match="directions"):
        record.check_identity(study, _identity(space), DIRECTIONS[::-1], NAMES, url)


def test_the_loader_and_the_stored_space_raise_one_error(tmp_path) -> None:
    with pytest.raises(StudyRecordError, match="no study file at"):
        record.open_stored_study("s", None, tmp_path)
    study, url = _study(tmp_path)
    with pytest.raises(StudyRecordError, match=r"no study 'other' .* studies there: \['s'\]"):
        record.open_stored_study("other", url, tmp_path)
    stored = record.open_stored_study("s", url, tmp_path)
    assert stored.study.study_name == "s" and stored.spec.kind == "sqlite"
    with pytest.raises(StudyRecordError, match="records no nasflow space"):
        record.stored_space(stored.study)
    other = tiny_mnist1d()
    study.set_user_attr(record.SPACE_KEY, "mnist1d")
    study.set_user_attr(record.FINGERPRINT_KEY, "0" * 16)
    with pytest.raises(StudyRecordError, match="searched space 'mnist1d'"):
        record.stored_space(study, other)
    with pytest.raises(StudyRecordError, match="not the recorded"):
        record.stored_space(study)


def test_a_checkpoint_identity_names_its_space() -> None:
    ident = record.supernet_identity("abc", {"epochs": 1}, {"compile": True})
    assert record.checkpoint_fingerprint({record.CHECKPOINT_IDENTITY: ident}) == "abc"
    assert record.checkpoint_fingerprint({}) is None
    assert record.supernet_identity("abc", None) == record.NO_SUPERNET
