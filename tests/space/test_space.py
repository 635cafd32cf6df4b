from __future__ import annotations

import json
import math
import pickle

import numpy as np
import optuna
import pytest
import torch
from torch import nn

from nasflow.search_spaces.mnist1d import MNIST1DSpace
from nasflow.space import Arch, FloatRange, SearchSpace, edge_choices, op_choice
from nasflow.space._choices import Choice
from nasflow.supernet import SuperModule
from tests._spaces import CellSpace, tiny_mnist1d


class _NoNet(SearchSpace):
    def supernet(self):  # pragma: no cover - never built in these tests
        raise NotImplementedError


def test_arch_is_frozen_hashable_and_json_round_trips() -> None:
    a = Arch({"b": 0.5, "a": "k3", "c": 3, "d": True, "e": None})
    b = Arch({"e": None, "d": True, "c": 3, "a": "k3", "b": 0.5})
    assert a == b and hash(a) == hash(b)
    assert Arch.from_json(a.to_json()) == a
    assert a.to_json() == '{"a":"k3","b":0.5,"c":3,"d":true,"e":null}'
    assert pickle.loads(pickle.dumps(a)) == a
    assert len({a, b}) == 1
    with pytest.raises(TypeError):
        a["a"] = "k5"  # type: ignore[index]
    assert a.replace({"a": "k5"})["a"] == "k5" and a["a"] == "k3"


@pytest.mark.parametrize("bad", [[1, 2], float("nan"), {"x": 1}, object()])
def test_arch_rejects_non_json_values(bad: object) -> None:
    with pytest.raises(ValueError, match="'op'"):
        Arch({"op": bad})


def test_arch_from_bad_json() -> None:
    with pytest.raises(ValueError, match="does not parse"):
        Arch.from_json("{")
    with pytest.raises(ValueError, match="must be an object"):
        Arch.from_json("[1]")


def test_choice_validation_names_the_bad_label_or_value() -> None:
    with pytest.raises(ValueError, match=r"'layer1'.*empty"):
        Choice("layer1", ())
    with pytest.raises(ValueError, match=r"'layer1'.*duplicate value 'k3'"):
        Choice("layer1", ("k3", "k5", "k3"))
    with pytest.raises(ValueError, match=r"'w'.*duplicate value True"):
        Choice("w", (1, True))
    with pytest.raises(ValueError, match=r"'layer1'.*\[1\]"):
        Choice("layer1", ("k3", [1]))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="label"):
        Choice("", ("a",))
    with pytest.raises(ValueError, match=r"low=0.1.*high=0.01"):
        FloatRange("lr", 0.1, 0.01)
    with pytest.raises(ValueError, match="log scale"):
        FloatRange("lr", 0.0, 1.0, log=True)


def test_space_rejects_duplicate_labels_and_no_choices() -> None:
    with pytest.raises(ValueError, match="duplicate choice label 'l0'"):
        _NoNet([op_choice("l0", ["a"]), op_choice("l0", ["b"])], name="x")
    with pytest.raises(ValueError, match="no choices"):
        _NoNet([], name="x")
    with pytest.raises(ValueError, match="JSON"):
        _NoNet([op_choice("l0", ["a"])], name="x", config={"f": object()})


def test_default_space_size_and_description() -> None:
    space = MNIST1DSpace()
    assert space.size == 5**6 * 3 == space.num_paths
    assert space.size >= 4096
    assert len([c for c in space.path_choices if c.kind == "op"]) >= 6
    assert all(len(c.values) >= 4 for c in space.path_choices if c.kind == "op")
    assert space.description


def test_edge_choices_make_a_nb201_cell() -> None:
    edges = edge_choices("cell", 4, ["none", "skip", "c1", "c3", "pool"])
    assert [e.label for e in edges] == [
        "cell/1<-0",
        "cell/2<-0",
        "cell/2<-1",
        "cell/3<-0",
        "cell/3<-1",
        "cell/3<-2",
    ]
    assert all(e.kind == "edge" for e in edges)
    assert CellSpace(with_hypers=False).size == 5**6 == 15_625
    with pytest.raises(ValueError, match="num_nodes"):
        edge_choices("cell", 1, ["a"])


