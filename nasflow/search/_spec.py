"""``StudySpec``: what a study file declares, each field checked when it is made."""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import optuna

from nasflow._checks import check_fraction, check_int
from nasflow.data import DataBundle
from nasflow.search._budget import Budget
from nasflow.search._name import MAX_SEED, StudyFileError, check_study_name
from nasflow.search._phases import Anchors, FineTuning, TrustProbe
from nasflow.search._rungs import Rungs
from nasflow.space import SearchSpace
from nasflow.tabular import TabularBenchmark
from nasflow.train import SupernetConfig, TrainConfig
from nasflow.train.stack import Stack

#: Objective name -> Optuna direction.
OBJECTIVES: dict[str, str] = {
    "accuracy": "maximize",  # BN-recalibrated validation accuracy (inherited weights)
    "perplexity": "minimize",  # exp(mean validation cross-entropy): language models
    "train_cost": "minimize",  # predicted seconds to train stand-alone for the budget
    "params": "minimize",  # parameter count of the stand-alone network
}

PRUNERS = ("auto", "hyperband", "asha", "pareto", "none")
SAMPLERS = ("auto", "tpe", "nsga2", "random", "evolution")

#: ``StudySpec.repeat_fallback``'s values.
REPEAT_FALLBACKS = ("random", "mutate")
#: Hyper-parameter labels that override the training recipe when a space declares them.
RECIPE_KEYS = ("lr", "weight_decay", "batch_size")
#: How a candidate's training cost is estimated (``nasflow.pipeline``'s cost estimators:
#: ``"model"`` predicts it from the cost model's op table, ``"measure"`` times steps).
COSTS = ("model", "measure")
#: ``StudySpec`` arguments that were removed -> what to write instead.
REMOVED_KEYS = {
    "finetune_epochs": "StudySpec(finetune_epochs=...) was removed: the fine-tuning recipe "
    "carries its epochs; finetune_epochs=N fine-tuned with finetune=TrainConfig(epochs=N, "
    "lr=1e-3, warmup_epochs=0) (finetune=None: no fine-tuning)",
}


