"""``python -m nasflow.cli``: the ``nasflow`` command line."""

from __future__ import annotations

import sys

from nasflow.cli import main

if __name__ == "__main__":
    sys.exit(main())
