from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import torch
import torchvision
from torch import nn

from nasflow.cli import main as cli_main
from nasflow.sampling import FairSampler
from nasflow.search import load_study_file
from nasflow.search_spaces.mbconv import (
    SKIP,
    STAGES,
    MBConv,
    MBConvSpace,
    make_op,
    parse_op,
)
from nasflow.space import Arch, rebuild_space
from nasflow.supernet import LayerChoice, SuperModule
from tests._spaces import train_a_little

MBCONV_OPS = ("k3_e3", "k3_e6", "k5_e3", "k5_e6", "k7_e3", "k7_e6")


def tiny(**kwargs) -> MBConvSpace:
    """Width 0.25, half depth, 32x32: 10 layers, 8 to 80 channels."""
    args = {
        "image_size": 32,
        "num_classes": 10,
        "width_mult": 0.25,
        "depth": 0.5,
        "last_channels": 32,
    }
    return MBConvSpace(**{**args, **kwargs})


def _same_op(space: MBConvSpace, op: str) -> Arch:
    """Every layer runs ``op`` (or its first op if ``op`` is not offered there)."""
    return Arch({layer.label: op if op in layer.ops else layer.ops[0] for layer in space.layers})


def test_default_space_is_mobilenet_v2_with_six_or_seven_ops_per_layer() -> None:
    space = MBConvSpace()
    labels = [
        f"s{s}/b{b}" for s, (_, n, _) in enumerate(STAGES, start=1) if s > 1 for b in range(n)
    ]
    assert list(space.labels) == labels and len(labels) == 16
    counts = [len(c.values) for c in space.choices]
    assert counts == [6 if label.endswith("/b0") else 7 for label in labels]
    assert space.size == 6**6 * 7**10 == space.num_paths
    assert all(c.kind == "op" and c.values[:6] == MBCONV_OPS for c in space.choices)
    assert space.config == {
        "image_size": 224,
        "num_classes": 1000,
        "width_mult": 1.0,
        "depth": 1.0,
        "kernels": [3, 5, 7],
        "expansions": [3, 6],
        "skip": True,
        "small_input": False,
        "in_channels": 3,
        "last_channels": 1280,
        "dropout": 0.2,
        "input_shape": [3, 224, 224],
    }
    assert tiny().config["small_input"] is True and tiny().config["input_shape"] == [3, 32, 32]
    assert space.fingerprint() != tiny().fingerprint()


@pytest.mark.parametrize("width", [1.0, 0.5])
def test_all_k3_e6_without_skips_is_torchvision_mobilenet_v2(width: float) -> None:
    """Same channels, strides and parameter order: torchvision's weights load by position
    and give the same logits."""
    space = MBConvSpace(width_mult=width)
    net = space.build(_same_op(space, "k3_e6")).eval()
    ref = torchvision.models.mobilenet_v2(width_mult=width).eval()
    ours, theirs = net.state_dict(), ref.state_dict()
    assert [v.shape for v in ours.values()] == [v.shape for v in theirs.values()]
    net.load_state_dict(dict(zip(ours, theirs.values(), strict=True)))
    x = torch.randn(2, 3, 64, 64)
    with torch.no_grad():
        assert (net(x) - ref(x)).abs().max().item() <= 1e-5


@pytest.mark.parametrize(("image_size", "side"), [(224, 7), (32, 4)])
def test_imagenet_inputs_downsample_by_32_and_cifar_inputs_by_8(image_size, side) -> None:
    space = MBConvSpace(image_size=image_size, width_mult=0.25, depth=0.25, last_channels=16)
    assert space.stage_strides() == ([1, 1, 2, 2, 1, 2, 1] if side == 4 else [1, 2, 2, 2, 1, 2, 1])
    features = space.build(space.sample(0))[:-4].eval()  # up to the last 1x1 conv
    with torch.no_grad():
        out = features(torch.randn(1, 3, image_size, image_size))
    assert out.shape == (1, 16, side, side)


def test_the_registry_rebuilds_it_from_its_config() -> None:
    spaces = (
        MBConvSpace(),
        tiny(),
        tiny(kernels=[3, 5], expansions=[4], skip=False, dropout=0.0),
        MBConvSpace(image_size=32, small_input=False, in_channels=1, width_mult=0.35),
    )
    for space in spaces:
        back = rebuild_space("mbconv", space.config, space.fingerprint())
        assert isinstance(back, MBConvSpace) and back.config == space.config
        assert back.labels == space.labels and back.choices == space.choices


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"image_size": 0}, "image_size must be an int >= 1, got 0"),
        ({"num_classes": 2.5}, "num_classes must be an int >= 1, got 2.5"),
        ({"last_channels": True}, "last_channels must be an int >= 1, got True"),
        ({"width_mult": 0}, "width_mult must be a finite number > 0, got 0"),
        ({"depth": float("nan")}, "depth must be a finite number > 0, got nan"),
        ({"kernels": [3, 4]}, r"kernels must hold odd ints >= 1, got 4 in \[3, 4\]"),
        ({"kernels": []}, r"kernels must be a non-empty list of ints, got \[\]"),
        ({"expansions": [3, 3]}, r"expansions has duplicates: \[3, 3\]"),
        ({"expansions": "36"}, "expansions must be a non-empty list of ints, got '36'"),
        ({"skip": 1}, "skip must be a bool, got 1"),
        ({"small_input": "yes"}, "small_input must be a bool or None, got 'yes'"),
        ({"dropout": 1.0}, r"dropout must be a number in \[0, 1\), got 1.0"),
    ],
)
def test_bad_constructor_arguments_name_the_value(kwargs, match) -> None:
    with pytest.raises(ValueError, match=match):
        MBConvSpace(**kwargs)


