"""Speedup stack: every layer alone and cumulatively vs fp32 eager, plus trainer overhead.

Trains one candidate of the default MNIST-1D space (``search_spaces/mnist1d.py``) on
MNIST-1D with the baseline (fp32 eager, one process), a reseeded copy of the baseline
(the run's noise floor), each stack layer alone, and the layers stacked cumulatively, all
interleaved chunk by chunk in one run from the same initial weights on the same batches.
Then it times nasflow's training step with every layer off against a hand-written
PyTorch loop on the same model and batches. Prints both tables; ``--save-json`` keeps
everything (per-variant rows, the waterfall record, the overhead rows), ``--figure`` the
waterfall.

Usage::

    python benchmarks/stack.py --save-json stack.json --figure stack.html
    python benchmarks/stack.py --quick      # seconds: the CI smoke run

Any option of ``nasflow measure-stack`` works here (``--layers``, ``--arch``, ``--epochs``,
``--compile-backend``, ``--device cuda``, ``--auto``); ``--overhead`` is always on.
"""

from __future__ import annotations

import sys

from nasflow.cli import main

if __name__ == "__main__":
    args = sys.argv[1:]
    sys.exit(main(["measure-stack", *args, *([] if "--overhead" in args else ["--overhead"])]))
