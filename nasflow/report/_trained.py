"""Figure data of the trained models: every model the run trained (the zero-cost anchors
and phase 3's retrains from scratch, the fine-tuning phase's ready models), each at its own
measured numbers, and the front among them.

Pure: it reads the study's records and returns a NamedTuple; ``_tradeoff.py`` draws it.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import optuna

from nasflow import names
from nasflow.record import KeptRecord, TrialRecord, study_kept, study_retrains, study_seconds
from nasflow.report._records import anchor_models, ready_models
from nasflow.report._study import Summarizer, generic_summary
from nasflow.search import non_dominated_sort

#: How a trained model got its weights.
RETRAINED, ANCHOR, FINETUNED = "retrained", "anchor", "fine-tuned"

#: The split every trained model's accuracy is drawn on (validation chose; test reports).
SPLIT = "test"
#: What a trained model's measured seconds are (the trainer's clock).
MEASURED_CLOCK = "wall time of the training steps"


class TrainedModel(NamedTuple):
    """One trained model, at its own measured numbers.

    Attributes:
        number: Its trial.
        kind: ``RETRAINED`` (phase 3, from scratch), ``ANCHOR`` (a zero-cost anchor, from
            scratch before the supernet) or ``FINETUNED`` (a ready model, fine-tuned from
            the supernet's inherited weights).
        weights: Which weights, in words.
        test_accuracy: Accuracy of these weights on the test split (``None``: not measured).
        val_accuracy: Their validation accuracy (what chose them).
        seconds: Measured seconds of their training (fine-tuned: the fine-tuning epochs).
        predicted: The trial's predicted stand-alone training cost, if recorded.
        params: Parameter count, if recorded.
        arch: Its architecture, in one line.
        epochs: Epochs fine-tuned (``FINETUNED`` only).
        on_front: No other from-scratch model is both more accurate on the test split and
            cheaper (fine-tuned models are never on it: their cost leaves the supernet out).
        kept: The model the run keeps.
    """

    number: int
    kind: str
    weights: str
    test_accuracy: float | None
    val_accuracy: float | None
    seconds: float
    predicted: float | None
    params: int | None
    arch: str
    epochs: int | None = None
    on_front: bool = False
    kept: bool = False


class TrainedFront(NamedTuple):
    """The trained models on the plane (test accuracy, measured training seconds).

    Attributes:
        models: Those with a test accuracy, drawn.
        untested: Those without one (not drawn; the figure says how many).
        kept: The kept model's record (``None``: the study keeps none).
        supernet_seconds: Measured seconds of the supernet phase, which the fine-tuned
            models' weights come from (``None``: not recorded).
    """

    models: list[TrainedModel]
    untested: list[TrainedModel]
    kept: KeptRecord | None
    supernet_seconds: float | None = None

    @property
    def kept_model(self) -> TrainedModel | None:
        """The kept model's entry (``None``: none kept, or it has no test accuracy)."""
        return next((m for m in self.models if m.kept), None)


def _is_kept(kept: KeptRecord | None, number: int, kind: str) -> bool:
    if kept is None or kept.trial != number:
        return False
    if kept.weights == "fine-tuned":
        return kind == FINETUNED
    return kind == (ANCHOR if kept.source == "anchor" else RETRAINED)


def trained_front(study: optuna.Study, summarize: Summarizer = generic_summary) -> TrainedFront:
    """Every trained model of the study at its own measured numbers, the from-scratch front
    among them and the kept one marked."""
    kept = study_kept(study)
    trials = {t.number: TrialRecord.from_trial(t) for t in study.get_trials(deepcopy=False)}
    models: list[TrainedModel] = []
    for number, w in study_retrains(study).items():
        trial = trials.get(number, TrialRecord())
        if w.measured_train_cost is None:
            continue
        models.append(
            TrainedModel(
                number,
                RETRAINED,
                "retrained from scratch with the study's recipe (phase 3"
                + (", spread over cost: not a candidate for the kept model)" if w.spread else ")"),
                w.test_accuracy,
                w.val_accuracy,
                w.measured_train_cost,
                w.predicted_train_cost if w.predicted_train_cost is not None else trial.train_cost,
                w.params if w.params is not None else trial.params,
                summarize(trial.arch) if trial.arch else "",
            )
        )
    for a in anchor_models(study, summarize):
        words = "zero-cost anchor, trained from scratch with the study's recipe"
        models.append(
            TrainedModel(
                a.number,
                ANCHOR,
                words,
                a.test_accuracy,
                a.val_accuracy,
                a.seconds,
                a.train_cost,
                a.params,
                a.arch,
            )
        )
    for r in ready_models(study, summarize).rows:  # one per finalist, its last epoch
        models.append(
            TrainedModel(
                r.number,
                FINETUNED,
                names.finetuned_weights(r.epochs),
                r.test_accuracy,
                r.val_accuracy,
                r.seconds,
                r.train_cost,
                r.params,
                r.arch,
                r.epochs,
            )
        )
    marked = [m._replace(kept=_is_kept(kept, m.number, m.kind)) for m in models]
    drawn = [m for m in marked if m.test_accuracy is not None]
    scratch = [i for i, m in enumerate(drawn) if m.kind != FINETUNED]
    if scratch:
        values = np.array([[drawn[i].test_accuracy, drawn[i].seconds] for i in scratch])  # (N, 2)
        ranks = non_dominated_sort(values, ["maximize", "minimize"])
        for i, rank in zip(scratch, ranks, strict=True):
            drawn[i] = drawn[i]._replace(on_front=bool(rank == 0))
    return TrainedFront(
        drawn,
        [m for m in marked if m.test_accuracy is None],
        kept,
        study_seconds(study).get("supernet"),
    )
