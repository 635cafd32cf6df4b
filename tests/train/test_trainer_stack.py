"""The trainers train through the speedup stack: plain stack == the old step, exact resume."""

from __future__ import annotations

import copy
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch.utils.data import TensorDataset

from nasflow.train import (
    Batches,
    CheckpointError,
    EpochTrainer,
    SupernetConfig,
    SupernetTrainer,
    TrainConfig,
    TrainingInterrupted,
    load_checkpoint,
    make_optimizer,
    warmup_cosine,
)
from nasflow.train.stack import Stack
from tests._spaces import tiny_mnist1d


def _data(n: int = 80, seed: int = 0) -> TensorDataset:
    g = torch.Generator().manual_seed(seed)
    return TensorDataset(
        torch.randn(n, 1, 40, generator=g), torch.randint(0, 10, (n,), generator=g)
    )


def _net() -> torch.nn.Module:
    space = tiny_mnist1d()
    torch.manual_seed(0)
    return space.build(space.sample(np.random.default_rng(0)))


def _same_tensors(a: dict, b: dict) -> None:
    assert a.keys() == b.keys()
    for k in a:
        assert torch.equal(a[k], b[k]), k


def test_epoch_trainer_with_the_plain_stack_is_the_hand_written_step() -> None:
    recipe = TrainConfig(epochs=2, batch_size=16, lr=1e-2, label_smoothing=0.1, warmup_epochs=0.5)
    batches = Batches(_data(), 16, seed=1, drop_last=True)
    ref, net = _net(), _net()
    # Yesterday's EpochTrainer.step, written out by hand.
    opt = make_optimizer(ref.parameters(), recipe.lr, recipe.weight_decay)
    sched = warmup_cosine(opt, recipe.epochs * len(batches), int(0.5 * len(batches)))
    want = []
    ref.train()
    for e in range(recipe.epochs):
        for x, y in batches.epoch(e):
            loss = F.cross_entropy(ref(x), y, label_smoothing=0.1)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            sched.step()
            want.append(float(loss.detach()))
    trainer = EpochTrainer(net, batches, recipe)
    assert trainer.stack == Stack() and trainer.stepper.layers == []
    got = [trainer.run_epoch() for _ in range(recipe.epochs)]
    _same_tensors(net.state_dict(), ref.state_dict())
    per_epoch = len(batches)
    assert got == [sum(want[i : i + per_epoch]) / per_epoch for i in (0, per_epoch)]


def _stop_after(n: int):
    calls = {"n": 0}

    def should_stop() -> bool:
        calls["n"] += 1
        return calls["n"] >= n

    return should_stop


@pytest.mark.parametrize("accumulation", [2, "adaptive"])
def test_epoch_trainer_resume_is_exact_with_accumulation(accumulation) -> None:
    # 5 batches per epoch: with k = 2 every epoch ends on a flushed, partial step.
    recipe = TrainConfig(epochs=2, batch_size=16, lr=1e-2)
    stack = Stack(accumulation=accumulation, k_max=3)
    batches = Batches(_data(), 16, seed=1, drop_last=True)
    ref = EpochTrainer(_net(), batches, recipe, stack=stack)
    for _ in range(recipe.epochs):
        ref.run_epoch()
    assert ref.stepper.optimizer_steps < recipe.epochs * len(batches)  # it did accumulate

    first = EpochTrainer(_net(), batches, recipe, stack=stack)
    first.run_epoch()
    with pytest.raises(TrainingInterrupted):
        first.run_epoch(_stop_after(1))  # asked after batch 1: stops at a step boundary
    assert first.stepper.pending == 0
    if accumulation == 2:
        assert first.batch == 2  # the request waited for the second batch of the step
    state = copy.deepcopy(first.state_dict())
    torch.manual_seed(999)  # the checkpoint restores the generators
    second = EpochTrainer(_net(), batches, recipe, stack=stack)
    second.load_state_dict(state)
    second.run_epoch()
    _same_tensors(second.model.state_dict(), ref.model.state_dict())
    assert second.stepper.ks == ref.stepper.ks


SUPERNET = SupernetConfig(epochs=2, batch_size=16, warmup_epochs=0.5, seed=3)


