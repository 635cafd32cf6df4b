from __future__ import annotations

import csv

import numpy as np
import pytest
import torch
from torch import nn

from nasflow.cli import main as cli_main
from nasflow.search_spaces.nas_bench_201 import (
    EDGES,
    OPS,
    NASBench201Space,
    NB201Cell,
    arch_to_string,
    edge_label,
    string_to_arch,
)
from nasflow.space import Arch, edge_choices, rebuild_space
from nasflow.supernet import SuperModule
from tests._spaces import train_a_little

BEST = (
    "|nor_conv_3x3~0|+|nor_conv_3x3~0|nor_conv_3x3~1|"
    "+|skip_connect~0|nor_conv_3x3~1|nor_conv_1x1~2|"
)
ALL_NONE = "|none~0|+|none~0|none~1|+|none~0|none~1|none~2|"
# Node 2 gets only `none` edges but still feeds node 3 through a conv.
DEAD_NODE = "|nor_conv_3x3~0|+|none~0|none~1|+|skip_connect~0|none~1|nor_conv_3x3~2|"


def tiny(channels: int = 4) -> NASBench201Space:
    return NASBench201Space(channels=channels, cells_per_stage=1)


def test_space_is_the_published_cell_space() -> None:
    space = NASBench201Space()
    assert space.size == 15_625 and space.num_paths == 15_625
    assert [c.label for c in space.choices] == [c.label for c in edge_choices("cell", 4, OPS)]
    assert [edge_label(i, j) for i, j in EDGES] == list(space.labels)
    assert all(c.kind == "edge" and c.values == OPS for c in space.choices)
    assert space.config == {
        "channels": 16,
        "cells_per_stage": 5,
        "num_classes": 10,
        "in_channels": 3,
        "image_size": 32,
        "input_shape": [3, 32, 32],
    }
    assert space.fingerprint() != tiny().fingerprint()


def test_the_registry_rebuilds_it_from_its_config() -> None:
    for space in (NASBench201Space(), tiny(), NASBench201Space(num_classes=100, image_size=16)):
        back = rebuild_space("nb201", space.config, space.fingerprint())
        assert isinstance(back, NASBench201Space) and back.config == space.config


@pytest.mark.parametrize(
    "kwargs", [{"channels": 0}, {"cells_per_stage": -1}, {"num_classes": 2.5}, {"channels": True}]
)
def test_bad_constructor_arguments_name_the_value(kwargs) -> None:
    ((name, value),) = kwargs.items()
    with pytest.raises(ValueError, match=rf"{name} must be an int >= 1, got {value!r}"):
        NASBench201Space(**kwargs)


@pytest.mark.slow
def test_every_row_of_the_benchmark_table_round_trips(shared_data_file) -> None:
    space = NASBench201Space()
    with shared_data_file("nb201_cifar10.csv").open(newline="") as f:
        keys = [row["arch"] for row in csv.DictReader(f)]
    assert len(keys) == 15_625
    for key in keys:
        arch = space.from_string(key)
        assert space.validate(arch) == arch
        assert space.to_string(arch) == key
    assert {space.to_string(a) for a in space.enumerate()} == set(keys)


def test_string_order_is_target_node_then_source_node() -> None:
    arch = string_to_arch(DEAD_NODE)
    assert arch[edge_label(1, 0)] == "nor_conv_3x3"
    assert arch[edge_label(2, 0)] == arch[edge_label(2, 1)] == "none"
    assert arch[edge_label(3, 0)] == "skip_connect"
    assert arch[edge_label(3, 2)] == "nor_conv_3x3"
    assert arch_to_string(arch) == DEAD_NODE


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("|none~0|+|none~0|none~1|", "2 node groups"),
        ("|none~0|+|none~0|none~1|+|none~0|none~1|", "must hold 3 edges"),
        ("none~0|+|none~0|none~1|+|none~0|none~1|none~2|", "must hold 1 edges"),
        ("|none~0|+|none~1|none~0|+|none~0|none~1|none~2|", "edge 'none~1' must be 'none~0'"),
        ("|conv~0|+|none~0|none~1|+|none~0|none~1|none~2|", "unknown op 'conv'"),
        ("|none0|+|none~0|none~1|+|none~0|none~1|none~2|", "edge 'none0'"),
    ],
)
def test_bad_strings_are_refused_with_the_string(text: str, match: str) -> None:
    with pytest.raises(ValueError, match=match) as info:
        NASBench201Space().from_string(text)
    assert repr(text) in str(info.value)


def test_to_string_validates_the_arch() -> None:
    space = NASBench201Space()
    arch = string_to_arch(BEST).to_dict()
    with pytest.raises(ValueError, match="'conv5'"):
        space.to_string({**arch, edge_label(3, 1): "conv5"})
    with pytest.raises(ValueError, match="missing label 'cell/3<-2'"):
        space.to_string({k: v for k, v in arch.items() if k != edge_label(3, 2)})


def test_json_round_trip_keeps_the_genotype() -> None:
    space = NASBench201Space()
    rng = np.random.default_rng(0)
    for _ in range(50):
        arch = space.sample(rng)
        back = Arch.from_json(arch.to_json())
        assert back == arch and space.to_string(back) == space.to_string(arch)


