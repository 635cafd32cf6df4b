"""A GPT-2-style character language model on tinyshakespeare: perplexity vs training cost.

Run with ``nasflow search studies/gpt2_shakespeare.py``.

The corpus is ``NASFLOW_TEXT`` if set (any UTF-8 text file), else
``../shared/data/tinyshakespeare.txt`` beside this repository; it is read character by
character (the vocabulary is the file's set of characters) and cut contiguously into
80% train, 10% validation and 10% test blocks of 64 characters.

Phase 1 trains the weight-sharing GPT-2 supernet (depth 2-4, width 64-128, 2 or 4 heads,
MLP ratio 2-4; 54 architectures) with strictly fair sampling; phase 2 scores candidates
by the validation token accuracy and perplexity of their inherited weights, against the
predicted cost of training them stand-alone (measured on a few steps of each candidate:
the cost model's op table splits a network at its ``LayerChoice`` layers, and this
space's choices are elastic sizes, not layer choices); phase 3 retrains the most accurate
Pareto trial from scratch. ``nasflow export`` writes the winner with a Hugging Face
directory (``hf/``) that ``AutoModelForCausalLM.from_pretrained`` loads offline.
"""

from __future__ import annotations

import os
from pathlib import Path

from nasflow.data import CharVocab, load_text
from nasflow.errors import MissingFileError
from nasflow.search import StudySpec
from nasflow.search_spaces.gpt2 import GPT2Space
from nasflow.train import SupernetConfig, TrainConfig

DEFAULT_TEXT = (
    Path(__file__).resolve().parents[1].parent / "shared" / "data" / "tinyshakespeare.txt"
)
TEXT = Path(os.environ.get("NASFLOW_TEXT") or DEFAULT_TEXT)
BLOCK_SIZE = 64

if not TEXT.is_file():
    raise MissingFileError(
        f"text corpus {str(TEXT)!r} does not exist; set NASFLOW_TEXT to a UTF-8 text file"
    )

study = StudySpec(
    name="gpt2_shakespeare",
    space=GPT2Space(
        vocab_size=len(CharVocab(TEXT.read_text(encoding="utf-8"))), block_size=BLOCK_SIZE
    ),
    data=lambda: load_text(TEXT, block_size=BLOCK_SIZE),
    objectives=("accuracy", "perplexity", "train_cost"),
    supernet=SupernetConfig(sampler="fair", epochs=2, batch_size=64, lr=1e-3),
    n_trials=30,
    bn_batches=1,  # no batch norm in this space: one pass is enough
    train=TrainConfig(epochs=2, batch_size=64, lr=1e-3, weight_decay=1e-1),
    cost="measure",
    retrain_top=1,
    seed=0,
)
