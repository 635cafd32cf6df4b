"""What a study's scores depend on, as recorded in its identity (``nasflow.record``)."""

from __future__ import annotations

from dataclasses import asdict
from typing import TYPE_CHECKING

from nasflow.record import NO_SUPERNET, scoring_identity

if TYPE_CHECKING:
    from nasflow.search import StudySpec


def scoring_record(spec: StudySpec, data_fingerprint: str | None) -> str:
    """The scoring record of ``spec`` on data of fingerprint ``data_fingerprint``.

    It holds what changes a trial's scores or objectives: the data (its fingerprint,
    split included), the training recipe (the ``train_cost`` objective predicts its
    time; winners are retrained with it), the fine-tuning recipe, the BN recalibration
    batches and the cost estimator. The supernet recipe and the space are recorded
    apart (``nasflow:supernet_identity``, ``nasflow:fingerprint``). A tabular study
    scores from its table: :data:`~nasflow.record.NO_SUPERNET`.
    """
    if spec.table is not None:
        return NO_SUPERNET
    return scoring_identity(
        data_fingerprint,
        train=asdict(spec.train),
        finetune=asdict(spec.finetune) if spec.finetune is not None else None,
        bn_batches=spec.bn_batches,
        cost=spec.cost,
    )
