"""One name per number: what every accuracy and cost a study shows is called, everywhere.

(Imports nothing heavy: ``nasflow.load_exported`` and the export's model card use it.)

A study records several accuracies of one architecture that must never be confused: the
supernet's score with inherited weights (phase 2 screening), the validation accuracy after
fine-tuning those weights (phase 2 with ``finetune_epochs``), and the test accuracy of the
network retrained from scratch (phase 3). Optuna's ``metric_names`` of the study, the CLI
tables, the report's axes and hovers, ``arch.json`` and the model card all take their
names from here.
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING

from nasflow.errors import ConfigError

if TYPE_CHECKING:
    import optuna

#: Validation accuracy of an architecture's path in the supernet, with inherited weights
#: and batch-norm statistics re-estimated on training batches (phase 2 screening).
SUPERNET_SCORE = "supernet score"
#: Validation accuracy after fine-tuning the inherited weights (phase 2, ``finetune_epochs``).
FINETUNED_ACCURACY = "fine-tuned validation accuracy"
#: Validation perplexity with inherited weights (language-model spaces).
SUPERNET_PERPLEXITY = "supernet perplexity"
#: Validation perplexity after fine-tuning the inherited weights.
FINETUNED_PERPLEXITY = "fine-tuned validation perplexity"
#: Validation accuracy looked up in a tabular benchmark (tabular studies train nothing).
TABLE_ACCURACY = "table accuracy"
#: Test accuracy of a ready model: the inherited weights fine-tuned by the fine-tuning phase.
FINETUNED_TEST_ACCURACY = "fine-tuned test accuracy"
#: Seconds the fine-tuning phase spent training a ready model, measured.
MEASURED_FINETUNE_COST = "measured fine-tuning cost (s)"
#: Test accuracy of the network retrained from scratch with the study's recipe (phase 3).
RETRAINED_TEST_ACCURACY = "retrained test accuracy"
#: Validation accuracy of the network retrained from scratch (phase 3).
RETRAINED_VAL_ACCURACY = "retrained validation accuracy"
#: The cost model's prediction of the seconds a stand-alone training with the recipe takes.
PREDICTED_COST = "predicted training cost (s)"
#: Seconds a stand-alone training with the recipe took, measured (phase 3).
MEASURED_COST = "measured training cost (s)"
#: Parameter count of the stand-alone network.
PARAMS = "parameters"

#: One sentence per name, for legends and model cards.
MEANINGS = {
    SUPERNET_SCORE: "validation accuracy of the path in the supernet, inherited weights, "
    "batch-norm statistics re-estimated on training batches",
    FINETUNED_ACCURACY: "validation accuracy after fine-tuning the inherited weights",
    SUPERNET_PERPLEXITY: "validation perplexity of the path in the supernet, inherited weights",
    FINETUNED_PERPLEXITY: "validation perplexity after fine-tuning the inherited weights",
    FINETUNED_TEST_ACCURACY: "test accuracy after fine-tuning the inherited weights",
    MEASURED_FINETUNE_COST: "seconds the fine-tuning epochs of a ready model took, measured "
    "(the supernet training its weights were inherited from not counted)",
    TABLE_ACCURACY: "validation accuracy looked up in the tabular benchmark",
    RETRAINED_TEST_ACCURACY: "test accuracy of the network retrained from scratch",
    RETRAINED_VAL_ACCURACY: "validation accuracy of the network retrained from scratch",
    PREDICTED_COST: "seconds a stand-alone training with the study's recipe takes, predicted "
    "by the cost model",
    MEASURED_COST: "seconds a stand-alone training with the study's recipe took, measured",
    PARAMS: "parameter count of the stand-alone network",
}


def finetuned_weights(epochs: int) -> str:
    """What a ready model's weights are, in words: a ready model's record and its export
    both say it this way."""
    return f"fine-tuned from inherited supernet weights, {epochs} epoch{'s' * (epochs != 1)}"


def objective_names(
    objectives: tuple[str, ...] | list[str], finetune_epochs: int = 0, tabular: bool = False
) -> list[str]:
    """The metric name of each objective of a study.

    Args:
        objectives: Objective keys (``nasflow.search.OBJECTIVES``), in order.
        finetune_epochs: Phase 2 fine-tunes candidates for this many epochs (0: the first
            objective is the supernet's score itself).
        tabular: The study looks its first objective up in a table.

    Raises:
        ValueError: An unknown objective key, naming it.
    """
    names = []
    for key in objectives:
        if key == "accuracy":
            if tabular:
                names.append(TABLE_ACCURACY)
            else:
                names.append(FINETUNED_ACCURACY if finetune_epochs else SUPERNET_SCORE)
        elif key == "perplexity":
            names.append(FINETUNED_PERPLEXITY if finetune_epochs else SUPERNET_PERPLEXITY)
        elif key == "train_cost":
            names.append(PREDICTED_COST)
        elif key == "params":
            names.append(PARAMS)
        else:
            raise ConfigError(f"unknown objective {key!r}")
    return names


def set_metric_names(study: optuna.Study, names: list[str]) -> None:
    """``study.set_metric_names`` without Optuna's experimental-feature warning."""
    import optuna

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        study.set_metric_names(names)
