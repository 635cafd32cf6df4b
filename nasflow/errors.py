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


class StudyRecordError(NasflowError, ValueError):
    """A stored study cannot be read: no such study file or study, or no usable nasflow
    record of its space. (Here rather than in ``nasflow.record``, which raises it, because
    ``nasflow.storage`` raises it too and the record module imports the storage module.)"""