@dataclass(frozen=True)
class StudySpec:
    """A ready-to-run study: space, data, objectives, budget and training recipes.

    Attributes:
        name: Study name in the storage.
        space: The search space.
        data: Returns the dataset bundle (called once, lazily); may be ``None`` in a
            tabular study.
        objectives: Names from ``OBJECTIVES``; the first must be ``"accuracy"``.
        supernet: Phase 1 recipe.
        n_trials: Phase 2 candidates: distinct architectures scored (per-trial loop:
            finished trials, a repeated architecture reusing its earlier score).
        bn_batches: Training batches used to recalibrate BN before scoring a path.
        finetune: How a candidate is fine-tuned from its inherited weights: a
            ``TrainConfig`` whose ``epochs`` are the candidate's fine-tuning epochs (one
            Optuna step each, under the pruner), or ``None`` (default): candidates are
            scored from the supernet path only. Inherited weights usually want a lower rate
            and no warm-up: ``TrainConfig(epochs=3, lr=1e-3, warmup_epochs=0)``.
        screen_keep: With ``finetune``: the share of candidates that go on to
            fine-tuning. Every candidate is first scored from the supernet (milliseconds);
            it is fine-tuned only when its score ranks in the top ``screen_keep`` of the
            candidates scored so far (by Pareto rank and crowding distance over the
            objectives at the supernet's weights; asynchronous, as the first rung of
            successive halving), and never before ``1 / screen_keep`` were scored. The
            others end PRUNED, with their supernet score recorded (``screened_out``).
            1.0 fine-tunes every candidate.
        screen_batch: Candidates scored between two writes to the study's storage when
            candidates are scored from the supernet alone (no ``finetune``) or looked up
            in a ``table``: the sampler proposes on an in-memory copy of the study, each
            proposal an architecture the study has not scored (``n_trials`` counts
            distinct architectures), and every ``screen_batch`` scored candidates are
            written at once; a crash loses at most the batch in flight. 0: the per-trial
            loop (``study.optimize``, one trial written per candidate, the sampler reading
            the storage; a repeated architecture reuses its score and counts as a trial;
            kept to compare).
        train: The training budget: how a candidate is trained stand-alone. Training cost
            is the time of this recipe; winners are retrained with it.
        pruner: ``"auto"`` picks Hyperband (one objective) or the Pareto pruner
            (several) over the fine-tuning epochs; or an Optuna ``BasePruner`` instance,
            used as given (several objectives: a ``ParetoSuccessiveHalvingPruner`` or a
            ``NopPruner``, since Optuna's own pruners read ``trial.report``, which Optuna
            refuses in multi-objective studies).
        sampler: ``"auto"`` picks TPE for a screening of fewer than 1,000 candidates and
            regularized evolution from 1,000 (the run's ``n_trials``; measured:
            ``nasflow.search._optuna.auto_sampler_name``); ``"evolution"`` is regularized
            evolution (``RegularizedEvolutionSampler``); or any Optuna ``BaseSampler``
            instance, used as given (not re-seeded).
        repeat_fallback: In place of an architecture the sampler keeps proposing though
            scored: ``"random"`` (default), an unseen one drawn uniformly; ``"mutate"``, an
            unseen one a choice (or two) away from the sampler's proposal
            (``benchmarks/results/proposals.md``).
        storage: Where the study lives: ``None`` for ``OUT/NAME/study.db`` (SQLite), a
            URL (``sqlite:///FILE``, ``postgresql://...``, ``journal:///FILE``) or an
            Optuna storage object (``RDBStorage``, ``JournalStorage``,
            ``InMemoryStorage``). ``StudyRunner(storage=...)`` and ``--storage`` win
            over it.
        study: An existing ``optuna.Study`` to run in (its name must be ``name``, its
            directions those of ``objectives``; an empty study is adopted, one holding
            trials nasflow did not make is refused). Its storage is used; its sampler and
            pruner are replaced by ``sampler`` and ``pruner`` (pass
            ``sampler=study.sampler`` to keep it).
        budget: Limits on candidates.
        retrain_top: How many winners phase 3 retrains from scratch: after a fine-tuning
            phase, the best fine-tuned finalists (those fine-tuned the most epochs first);
            the one whose retrain validates highest is the search's kept choice. 0: none;
            the fine-tuning's last rung is then the recipe's epochs from the inherited
            weights (``FineTuning(rungs=(..., train.epochs))``: :attr:`top_rung_inherited`)
            and the best-validating finalist that reached it is the search's choice.
        retrain_spread: Phase 3 retrains this many more after the ``retrain_top``, chosen
            to spread the trained models over cost: members of the screened Pareto set,
            each the farthest in log predicted cost from every model the study trained
            from scratch (its anchors and retrains); they fill the trained models' front
            and are not candidates for the kept model. 0 (default): none; the MNIST-1D
            studies ship 3 (``benchmarks/results/paired.md``, run 18: the front higher,
            every kept model the same; run 17, when they were candidates: one kept model
            of 17 worse).
        seed: Seed of the sampler, the supernet and the data order. The supernet trains
            with ``supernet.seed + seed`` (:attr:`supernet_recipe`), so ``--seed`` draws
            another supernet too, and a study of seed 0 trains the one it always did.
        cost: How a candidate's training cost is predicted: ``"model"`` (default) sums
            its ops' latencies from the hardware-aware cost model's table (measured once
            per device and stored in the study's database; every op of the space is
            built and timed once, up front), ``"measure"`` times a few training steps of
            every candidate when it is scored (use it for a space whose ops may fail or
            exhaust memory in some configurations: only the trials using them fail).
        table: Tabular mode: score each architecture by looking it up in this table
            instead of training (no supernet, no retraining; one objective, "accuracy",
            the table's searched metric). The run reports the regret to its optimum.
        catch: Exception types raised by the space's code in a trial (for example in a
            network's ``forward``) after which the study goes on; the trial fails with
            its traceback stored either way. Out-of-memory always lets the study go on.
        stack: The speedup stack the supernet (phase 1), every fine-tuned candidate
            (phase 2) and the retrained winners (phase 3) train with: a ``Stack``,
            ``None`` (plain fp32 eager) or ``"auto"``: the layers that measurably pay off
            on this machine, from a short calibration that is measured once per device
            and stored in the study's database (table ``nasflow_stack_calibrations``,
            keyed by the cost model's device fingerprint, the space, the batch size and
            the calibrated candidate), so every later study there with the same key
            reuses it and trains nothing for it. The record is copied to the study (user
            attribute ``nasflow:stack``, drawn by the report); a resumed study keeps it.
        stack_budget: Seconds the ``"auto"`` calibration may take. A probe of a few
            batches estimates it first; when it does not fit, nothing is calibrated, the
            study trains with plain fp32 eager and its summary says how to calibrate. While
            it runs, a phase stops at the first round that ends past the budget.
        recalibrate_stack: Calibrate ``"auto"`` again even when this device's record is
            stored, and replace it (also ``nasflow search --recalibrate-stack`` or
            ``NASFLOW_RECALIBRATE_STACK=1``). A study that already holds its own record
            keeps it: its supernet checkpoints were trained with that stack.
        remeasure_costs: Measure the cost model's op table and calibration again even when
            this device's are stored (in the study's database or the shared table,
            ``$NASFLOW_COST_CACHE``), and replace them (also ``nasflow search
            --remeasure-costs`` or ``NASFLOW_REMEASURE_COSTS=1``). A study that already
            recorded its table keeps it: its trials' predicted costs came from it.
        trust: After screening, train a few screened architectures spread over the
            supernet's ranking stand-alone with a short recipe and report how well the
            supernet's ranking agrees (Kendall tau with a bootstrap interval, and a
            verdict); ``None`` skips it. See :class:`~nasflow.search.TrustProbe`.
        finetuning: After screening, fine-tune the finalists (the screened Pareto set, then
            the best supernet scores) from their inherited supernet weights under
            successive halving, each a ready model with its weights and measured cost
            (``RUNS/NAME/ready/trial-N``); phase 3 then retrains the finalist with the best
            fine-tuned validation accuracy rather than the best supernet score. ``None``
            (default) skips it. See :class:`~nasflow.search.FineTuning`.
        anchors: Before the supernet, train a few architectures chosen without training
            (parameter count up, training FLOPs down) from scratch with the study's recipe:
            ready models within seconds along the front, and the baseline the kept model
            is compared with; each is a trial of the study, scored by phase 2 like any
            other. ``None`` (default) skips it. See :class:`~nasflow.search.Anchors`.
        rungs: After screening, one schedule of rungs from the screening score to the
            recipe's full training (successive halving in Optuna, over a rung study any
            worker takes trials from) in place of ``finetuning`` and phase 3: see
            :class:`~nasflow.search.Rungs`. ``None`` (default) runs those instead.
        baseline: CSV files of random architectures of this space trained stand-alone with
            this study's recipe (``benchmarks/ground_truth.py`` writes them; a column
            ``test_accuracy``): the summary says how much better the retrained winner is
            than their median. Missing files are skipped with a note.
        deterministic: Nothing a clock measures decides anything (as Lightning's
            ``Trainer(deterministic=True)``; ``nasflow search --deterministic``), so runs
            with the same seed, storage kind and stored cost table keep the same model:
            ``"auto"`` trains plain fp32 uncalibrated, the cost table is reused as stored
            (even one flagged loaded; measured only where this device has none), fine-tuning
            promotes by predicted cost, and torch uses deterministic algorithms. Workers
            still interleave. Not with ``cost="measure"``, ``remeasure_costs`` or
            ``recalibrate_stack``. On one machine: another CPU rounds differently.
            See ``nasflow.search.reproducibility_record``.
    """

    name: str
    space: SearchSpace
    data: Callable[[], DataBundle] | None = None
    objectives: tuple[str, ...] = ("accuracy", "train_cost")
    supernet: SupernetConfig = field(default_factory=SupernetConfig)
    n_trials: int = 40
    bn_batches: int = 10
    finetune: TrainConfig | None = None
    screen_keep: float = 1.0
    screen_batch: int = 32
    train: TrainConfig = field(default_factory=TrainConfig)
    pruner: str | optuna.pruners.BasePruner = "auto"
    sampler: str | optuna.samplers.BaseSampler = "auto"
    repeat_fallback: str = "random"
    storage: str | optuna.storages.BaseStorage | None = None
    study: optuna.Study | None = None
    budget: Budget = field(default_factory=Budget)
    retrain_top: int = 1
    retrain_spread: int = 0
    seed: int = 0
    cost: str = "model"
    table: TabularBenchmark | None = None
    catch: tuple[type[Exception], ...] = ()
    stack: Stack | str | None = None
    stack_budget: float = 60.0
    recalibrate_stack: bool = False
    remeasure_costs: bool = False
    trust: TrustProbe | None = None
    finetuning: FineTuning | None = None
    anchors: Anchors | None = None
    rungs: Rungs | None = None
    baseline: tuple[str | os.PathLike, ...] = ()
    deterministic: bool = False

    def __post_init__(self) -> None:
        # One step per group of fields, in this order: the first bad value is the error.
        check_study_name(self.name)
        self._check_space_and_data()
        objectives = self._normalize_objectives()
        self._check_optuna_objects(objectives)
        self._check_sampler()
        self._check_counts()
        self._check_recipes()
        self._normalize_catch()
        self._check_stack_options()
        self._check_deterministic()
        self._normalize_baseline()
        self._check_phase_settings()
        if self.table is not None:
            self._check_tabular()
        else:
            self._check_hyper_parameters()

    def _check_space_and_data(self) -> None:
        """``space`` is a ``SearchSpace``; ``data`` a callable unless a table scores."""
        if not isinstance(self.space, SearchSpace):
            raise StudyFileError(
                f"study {self.name!r}: space must be a SearchSpace, got {self.space!r}"
            )
        if self.table is None and not callable(self.data):
            raise StudyFileError(
                f"study {self.name!r}: data must be a callable returning a DataBundle"
            )

    def _normalize_objectives(self) -> tuple[str, ...]:
        """``objectives`` as a tuple of known names starting with ``"accuracy"`` (one name
        alone is one objective); stored back and returned."""
        objectives = self.objectives
        if isinstance(objectives, str):  # objectives="accuracy": one objective
            objectives = (objectives,)
        try:
            objectives = tuple(objectives)
        except TypeError:
            raise StudyFileError(
                f"study {self.name!r}: objectives must be a tuple of names from "
                f"{sorted(OBJECTIVES)}, got {self.objectives!r}"
            ) from None
        object.__setattr__(self, "objectives", objectives)
        for o in objectives:
            if o not in OBJECTIVES:
                raise StudyFileError(f"unknown objective {o!r}; choose from {sorted(OBJECTIVES)}")
        if (
            not objectives
            or objectives[0] != "accuracy"
            or len(set(objectives)) != len(objectives)
        ):
            raise StudyFileError(
                f"objectives {objectives!r} must start with 'accuracy' and not repeat"
            )
        return objectives

    def _check_sampler(self) -> None:
        """``sampler`` and ``repeat_fallback`` are known (or an Optuna sampler)."""
        if not isinstance(self.sampler, optuna.samplers.BaseSampler) and (
            not isinstance(self.sampler, str) or self.sampler not in SAMPLERS
        ):
            raise StudyFileError(
                f"unknown sampler {self.sampler!r}; choose from {SAMPLERS} or pass an Optuna "
                "BaseSampler"
            )
        if self.repeat_fallback not in REPEAT_FALLBACKS:
            raise StudyFileError(
                f"unknown repeat_fallback {self.repeat_fallback!r}; choose from {REPEAT_FALLBACKS}"
            )

    def _check_counts(self) -> None:
        """The counts, ``screen_keep`` (which needs a ``finetune``) and the seed."""
        for name in ("n_trials", "bn_batches"):
            check_int(name, getattr(self, name), error=StudyFileError)
        check_int("retrain_top", self.retrain_top, 0, error=StudyFileError)
        check_int("screen_batch", self.screen_batch, 0, error=StudyFileError)
        check_int("retrain_spread", self.retrain_spread, 0, error=StudyFileError)
        keep = check_fraction("screen_keep", self.screen_keep, one=True, error=StudyFileError)
        if keep < 1 and self.finetune is None:
            raise StudyFileError(
                f"screen_keep={keep!r} chooses which candidates are fine-tuned, but "
                "finetune=None fine-tunes none; set finetune=TrainConfig(epochs=...) or "
                "screen_keep=1"
            )
        check_int("seed", self.seed, 0, MAX_SEED, error=StudyFileError)

    def _check_recipes(self) -> None:
        """The recipes and budget are of their classes, the supernet's split names a path
        choice of the space, and ``cost`` is a known way to cost candidates."""
        for name, cls in (
            ("supernet", SupernetConfig),
            ("finetune", TrainConfig),
            ("train", TrainConfig),
            ("budget", Budget),
        ):
            v = getattr(self, name)
            if not isinstance(v, cls) and not (name == "finetune" and v is None):
                raise StudyFileError(
                    f"study {self.name!r}: {name} must be a {cls.__name__}(...), got {v!r}"
                )
        split = self.supernet.split
        if split is not None and split not in {c.label for c in self.space.path_choices}:
            raise StudyFileError(
                f"study {self.name!r}: SupernetConfig(split={split!r}) names no path choice "
                f"of space {self.space.name!r} (its path choices: "
                f"{[c.label for c in self.space.path_choices]})"
            )
        if self.cost not in COSTS:
            raise StudyFileError(f"unknown cost {self.cost!r}; choose from {COSTS}")

    def _normalize_catch(self) -> None:
        """``catch`` as a tuple of ``Exception`` subclasses (one class alone, as Optuna's
        ``catch`` takes it too); stored back."""
        catch = self.catch
        if isinstance(catch, type):
            catch = (catch,)
        try:
            catch = tuple(catch)
        except TypeError:
            raise StudyFileError(
                f"catch must be an Exception subclass or a tuple of them, got {self.catch!r}"
            ) from None
        object.__setattr__(self, "catch", catch)
        for c in catch:
            if not (isinstance(c, type) and issubclass(c, Exception)):
                raise StudyFileError(f"catch must hold Exception subclasses, got {c!r}")

    def _check_stack_options(self) -> None:
        """``stack``, ``stack_budget`` and the two re-measuring switches."""
        if not (self.stack is None or self.stack == "auto" or isinstance(self.stack, Stack)):
            raise StudyFileError(
                f"study {self.name!r}: stack must be a Stack, 'auto' or None, got {self.stack!r}"
            )
        sb = self.stack_budget
        if isinstance(sb, bool) or not isinstance(sb, (int, float)) or not 0 < sb < math.inf:
            raise StudyFileError(
                f"study {self.name!r}: stack_budget must be a positive number of seconds, "
                f"got {sb!r}"
            )
        for name in ("recalibrate_stack", "remeasure_costs"):
            if not isinstance(getattr(self, name), bool):
                raise StudyFileError(
                    f"study {self.name!r}: {name} must be True or False, "
                    f"got {getattr(self, name)!r}"
                )

    def _normalize_baseline(self) -> None:
        """``baseline`` as a tuple of paths (one path alone is one file); stored back."""
        baseline = (
            (self.baseline,) if isinstance(self.baseline, (str, os.PathLike)) else self.baseline
        )
        if not isinstance(baseline, (tuple, list)):
            raise StudyFileError(
                f"study {self.name!r}: baseline must be a file path or a tuple of paths (() "
                f"for none), got {self.baseline!r}"
            )
        object.__setattr__(self, "baseline", tuple(baseline))
        for b in self.baseline:
            if not isinstance(b, (str, os.PathLike)):
                raise StudyFileError(
                    f"study {self.name!r}: baseline must hold file paths, got {b!r}"
                )

    def _check_phase_settings(self) -> None:
        """``trust``, ``finetuning`` and ``anchors`` are their settings' classes or None."""
        for name, cls, article in (
            ("trust", TrustProbe, "a"),
            ("finetuning", FineTuning, "a"),
            ("anchors", Anchors, "an"),
            ("rungs", Rungs, "a"),
        ):
            v = getattr(self, name)
            if v is not None and not isinstance(v, cls):
                raise StudyFileError(
                    f"study {self.name!r}: {name} must be {article} {cls.__name__} or None, "
                    f"got {v!r}"
                )
        if self.rungs is not None and self.finetuning is not None:
            raise StudyFileError(
                f"study {self.name!r}: rungs={self.rungs!r} replaces the fine-tuning phase; "
                f"set finetuning=None (got {self.finetuning!r})"
            )
        if self.retrain_top == 0 and not self.top_rung_inherited:
            last = None if self.finetuning is None else self.finetuning.rungs[-1]
            raise StudyFileError(
                f"study {self.name!r}: retrain_top=0 keeps the best fine-tuned finalist "
                "that trained the recipe's epochs from its inherited weights, so the "
                f"fine-tuning's last rung must reach them (train.epochs={self.train.epochs}"
                f", FineTuning's last rung {last!r}); set retrain_top >= 1 or "
                f"FineTuning(rungs=(..., {self.train.epochs}))"
            )
        if self.rungs is not None and self.retrain_spread:
            raise StudyFileError(
                f"study {self.name!r}: rungs={self.rungs!r} replaces phase 3, whose retrains "
                f"retrain_spread={self.retrain_spread!r} spreads; set retrain_spread=0"
            )

    def _check_deterministic(self) -> None:
        """``deterministic`` is a bool, and nothing else asks for a clock."""
        if not isinstance(self.deterministic, bool):
            raise StudyFileError(
                f"study {self.name!r}: deterministic must be True or False, "
                f"got {self.deterministic!r}"
            )
        if not self.deterministic:
            return
        clocked = ("cost='measure'", "remeasure_costs=True", "recalibrate_stack=True")
        on = (self.cost == "measure", self.remeasure_costs, self.recalibrate_stack)
        asked = [name for name, yes in zip(clocked, on, strict=True) if yes]
        if asked:
            raise StudyFileError(
                f"study {self.name!r}: deterministic=True decides nothing by timings, but "
                f"{' and '.join(asked)} measure(s) them now; use cost='model' and no "
                "re-measuring, or deterministic=False"
            )

    def _check_optuna_objects(self, objectives: tuple[str, ...]) -> None:
        """The pruner, storage and study: a known name or an Optuna object that fits."""
        from nasflow.search._pareto_pruner import ParetoSuccessiveHalvingPruner

        pruner = self.pruner
        if isinstance(pruner, optuna.pruners.BasePruner):
            multi_ok = (ParetoSuccessiveHalvingPruner, optuna.pruners.NopPruner)
            if len(objectives) > 1 and not isinstance(pruner, multi_ok):
                raise StudyFileError(
                    f"pruner {type(pruner).__name__} reads trial.report(), which Optuna refuses "
                    "in multi-objective studies; use a ParetoSuccessiveHalvingPruner, a "
                    "NopPruner, or pruner='auto'"
                )
        elif not isinstance(pruner, str) or pruner not in PRUNERS:
            raise StudyFileError(
                f"unknown pruner {pruner!r}; choose from {PRUNERS} or pass an Optuna BasePruner"
            )
        elif pruner in ("hyperband", "asha") and len(objectives) > 1:
            raise StudyFileError(
                f"pruner {pruner!r} takes one objective (Optuna refuses report() in "
                "multi-objective studies); use pruner='pareto' or 'auto'"
            )
        storage = self.storage
        if storage is not None and not isinstance(
            storage, (str, os.PathLike, optuna.storages.BaseStorage)
        ):
            raise StudyFileError(
                f"study {self.name!r}: storage must be a URL or an Optuna storage, got {storage!r}"
            )
        study = self.study
        if study is None:
            return
        if not isinstance(study, optuna.Study):
            raise StudyFileError(
                f"study {self.name!r}: study must be an optuna.Study, got {study!r}"
            )
        if study.study_name != self.name:
            raise StudyFileError(
                f"study {self.name!r}: the optuna.Study given is named {study.study_name!r}; "
                "give the StudySpec the same name"
            )
        if storage is not None:
            raise StudyFileError(
                f"study {self.name!r}: pass storage or study, not both (the study's storage "
                "is used)"
            )
        have = [d.name.lower() for d in study.directions]
        if have != self.directions:
            raise StudyFileError(
                f"study {self.name!r}: the optuna.Study given has directions {have}, the "
                f"objectives {list(objectives)} need {self.directions}"
            )

    def _check_hyper_parameters(self) -> None:
        """A searched hyper-parameter must change how some phase trains, or trials that
        differ only in it would score the same and the search would waste them."""
        for c in self.space.hyper_choices:
            if c.label not in RECIPE_KEYS:
                raise StudyFileError(
                    f"study {self.name!r}: the space searches hyper-parameter {c.label!r}, "
                    f"which no phase trains with (recipe hyper-parameters: {RECIPE_KEYS})"
                )
            if self.finetune is None:
                raise StudyFileError(
                    f"study {self.name!r}: the space searches hyper-parameter {c.label!r}, but "
                    "with finetune=None candidates are scored from the supernet without "
                    "training, so it cannot change any score; set finetune=TrainConfig(...) or "
                    "remove it from the space"
                )

    def _check_tabular(self) -> None:
        """A tabular study scores one objective from its table, for its own space."""
        table = self.table
        if not isinstance(table, TabularBenchmark):
            raise StudyFileError(
                f"study {self.name!r}: table must be a TabularBenchmark, got {table!r}"
            )
        if table.space.fingerprint() != self.space.fingerprint():
            raise StudyFileError(
                f"study {self.name!r}: the table was loaded for space {table.space.name!r} "
                f"{table.space.config}, the study searches {self.space.name!r} "
                f"{self.space.config}; give both the same space"
            )
        if self.objectives != ("accuracy",):
            raise StudyFileError(
                f"study {self.name!r}: a tabular study has one objective, ('accuracy',) "
                f"(the table's {table.metric!r}), got {self.objectives!r}"
            )
        for name in ("finetune", "finetuning", "anchors", "rungs"):
            if getattr(self, name) is not None:
                raise StudyFileError(
                    f"study {self.name!r}: {name}={getattr(self, name)!r}, but a tabular "
                    "study trains nothing; use None"
                )
        if self.stack is not None:
            raise StudyFileError(
                f"study {self.name!r}: stack={self.stack!r}, but a tabular study trains "
                "nothing; use None"
            )

    @property
    def finetune_epochs(self) -> int:
        """Epochs each candidate is fine-tuned (``finetune.epochs``; 0 without ``finetune``)."""
        return self.finetune.epochs if self.finetune is not None else 0

    @property
    def top_rung_inherited(self) -> bool:
        """Whether the study's full trainings of the search's candidates go on from their
        inherited weights instead of starting from scratch: ``Rungs(top="inherited")``, or
        a fine-tuning phase whose last rung is the recipe's epochs with ``retrain_top=0``
        (phase 3 then retrains only the ``retrain_spread`` front members). Where it holds,
        the search's kept choice is the best-validating candidate that trained the whole
        recipe that way."""
        if self.rungs is not None:
            return self.rungs.top == "inherited"
        return (
            self.retrain_top == 0
            and self.finetuning is not None
            and self.finetuning.rungs[-1] >= self.train.epochs
        )

    @property
    def directions(self) -> list[str]:
        return [OBJECTIVES[o] for o in self.objectives]

    @property
    def resolved_pruner(self) -> str:
        """The pruner's name (``"custom"`` for a ``BasePruner`` instance)."""
        if not isinstance(self.pruner, str):
            return "custom"
        if self.pruner != "auto":
            return self.pruner
        if self.finetune_epochs == 0:
            return "none"
        return "hyperband" if len(self.objectives) == 1 else "pareto"

    @property
    def supernet_recipe(self) -> SupernetConfig:
        """The supernet recipe phase 1 trains: ``supernet`` with its seed offset by the
        study's (before, every study seed trained the supernet of ``supernet.seed``)."""
        if not self.seed:
            return self.supernet
        return dataclasses.replace(self.supernet, seed=self.supernet.seed + self.seed)

    def replace(self, **changes: Any) -> StudySpec:
        for key in changes:
            if key in REMOVED_KEYS:
                raise StudyFileError(REMOVED_KEYS[key])

        return dataclasses.replace(self, **changes)