@pytest.mark.slow
def test_supernet_trainer_with_accumulation_resumes_bit_identically(tmp_path: Path) -> None:
    space, data, stack = tiny_mnist1d(), _data(), Stack(accumulation=2)  # 5 steps per epoch
    ref = SupernetTrainer(space, data, SUPERNET, tmp_path / "ref", stack=stack).fit()
    folder = tmp_path / "run"
    trainer = SupernetTrainer(
        space, data, SUPERNET, folder, stack=stack, should_stop=_stop_after(1)
    )
    with pytest.raises(TrainingInterrupted) as info:
        trainer.fit()
    assert info.value.checkpoint.name == "epoch-0-batch-2.pt"  # the next step boundary
    torch.manual_seed(999)
    result = SupernetTrainer(space, data, SUPERNET, folder, stack=stack).fit()
    assert tuple(result.resumed_at) == (0, 2)
    _same_tensors(result.supernet.state_dict(), ref.supernet.state_dict())
    final = load_checkpoint(folder / "epoch-2.pt")
    assert final["stack"]["ks"] == load_checkpoint(tmp_path / "ref" / "epoch-2.pt")["stack"]["ks"]
    assert final["stack"]["ks"] == [2, 2, 1] * 2  # epochs end on a flushed partial step
    # A checkpoint written with one stack is not resumed with another.
    with pytest.raises(CheckpointError, match="another space or supernet configuration"):
        SupernetTrainer(space, data, SUPERNET, folder).fit()


def test_trainers_refuse_a_stack_that_is_not_a_stack() -> None:
    batches = Batches(_data(), 16, drop_last=True)
    with pytest.raises(ValueError, match="'bf16'"):
        EpochTrainer(_net(), batches, TrainConfig(), stack="bf16")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="'auto'"):
        SupernetTrainer(tiny_mnist1d(), _data(), stack="auto")  # type: ignore[arg-type]


def test_a_stand_alone_training_reports_the_validation_loss_of_its_weights() -> None:
    """``train_standalone``'s result carries the validation cross-entropy beside the
    accuracy, both of the trained weights (what ``evaluate`` measures on them after)."""
    from nasflow.train import evaluate, train_standalone

    net = _net()
    val = Batches(_data(40, seed=2), 16)
    result = train_standalone(
        net, Batches(_data(), 16, seed=1), val, TrainConfig(epochs=1, batch_size=16), val
    )
    acc, loss = evaluate(net, val)
    assert (result.val_accuracy, result.val_loss, result.test_accuracy) == (acc, loss, acc)
    assert result.val_loss is not None and result.val_loss > 0


def _dropout_net() -> torch.nn.Module:
    """``_net()`` with a dropout on its logits: every training step draws."""
    return torch.nn.Sequential(_net(), torch.nn.Dropout(0.5))


def _trained_after(draws: int, seed: int | None, stop_at: int | None = None) -> dict:
    """The weights after 2 epochs of ``_dropout_net()`` where the process drew ``draws``
    numbers first and draws one more before every epoch (``stop_at``: the trainer is
    checkpointed at that batch and a fresh one resumes from the state, the global
    generator moved in between)."""
    recipe = TrainConfig(epochs=2, batch_size=16, lr=1e-2)
    make = lambda: EpochTrainer(  # noqa: E731
        _dropout_net(), Batches(_data(), 16, seed=1, drop_last=True), recipe, seed=seed
    )
    tr = make()
    torch.manual_seed(draws)
    for _ in range(2):
        torch.rand(draws)
        if stop_at is not None and tr.epoch == 1:
            with pytest.raises(TrainingInterrupted):
                tr.run_epoch(_stop_after(stop_at))
            state = copy.deepcopy(tr.state_dict())
            tr = make()
            tr.load_state_dict(state)
            torch.rand(draws)
        tr.run_epoch()
    return tr.model.state_dict()


def test_seeded_steps_draw_their_dropout_from_the_seed_whatever_ran_before() -> None:
    """With ``seed`` a step's dropout comes from ``(seed, epoch, batch)``: the same weights
    whatever the process drew before or between epochs, and across a resume mid-epoch;
    unseeded, the global generator's history changes them (what the check can tell)."""
    ref = _trained_after(3, seed=5)
    _same_tensors(_trained_after(11, seed=5), ref)
    _same_tensors(_trained_after(11, seed=5, stop_at=2), ref)
    other = _trained_after(3, seed=6)
    assert any(not torch.equal(ref[k], other[k]) for k in ref)
    plain = _trained_after(3, seed=None), _trained_after(11, seed=None)
    assert any(not torch.equal(plain[0][k], plain[1][k]) for k in ref)


def test_a_seeded_step_leaves_the_callers_generator_as_it_was() -> None:
    tr = EpochTrainer(_dropout_net(), Batches(_data(), 16, drop_last=True), TrainConfig(), seed=0)
    x, y = next(iter(Batches(_data(), 16, drop_last=True).epoch(0)))
    torch.manual_seed(42)
    tr.step(x, y)
    after = torch.rand(4)
    torch.manual_seed(42)
    assert torch.equal(after, torch.rand(4))
    with pytest.raises(ValueError, match="'0'"):
        EpochTrainer(_net(), Batches(_data(), 16), TrainConfig(), seed="0")  # type: ignore[arg-type]
