"""Study files: a Python file that binds ``study = StudySpec(...)``, run and checked."""

from __future__ import annotations

import os
import runpy
from pathlib import Path

from nasflow.search._spec import REMOVED_KEYS, StudyFileError, StudySpec


def load_study_file(path: os.PathLike | str) -> StudySpec:
    """Run a study file and return the ``StudySpec`` it binds to the name ``study``.

    Raises:
        StudyFileError: Missing file, an error while running it, or no ``study``.
    """
    path = Path(path)
    if not path.is_file():
        raise StudyFileError(f"study file {str(path)!r} does not exist")
    try:
        namespace = runpy.run_path(str(path), run_name="nasflow_study")
    except StudyFileError as e:
        raise StudyFileError(f"study file {str(path)!r}: {e}") from None
    except Exception as e:
        old = [k for k in REMOVED_KEYS if isinstance(e, TypeError) and repr(k) in str(e)]
        if old:
            raise StudyFileError(f"study file {str(path)!r}: {REMOVED_KEYS[old[0]]}") from None
        raise StudyFileError(
            f"study file {str(path)!r} failed to run: {type(e).__name__}: {e}"
        ) from e
    spec = namespace.get("study")
    if not isinstance(spec, StudySpec):
        found = type(spec).__name__ if spec is not None else "nothing"
        raise StudyFileError(
            f"study file {str(path)!r} must bind `study = StudySpec(...)` (with a space); "
            f"found {found}"
        )
    return spec
