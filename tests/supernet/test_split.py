"""Few-shot splitting: one sub-supernet per value of a choice, trained in place of sharing."""

from __future__ import annotations

import pytest
import torch
from torch.utils.data import TensorDataset

from nasflow._logging import lines_to
from nasflow.errors import ConfigError
from nasflow.export._study import load_supernet
from nasflow.supernet import Split, split_supernet
from nasflow.train import (
    SupernetConfig,
    SupernetTrainer,
    TrainingInterrupted,
    load_checkpoint,
)
from tests._spaces import tiny_mnist1d
from tests.train.test_resume import _assert_identical, _state, _stop_after

CONFIG = SupernetConfig(
    epochs=2, batch_size=16, warmup_epochs=0.5, seed=3, split="width", split_from=0.5
)


def _data() -> TensorDataset:
    g = torch.Generator().manual_seed(0)
    return TensorDataset(
        torch.randn(64, 1, 40, generator=g), torch.randint(0, 10, (64,), generator=g)
    )


def _path(space, width: float) -> dict:
    path = dict(space.path(space.sample(1)))
    path["width"] = width
    return path


def test_each_path_runs_and_extracts_from_its_own_part() -> None:
    space = tiny_mnist1d()
    net = split_supernet(space.supernet(), "width")
    assert isinstance(net.body, Split)
    widths = space.choice("width").values
    assert len(net.body.parts) == len(widths)
    with torch.no_grad():  # make the parts differ, so that running the wrong one shows
        for k, part in enumerate(net.body.parts):
            for p in part.parameters():
                p.add_(0.1 * (k + 1))
    x = torch.randn(4, 1, 40)
    for i, w in enumerate(widths):
        path = _path(space, w)
        net.train().zero_grad(set_to_none=True)
        net(x, path).sum().backward()
        for k, part in enumerate(net.body.parts):
            touched = any(p.grad is not None for p in part.parameters())
            assert touched == (k == i), (w, k)  # only the path's own part gets a gradient
        ref = space.supernet()
        ref.body.load_state_dict(net.body.parts[i].state_dict())
        want = ref.eval().extract(path)(x)
        torch.testing.assert_close(net.eval().extract(path)(x), want)
        torch.testing.assert_close(net(x, path), want)


def test_parts_start_from_the_shared_weights() -> None:
    space = tiny_mnist1d()
    shared = space.supernet()
    net = split_supernet(shared, "width")
    for part in net.body.parts:
        _assert_identical(part.state_dict(), shared.body.state_dict())
        assert part is not shared.body


def test_bad_splits_name_the_value() -> None:
    space = tiny_mnist1d()
    with pytest.raises(ConfigError, match=r"'depth'.*path choices"):
        split_supernet(space.supernet(), "depth")
    with pytest.raises(ConfigError, match="Linear"):
        split_supernet(torch.nn.Linear(2, 2), "width")
    net = split_supernet(space.supernet(), "width")
    with pytest.raises(ConfigError, match=r"0\.3 is not a value of 'width'"):
        net.body(torch.randn(1, 1, 40), {**_path(space, 0.5), "width": 0.3})
    with pytest.raises(ConfigError, match="split_from must be a number in \\[0, 1\\), got 1"):
        SupernetConfig(split="width", split_from=1)
    with pytest.raises(ConfigError, match="split must be"):
        SupernetConfig(split="")


def test_unsplit_identity_is_unchanged() -> None:
    """A study without a split keeps its older checkpoints: the identity records no split."""
    trainer = SupernetTrainer(tiny_mnist1d(), _data(), SupernetConfig(epochs=1, batch_size=16))
    assert "split" not in trainer._identity()
    split = SupernetTrainer(tiny_mnist1d(), _data(), CONFIG)
    assert trainer._identity() != split._identity()


@pytest.mark.slow
def test_split_mid_training_resumes_bit_identical_and_exports(tmp_path) -> None:
    space, data = tiny_mnist1d(), _data()
    logs: list[str] = []
    ref_dir = tmp_path / "ref"
    with lines_to(logs.append):
        result = SupernetTrainer(space, data, CONFIG, ref_dir).fit()
    assert any("split on 'width' at epoch 1" in m for m in logs)
    assert isinstance(result.supernet.body, Split)
    first, final = load_checkpoint(ref_dir / "epoch-1.pt"), load_checkpoint(ref_dir / "epoch-2.pt")
    assert first["split"] is None and final["split"] == "width"
    # Every part left the shared weights it started from, each on its own paths.
    shared = {k.removeprefix("body."): v for k, v in first["model"].items()}
    parts = result.supernet.body.parts
    for part in parts:
        moved = [not torch.equal(v, shared[k]) for k, v in part.state_dict().items()]
        assert any(moved)
    assert not torch.equal(
        parts[0].state_dict()["layers.0.conv.weight"],
        parts[-1].state_dict()["layers.0.conv.weight"],
    )
    # Interrupted before the split (at the epoch boundary) and mid-epoch after it.
    for stop in (4, 6):
        folder = tmp_path / f"stop{stop}"
        with pytest.raises(TrainingInterrupted):
            SupernetTrainer(space, data, CONFIG, folder, should_stop=_stop_after(stop)).fit()
        resumed = SupernetTrainer(space, data, CONFIG, folder).fit()
        assert resumed.resumed_at is not None
        _assert_identical(
            _state(load_checkpoint(folder / "epoch-2.pt")), _state(final), f"stop {stop}"
        )
    # A finished split run resumes to the split network; export loads it the same way.
    again = SupernetTrainer(space, data, CONFIG, ref_dir).fit()
    _assert_identical(again.supernet.state_dict(), final["model"], "resumed at the end")
    loaded, name = load_supernet(space, ref_dir)
    assert name == "epoch-2.pt" and isinstance(loaded.body, Split)
    _assert_identical(loaded.state_dict(), final["model"], "exported")


def test_split_from_the_start_builds_the_split_network_first(tmp_path) -> None:
    config = SupernetConfig(epochs=1, batch_size=16, seed=3, split="width")
    logs: list[str] = []
    with lines_to(logs.append):
        result = SupernetTrainer(tiny_mnist1d(), _data(), config, tmp_path).fit()
    assert isinstance(result.supernet.body, Split)
    assert not any("split on" in m for m in logs)  # never trained shared
    assert load_checkpoint(tmp_path / "epoch-1.pt")["split"] == "width"
