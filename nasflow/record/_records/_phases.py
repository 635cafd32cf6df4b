"""The study records the phases of a run write, typed: the zero-cost anchors
(``nasflow:anchors``), the supernet (``nasflow:supernet``), the screening
(``nasflow:screening``), the trust probe (``nasflow:trust``), each retrained winner
(``nasflow:retrain:N``), the kept model (``nasflow:kept``) and what a rerun reproduces
(``nasflow:reproducibility``).

Each is a frozen dataclass with one ``from_dict`` (the stored record, checked once:
``StudyRecordError`` names what is wrong) and one ``to_dict`` (the record as stored), and
``key``: the study user attribute it lives under."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any, ClassVar

from nasflow.errors import StudyRecordError
from nasflow.record._keys import (
    ANCHORS_KEY,
    KEPT_KEY,
    REPRODUCIBILITY_KEY,
    SCREENING_KEY,
    SUPERNET_KEY,
    TRUST_KEY,
    retrain_key,
)
from nasflow.record._typed import _opt_float, _opt_int, _opt_str


def _object(record: Any, key: str) -> Mapping[str, Any]:
    if not isinstance(record, Mapping):
        raise StudyRecordError(f"{key} must be a JSON object, got {record!r:.80}")
    return record


def _number(record: Mapping[str, Any], name: str, key: str) -> float:
    """``record[name]``, a number (NaN allowed: JSON keeps it), else the record is refused."""
    value = _opt_float(record.get(name))
    if value is None:
        raise StudyRecordError(f"{key}: {name} is {record.get(name)!r:.80}, not a number")
    return value


def _count(record: Mapping[str, Any], name: str, key: str) -> int:
    value = record.get(name)
    if isinstance(value, bool) or not isinstance(value, int):
        raise StudyRecordError(f"{key}: {name} is {value!r:.80}, not a whole number")
    return value


def _text(record: Mapping[str, Any], name: str, key: str) -> str:
    value = record.get(name)
    if not isinstance(value, str):
        raise StudyRecordError(f"{key}: {name} is {value!r:.80}, not a string")
    return value


def _floats(value: Any) -> tuple[float, ...]:
    return tuple(float(v) for v in value) if isinstance(value, list | tuple) else ()


# ---------------------------------------------------------------------- phase 0
@dataclass(frozen=True)
class AnchorEntry:
    """One zero-cost anchor: the trial queued for it, what chose it and, once trained,
    what its from-scratch training scored.

    Attributes:
        index: Its index among the anchors.
        trial: Its trial.
        arch: Its architecture (``Arch.to_json()``).
        params: Its parameter count.
        flops: FLOPs of one training step.
        chosen_by: Those numbers, in words.
        val_accuracy: Validation accuracy of its from-scratch weights (``None``: not
            trained yet).
        test_accuracy: Test accuracy of the same weights.
        measured_train_cost: Measured seconds of its training.
        ready_seconds: Seconds into the run when it was ready.
        ready_cpu_seconds: The process's CPU-seconds into the run then.
        stack: The ``Stack.to_dict()`` it trained through.
        weights: Its weights file, relative to the run's folder (``None``: not saved).
    """

    index: int
    trial: int
    arch: str
    params: int
    flops: int
    chosen_by: str
    val_accuracy: float | None = None
    test_accuracy: float | None = None
    measured_train_cost: float | None = None
    ready_seconds: float | None = None
    ready_cpu_seconds: float | None = None
    stack: Mapping[str, Any] | None = None
    weights: str | None = None

    @property
    def trained(self) -> bool:
        """Whether its training is recorded."""
        return self.val_accuracy is not None

    @classmethod
    def from_dict(cls, entry: Any, where: str = ANCHORS_KEY) -> AnchorEntry:
        entry = _object(entry, where)
        stack = entry.get("stack")
        return cls(
            _count(entry, "index", where),
            _count(entry, "trial", where),
            _text(entry, "arch", where),
            _opt_int(entry.get("params")) or 0,
            _opt_int(entry.get("flops")) or 0,
            _opt_str(entry.get("chosen_by")) or "",
            _opt_float(entry.get("val_accuracy")),
            _opt_float(entry.get("test_accuracy")),
            _opt_float(entry.get("measured_train_cost")),
            _opt_float(entry.get("ready_seconds")),
            _opt_float(entry.get("ready_cpu_seconds")),
            dict(stack) if isinstance(stack, Mapping) else None,
            _opt_str(entry.get("weights")),
        )

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "index": self.index,
            "trial": self.trial,
            "arch": self.arch,
            "params": self.params,
            "flops": self.flops,
            "chosen_by": self.chosen_by,
        }
        if self.trained:
            out.update(
                val_accuracy=self.val_accuracy,
                test_accuracy=self.test_accuracy,
                measured_train_cost=self.measured_train_cost,
                ready_seconds=self.ready_seconds,
                ready_cpu_seconds=self.ready_cpu_seconds,
                stack=None if self.stack is None else dict(self.stack),
                weights=self.weights,
            )
        return out


@dataclass(frozen=True)
class AnchorsRecord:
    """Phase 0's record (``nasflow:anchors``): how the anchors were chosen and each anchor.

    Attributes:
        rule: How they were chosen, in words.
        anchors: One entry per anchor, cheapest first.
        seconds: Measured seconds of the phase (``None``: not finished yet).
        fallback: The trial of the anchor the search must beat to be kept
            (``Anchors(fallback="largest")``: the space's largest architecture);
            ``None``: the anchors only replace the search's choice where they validate
            higher.
    """

    KEY: ClassVar[str] = ANCHORS_KEY

    rule: str
    anchors: tuple[AnchorEntry, ...]
    seconds: float | None = None
    fallback: int | None = None

    @property
    def key(self) -> str:
        """The study user attribute it is stored under."""
        return self.KEY

    @property
    def trained(self) -> list[AnchorEntry]:
        """The anchors whose training is recorded."""
        return [a for a in self.anchors if a.trained]

    def anchor(self, trial: int) -> AnchorEntry | None:
        """The anchor of ``trial`` (``None``: not an anchor)."""
        return next((a for a in self.anchors if a.trial == trial), None)

    @classmethod
    def from_dict(cls, record: Any) -> AnchorsRecord:
        record = _object(record, ANCHORS_KEY)
        entries = record.get("anchors")
        if not isinstance(entries, list):
            raise StudyRecordError(f"{ANCHORS_KEY}: anchors is {entries!r:.80}, not a list")
        return cls(
            _opt_str(record.get("rule")) or "",
            tuple(
                AnchorEntry.from_dict(e, f"{ANCHORS_KEY}, anchor {i}")
                for i, e in enumerate(entries)
            ),
            _opt_float(record.get("seconds")),
            _opt_int(record.get("fallback")),
        )

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"rule": self.rule, "anchors": [a.to_dict() for a in self.anchors]}
        if self.seconds is not None:
            out["seconds"] = self.seconds
        if self.fallback is not None:
            out["fallback"] = self.fallback
        return out


# ---------------------------------------------------------------------- phase 1
@dataclass(frozen=True)
class SupernetRecord:
    """Phase 1's record (``nasflow:supernet``): how the supernet trained.

    Attributes:
        sampler: ``"fair"``, ``"fair-depth"`` or ``"uniform"``.
        epochs: Epochs trained.
        paths_per_step: Paths trained per optimizer step.
        seconds: Measured training seconds.
        resumed_from: Whole epochs of the checkpoint it resumed from (``None``: none).
        losses: Mean training loss of each epoch.
        op_counts: ``(label, value, count)``: how often each choice was trained.
        split: The choice the supernet was split on (few-shot), or ``None``.
        split_epoch: The epoch it was split at.
        stack_note: Where it trained through another stack than the study's.
    """

    KEY: ClassVar[str] = SUPERNET_KEY

    sampler: str | None
    epochs: int | None
    paths_per_step: int | None
    seconds: float | None
    resumed_from: int | None = None
    losses: tuple[float, ...] = ()
    op_counts: tuple[tuple[str, Any, int], ...] = ()
    split: str | None = None
    split_epoch: int | None = None
    stack_note: str | None = None

    @property
    def key(self) -> str:
        """The study user attribute it is stored under."""
        return self.KEY

    @classmethod
    def from_dict(cls, record: Any) -> SupernetRecord:
        record = _object(record, SUPERNET_KEY)
        rows = []
        for row in record.get("op_counts") or ():
            if not (isinstance(row, list | tuple) and len(row) == 3):
                raise StudyRecordError(
                    f"{SUPERNET_KEY}: an op count is {row!r:.80}, not [label, value, count]"
                )
            label, value, count = row
            rows.append((str(label), value, int(count)))
        return cls(
            _opt_str(record.get("sampler")),
            _opt_int(record.get("epochs")),
            _opt_int(record.get("paths_per_step")),
            _opt_float(record.get("seconds")),
            _opt_int(record.get("resumed_from")),
            _floats(record.get("losses")),
            tuple(rows),
            _opt_str(record.get("split")),
            _opt_int(record.get("split_epoch")),
            _opt_str(record.get("stack_note")),
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "sampler": self.sampler,
            "epochs": self.epochs,
            "paths_per_step": self.paths_per_step,
            "seconds": self.seconds,
            "resumed_from": self.resumed_from,
            "losses": list(self.losses),
            "op_counts": [list(r) for r in self.op_counts],
            "split": self.split,
            "split_epoch": self.split_epoch,
            "stack_note": self.stack_note,
        }


# ---------------------------------------------------------------------- phase 2
@dataclass(frozen=True)
class ScreeningRecord:
    """The screening's record (``nasflow:screening``): how many distinct candidates were
    scored from the supernet, and the median measured time of one score.

    Attributes:
        candidates: Distinct candidates scored (a repeat counted once).
        median_score_ms: Median milliseconds of one score (path extraction, BN
            recalibration and validation; cost prediction excluded).
    """

    KEY: ClassVar[str] = SCREENING_KEY

    candidates: int
    median_score_ms: float

    @property
    def key(self) -> str:
        """The study user attribute it is stored under."""
        return self.KEY

    @classmethod
    def from_dict(cls, record: Any) -> ScreeningRecord:
        record = _object(record, SCREENING_KEY)
        return cls(
            _count(record, "candidates", SCREENING_KEY),
            _number(record, "median_score_ms", SCREENING_KEY),
        )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class TrustRecord:
    """The trust probe's record (``nasflow:trust``): Kendall's tau between the supernet's
    score and a short training's validation accuracy, its interval and verdict.

    Attributes:
        tau: Kendall tau-b of the probed architectures.
        low: The interval's low end (the bootstrap's, widened by ``margin``).
        high: Its high end.
        archs: The probed architectures.
        supernet_scores: Their supernet scores.
        short_accuracies: Their validation accuracies after the short training.
        epochs: Epochs of the short training.
        seconds: Measured seconds of the probe's trainings.
        verdict: What to do, in words.
        proxy: ``"finetune"`` or ``"scratch"``: the short training.
        margin: The calibrated margin added to the bootstrap interval.
        raw_interval: The bootstrap interval before the margin.
        screened: Screened architectures when it ran (``None``: not recorded).
        phase_seconds: Measured seconds of the whole phase (``None``: older records
            timed the trainings only, ``seconds``).
    """

    KEY: ClassVar[str] = TRUST_KEY

    tau: float
    low: float
    high: float
    archs: tuple[str, ...]
    supernet_scores: tuple[float, ...]
    short_accuracies: tuple[float, ...]
    epochs: int
    seconds: float
    verdict: str
    proxy: str = "scratch"
    margin: float = 0.0
    raw_interval: tuple[float, float] | None = None
    screened: int | None = None
    phase_seconds: float | None = None

    @property
    def key(self) -> str:
        """The study user attribute it is stored under."""
        return self.KEY

    @property
    def spent_seconds(self) -> float:
        """The phase's measured seconds where recorded, else the trainings'."""
        return self.phase_seconds if self.phase_seconds is not None else self.seconds

    @classmethod
    def from_dict(cls, record: Any) -> TrustRecord:
        record = _object(record, TRUST_KEY)
        archs = record.get("archs")
        if not isinstance(archs, list | tuple):
            raise StudyRecordError(f"{TRUST_KEY}: archs is {archs!r:.80}, not a list")
        raw = record.get("raw_interval")
        return cls(
            _number(record, "tau", TRUST_KEY),
            _number(record, "low", TRUST_KEY),
            _number(record, "high", TRUST_KEY),
            tuple(str(a) for a in archs),
            _floats(record.get("supernet_scores")),
            _floats(record.get("short_accuracies")),
            _count(record, "epochs", TRUST_KEY),
            _number(record, "seconds", TRUST_KEY),
            _text(record, "verdict", TRUST_KEY),
            _opt_str(record.get("proxy")) or "scratch",
            _opt_float(record.get("margin")) or 0.0,
            (float(raw[0]), float(raw[1])) if isinstance(raw, list | tuple) else None,
            _opt_int(record.get("screened")),
            _opt_float(record.get("phase_seconds")),
        )

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        for name in ("archs", "supernet_scores", "short_accuracies"):
            out[name] = list(out[name])
        if self.raw_interval is not None:
            out["raw_interval"] = list(self.raw_interval)
        for name in ("screened", "phase_seconds"):
            if out[name] is None:
                del out[name]
        return out


# ---------------------------------------------------------------------- phase 3
@dataclass(frozen=True)
class RetrainRecord:
    """Phase 3's record of one winner (``nasflow:retrain:N``): trial ``number`` trained
    from scratch with the study's recipe.

    Attributes:
        number: The trial.
        val_accuracy: Accuracy of the retrained weights on the validation split.
        test_accuracy: The same on the test split.
        predicted_train_cost: The cost model's predicted training seconds (search).
        measured_train_cost: Measured seconds of the from-scratch training.
        params: Parameter count.
        weights: The weights file, relative to the run's folder (``None``: not saved).
        ready_cpu_seconds: The study process's CPU-seconds into the run when the record
            was written, so when the weights were final (``None``: not recorded, as in
            records before it was kept, or a winner reused from an earlier run).
        spread: Retrained to spread the trained models over cost
            (``StudySpec.retrain_spread``), not as a candidate for the kept model.
    """

    number: int
    val_accuracy: float | None
    test_accuracy: float | None
    predicted_train_cost: float | None
    measured_train_cost: float | None
    params: int | None
    weights: str | None = None
    ready_cpu_seconds: float | None = None
    spread: bool = False

    @property
    def key(self) -> str:
        """The study user attribute it is stored under."""
        return retrain_key(self.number)

    @classmethod
    def from_dict(cls, record: Any, number: int) -> RetrainRecord:
        """From the stored record of trial ``number``."""
        record = _object(record, retrain_key(number))
        return cls(
            number,
            _opt_float(record.get("val_accuracy")),
            _opt_float(record.get("test_accuracy")),
            _opt_float(record.get("predicted_train_cost")),
            _opt_float(record.get("measured_train_cost")),
            _opt_int(record.get("params")),
            _opt_str(record.get("weights")),
            _opt_float(record.get("ready_cpu_seconds")),
            bool(record.get("spread", False)),
        )

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        for key in ("weights", "ready_cpu_seconds"):
            if out[key] is None:
                del out[key]
        if not out["spread"]:
            del out["spread"]
        return out


@dataclass(frozen=True)
class KeptRecord:
    """The model a finished run keeps (``nasflow:kept``).

    Attributes:
        trial: The kept trial's number.
        weights: ``"retrained"`` (from scratch) or ``"fine-tuned"`` (from the supernet's
            inherited weights).
        source: ``"search"`` (the search's choice) or ``"anchor"`` (a zero-cost anchor
            trained from scratch before the supernet, kept for validating higher).
    """

    KEY: ClassVar[str] = KEPT_KEY
    WEIGHTS: ClassVar[tuple[str, ...]] = ("retrained", "fine-tuned")
    SOURCES: ClassVar[tuple[str, ...]] = ("search", "anchor")

    trial: int
    weights: str
    source: str

    @property
    def key(self) -> str:
        """The study user attribute it is stored under."""
        return self.KEY

    @classmethod
    def from_dict(cls, record: Any) -> KeptRecord:
        record = _object(record, KEPT_KEY)
        trial, weights, source = record.get("trial"), record.get("weights"), record.get("source")
        if not isinstance(trial, int) or isinstance(trial, bool):
            raise StudyRecordError(f"{KEPT_KEY}: trial is {trial!r:.80}, not a trial number")
        if weights not in cls.WEIGHTS or source not in cls.SOURCES:
            raise StudyRecordError(
                f"{KEPT_KEY}: weights {weights!r:.40} / source {source!r:.40}, not one of "
                f"{list(cls.WEIGHTS)} / {list(cls.SOURCES)}"
            )
        return cls(trial, weights, source)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


# ---------------------------------------------------------------------- the whole run
@dataclass(frozen=True)
class ReproducibilityRecord:
    """Which timing-dependent inputs a finished run used (``nasflow:reproducibility``).

    Attributes:
        deterministic: Whether it ran in deterministic mode.
        threads: Torch's intra-op threads.
        inputs: Each input that could depend on a clock: what it was.
        timed: The inputs a clock decided in this run.
    """

    KEY: ClassVar[str] = REPRODUCIBILITY_KEY

    deterministic: bool
    threads: int | None
    inputs: tuple[str, ...] = ()
    timed: tuple[str, ...] = ()

    @property
    def key(self) -> str:
        """The study user attribute it is stored under."""
        return self.KEY

    @classmethod
    def from_dict(cls, record: Any) -> ReproducibilityRecord:
        record = _object(record, REPRODUCIBILITY_KEY)

        def strings(name: str) -> tuple[str, ...]:
            values = record.get(name) or ()
            return tuple(str(v) for v in values) if isinstance(values, list | tuple) else ()

        return cls(
            bool(record.get("deterministic")),
            _opt_int(record.get("threads")),
            strings("inputs"),
            strings("timed"),
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "deterministic": self.deterministic,
            "threads": self.threads,
            "inputs": list(self.inputs),
            "timed": list(self.timed),
        }