def test_bad_ops_are_refused() -> None:
    layer = MBConvSpace().layers[0]
    for bad in ("k3e6", "c3_e6", "k3_ex", "k_e6"):
        with pytest.raises(ValueError, match=repr(bad)):
            parse_op(bad)
    with pytest.raises(ValueError, match="'skip' does not fit layer 's2/b0'"):
        make_op(SKIP, layer)
    with pytest.raises(ValueError, match="value 'skip' for 's2/b0'"):
        MBConvSpace().validate({**_same_op(MBConvSpace(), "k3_e3"), "s2/b0": SKIP})


@pytest.mark.parametrize(
    "space",
    [MBConvSpace(), tiny(), tiny(width_mult=1.0), MBConvSpace(width_mult=0.25, depth=0.5)],
    ids=["imagenet", "tiny-cifar", "cifar", "tiny-imagenet"],
)
def test_skip_is_offered_exactly_where_input_and_output_shapes_match(space) -> None:
    """Shapes are measured: a forward hook on every searchable layer of a network that
    runs an MBConv op everywhere."""
    net = space.build(_same_op(space, "k3_e3")).eval()
    seen: dict[str, bool] = {}
    searchable = net[2 : 2 + len(space.layers)]
    for layer, module in zip(space.layers, searchable, strict=True):
        assert isinstance(module, MBConv)
        module.register_forward_hook(
            lambda m, args, out, label=layer.label: seen.__setitem__(
                label, args[0].shape == out.shape
            )
        )
    with torch.no_grad():
        net(torch.randn(1, 3, space.image_size, space.image_size))
    offered = {layer.label: SKIP in layer.ops for layer in space.layers}
    assert offered == seen
    assert any(offered.values()) and not all(offered.values())
    no_skip = MBConvSpace.from_config({**space.config, "skip": False})
    assert all(c.values == MBCONV_OPS for c in no_skip.choices)


def test_narrow_cifar_space_offers_skip_on_a_stage_first_block() -> None:
    """At width 0.25 the 16- and 24-channel stages both round to 8 channels, and with the
    CIFAR strides the 24-channel stage's first block keeps the resolution."""
    space = tiny()
    first = space.layers[0]
    assert (first.label, first.c_in, first.c_out, first.stride) == ("s2/b0", 8, 8, 1)
    assert SKIP in first.ops
    assert SKIP not in MBConvSpace(width_mult=0.25).layers[0].ops  # stride 2 there


def test_json_round_trip() -> None:
    space = MBConvSpace()
    rng = np.random.default_rng(0)
    for _ in range(50):
        arch = space.sample(rng)
        back = Arch.from_json(arch.to_json())
        assert back == arch and space.validate(back) == arch


@pytest.mark.slow
def test_extract_equals_the_supernet_on_that_path() -> None:
    torch.manual_seed(0)
    space = tiny()
    supernet = space.supernet()
    bn = next(m for m in supernet.modules() if isinstance(m, nn.BatchNorm2d))
    train_a_little(supernet, space, (3, 32, 32), steps=3)
    assert bn.num_batches_tracked.item() > 0 and not torch.all(bn.running_var == 1)
    supernet.eval()
    x = torch.randn(4, 3, 32, 32)
    rng = np.random.default_rng(1)
    archs = [space.sample(rng) for _ in range(10)]
    archs += [_same_op(space, op) for op in (SKIP, "k7_e6", "k3_e3")]
    for arch in archs:
        with torch.no_grad():
            want = supernet(x, arch)
            net = supernet.extract(arch)
            got = net(x)
        assert want.shape == (4, 10)
        assert not net.training
        assert not any(isinstance(m, SuperModule) for m in net.modules())
        assert (got - want).abs().max().item() <= 1e-6, arch.to_json()


