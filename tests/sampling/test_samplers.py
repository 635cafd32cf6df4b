from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nasflow.sampling import FairSampler, UniformSampler, fair_paths, make_sampler
from nasflow.sampling._uniform import uniform_path
from nasflow.search_spaces.mnist1d import MNIST1DSpace
from nasflow.space import SearchSpace, hyper_choice, op_choice, value_choice


class _Space(SearchSpace):
    def supernet(self):  # pragma: no cover - samplers never build networks
        raise NotImplementedError


def _space(counts: list[int]) -> _Space:
    choices = [op_choice(f"l{i}", [f"op{j}" for j in range(m)]) for i, m in enumerate(counts)]
    choices.append(hyper_choice("bs", (16, 32)))
    return _Space(choices, name="prop")


@settings(max_examples=60, deadline=None)
@given(m=st.integers(1, 7), layers=st.integers(1, 6), seed=st.integers(0, 2**32 - 1))
def test_equal_counts_train_every_op_exactly_once_per_step(m: int, layers: int, seed: int) -> None:
    space = _space([m] * layers)
    paths = fair_paths(space, np.random.default_rng(seed))
    assert len(paths) == m
    for c in space.path_choices:
        assert sorted(p[c.label] for p in paths) == sorted(c.values)
    assert all("bs" not in p for p in paths)


@settings(max_examples=60, deadline=None)
@given(counts=st.lists(st.integers(1, 7), min_size=1, max_size=6), seed=st.integers(0, 2**32))
def test_unequal_counts_follow_the_balance_rule(counts: list[int], seed: int) -> None:
    space = _space(counts)
    paths = fair_paths(space, np.random.default_rng(seed))
    big_m = max(counts)
    assert len(paths) == big_m
    for c in space.path_choices:
        m = len(c.values)
        seen = Counter(p[c.label] for p in paths)
        assert set(seen) == set(c.values)  # every choice trained in every step
        assert all(big_m // m <= n <= -(-big_m // m) for n in seen.values()), (m, seen)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**31), step=st.integers(0, 10**6))
def test_same_seed_and_step_give_the_same_paths(seed: int, step: int) -> None:
    space = _space([4, 3, 5])
    for cls in (FairSampler, UniformSampler):
        assert cls(space, seed).paths(step) == cls(space, seed).paths(step)


def test_steps_and_seeds_give_different_paths() -> None:
    space = MNIST1DSpace()
    s = FairSampler(space, 0)
    assert s.paths(0) != s.paths(1)
    assert FairSampler(space, 1).paths(0) != s.paths(0)
    assert s.paths_per_step == 5 and UniformSampler(space).paths_per_step == 1


def test_fair_paths_are_not_a_fixed_pattern() -> None:
    """The per-layer permutations are independent: paths mix ops across layers."""
    space = MNIST1DSpace()
    s = FairSampler(space, 0)
    uniform_layers = sum(len({p[c.label] for p in s.paths(0)}) for c in space.path_choices)
    assert uniform_layers == sum(min(5, len(c.values)) for c in space.path_choices)
    same_op_paths = sum(
        len({p[c.label] for c in space.path_choices if c.kind == "op"}) == 1
        for step in range(50)
        for p in s.paths(step)
    )
    assert same_op_paths < 5


def test_uniform_path_is_roughly_uniform() -> None:
    space = _space([4])
    rng = np.random.default_rng(0)
    counts = Counter(uniform_path(space, rng)["l0"] for _ in range(4000))
    assert all(900 < n < 1100 for n in counts.values())


def test_bad_sampler_arguments() -> None:
    space = _space([2])
    with pytest.raises(ValueError, match="'greedy'"):
        make_sampler("greedy", space)
    with pytest.raises(ValueError, match="-1"):
        FairSampler(space, -1)
    with pytest.raises(ValueError, match="step"):
        FairSampler(space).paths(-3)
    only_hypers = _Space([hyper_choice("bs", (1, 2))], name="h")
    with pytest.raises(ValueError, match="no path choices"):
        UniformSampler(only_hypers)
    assert value_choice("w", (0.5, 1.0)).in_path
