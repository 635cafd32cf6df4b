"""``from_nni``: an NNI 3.0 model space as a nasflow space whose ``build`` is NNI's ``freeze``.

NNI is an optional extra; these tests skip without it, and fail instead with
``NASFLOW_REQUIRE_NNI=1`` (set where the environment installs ``nasflow[nni]``).
"""

from __future__ import annotations

import json
import os
import warnings

import pytest
import torch
from torch import nn

from nasflow.space import Arch, from_nni

try:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # NNI warns about torch classes it does not know.
        import nni
        from nni.nas.nn.pytorch import (
            InputChoice,
            LayerChoice,
            ModelSpace,
            MutableConv2d,
            MutableLinear,
        )
except ImportError as e:
    if os.environ.get("NASFLOW_REQUIRE_NNI") == "1":
        pytest.fail(f"required (NASFLOW_REQUIRE_NNI=1): NNI is not importable: {e}")
    pytest.skip(f"NNI is not installed: {e}", allow_module_level=True)


class TinyNni(ModelSpace):
    """A width ``nni.choice``, a ``LayerChoice`` of three convs and an ``InputChoice``."""

    def __init__(self, n_chosen: int | None = 1) -> None:
        super().__init__()
        width = nni.choice("width", [4, 8])
        self.stem = MutableConv2d(1, width, 3, padding=1)
        self.op = LayerChoice(
            [
                nn.Conv2d(1, 4, 3, padding=1),
                nn.Conv2d(1, 4, 5, padding=2),
                nn.Sequential(nn.Conv2d(1, 4, 1), nn.ReLU()),
            ],
            label="op",
        )
        self.pick = InputChoice(3, n_chosen=n_chosen, reduction="sum", label="pick")
        self.proj = MutableConv2d(width, 4, 1)
        self.head = MutableLinear(4, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        a = self.proj(torch.relu(self.stem(x)))  # (B, 4, H, W)
        b = self.op(x)  # (B, 4, H, W)
        chosen = self.pick([a, b, a * b])  # (B, 4, H, W)
        return self.head(chosen.mean(dim=(2, 3)))  # (B, 3)


class WithUniform(ModelSpace):
    def __init__(self) -> None:
        super().__init__()
        self.add_mutable(nni.uniform("p", 0.0, 0.5))
        self.lin = nn.Linear(2, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.lin(x)


@pytest.fixture(scope="module")
def nni_space() -> TinyNni:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return TinyNni()


def test_choices_mirror_nni_labels_and_values(nni_space: TinyNni) -> None:
    space = from_nni(nni_space)
    assert space.name == "nni:TinyNni"
    assert set(space.labels) == set(nni_space.simplify()) == {"width", "op", "pick"}
    assert space.choice("width").kind == "value"
    assert space.choice("width").values == (4, 8)
    assert space.choice("op").kind == "op"
    assert space.choice("op").values == (0, 1, 2)
    assert space.choice("pick").kind == "edge"
    assert space.choice("pick").values == ("[0]", "[1]", "[2]")
    assert space.size == 2 * 3 * 3
    assert space.fingerprint() == from_nni(nni_space).fingerprint()


def test_input_choice_subsets() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        two = from_nni(TinyNni(n_chosen=2))
        any_ = from_nni(TinyNni(n_chosen=None))
    assert two.choice("pick").values == ("[0, 1]", "[0, 2]", "[1, 2]")
    assert len(any_.choice("pick").values) == 2**3
    assert two.nni_sample({"width": 8, "op": 1, "pick": "[0, 2]"})["pick"] == [0, 2]


def test_build_equals_nni_freeze(nni_space: TinyNni) -> None:
    space = from_nni(nni_space)
    x = torch.randn(2, 1, 6, 6)
    for arch in space.enumerate():
        sample = space.nni_sample(arch)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ours = space.build(arch)
            theirs = nni_space.freeze(sample)
        assert repr(ours) == repr(theirs)
        ours.load_state_dict(theirs.state_dict())  # strict: same names and shapes
        ours.eval()
        theirs.eval()
        with torch.no_grad():
            torch.testing.assert_close(ours(x), theirs(x), rtol=0, atol=0)
        assert ours.stem.out_channels == arch["width"]


def test_json_round_trip_builds_the_same_network(nni_space: TinyNni) -> None:
    space = from_nni(nni_space)
    for seed in range(5):
        arch = space.sample(seed)
        back = Arch.from_json(arch.to_json())
        assert back == arch
        assert json.loads(arch.to_json())["pick"] == arch["pick"]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert repr(space.build(back)) == repr(space.build(arch))


def test_rejects_what_it_cannot_import(nni_space: TinyNni) -> None:
    space = from_nni(nni_space)
    with pytest.raises(NotImplementedError, match="no weight-sharing supernet"):
        space.supernet()
    with pytest.raises(ValueError, match="'\\[3\\]'"):
        space.build({"width": 4, "op": 0, "pick": "[3]"})
    with pytest.raises(ValueError, match="Linear"):
        from_nni(nn.Linear(2, 2))
    with pytest.raises(ValueError, match=r"'p'.*categorical"):
        from_nni(WithUniform())
    with pytest.raises(ValueError, match="cannot be re-created"):
        type(space).from_config(space.config)
