"""Zero-cost anchors: the front they are chosen from, and their settings."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from nasflow.cost import CostModel
from nasflow.errors import ConfigError
from nasflow.pipeline import spread_in_log_flops, zero_cost_front
from nasflow.search import Anchors, StudyFileError
from nasflow.search_spaces.gpt2 import GPT2Space
from nasflow.search_spaces.mnist1d import MNIST1DSpace
from tests._study_template import write_study


def _sample(space, n: int, seed: int) -> list:
    """The distinct random architectures ``zero_cost_front`` draws (same seed, same order)."""
    rng = np.random.default_rng(seed)
    found: dict = {}
    while len(found) < n:
        found.setdefault(space.sample(rng))
    return list(found)


def test_the_anchors_span_the_zero_cost_front_of_the_sample() -> None:
    space = MNIST1DSpace(base_channels=4, layers_per_stage=2)
    anchors = zero_cost_front(space, n=3, sample=40, seed=1, batch_size=32)
    assert len(anchors) == 3 and len({a.arch for a in anchors}) == 3
    model = CostModel.for_space(space, batch_size=32, storage_url="sqlite://", share=False)
    sample = _sample(space, 40, seed=1)
    params = {a: model.params(a) for a in sample}
    flops = {a: model.flops(a).total for a in sample}
    assert all(a.arch in params for a in anchors)
    # Cheapest first; along the front more FLOPs buy more parameters.
    assert [a.flops for a in anchors] == sorted(a.flops for a in anchors)
    assert [a.params for a in anchors] == sorted(a.params for a in anchors)
    for a in anchors:
        assert (a.params, a.flops) == (params[a.arch], flops[a.arch])
        dominated_by = [
            b
            for b in sample
            if params[b] >= a.params
            and flops[b] <= a.flops
            and (params[b] > a.params or flops[b] < a.flops)
        ]
        assert dominated_by == [], f"anchor {a.arch} is dominated in the sample"
    # Both ends of the front: the sample's largest and its cheapest architecture.
    assert anchors[-1].params == max(params.values())
    assert anchors[0].flops == min(flops.values())


def test_the_anchors_are_reproducible_from_the_seed() -> None:
    space = MNIST1DSpace(base_channels=4, layers_per_stage=2)
    first = zero_cost_front(space, n=4, sample=64, seed=3, batch_size=32)
    again = zero_cost_front(space, n=4, sample=64, seed=3, batch_size=32)
    assert first == again


def test_the_anchors_of_a_token_space_are_traced_with_token_ids() -> None:
    # The op tracer runs the supernet on a meta input of the space's own dtype: a float
    # input cannot index a language model's embedding (run 23 found the Shakespeare study
    # crashing there before its supernet).
    space = GPT2Space(vocab_size=13, block_size=8, n_layer=(1, 2), n_embd=(8, 16), n_head=(2,))
    assert space.input_dtype == torch.long
    anchors = zero_cost_front(space, n=2, sample=16, seed=0, batch_size=4)
    assert 1 <= len(anchors) <= 2
    assert all(a.params > 0 and a.flops > 0 for a in anchors)
    assert CostModel.for_space(space, storage_url="sqlite://", share=False).input_dtype == (
        torch.long
    )


def test_a_space_config_names_its_input_dtype_or_is_refused() -> None:
    assert MNIST1DSpace().input_dtype == torch.float32
    space = GPT2Space(vocab_size=13, block_size=8, n_layer=(1,), n_embd=(8,), n_head=(2,))
    space.config["input_dtype"] = "int8"
    with pytest.raises(ConfigError, match="config input_dtype 'int8'"):
        _ = space.input_dtype


def test_a_front_smaller_than_n_is_returned_whole() -> None:
    space = MNIST1DSpace(base_channels=4, layers_per_stage=2)
    anchors = zero_cost_front(space, n=50, sample=50, seed=0, batch_size=32)
    assert 1 <= len(anchors) < 50
    assert [a.flops for a in anchors] == sorted(a.flops for a in anchors)


def test_a_spread_reaching_less_far_up_the_front_stops_lower() -> None:
    """``spread_in_log_flops``: the members nearest to points evenly spaced in log FLOPs,
    reaching ``reach`` of the way up (what ``benchmarks/anytime_bound.py`` replays)."""
    logs = np.log([1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0])  # evenly spaced in log FLOPs
    assert spread_in_log_flops(logs, 1) == [6]  # the largest
    assert spread_in_log_flops(logs, 3) == [0, 3, 6]
    assert spread_in_log_flops(logs, 2, reach=0.5) == [0, 3]
    assert spread_in_log_flops(logs, 2, reach=0.0) == [0, 1]  # one point: nearest two
    assert spread_in_log_flops(logs, 9, reach=0.5) == list(range(7))  # the whole front


@pytest.mark.parametrize(
    ("kwargs", "named"),
    [
        ({"n": 0}, "Anchors.n"),
        ({"n": 2.5}, "Anchors.n"),
        ({"n": 8, "sample": 4}, "Anchors.sample"),
        ({"fallback": "biggest"}, "Anchors.fallback.*'biggest'"),
    ],
)
def test_bad_anchor_settings_are_refused_by_name(kwargs, named) -> None:
    with pytest.raises(ConfigError, match=named):
        Anchors(**kwargs)


def test_a_study_refuses_anchors_that_are_not_an_anchors(tmp_path) -> None:
    from nasflow.search import load_study_file

    path = write_study(tmp_path, extra="study = study.replace(anchors=4)\n")
    with pytest.raises(StudyFileError, match="anchors must be an Anchors or None, got 4"):
        load_study_file(path)


def test_the_summary_compares_the_kept_model_with_the_best_anchor() -> None:
    from nasflow.pipeline._result._summary import anchors_verdict
    from nasflow.record import AnchorEntry

    anchors = [
        AnchorEntry(0, 0, "{}", 1, 1, "", val_accuracy=0.90),
        AnchorEntry(1, 3, "{}", 1, 1, "", val_accuracy=0.95),
    ]
    ahead = anchors_verdict("s", 0.98, "choice (retrained)", anchors, 500)
    assert "best anchor (trial 3, trained from scratch) 0.9500" in ahead
    assert ahead.endswith("the search's choice is ahead by 3.00 points")
    # An anchor that validates higher, by any margin, is the kept model, with its export
    # command: both are full trainings with the recipe.
    behind = anchors_verdict("my study", 0.92, "choice (retrained)", anchors, 500)
    assert behind.startswith("kept model: trial 3, a zero-cost anchor trained from scratch")
    assert "against 0.9200 for the search's choice (retrained), higher by 3.00 points" in behind
    assert "the best validation is kept" in behind
    assert "`nasflow export 'my study' --trial 3 --out DIR`" in behind
    # Half a standard error (about 0.45 points on 500 samples) is enough now.
    close = anchors_verdict("s", 0.9455, "choice (fine-tuned)", anchors, 500)
    assert close.startswith("kept model: trial 3") and "higher by 0.45 points" in close
    # A tie leaves the search's choice.
    tied = anchors_verdict("s", 0.95, "choice (retrained)", anchors, 500)
    assert tied.endswith("tied, the search's choice stays")


def test_the_searchs_kept_line_is_relabelled_when_an_anchor_is_kept() -> None:
    from nasflow.pipeline import KeptWeights

    kept = KeptWeights(7, "retrained", 0.95, 0.94, 0.95, 4)
    assert kept.line("s").startswith("kept model: trial 7 retrained from scratch")
    relabelled = kept.line("s", "the search's choice")
    assert relabelled.startswith("the search's choice: trial 7 retrained from scratch")


def test_the_spaces_largest_joins_the_draws_as_the_largest_anchor() -> None:
    from nasflow.space import largest_arch

    space = MNIST1DSpace(base_channels=4, layers_per_stage=2)
    largest = largest_arch(space)
    plain = zero_cost_front(space, n=3, sample=40, seed=1, batch_size=32)
    assert largest not in [a.arch for a in plain]  # 40 draws miss it
    anchors = zero_cost_front(space, n=3, sample=40, seed=1, batch_size=32, extra=[largest])
    assert anchors[-1].arch == largest and len(anchors) == 3
    assert anchors[-1].params > plain[-1].params


def _entries(*vals: float) -> list:
    from nasflow.record import AnchorEntry

    return [AnchorEntry(i, 10 + i, "{}", 1, 1, "", val_accuracy=v) for i, v in enumerate(vals)]


def test_without_a_fallback_an_anchor_that_validates_higher_is_kept() -> None:
    from nasflow.pipeline._kept import anchor_call

    anchors = _entries(0.90, 0.95)  # trials 10 and 11
    assert anchor_call(0.955, anchors, 500).kept is None
    assert anchor_call(0.95, anchors, 500).kept is None  # a tie: the search's choice stays
    # Below by less than a standard error (~0.97 points on 500 samples) still loses: no
    # margin between two full trainings.
    behind = anchor_call(0.949, anchors, 500)
    assert behind.kept is anchors[1] and behind.against is anchors[1] and not behind.fallback
    assert behind.margin == 0.0


def test_the_fallback_stays_unless_the_search_beats_it_by_the_margin() -> None:
    from nasflow.pipeline._kept import anchor_call

    anchors = _entries(0.90, 0.95)
    # The search's choice a little above the fallback (trial 11): the fallback is kept.
    close = anchor_call(0.955, anchors, 500, fallback=11)
    assert close.kept is anchors[1] and close.fallback and close.lead > 0
    assert close.margin > close.lead
    # Ahead by more than one standard error: the search's choice stays.
    ahead = anchor_call(0.975, anchors, 500, fallback=11)
    assert ahead.kept is None and ahead.lead > ahead.margin
    # Another anchor well above both: that anchor, not the fallback, not the search.
    other = anchor_call(0.95, _entries(0.99, 0.95), 500, fallback=11)
    assert other.kept is not None and other.kept.trial == 10
    # A fallback not trained (or unknown) leaves the rule without one.
    assert anchor_call(0.92, anchors, 500, fallback=99).fallback is False


def test_the_summary_says_the_fallback_is_kept_and_why() -> None:
    from nasflow.pipeline._result._summary import anchors_verdict

    anchors = _entries(0.90, 0.95)
    kept = anchors_verdict("s", 0.955, "choice (retrained)", anchors, 500, fallback=11)
    assert kept.startswith("kept model: trial 11, a zero-cost anchor trained from scratch")
    assert "the space's largest architecture, the fallback the search must beat" in kept
    assert "not ahead by more than 1 standard error" in kept
    beaten = anchors_verdict("s", 0.975, "choice (retrained)", anchors, 500, fallback=11)
    assert "the fallback anchor (the space's largest architecture, trial 11, trained" in beaten
    assert beaten.endswith("the search's choice is ahead by 2.50 points")


def test_the_anchors_record_keeps_its_fallback() -> None:
    from nasflow.record import AnchorsRecord

    record = AnchorsRecord("rule", tuple(_entries(0.9, 0.95)), 3.0, fallback=11)
    again = AnchorsRecord.from_dict(record.to_dict())
    assert again == record and again.fallback == 11
    # A record written before the field reads as no fallback.
    old = record.to_dict()
    del old["fallback"]
    assert AnchorsRecord.from_dict(old).fallback is None
