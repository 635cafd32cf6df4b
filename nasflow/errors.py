"""``NasflowError``: the base of every error nasflow raises on purpose.

Each nasflow error also derives from the built-in exception it has always been
(``ExportError`` is a ``ValueError``, ``CheckpointError`` a ``RuntimeError``...), so code
catching those keeps working; ``except NasflowError`` catches all of them and nothing
else. The command line reports any of them as one line with exit code 2.
"""

from __future__ import annotations


class NasflowError(Exception):
    """Base of nasflow's errors: bad input, a refused state or a failed check, each with
    a message that names the bad value and, where there is one, the way out."""
