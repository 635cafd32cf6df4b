from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nasflow.sampling import (
    FairSampler,
    UniformSampler,
    fair_depth_paths,
    fair_paths,
    make_sampler,
)
from nasflow.sampling._fair_depth import spread_counts
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


# ------------------------------------------------------------- fair, skips spread in depth
def _skip_space(layers: int, m: int, widths: int = 4) -> _Space:
    ops = ["skip", *[f"k{j}" for j in range(m - 1)]]
    choices = [op_choice(f"l{i}", ops) for i in range(layers)]
    choices.append(value_choice("width", tuple(range(widths))))
    return _Space(choices, name="skips")


def _depth(path) -> int:  # type: ignore[no-untyped-def]
    return sum(1 for k, v in path.items() if k != "width" and v != "skip")


@settings(max_examples=60, deadline=None)
@given(m=st.integers(2, 6), layers=st.integers(1, 7), seed=st.integers(0, 2**32 - 1))
def test_fair_depth_trains_every_op_exactly_once_per_step(m: int, layers: int, seed: int) -> None:
    space = _skip_space(layers, m, widths=max(1, m - 1))
    paths = fair_depth_paths(space, np.random.default_rng(seed))
    assert len(paths) == m
    for c in space.path_choices:  # every layer a permutation; the width balanced
        counts = Counter(p[c.label] for p in paths)
        assert set(counts) == set(c.values) and max(counts.values()) - min(counts.values()) <= 1


@settings(max_examples=40, deadline=None)
@given(total=st.integers(0, 12), parts=st.integers(1, 6), seed=st.integers(0, 2**32 - 1))
def test_spread_counts_is_a_composition(total: int, parts: int, seed: int) -> None:
    counts = spread_counts(total, parts, np.random.default_rng(seed))
    assert counts.shape == (parts,) and counts.min() >= 0 and counts.sum() == total


def test_spread_counts_is_uniform_over_compositions() -> None:
    # 3 into 3 parts: C(5, 2) = 10 compositions, each drawn with probability 1/10.
    rng = np.random.default_rng(0)
    seen = Counter(tuple(spread_counts(3, 3, rng)) for _ in range(20_000))
    assert len(seen) == 10
    assert all(abs(n / 20_000 - 0.1) < 0.01 for n in seen.values())


def test_fair_depth_spreads_the_depths_and_keeps_each_skip_uniform_over_paths() -> None:
    """The same mean depth as the fair sampler's, more spread; each layer's skip on each
    path with probability 1/M."""
    space = _skip_space(6, 5)
    depths: dict[str, list[int]] = {"fair": [], "fair-depth": []}
    skip_at = Counter()
    for name in depths:
        sampler = make_sampler(name, space, seed=3)
        for step in range(3000):
            paths = sampler.paths(step)
            depths[name] += [_depth(p) for p in paths]
            if name == "fair-depth":
                skip_at.update((lab, i) for i, p in enumerate(paths) for lab, v in p.items()
                               if v == "skip")  # fmt: skip
    fair, spread = np.array(depths["fair"]), np.array(depths["fair-depth"])
    assert abs(fair.mean() - 4.8) < 0.03 and abs(spread.mean() - 4.8) < 0.03
    # Independent permutations: each path's skips ~ Binomial(6, 1/5), variance 0.96; a
    # uniform composition of 6 into 5 parts: n(n + k)(k - 1) / (k^2 (k + 1)) = 1.76.
    assert abs(fair.var() - 0.96) < 0.1 and abs(spread.var() - 1.76) < 0.1
    assert (spread <= 3).mean() > 1.5 * (fair <= 3).mean()
    shares = np.array(list(skip_at.values())) / 3000
    assert len(shares) == 6 * 5 and np.all(np.abs(shares - 0.2) < 0.03)


def test_fair_depth_leaves_a_space_without_skips_as_the_fair_sampler_draws_it() -> None:
    space = _space([4, 4, 4])
    for seed in range(5):
        a = fair_depth_paths(space, np.random.default_rng(seed))
        b = fair_paths(space, np.random.default_rng(seed))
        assert [dict(p) for p in a] == [dict(p) for p in b]


def test_the_strictly_fair_samplers_are_the_fair_sampler_and_its_variants() -> None:
    from nasflow.sampling import SAMPLERS, STRICTLY_FAIR

    assert STRICTLY_FAIR == ("fair", "fair-depth") and "uniform" in SAMPLERS
