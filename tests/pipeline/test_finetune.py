"""The fine-tuning phase: successive halving over inherited weights, records, resume."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.torch import load_file
from torch.utils.data import TensorDataset

from nasflow.data import DataBundle
from nasflow.errors import ConfigError
from nasflow.pipeline._arch._ready import (
    PROGRESS_FILE,
    Finalist,
    promote,
    read_ready,
    run_finetuning,
)
from nasflow.pipeline._kept import kept_weights
from nasflow.record import FineTuned, FineTuneResult, ReadyModelError
from nasflow.search import FineTuning
from nasflow.train import EpochTrainer, SupernetConfig, SupernetTrainer, TrainConfig
from tests._spaces import tiny_mnist1d


def _bundle(n: int = 256) -> DataBundle:
    g = torch.Generator().manual_seed(0)
    y = torch.randint(0, 10, (n,), generator=g)
    x = torch.randn(n, 1, 40, generator=g) + y.view(-1, 1, 1).float() / 5  # learnable
    ds = TensorDataset(x, y)
    return DataBundle(ds, ds, ds, (1, 40), 10, "toy")


@pytest.fixture(scope="module")
def trained():
    space, data = tiny_mnist1d(), _bundle()
    cfg = SupernetConfig(epochs=1, batch_size=32, seed=0)
    supernet = SupernetTrainer(space, data.train, cfg).fit().supernet
    rng = np.random.default_rng(0)
    archs = []
    while len(archs) < 4:
        a = space.sample(rng)
        if a not in archs:
            archs.append(a)
    return space, data, supernet, [Finalist(i, a, 0.5) for i, a in enumerate(archs)]


def _run(trained, folder: Path, config: FineTuning, **kw):
    space, data, supernet, finalists = trained
    recipe = TrainConfig(epochs=9, batch_size=32, lr=1e-3)
    return run_finetuning(
        finalists, supernet, space, data, recipe, config, 2, folder, seed=0, **kw
    )


def test_successive_halving_keeps_the_best_share_each_rung(trained, tmp_path: Path) -> None:
    res = _run(trained, tmp_path, FineTuning(rungs=(1, 2, 3), keep=0.5), multi_objective=False)
    epochs = sorted(c.epochs for c in res.candidates)
    assert epochs == [1, 1, 2, 3]  # 4 -> 2 -> 1
    ready = [c for c in res.candidates if c.status == "ready"]
    assert len(ready) == 1 and ready[0].epochs == 3 and res.best() is ready[0]
    at_one = {c.trial: c.val_curve[0] for c in res.candidates}
    promoted = {c.trial for c in res.candidates if c.epochs >= 2}
    assert min(at_one[t] for t in promoted) >= max(
        v for t, v in at_one.items() if t not in promoted
    )
    for c in res.candidates:
        assert c.test_accuracy is not None and len(c.epoch_seconds) == c.epochs
        record = json.loads((tmp_path / f"trial-{c.trial}" / "record.json").read_text())
        assert record["weights_origin"] == (
            f"fine-tuned from inherited supernet weights, {c.epochs} epoch" + "s" * (c.epochs != 1)
        )
        assert read_ready(tmp_path / f"trial-{c.trial}") == (c, record)  # typed, checked
        assert (tmp_path / f"trial-{c.trial}" / "model.safetensors").is_file()
    mult, spent, full = res.early_stopping_multiplier()
    assert spent == pytest.approx(sum(c.train_seconds for c in res.candidates))
    # 12 candidate-epochs planned, 7 trained; each missing epoch at its candidate's mean.
    expected = sum(c.train_seconds * 3 / c.epochs for c in res.candidates)
    assert full == pytest.approx(expected) and mult == pytest.approx(expected / spent)
    assert mult > 1


def test_a_resumed_phase_trains_nothing_twice(trained, tmp_path: Path, monkeypatch) -> None:
    cfg = FineTuning(rungs=(1, 2), keep=0.5)
    first = _run(trained, tmp_path, cfg)
    calls = []
    monkeypatch.setattr(EpochTrainer, "run_epoch", lambda self, *a: calls.append(1))
    again = _run(trained, tmp_path, cfg)
    assert calls == []
    assert [c.val_curve for c in again.candidates] == [c.val_curve for c in first.candidates]


def test_a_kill_between_checkpoint_and_record_loses_nothing(trained, tmp_path: Path) -> None:
    cfg = FineTuning(rungs=(1, 2), keep=1.0)
    first = _run(trained, tmp_path, cfg)
    sub = tmp_path / "trial-0"
    # As if killed after the epoch-2 checkpoint but before progress.json was rewritten.
    rec = json.loads((sub / PROGRESS_FILE).read_text())
    rec.update(val_curve=rec["val_curve"][:1], epoch_seconds=rec["epoch_seconds"][:1])
    rec.update(status="running", test_accuracy=None)
    (sub / PROGRESS_FILE).write_text(json.dumps(rec))
    again = _run(trained, tmp_path, cfg)
    assert again.candidates[0].val_curve == first.candidates[0].val_curve


def test_a_diverging_candidate_is_dropped_and_the_phase_goes_on(
    trained, tmp_path: Path, monkeypatch
) -> None:
    space, _, supernet, finalists = trained
    extract, poisoned = supernet.extract, space.path(finalists[0].arch)

    def nan_for_the_first(path):
        net = extract(path)
        if path == poisoned:
            with torch.no_grad():
                next(net.parameters()).fill_(float("nan"))  # its loss is NaN
        return net

    monkeypatch.setattr(supernet, "extract", nan_for_the_first)
    res = _run(trained, tmp_path, FineTuning(rungs=(1, 2), keep=0.5))
    by_trial = {c.trial: c for c in res.candidates}
    assert by_trial[0].status == "diverged" and by_trial[0].val_curve == ()
    assert not (tmp_path / "trial-0" / "model.safetensors").exists()
    assert sorted(c.epochs for c in res.ready) == [1, 2, 2]  # 3 left: 2 promoted
    assert json.loads((tmp_path / "trial-0" / PROGRESS_FILE).read_text())["status"] == "diverged"


def test_a_candidates_dropout_does_not_depend_on_what_trained_before_it(
    trained, tmp_path: Path, monkeypatch
) -> None:
    """The rungs interleave candidates' epochs: a candidate's dropout draws come from its
    own seed, so its weights are the same fine-tuned alone or after another candidate's
    epochs, whatever the process drew before (unseeded, they were not)."""
    space, data, supernet, finalists = trained
    extract = supernet.extract
    monkeypatch.setattr(
        supernet, "extract", lambda path: torch.nn.Sequential(extract(path), torch.nn.Dropout(0.5))
    )
    recipe, cfg = TrainConfig(epochs=9, batch_size=32, lr=1e-3), FineTuning(rungs=(1, 2), keep=1.0)

    def weights(folder: Path, which: list[Finalist], draws: int) -> dict:
        torch.manual_seed(draws)
        torch.rand(draws)
        run_finetuning(which, supernet, space, data, recipe, cfg, 2, folder, seed=0)
        return load_file(folder / f"trial-{finalists[1].trial}" / "model.safetensors")

    alone = weights(tmp_path / "alone", [finalists[1]], 3)
    after = weights(tmp_path / "after", [finalists[0], finalists[1]], 17)
    assert alone.keys() == after.keys()
    assert all(torch.equal(alone[k], after[k]) for k in alone)


def test_promotion_with_two_objectives_uses_fronts() -> None:
    fast = FineTuned(0, "{}", 0.5, [0.6], [1.0])
    slow_best = FineTuned(1, "{}", 0.5, [0.9], [5.0])
    dominated = FineTuned(2, "{}", 0.5, [0.5], [6.0])
    kept = promote([dominated, fast, slow_best], 2 / 3, multi_objective=True)
    assert {c.trial for c in kept} == {0, 1}
    assert [c.trial for c in promote([dominated, fast, slow_best], 0.3, False)] == [1]


@pytest.mark.parametrize(
    "kw, match",
    [
        ({"rungs": (2, 1)}, "increasing"),
        ({"rungs": ()}, "increasing"),
        ({"keep": 0.0}, "keep"),
        ({"lr": -1.0}, "lr"),
        ({"finalists": 0}, "finalists"),
    ],
)
def test_bad_settings_are_refused_in_one_line(kw, match) -> None:
    with pytest.raises(ValueError, match=match):
        FineTuning(**kw)


def test_protected_finalists_are_never_halved(trained, tmp_path: Path) -> None:
    """``FineTuning.top``: the finalists flagged protected reach the last rung whatever
    their validation accuracy; halving applies to the others only."""
    space, data, supernet, finalists = trained
    flagged = [replace(f, protected=f.trial >= 2) for f in finalists]
    recipe = TrainConfig(epochs=9, batch_size=32, lr=1e-3)
    cfg = FineTuning(finalists=4, rungs=(1, 2), keep=0.5, top=2)
    res = run_finetuning(
        flagged, supernet, space, data, recipe, cfg, 2, tmp_path, seed=0, multi_objective=False
    )
    epochs = {c.trial: c.epochs for c in res.candidates}
    assert epochs[2] == epochs[3] == 2  # protected: never halved
    assert sorted([epochs[0], epochs[1]]) == [1, 2]  # the other two: ceil(0.5 * 2) = 1 goes on


def test_top_defaults_to_the_share_a_rung_promotes_and_is_checked() -> None:
    assert FineTuning().protected == 5 and FineTuning(finalists=3).protected == 2
    # ceil(finalists * keep), the float product rounded first (10 * 0.3 is not 3 exactly).
    assert FineTuning(finalists=10, keep=0.3).protected == 3
    assert FineTuning(finalists=8, keep=0.25).protected == 2
    assert FineTuning(finalists=10, keep=1.0).protected == 10
    # Unresolved: a copy with other finalists follows them; a given top is kept.
    assert replace(FineTuning(), finalists=6).protected == 3
    assert replace(FineTuning(top=1), finalists=6).protected == 1
    with pytest.raises(ConfigError, match=r"FineTuning\.keep"):
        FineTuning(keep=0.0)
    with pytest.raises(
        ConfigError, match=r"FineTuning.top must be at most finalists \(3\), got 4"
    ):
        FineTuning(finalists=3, top=4)


def test_the_promoted_share_is_the_rungs_ratio_unless_given() -> None:
    """Successive halving's coupling: a rung promotes the share its epochs are of the next
    rung's; ``keep`` overrides it; the shipped studies' shares are the 1/2 they had."""
    from nasflow.search import load_study_file

    assert FineTuning().keep is None
    assert [FineTuning().share(r) for r in (0, 1)] == [0.5, 0.5]  # rungs (1, 2, 4)
    assert [FineTuning(rungs=(1, 3, 9)).share(r) for r in (0, 1)] == [1 / 3, 1 / 3]
    assert [FineTuning(rungs=(1, 2, 3)).share(r) for r in (0, 1)] == [0.5, 2 / 3]
    assert FineTuning(rungs=(4,)).share(0) == 0.5  # one rung: nothing promoted
    assert [FineTuning(rungs=(1, 3, 9), keep=0.25).share(r) for r in (0, 1)] == [0.25, 0.25]
    assert FineTuning(finalists=9, rungs=(1, 3, 9)).protected == 3  # ceil(9 / 3)
    root = Path(__file__).resolve().parents[2]
    for name, protected, shares in (
        ("mnist1d_front", 5, [0.5, 0.5]),
        # Rungs 1, 2, 4, 6: the last the recipe's epochs (the top rung, inherited weights).
        ("cifar10_cpu", 5, [0.5, 0.5, 4 / 6]),
        ("shakespeare_cpu", 4, [0.5]),
    ):
        ft = load_study_file(root / "studies" / f"{name}.py").finetuning
        assert ft is not None and ft.keep is None
        assert [ft.share(r) for r in range(len(ft.rungs) - 1)] == shares
        assert ft.protected == protected


def test_a_rung_promotes_its_share_of_the_next_rungs_epochs(trained, tmp_path: Path) -> None:
    # Rungs 1, 2, 3: 1/2 of four go on to 2 epochs, then 2/3 of two (ceil: both) to 3.
    res = _run(trained, tmp_path, FineTuning(rungs=(1, 2, 3)), multi_objective=False)
    assert sorted(c.epochs for c in res.candidates) == [1, 1, 3, 3]


def test_kept_weights_are_the_ones_that_validate_higher() -> None:
    result = FineTuneResult(
        [
            FineTuned(3, "{}", 0.5, [0.40, 0.52], [1.0, 1.0], 0.50, "ready"),
            FineTuned(4, "{}", 0.4, [0.30], [1.0], 0.29, "stopped"),
        ],
        full_epochs=2,
    )
    # Fine-tuned validates above the retrain: the fine-tuned weights are kept.
    kept = kept_weights(3, retrained_val=0.45, retrained_test=0.46, result=result)
    assert kept is not None and kept.kind == "fine-tuned"
    assert (kept.val_accuracy, kept.other_val_accuracy, kept.test_accuracy) == (0.52, 0.45, 0.50)
    assert "--ready 3" in kept.line("s") and "2 epochs" in kept.line("s")
    # The retrain validates higher, or ties: the retrain is kept.
    for val in (0.60, 0.52):
        kept = kept_weights(3, retrained_val=val, retrained_test=0.58, result=result)
        assert kept is not None and kept.kind == "retrained" and kept.test_accuracy == 0.58
        assert "retrained from scratch" in kept.line("s") and "--ready" not in kept.line("s")
    # A trial without a ready model: nothing to compare.
    assert kept_weights(9, retrained_val=0.5, retrained_test=0.5, result=result) is None


def test_fine_tuned_weights_must_validate_higher_by_two_standard_errors() -> None:
    """Their validation figure chose the trial among the finalists: a lead within two
    standard errors of a validation accuracy keeps the retrain (B6: a 1.0-point lead on 500
    samples kept fine-tuned weights testing 1.0 point below the retrain)."""
    ready = [FineTuned(3, "{}", 0.5, [0.90, 0.984], [1.0, 1.0], 0.973, "ready")]
    result = FineTuneResult(ready, full_epochs=2, val_samples=500)
    se = math.sqrt(0.979 * 0.021 / 500)  # 0.0064
    kept = kept_weights(3, retrained_val=0.974, retrained_test=0.983, result=result)
    assert kept is not None and kept.kind == "retrained" and kept.test_accuracy == 0.983
    assert kept.margin == pytest.approx(2 * se)
    assert "they validate higher, but by no more than 2 standard errors" in kept.line("s")
    assert "(0.0128)" in kept.line("s")
    # A lead beyond the margin keeps the fine-tuned weights.
    kept = kept_weights(3, retrained_val=0.960, retrained_test=0.965, result=result)
    assert kept is not None and kept.kind == "fine-tuned"
    # A record without the split's size (written before it was kept): no margin.
    old = FineTuneResult(ready, full_epochs=2)
    kept = kept_weights(3, retrained_val=0.974, retrained_test=0.983, result=old)
    assert kept is not None and kept.kind == "fine-tuned"


def test_the_record_keeps_the_validation_size_and_checks_it() -> None:
    record = {"candidates": [], "rungs": [1, 2], "val_samples": 500}
    assert FineTuneResult.from_dict(record).val_samples == 500
    assert FineTuneResult.from_dict({**record, "val_samples": None}).val_samples is None
    with pytest.raises(ReadyModelError, match=r"val_samples is 0, not a positive count"):
        FineTuneResult.from_dict({**record, "val_samples": 0})


def test_a_candidate_records_when_its_weights_were_final() -> None:
    from nasflow.record import FineTuned

    base = {
        "trial": 1,
        "arch": "{}",
        "supernet_accuracy": 0.5,
        "val_curve": [0.6],
        "epoch_seconds": [1.0],
        "status": "ready",
    }
    assert FineTuned.from_dict({**base, "trained_cpu_seconds": 12.5}).trained_cpu_seconds == 12.5
    assert FineTuned.from_dict(base).trained_cpu_seconds is None  # records before it
    with pytest.raises(ReadyModelError, match=r"trained_cpu_seconds is -1, not a non-negative"):
        FineTuned.from_dict({**base, "trained_cpu_seconds": -1})
