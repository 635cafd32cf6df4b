"""The README's Python blocks run as written, in order, in one namespace."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


def python_blocks() -> list[str]:
    """The README's fenced ``python`` blocks, in order."""
    return re.findall(r"```python\n(.*?)```", README.read_text(), re.DOTALL)


def test_the_readme_shows_the_whole_python_workflow() -> None:
    code = "\n".join(python_blocks())
    for call in (
        "class MySpace",
        "StudySpec(",
        "nasflow.optimize(",
        "nasflow.export_winner(",
        "nasflow.load_exported(",
        "ParetoSuccessiveHalvingPruner(",
        "DataBundle(",  # "Your own data": tensors and an image folder, checked
        "load_image_folder(",
        "check_bundle(",
    ):
        assert call in code, call


@pytest.mark.slow
def test_readme_python_blocks_run_as_written(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)  # the blocks write runs/ in the working directory
    namespace: dict[str, object] = {"__name__": "readme"}
    for i, block in enumerate(python_blocks()):
        try:
            exec(compile(block, f"README.md python block {i}", "exec"), namespace)
        except Exception as e:  # name the block that failed
            raise AssertionError(f"README python block {i} failed: {e!r}\n{block}") from e
    assert (tmp_path / "runs" / "readme" / "winner" / "arch.json").is_file()
    study = namespace["study"]
    assert len(study.trials) == 30 and any(t.state.name == "PRUNED" for t in study.trials)
