"""The quickstart notebook runs top to bottom, and is committed without outputs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "quickstart.ipynb"


def test_the_committed_notebook_has_no_outputs() -> None:
    cells = json.loads(NOTEBOOK.read_text())["cells"]
    code = [c for c in cells if c["cell_type"] == "code"]
    assert code
    for c in code:
        assert c["outputs"] == [] and c["execution_count"] is None, c["source"][:1]


@pytest.mark.slow
def test_quickstart_notebook_executes(tmp_path) -> None:
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(NOTEBOOK, as_version=4)
    client = NotebookClient(
        nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    )
    client.execute()  # raises CellExecutionError, with the cell and traceback, on failure
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    figures = [o for o in outputs if "application/vnd.plotly.v1+json" in o.get("data", {})]
    assert figures, "the Pareto front was not displayed"
    traces = figures[0]["data"]["application/vnd.plotly.v1+json"]["data"]
    assert sum(len(t.get("x", [])) for t in traces) >= 1  # the front has points
    text = "".join(o.get("text", "") for o in outputs if o.get("output_type") == "stream")
    assert "loaded model (retrained weights): test accuracy" in text
    export = tmp_path / "runs" / "quickstart" / "winner"
    assert (export / "arch.json").is_file() and (export / "model.safetensors").is_file()
