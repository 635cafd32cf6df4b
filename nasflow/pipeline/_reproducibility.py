"""What makes two runs of one study and seed differ on one machine, and the deterministic
mode in which nothing measured by a clock decides anything.

A seed fixes the data order, the sampler's proposals and every initial weight. On a CPU
(or GPU) four inputs still depend on timings, and each can change the kept model:

- the speedup stack of ``stack="auto"``: a short calibration times the layers and keeps
  those that pay off here; under load it keeps others (bf16, accumulation, threads), and
  every phase trains through what it kept;
- the cost model's op table: measured latencies predict every candidate's training cost,
  which is an objective (hence the Pareto set and the finalists) and the budget gate; a
  table measured on a loaded machine predicts other costs, and a shared table flagged
  loaded is measured again by the next study;
- the fine-tuning phase's successive halving with several objectives: it promotes by
  (validation accuracy, *measured* epoch seconds);
- several processes (``nasflow worker``): which worker scores which proposal, and when,
  is decided by their interleaving.

The intra-op thread count changes how float sums are split, so a run with another count
can round differently; it is recorded.

``StudySpec(deterministic=True)`` (``nasflow search --deterministic``) removes the first
three: ``stack="auto"`` is not calibrated (plain fp32 eager; a ``Stack`` given is used as
given), the cost table is taken as stored (the study's, else the shared one, even where it
was flagged loaded; measured only where this device has none), fine-tuning promotes by
the predicted cost, and torch runs with ``torch.use_deterministic_algorithms(True)``. Two
runs with the same seed, storage kind and stored table then keep the same model; workers
still interleave."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import torch

from nasflow import settings
from nasflow.record import (
    CostTableRecord,
    ReproducibilityRecord,
    StackRecord,
    study_cost_table,
    study_search_trials,
    study_stack,
)

if TYPE_CHECKING:
    import optuna

    from nasflow.search import StudySpec


def use_deterministic(enabled: bool) -> Callable[[], None]:
    """Switch torch to deterministic algorithms (an op without a deterministic
    implementation raises, PyTorch's message naming it), cuDNN's autotuner off and the
    cuBLAS workspace fixed; returns the function that restores what was set before. Does
    nothing (and restores nothing) when not ``enabled``."""
    if not enabled:
        return lambda: None
    algorithms = torch.are_deterministic_algorithms_enabled()
    warn_only = torch.is_deterministic_algorithms_warn_only_enabled()
    benchmark = torch.backends.cudnn.benchmark
    unset_cublas = settings.fix_cublas_workspace()
    torch.use_deterministic_algorithms(True)
    torch.backends.cudnn.benchmark = False

    def restore() -> None:
        torch.use_deterministic_algorithms(algorithms, warn_only=warn_only)
        torch.backends.cudnn.benchmark = benchmark
        unset_cublas()

    return restore


def _stack_input(spec: StudySpec, record: StackRecord | None) -> tuple[str, bool]:
    """``(what the stack was, whether a clock chose it)``."""
    if spec.stack != "auto":
        fixed = "plain fp32" if spec.stack is None else "fixed by the study"
        return f"stack {fixed}", False
    if record is None:
        return "stack plain fp32 ('auto' not calibrated: deterministic mode)", False
    kind = None if record.origin is None else record.origin.kind
    if kind == "reused":
        when = str(record.origin.measured_at or "?")[:16]  # type: ignore[union-attr]
        return f"stack from this device's calibration record of {when}, reused", False
    if kind == "calibrated":
        return "stack calibrated now (timed; under load it keeps other layers)", True
    if kind == "skipped":
        return "stack calibration skipped by a timed probe (plain fp32)", True
    return "stack stored with the study (resumed)", False


def _cost_input(spec: StudySpec, record: CostTableRecord | None) -> tuple[str, bool]:
    """``(where the predicted costs came from, whether timings measured now set them)``."""
    if spec.table is not None:
        return "no costs (tabular)", False
    if spec.cost == "measure":
        return "every candidate's cost timed when scored (cost='measure')", True
    if record is None:
        return "cost table not recorded", False
    source = record.source
    loaded = " on a machine that looked loaded" if record.loaded else ""
    when = str(record.measured_at or "?")[:16]
    if source == "measured now":
        return f"cost table measured now{loaded} (its timings set every predicted cost)", True
    return f"cost table of {when}{loaded}, reused as stored", False


def reproducibility_record(
    study: optuna.Study,
    spec: StudySpec,
    ran_trials: Sequence[int] = (),
    timeout: float | None = None,
) -> ReproducibilityRecord:
    """Which timing-dependent inputs a finished run used (study user attribute
    ``nasflow:reproducibility``; :func:`reproducibility_line` says it).

    Args:
        study: The study, with the run's records (``nasflow:stack``, ``nasflow:cost_table``).
        spec: Its ``StudySpec``.
        ran_trials: Trials this process scored: the study's other finished trials were
            scored by other processes (workers, or a run this one resumed).
        timeout: The run's ``timeout`` (seconds), which ends the screening by the clock.

    Returns:
        ``deterministic``, ``threads`` (torch's intra-op threads), ``inputs`` (each input:
        what it was), and ``timed`` (the inputs a clock decided in this run).
    """
    stack, stack_timed = _stack_input(spec, study_stack(study))
    cost, cost_timed = _cost_input(spec, study_cost_table(study))
    inputs, timed = [stack, cost], [s for s, t in ((stack, stack_timed), (cost, cost_timed)) if t]
    if spec.finetuning is not None and len(spec.objectives) > 1:
        how = "predicted cost" if spec.deterministic else "measured epoch seconds"
        inputs.append(f"fine-tuning promoted by validation accuracy and {how}")
        if not spec.deterministic:
            timed.append(inputs[-1])
    mine, searched = set(ran_trials), study_search_trials(study)
    others = [t.number for t in study.trials if t.state.is_finished() and t.number not in mine]
    earlier = sum(n in searched for n in others)  # an earlier finished run: no interleaving
    if earlier:
        inputs.append(f"{earlier} trials scored by an earlier run of this study")
    if len(others) > earlier:  # a worker's, or a run stopped before it recorded its trials
        unknown = len(others) - earlier
        inputs.append(f"{unknown} trials scored by other processes (workers or a stopped run)")
        timed.append(
            f"{unknown} trials scored by other processes (where workers scored them, their "
            "interleaving decided which)"
        )
    if timeout is not None:
        timed.append(f"the screening ended by a {timeout:g} s timeout")
    return ReproducibilityRecord(
        bool(spec.deterministic), torch.get_num_threads(), tuple(inputs), tuple(timed)
    )


def reproducibility_line(record: ReproducibilityRecord) -> str:
    """One summary line: what a rerun with the same seed reproduces, and what the clock
    decided in this run (and how to fix it)."""
    timed = list(record.timed)
    setting = (
        "deterministic mode (torch deterministic algorithms, "
        if record.deterministic
        else "seed fixed ("
    ) + f"{record.threads} threads)"
    if not timed:
        return (
            f"reproducibility: {setting}; no clock decided anything: "
            f"{'; '.join(record.inputs)}; a rerun with the same seed, storage "
            "kind, stored tables and thread count keeps the same model"
        )
    fix = (
        ""
        if record.deterministic
        else "; `nasflow search --deterministic` (StudySpec(deterministic=True)) fixes the "
        "stack, the costs and the promotion"
    )
    return (
        f"reproducibility: {setting}; a rerun can keep another model, since timings "
        f"decided: {'; '.join(timed)}{fix}"
    )