def test_each_op_has_its_own_weights_and_build_matches_extract() -> None:
    space = tiny()
    supernet = space.supernet()
    choices = [m for m in supernet.modules() if isinstance(m, LayerChoice)]
    assert [c.label for c in choices] == list(space.labels)
    assert all(list(c.candidates) == list(space.choice(c.label).values) for c in choices)
    weights = [p.data_ptr() for c in choices for p in c.parameters()]
    assert len(weights) == len(set(weights))  # no sharing across kernels or expansions
    for arch in (space.sample(3), _same_op(space, SKIP)):
        built, extracted = space.build(arch), supernet.extract(arch)
        want = {k: v.shape for k, v in extracted.state_dict().items()}
        assert {k: v.shape for k, v in built.state_dict().items()} == want
        assert not any(isinstance(m, SuperModule) for m in built.modules())
        assert built(torch.randn(2, 3, 32, 32)).shape == (2, 10)
    small = sum(p.numel() for p in space.build(_same_op(space, "k3_e3")).parameters())
    large = sum(p.numel() for p in space.build(_same_op(space, "k7_e6")).parameters())
    assert small < large


def test_fair_sampler_with_six_and_seven_choices_per_layer() -> None:
    """M = 7 paths per step: every op of a 7-choice layer once, every op of a 6-choice
    layer once or twice (one of them twice)."""
    space = tiny()
    counts = {c.label: len(c.values) for c in space.choices}
    assert set(counts.values()) == {6, 7}
    sampler = FairSampler(space, seed=0)
    assert sampler.paths_per_step == 7
    for step in range(20):
        paths = sampler.paths(step)
        assert len(paths) == 7
        for label, m in counts.items():
            used = Counter(p[label] for p in paths)
            assert set(used) == set(space.choice(label).values)
            assert sorted(used.values()) == ([1] * 7 if m == 7 else [1] * 5 + [2])


@pytest.mark.slow
def test_a_study_searches_it_on_a_cifar10_subset(shared_data_file, tmp_path) -> None:
    """Phase 1 trains the supernet on CIFAR-10 images read from the zip with 7 fair paths
    per step, phase 2 scores paths from it, phase 3 retrains the winner."""
    from nasflow.data import load_cifar10
    from nasflow.pipeline import StudyRunner
    from nasflow.search import StudySpec
    from nasflow.train import SupernetConfig, TrainConfig

    zip_path = shared_data_file("cifar10-jpg.zip")
    spec = StudySpec(
        name="mbconv",
        space=tiny(depth=0.25),
        data=lambda: load_cifar10(zip_path, train_limit=60, test_limit=20, val_fraction=0.2),
        objectives=("accuracy", "params"),
        supernet=SupernetConfig(epochs=1, batch_size=16),
        n_trials=3,
        bn_batches=1,
        train=TrainConfig(epochs=1, batch_size=16),
        cost="measure",  # time the 3 candidates, not every op of the space
    )
    runner = StudyRunner(spec, out_dir=tmp_path, progress=False, log=lambda _: None)
    result = runner.run()
    info = result.study.user_attrs["nasflow:supernet"]
    assert info["paths_per_step"] == 7 and all(np.isfinite(info["losses"]))
    per_op = Counter()
    for label, _, n in info["op_counts"]:
        per_op[len(spec.space.choice(label).values)] += n
    # 3 fair steps (48 images / 16) of 7 paths: 7 op uses per layer and step.
    layers = Counter(len(c.values) for c in spec.space.choices)
    assert {m: per_op[m] for m in layers} == {m: 3 * 7 * k for m, k in layers.items()}
    done = result.study.get_trials()
    assert len(done) == 3 and all(t.state.name == "COMPLETE" for t in done)
    for t in done:
        net = spec.space.build(Arch.from_json(t.user_attrs["arch"]))
        assert t.values[1] == sum(p.numel() for p in net.parameters())
    assert result.winners and 0.0 <= result.winners[0].test_accuracy <= 1.0


def test_the_ready_study_file_loads() -> None:
    spec = load_study_file(Path(__file__).resolve().parents[2] / "studies" / "mbconv_cifar10.py")
    assert spec.space.name == "mbconv" and spec.space.config["input_shape"] == [3, 16, 16]
    assert spec.space.config["small_input"] is True and spec.supernet.sampler == "fair"
    assert rebuild_space("mbconv", spec.space.config).fingerprint() == spec.space.fingerprint()


def test_the_gpu_study_file_is_the_full_size_space_at_32() -> None:
    spec = load_study_file(
        Path(__file__).resolve().parents[2] / "studies" / "mbconv_cifar10_gpu.py"
    )
    assert spec.space.config["input_shape"] == [3, 32, 32] and spec.space.config["width_mult"] == 1
    assert len(spec.space.choices) == 16 and spec.supernet.sampler == "fair"
    largest = Arch({c.label: "k3_e6" for c in spec.space.choices})
    assert sum(p.numel() for p in spec.space.build(largest).parameters()) == 2_236_682


def test_nasflow_spaces_lists_it(capsys) -> None:
    assert cli_main(["spaces", "mbconv"]) == 0
    line = next(s for s in capsys.readouterr().out.splitlines() if s.startswith("mbconv\t"))
    assert f"{6**6 * 7**10:,} architectures" in line and "MobileNetV2 MBConv" in line
