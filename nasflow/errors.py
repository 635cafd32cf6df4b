"""``NasflowError``: the base of every error nasflow raises on purpose.

Each nasflow error also derives from the built-in exception it has always been
(``ConfigError`` and ``ExportError`` are ``ValueError``, ``CheckpointError`` a
``RuntimeError``...), so code catching those keeps working; ``except NasflowError`` catches
all of them and nothing else. The command line reports any of them as one line with exit
code 2.

The general classes here are for errors that have no more specific class of their own:

* :class:`ConfigError` (a ``ValueError``): a bad value — an argument, a space, a budget,
  a study file's field, an architecture.
* :class:`ConfigTypeError` (a ``TypeError``): a value of the wrong kind.
* :class:`StateError` (a ``RuntimeError``): a call refused in the object's current state
  (not fitted yet, mid-step, already done).
* :class:`NotFoundError` (a ``KeyError``): a named thing that is not there.
* :class:`MissingFileError` (a ``FileNotFoundError``): an input file that does not exist.
* :class:`MissingDependencyError` (an ``ImportError``): an optional extra not installed.
* :class:`UnsupportedError` (a ``NotImplementedError``): a feature this object never has.

``tests/test_errors.py`` fails on a deliberate bare built-in raise in nasflow's sources.
"""

from __future__ import annotations


class NasflowError(Exception):
    """Base of nasflow's errors: bad input, a refused state or a failed check, each with
    a message that names the bad value and, where there is one, the way out."""


class ConfigError(NasflowError, ValueError):
    """A bad value: an argument, a search space or architecture, a budget, a setting."""


class ConfigTypeError(NasflowError, TypeError):
    """A value of the wrong kind (a pruner, a distribution) for what it is used for."""


class StateError(NasflowError, RuntimeError):
    """A call refused in the current state: not calibrated yet, mid-step, already done."""


class NotFoundError(NasflowError, KeyError):
    """A named thing (a label, a table row) that is not there.

    ``str()`` gives the message as written (``KeyError`` would quote it).
    """

    def __str__(self) -> str:
        return str(self.args[0]) if len(self.args) == 1 else super().__str__()


class MissingFileError(NasflowError, FileNotFoundError):
    """An input file (a data set, a zip) that does not exist."""


class MissingDependencyError(NasflowError, ImportError):
    """An optional dependency that is not installed; the message names the extra."""


class UnsupportedError(NasflowError, NotImplementedError):
    """A feature this kind of object never has (not an abstract method left to fill)."""


class StudyRecordError(NasflowError, ValueError):
    """A stored study cannot be read: no such study file or study, or no usable nasflow
    record of its space. (Here rather than in ``nasflow.record``, which raises it, because
    ``nasflow.storage`` raises it too and the record module imports the storage module.)"""


class WriteError(NasflowError, OSError):
    """A file or database that could not be written: a full disk, a file-size limit, a
    read-only file system or a permission; the message names the path, the reason and the
    room left on the disk holding it (see ``nasflow._disk``).

    Attributes:
        path: What could not be written.
        reason: Why, in words.
    """

    def __init__(self, message: str, path: str = "", reason: str = "") -> None:
        super().__init__(message)
        self.path, self.reason = path, reason

    def __str__(self) -> str:
        return str(self.args[0])