def test_hyper_parameters_live_in_the_space_but_not_in_the_path() -> None:
    space = CellSpace()
    assert space.size == math.inf and space.num_paths == 15_625
    assert {c.label for c in space.hyper_choices} == {"batch_size", "lr"}
    arch = space.sample(np.random.default_rng(0))
    assert 1e-4 <= arch["lr"] <= 1e-1
    path = space.path(arch)
    assert set(path) == {c.label for c in space.path_choices}
    with pytest.raises(ValueError, match="continuous"):
        next(space.enumerate())


def test_sample_is_seeded_and_valid() -> None:
    space = MNIST1DSpace()
    a = [space.sample(np.random.default_rng(7)) for _ in range(2)]
    assert a[0] == a[1]
    rng = np.random.default_rng(1)
    archs = {space.sample(rng) for _ in range(200)}
    assert len(archs) > 150
    for arch in archs:
        assert space.validate(arch) == arch


def test_suggest_round_trips_through_a_fixed_trial_and_a_real_study() -> None:
    space = CellSpace()
    arch = space.sample(np.random.default_rng(3))
    assert space.suggest(optuna.trial.FixedTrial(arch.to_dict())) == arch
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
    trial = study.ask()
    got = space.suggest(trial)
    assert space.validate(got) == got
    assert trial.params == got.to_dict()
    dists = trial.distributions
    assert isinstance(dists["lr"], optuna.distributions.FloatDistribution) and dists["lr"].log
    assert dists["cell/1<-0"].choices == tuple(space.choice("cell/1<-0").values)


def test_enumerate_lists_every_arch_once() -> None:
    space = tiny_mnist1d()
    archs = list(space.enumerate())
    assert len(archs) == len(set(archs)) == space.size == 3**4 * 3
    with pytest.raises(ValueError, match="limit=10"):
        next(space.enumerate(limit=10))


def test_fingerprint_is_stable_and_sensitive() -> None:
    assert MNIST1DSpace().fingerprint() == MNIST1DSpace().fingerprint()
    fps = {
        MNIST1DSpace().fingerprint(),
        MNIST1DSpace(base_channels=16).fingerprint(),
        MNIST1DSpace(widths=(0.5, 1.0)).fingerprint(),
        MNIST1DSpace(ops=("k3_e2", "k5_e2", "k7_e2", "skip")).fingerprint(),
    }
    assert len(fps) == 4
    # Pinned: a change to how fingerprints are computed breaks resuming stored studies.
    assert len(MNIST1DSpace().fingerprint()) == 16
    assert json.loads(json.dumps(MNIST1DSpace().spec())) == MNIST1DSpace().spec()


def test_validate_names_the_offending_label_or_value() -> None:
    space = MNIST1DSpace()
    arch = space.sample(0).to_dict()
    with pytest.raises(ValueError, match="missing label 'width'"):
        space.validate({k: v for k, v in arch.items() if k != "width"})
    with pytest.raises(ValueError, match="label 'cell/1<-0' is not a choice"):
        space.validate({**arch, "cell/1<-0": "skip"})
    with pytest.raises(ValueError, match=r"value 'k9_e9' for 's1/l0'.*accepted"):
        space.validate({**arch, "s1/l0": "k9_e9"})
    with pytest.raises(ValueError, match=r"value 2.0 for 'width'"):
        space.validate({**arch, "width": 2.0})
    other = CellSpace().sample(0)
    with pytest.raises(ValueError, match="is not a choice of space 'mnist1d'"):
        space.validate(other)
    with pytest.raises(ValueError, match="bad space op"):
        MNIST1DSpace(ops=("k3_e2", "bad space op"))


def test_build_returns_plain_pytorch_with_fresh_init() -> None:
    space = tiny_mnist1d()
    arch = space.sample(0)
    torch.manual_seed(0)
    net = space.build(arch)
    assert not any(isinstance(m, SuperModule) for m in net.modules())
    assert all(
        type(m).__module__.startswith(("torch.", "nasflow.supernet._blocks"))
        for m in net.modules()
    )
    assert net(torch.randn(4, 1, 40)).shape == (4, 10)
    # Fresh init: fan-in of the stand-alone conv, not the supernet's widest one.
    conv = next(m for m in net.modules() if isinstance(m, nn.Conv1d) and m.in_channels > 1)
    bound = 1 / math.sqrt(conv.in_channels * conv.kernel_size[0])
    assert conv.weight.abs().max() <= bound + 1e-6
    assert conv.weight.abs().max() > 0.5 * bound
    # A full arch with hyper-parameters builds as well.
    cell = CellSpace()
    assert cell.build(cell.sample(1))(torch.randn(2, 1, 40)).shape == (2, 10)
