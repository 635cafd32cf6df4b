"""nasflow's lines go through the standard ``logging`` logger ``nasflow`` (each module logs
to its own child, ``logging.getLogger(__name__)``), as Optuna's go through ``optuna``.

A run's detail (every epoch, every calibration step: what progress bars stand for) is
logged at ``DEBUG``; what a user must read (phases, decisions, resumes, warnings) at
``INFO``. Configure it as any library's logger (``logging.getLogger("nasflow")``), or hand
a callable to a run (``StudyRunner(log=print)``, the CLI's way): :func:`lines_to` sends the
run's lines to it for the run's duration, without the propagation that would print them
twice where the root logger is configured too.
"""

from __future__ import annotations

import contextlib
import logging
import sys
from collections.abc import Callable, Iterator

#: The package's logger; every module logs to a child of it.
LOGGER = logging.getLogger("nasflow")
LOGGER.addHandler(logging.NullHandler())  # a library adds no output of its own


class CallbackHandler(logging.Handler):
    """Hands each record's message, as it is (no level, no name), to a callable."""

    def __init__(self, callback: Callable[[str], None], level: int = logging.INFO) -> None:
        super().__init__(level)
        self.callback = callback

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.callback(record.getMessage())
        except Exception:  # a failing callback must not stop a run (logging's own rule)
            self.handleError(record)


def routed(logger: logging.Logger = LOGGER) -> bool:
    """Whether the application sends ``logger``'s records anywhere (a handler other than
    the library's ``NullHandler`` on it or, while records propagate, on an ancestor)."""
    current: logging.Logger | None = logger
    while current is not None:
        if any(not isinstance(h, logging.NullHandler) for h in current.handlers):
            return True
        if not current.propagate:
            return False
        current = current.parent
    return False


def warn(logger: logging.Logger, line: str) -> None:
    """A warning a user must read: a ``WARNING`` record of ``logger`` where the
    application routes the ``nasflow`` logger somewhere, else the line on stderr (a
    library's ``NullHandler`` would swallow it, and ``logging``'s last resort with it)."""
    if routed(logger):
        logger.warning(line)
    else:
        print(line, file=sys.stderr)


@contextlib.contextmanager
def lines_to(callback: Callable[[str], None] | None, detail: bool = True) -> Iterator[None]:
    """Send the ``nasflow`` logger's lines to ``callback`` while the block runs: ``INFO``
    and above, and ``DEBUG`` (a run's per-step detail) where ``detail``. ``None`` changes
    nothing: the lines go where the application's ``logging`` configuration sends them.
    """
    if callback is None:
        yield
        return
    level = logging.DEBUG if detail else logging.INFO
    if any(isinstance(h, CallbackHandler) and h.callback is callback for h in LOGGER.handlers):
        yield  # (already sent there: an outer block of the same run)
        return
    handler = CallbackHandler(callback, level)
    before = (LOGGER.level, LOGGER.propagate)
    LOGGER.addHandler(handler)
    LOGGER.setLevel(min(level, before[0]) if before[0] != logging.NOTSET else level)
    LOGGER.propagate = False
    try:
        yield
    finally:
        LOGGER.removeHandler(handler)
        LOGGER.setLevel(before[0])
        LOGGER.propagate = before[1]
