"""The language proving ground: a character-level GPT-2 on tinyshakespeare, sized for a CPU,
with its own ground truth.

Run with ``nasflow search studies/shakespeare_cpu.py`` (or ``nasflow search shakespeare_cpu``).

Data: the first 400,000 characters of tinyshakespeare, cut contiguously into 80% train,
10% validation and 10% test blocks of 32 characters (next-character prediction). Space:
``GPT2Space`` with depth 1-4, width 16-64, 1, 2 or 4 heads and MLP ratio 1-4 (192
architectures). The stand-alone recipe trains two epochs: short enough that a deeper or
wider network is not always the better one (what parameter count cannot tell). The
objective is next-character accuracy on the validation split; the tables also record the
validation and test cross-entropy. ``benchmarks/data/shakespeare_cpu_ground_truth*.csv``
trained every architecture of the space with this recipe twice, with two training seeds
(192 x 2; retrain-vs-retrain Kendall tau of the test accuracy +0.819:
``benchmarks/results/grounds.md``).

The corpus is ``NASFLOW_TEXT`` if set (any UTF-8 text file), else
``../shared/data/tinyshakespeare.txt`` beside this repository.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

from nasflow.data import CharVocab, load_text
from nasflow.errors import MissingFileError
from nasflow.search import FineTuning, StudySpec, TrustProbe
from nasflow.search_spaces.gpt2 import GPT2Space
from nasflow.train import SupernetConfig, TrainConfig

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_TEXT = ROOT.parent / "shared" / "data" / "tinyshakespeare.txt"
GROUND_TRUTH = ROOT / "benchmarks" / "data"
TEXT = Path(os.environ.get("NASFLOW_TEXT") or DEFAULT_TEXT)
BLOCK_SIZE = 32
MAX_CHARS = 400_000

if not TEXT.is_file():
    raise MissingFileError(
        f"text corpus {str(TEXT)!r} does not exist; set NASFLOW_TEXT to a UTF-8 text file"
    )

study = StudySpec(
    name="shakespeare_cpu",
    space=GPT2Space(
        vocab_size=len(CharVocab(TEXT.read_text(encoding="utf-8")[:MAX_CHARS])),
        block_size=BLOCK_SIZE,
        n_layer=(1, 2, 3, 4),
        n_embd=(16, 32, 48, 64),
        n_head=(1, 2, 4),
        mlp_ratio=(1, 2, 3, 4),
    ),
    data=functools.partial(load_text, TEXT, block_size=BLOCK_SIZE, max_chars=MAX_CHARS),
    objectives=("accuracy", "train_cost"),
    supernet=SupernetConfig(sampler="fair", epochs=4, batch_size=32, lr=1e-2),
    n_trials=100,
    finetuning=FineTuning(finalists=8, rungs=(1, 2)),
    trust=TrustProbe(epochs=1, schedule_epochs=2),
    bn_batches=1,  # no batch norm in this space: one pass is enough
    # The cost model's op table splits networks at their LayerChoice layers; this space's
    # choices are elastic sizes, so each candidate's cost is measured on a few steps.
    cost="measure",
    train=TrainConfig(epochs=2, batch_size=32, lr=1e-2, weight_decay=1e-2),
    # The top rung from inherited weights: the last fine-tuning rung is the recipe's 2
    # epochs, and the best-validating finalist there is kept with its fine-tuned weights;
    # nothing is retrained from scratch (paired run 20 part 3, benchmarks/results/paired.md:
    # test +1.1 points [+0.2, +2.0], shares level at 100%, hypervolume +0.010, 15% less CPU).
    retrain_top=0,
    seed=0,
    baseline=tuple(sorted(GROUND_TRUTH.glob("shakespeare_cpu_ground_truth*.csv"))),
)
