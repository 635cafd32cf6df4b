"""In a Jupyter kernel without ipywidgets, nasflow's phase bars and Optuna's import of
``tqdm.auto`` print text bars and no ``TqdmWarning`` ("IProgress not found")."""

from __future__ import annotations

from importlib.util import find_spec

import pytest

CELL = """
import nasflow
import optuna  # imports tqdm.auto (optuna.progress_bar)
import nasflow.search
from tqdm.auto import tqdm  # what nasflow's phase bars are made with

bar = tqdm(total=2, desc="phase 1: supernet", unit="epoch")
bar.update(2)
bar.close()
"""


@pytest.mark.slow
@pytest.mark.skipif(find_spec("ipywidgets") is not None, reason="ipywidgets draws widget bars")
def test_a_kernel_without_ipywidgets_gets_text_bars_and_no_tqdm_warning(tmp_path) -> None:
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(CELL)]
    NotebookClient(
        nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    ).execute()
    outputs = nb.cells[0].outputs
    assert not [o for o in outputs if o.get("output_type") == "error"]
    text = "".join(o.get("text", "") for o in outputs if o.get("output_type") == "stream")
    assert "phase 1: supernet: 100%" in text  # the text bar
    assert "TqdmWarning" not in text and "IProgress" not in text, text
