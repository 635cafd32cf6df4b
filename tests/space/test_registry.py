from __future__ import annotations

import json

import pytest

from nasflow.search_spaces.mnist1d import MNIST1DSpace
from nasflow.space import SearchSpace, rebuild_space, space_class
from nasflow.space._registry import registered_spaces
from tests._spaces import CellSpace, tiny_mnist1d


def _through_json(config: dict) -> dict:
    return json.loads(json.dumps(config))


@pytest.mark.parametrize("name", sorted(registered_spaces()))
def test_every_registered_space_is_rebuilt_from_its_stored_config(name: str) -> None:
    space = space_class(name)()
    assert isinstance(space, SearchSpace) and space.name == name
    again = rebuild_space(name, _through_json(space.config), space.fingerprint())
    assert type(again) is type(space) and again.fingerprint() == space.fingerprint()


def test_a_space_built_with_arguments_is_rebuilt_from_its_config() -> None:
    space = tiny_mnist1d()
    again = rebuild_space("mnist1d", _through_json(space.config), space.fingerprint())
    assert again.fingerprint() == space.fingerprint()
    assert again.ops == ("k3_e2", "k5_e2", "skip") and again.base_channels == 8
    assert again.fingerprint() != MNIST1DSpace().fingerprint()


def test_from_config_leaves_out_derived_keys_and_names_bad_configs() -> None:
    assert MNIST1DSpace.from_config({"input_shape": [1, 40]}).fingerprint() == (
        MNIST1DSpace().fingerprint()
    )
    with pytest.raises(ValueError, match=r"must be a mapping, got \[1, 2\]"):
        MNIST1DSpace.from_config([1, 2])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="'k9'"):
        MNIST1DSpace.from_config({"ops": ["k9"]})
    assert CellSpace.from_config({"channels": 6, "with_hypers": False}).config == {"channels": 6}


def test_unknown_names_and_fingerprint_mismatches_are_refused() -> None:
    with pytest.raises(ValueError, match=r"unknown space 'nope'; registered spaces: \[.*mnist1d"):
        rebuild_space("nope")
    config = _through_json(tiny_mnist1d().config)
    with pytest.raises(ValueError, match="not the recorded 'feedfacefeedface'"):
        rebuild_space("mnist1d", config, "feedfacefeedface")
    with pytest.raises(ValueError, match="builds a space named 'test-cell', not 'mnist1d'"):
        rebuild_space("mnist1d", {"channels": 4}, cls=CellSpace)


def test_an_unregistered_space_says_what_to_do() -> None:
    from nasflow.space import space_class

    with pytest.raises(ValueError, match="unknown space 'nope'") as info:
        space_class("nope")
    message = str(info.value)
    assert "\n" not in message
    for way in ("nasflow.spaces", "entry point", "study file", "nasflow.export_winner"):
        assert way in message, message
