"""The benchmarks of this folder that ``nasflow bench`` lists and runs.

``nasflow bench`` reads ``BENCHMARKS`` from this file of the source checkout nasflow runs
from (the benchmarks ship with the checkout, not with the package). A script added here
must exist as ``benchmarks/NAME.py`` (``tests/benchmarks`` checks it).
"""

from __future__ import annotations

#: ``nasflow bench`` names -> (B-number or "", what it measures); the script is NAME.py.
BENCHMARKS: dict[str, tuple[str, str]] = {
    "search_efficiency": ("B1", "CPU-seconds to a near-best arch: nasflow vs random vs Optuna"),
    "ranking": ("B2", "supernet ranking (Kendall tau): fair vs uniform sampling"),
    "stack": ("B3", "speedup-stack layers alone and stacked, trainer overhead"),
    "calibration_cut": ("", "the stack calibration with and without cutting hopeless variants"),
    "scaling": ("B4", "storage overhead per trial, SQLite vs PostgreSQL workers"),
    "workers": ("", "the study run by two one-thread processes against one, on PostgreSQL"),
    "supernet_ddp": ("", "the supernet on data-parallel one-thread ranks against one process"),
    "generalisation": ("B5", "supernet ranking, fine-tuning and the trust probe on the suite"),
    "suite_runs": ("B6", "the study end to end on the suite: kept model against the table"),
    "largest": ("B7", "the trivial baseline: the space's largest architecture, trained"),
    "paired": ("", "the decision instrument: two configurations paired on every ground"),
    "ceiling": ("", "keeping by validation replayed on the tables, against the largest"),
    "proposals": ("", "what the screening proposes when its sampler repeats: random vs mutated"),
    "anchors": ("B8", "zero-cost anchors replayed on the tables: how many, against random"),
    "anytime_bound": ("", "the best trainings after the supernet can cover, against the peers"),
    "finalists": ("", "every last-rung finalist of B6 runs retrained: which rule keeps the best"),
    "margins": ("", "one margin for both validates-higher rules, replayed on recorded runs"),
    "retrain_spread": ("", "phase 3's retrains by score or spread over cost, on the tables"),
    "rung_trust": ("", "the trust verdict read from the fine-tuning rungs against the probe"),
    "split_cost": ("", "the few-shot split's supernet CPU and memory against the shared one"),
    "ground_truth": ("", "stand-alone training of a fixed sample of a study's space"),
    "space_probe": ("", "spread of accuracies vs training noise of a candidate space"),
    "cost_model": ("", "cost-model predictions vs measured step times"),
    "cost_stability": ("", "cost-model predictions across fresh studies on a loaded machine"),
    "tabular": ("", "samplers on tabular NAS-Bench-201"),
    "samplers_tabular": ("", "samplers on tabular NAS-Bench-201 at N distinct queries"),
    "samplers_screening": ("", "samplers for large screenings: front hypervolume per CPU-s"),
    "screening": ("", "one-shot winner vs fine-tuning the top screened candidates"),
    "score_split": ("", "a screened candidate's score: extract, batch norm, validation"),
    "augment": ("", "the training batches' crop and flip: torchvision per image vs one gather"),
    "winner_pick": ("", "keep the top supernet score or the best retrained val of the top k"),
}
