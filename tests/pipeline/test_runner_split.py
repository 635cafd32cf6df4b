"""A study whose supernet is split on the width runs end to end: scored, fine-tuned from
its split weights, recorded, and exported from the split supernet."""

from __future__ import annotations

import pytest
import torch

from nasflow.cli import main
from nasflow.export import ExportInfo, load_exported
from nasflow.pipeline import StudyRunner
from nasflow.pipeline._phases._supernet import supernet_stack
from nasflow.record import FINETUNED_KEY, SUPERNET_KEY
from nasflow.search import load_study_file
from nasflow.supernet import Split
from nasflow.train import load_latest
from nasflow.train.stack import Stack
from tests._study_template import write_study

SPLIT = """
from nasflow.search import FineTuning
study = study.replace(
    supernet=SupernetConfig(epochs=2, batch_size=50, split="width", split_from=0.5),
    finetuning=FineTuning(finalists=2, rungs=(1,), keep=0.5, top=0),
)
"""


@pytest.mark.slow
def test_a_split_supernet_study_runs_and_exports_its_paths(tmp_path) -> None:
    study_file = write_study(tmp_path, name="split", n_trials=5, finetune=0, extra=SPLIT)
    spec = load_study_file(study_file)
    assert spec.supernet.split == "width" and spec.supernet.split_epoch == 1
    logs: list[str] = []
    runs = tmp_path / "runs"
    result = StudyRunner(spec, out_dir=runs, progress=False, log=logs.append).run(retrain=True)
    record = result.study.user_attrs[SUPERNET_KEY]
    assert (record["split"], record["split_epoch"], record["stack_note"]) == ("width", 1, None)
    scored = [t for t in result.study.trials if t.values is not None]
    assert len(scored) == 5
    found = load_latest(runs / "split" / "supernet")
    assert found is not None and found[1]["split"] == "width"
    # The export reads the split checkpoint: a path's weights are its width's copy.
    trial = scored[0]
    out = tmp_path / "export"
    argv = ["export", "split", "--runs", str(runs), "--study", str(study_file), "--out", str(out)]
    assert (
        main(
            [
                *argv,
                "--trial",
                str(trial.number),
                "--weights",
                "supernet",
                "--no-recalibrate",
                "--no-onnx",
            ]
        )
        == 0
    )
    info = ExportInfo.read(out)
    supernet = spec.space.supernet()
    body = Split("width", tuple(spec.space.choice("width").values), supernet.body)
    supernet.body = body
    supernet.load_state_dict(found[1]["model"])
    path = spec.space.path(info.arch)
    x = torch.randn(3, 1, 40, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        want = supernet.eval()(x, path)
        got = load_exported(out)(x)
    assert (got - want).abs().max() <= 1e-6
    # ... and not the copy of another width (the same path through another copy).
    other = next(v for v in spec.space.choice("width").values if v != path["width"])
    with torch.no_grad():
        supernet.body.parts[body.values.index(path["width"])] = body.parts[
            body.values.index(other)
        ]
        assert not torch.allclose(supernet(x, path), got)
    # The finalists were fine-tuned from the split supernet's weights into ready models.
    finetuned = result.study.user_attrs[FINETUNED_KEY]
    assert len(finetuned["candidates"]) == 2


def test_a_split_supernet_trains_without_the_calibrated_accumulation() -> None:
    calibrated = Stack(amp="bf16", accumulation="adaptive")
    stack, note = supernet_stack("width", "auto", calibrated)
    assert stack == Stack(amp="bf16")  # every other layer kept
    assert note is not None and "'width'" in note and "'adaptive'" in note
    # Shared weights, a stack the user fixed, or no accumulation: the stack as it is.
    assert supernet_stack(None, "auto", calibrated) == (calibrated, None)
    assert supernet_stack("width", calibrated, calibrated) == (calibrated, None)
    plain = Stack(amp="bf16")
    assert supernet_stack("width", "auto", plain) == (plain, None)