def test_extract_equals_the_supernet_on_that_path() -> None:
    torch.manual_seed(0)
    space = tiny()
    supernet = space.supernet()
    train_a_little(supernet, space, (3, 8, 8), steps=2)
    supernet.eval()
    x = torch.randn(4, 3, 8, 8)
    rng = np.random.default_rng(1)
    archs = [space.sample(rng) for _ in range(10)]
    archs += [space.from_string(s) for s in (BEST, ALL_NONE, DEAD_NODE)]
    for arch in archs:
        with torch.no_grad():
            want = supernet(x, arch)
            net = supernet.extract(arch)
            got = net(x)
        assert want.shape == (4, 10)
        assert not net.training
        assert not any(isinstance(m, SuperModule) for m in net.modules())
        assert (got - want).abs().max().item() <= 1e-6, space.to_string(arch)


def test_build_has_the_modules_of_extract_and_fresh_weights() -> None:
    space = tiny()
    supernet = space.supernet()
    for text in (BEST, DEAD_NODE):
        arch = space.from_string(text)
        built, extracted = space.build(arch), supernet.extract(arch)
        want = {k: v.shape for k, v in extracted.state_dict().items()}
        assert {k: v.shape for k, v in built.state_dict().items()} == want
        assert not any(isinstance(m, SuperModule) for m in built.modules())
        assert built(torch.randn(2, 3, 8, 8)).shape == (2, 10)


def test_none_edges_hold_no_module_and_an_all_none_cell_ignores_its_input() -> None:
    space = tiny()
    dead = space.build(space.from_string(DEAD_NODE))
    cells = [m for m in dead.modules() if isinstance(m, NB201Cell)]
    assert len(cells) == 3  # N=1 cell per stage
    assert all(sorted(c.edges) == ["1_0", "3_0", "3_2"] for c in cells)
    assert all(c.genotype == DEAD_NODE for c in cells)
    empty = space.build(space.from_string(ALL_NONE)).eval()
    assert not any(len(c.edges) for c in empty.modules() if isinstance(c, NB201Cell))
    x = torch.randn(3, 3, 8, 8)
    with torch.no_grad():
        out = empty(x)
        assert torch.allclose(out, empty(torch.randn(3, 3, 8, 8)))  # cells output zeros
    assert torch.isfinite(out).all()


def test_published_network_shapes_and_size() -> None:
    """C=16, N=5: 15 cells, 2 reductions, 16/32/64 channels on 32x32 inputs."""
    space = NASBench201Space()
    net = space.build(space.from_string(BEST))
    cells = [m for m in net.modules() if isinstance(m, NB201Cell)]
    assert len(cells) == 15
    convs = [m for m in cells[0].modules() if isinstance(m, nn.Conv2d)]
    assert [c.in_channels for c in convs] == [16] * 5  # five conv edges
    assert net[-1].in_features == 64
    with torch.no_grad():
        assert net.eval()(torch.randn(2, 3, 32, 32)).shape == (2, 10)
    # Widest cell (all 3x3 convs) has more parameters than the best one, an empty one fewer.
    params = {
        text: sum(p.numel() for p in space.build(space.from_string(text)).parameters())
        for text in (
            BEST,
            ALL_NONE,
            "|nor_conv_3x3~0|+" + "|nor_conv_3x3~0|nor_conv_3x3~1|+"
            "|nor_conv_3x3~0|nor_conv_3x3~1|nor_conv_3x3~2|",
        )
    }
    values = list(params.values())
    assert values[1] < values[0] < values[2]


@pytest.mark.slow
def test_a_study_searches_it_on_a_cifar10_subset(shared_data_file, tmp_path) -> None:
    """Phase 1 trains the supernet on CIFAR-10 images read from the zip, phase 2 scores
    cells from it, phase 3 retrains the winner built from its genotype."""
    from nasflow.data import load_cifar10
    from nasflow.pipeline import StudyRunner
    from nasflow.search import StudySpec
    from nasflow.train import SupernetConfig, TrainConfig

    zip_path = shared_data_file("cifar10-jpg.zip")
    spec = StudySpec(
        name="nb201",
        space=tiny(channels=4),
        data=lambda: load_cifar10(zip_path, train_limit=60, test_limit=20, val_fraction=0.2),
        objectives=("accuracy", "params"),
        supernet=SupernetConfig(epochs=1, batch_size=16),
        n_trials=3,
        bn_batches=1,
        train=TrainConfig(epochs=1, batch_size=16),
    )
    runner = StudyRunner(spec, out_dir=tmp_path, progress=False, log=lambda _: None)
    result = runner.run()
    info = result.study.user_attrs["nasflow:supernet"]
    assert info["paths_per_step"] == 5 and all(np.isfinite(info["losses"]))
    counts = {n for label, _, n in info["op_counts"] if label.startswith("cell/")}
    assert counts == {3}  # 3 fair steps (48 images / 16), each op trained once per step
    done = result.study.get_trials()
    assert len(done) == 3 and all(t.state.name == "COMPLETE" for t in done)
    for t in done:
        arch = Arch.from_json(t.user_attrs["arch"])
        net = spec.space.build(arch)
        assert t.values[1] == sum(p.numel() for p in net.parameters())
    assert result.winners and 0.0 <= result.winners[0].test_accuracy <= 1.0


def test_nasflow_spaces_lists_it(capsys) -> None:
    assert cli_main(["spaces", "nb201"]) == 0
    line = next(s for s in capsys.readouterr().out.splitlines() if s.startswith("nb201\t"))
    assert "15,625 architectures" in line and "NAS-Bench-201" in line
