"""The space's largest architecture (B7's baseline, the anchors' fallback)."""

from __future__ import annotations

import numpy as np

from nasflow.search_spaces.gpt2 import GPT2Space
from nasflow.search_spaces.mnist1d import MNIST1DSpace
from nasflow.space import largest_arch, n_params


def test_the_largest_architecture_has_the_most_parameters_of_a_sample() -> None:
    space = MNIST1DSpace(base_channels=4, layers_per_stage=2)
    largest = largest_arch(space)
    assert set(largest) == {c.label for c in space.choices}
    top = n_params(space, largest)
    rng = np.random.default_rng(0)
    sample = [space.sample(rng) for _ in range(60)]
    assert all(n_params(space, a) <= top for a in sample)
    # Every single change from it loses parameters (or changes nothing).
    for c in space.path_choices:
        for v in c.values:
            assert n_params(space, largest.replace({c.label: v})) <= top


def test_fixed_choices_keep_their_value() -> None:
    space = MNIST1DSpace(base_channels=4, layers_per_stage=2)
    narrow = largest_arch(space, {"width": 0.5})
    assert narrow["width"] == 0.5
    assert n_params(space, narrow) < n_params(space, largest_arch(space))


def test_parameters_are_counted_without_building_real_tensors() -> None:
    space = GPT2Space(
        vocab_size=11,
        block_size=8,
        n_layer=(1, 2),
        n_embd=(8, 16),
        n_head=(1, 2),
        mlp_ratio=(1, 2),
    )
    largest = largest_arch(space)
    assert (largest["n_layer"], largest["n_embd"]) == (2, 16)
    built = sum(p.numel() for p in space.build(largest).parameters())
    assert n_params(space, largest) == built
