"""optuna-dashboard (extra ``dashboard``): push the report's figures, serve the storage."""

from __future__ import annotations

import ipaddress
import logging
import os
import signal
import socket
import sys
import threading
import warnings
from collections.abc import Callable
from types import ModuleType
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

import optuna

from nasflow._checks import check_int
from nasflow._logging import lines_to
from nasflow.errors import ConfigError, NasflowError
from nasflow.record import StoredStudy, open_stored_study
from nasflow.report._report import ReportFigure, report_data, report_figures
from nasflow.space import SearchSpace
from nasflow.storage import SQLiteLock, StorageError, StudyFileBusy

_LOG = logging.getLogger(__name__)

#: Prefix of the graph ids nasflow gives its figures in optuna-dashboard.
GRAPH_PREFIX = "nasflow-"


class DashboardUnavailable(NasflowError, ImportError):
    """optuna-dashboard is not installed (``pip install 'nasflow[dashboard]'``)."""


def require_dashboard() -> ModuleType:
    """Import ``optuna_dashboard`` or raise an error naming the extra to install."""
    try:
        import optuna_dashboard
    except ImportError as e:
        raise DashboardUnavailable(
            f"optuna-dashboard is not installed ({e}); install the extra: "
            "pip install 'nasflow[dashboard]'"
        ) from None
    return optuna_dashboard


def push_figures(study: optuna.Study, space: SearchSpace | None = None) -> list[ReportFigure]:
    """Save every report figure to the study for optuna-dashboard's "Plots" view.

    Each figure is stored (as study system attributes, the dashboard's format) under the
    graph id ``nasflow-<key>``, so pushing again replaces the previous version.

    Returns:
        The figures pushed.
    """
    dashboard = require_dashboard()
    figures = report_figures(report_data(study, space))
    for f in figures:
        dashboard.save_plotly_graph_object(study, f.figure, graph_object_id=GRAPH_PREFIX + f.key)
    return figures


class _Server6(WSGIServer):
    address_family = socket.AF_INET6


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        """No line per request."""


def is_loopback(host: str) -> bool:
    """Whether ``host`` only accepts connections from this machine."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def dashboard_server(
    storage: optuna.storages.BaseStorage, host: str = "127.0.0.1", port: int = 8080
) -> WSGIServer:
    """Bind optuna-dashboard's WSGI app to ``host:port`` (``port=0``: a free port).

    The server is returned bound and listening but not serving; call ``serve_forever()``.

    Raises:
        ValueError: A port outside 0..65535, or an address that cannot be bound.
        DashboardUnavailable: optuna-dashboard is not installed.
    """
    check_int("port", port, 0, 65535)
    dashboard = require_dashboard()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        app = dashboard.wsgi(storage)
    try:
        server_class = _Server6 if ":" in host else WSGIServer
        return make_server(host, port, app, server_class=server_class, handler_class=_QuietHandler)
    except (OSError, socket.gaierror) as e:
        raise ConfigError(f"cannot listen on {host}:{port}: {e.strerror or e}") from None


def serve_dashboard(
    name: str,
    storage: str | None = None,
    out_dir: os.PathLike | str = "runs",
    host: str = "127.0.0.1",
    port: int = 8080,
    log: Callable[[str], None] | None = print,
    stop: threading.Event | None = None,
) -> None:
    """Push the report's figures to study ``name`` and serve optuna-dashboard until stopped
    (its address is one line to ``log``; ``None``: the ``nasflow`` logger only).

    It stops on SIGINT (Ctrl-C) or SIGTERM when called from the main thread, or when
    ``stop`` is set.

    Nothing is written before the address is bound. On SQLite the study file's worker lock
    is held while serving (a dashboard polling a SQLite file can break a running search,
    optuna-dashboard#545): a search on the same file is refused while the dashboard runs,
    and the dashboard while a search runs. Next to a running search use ``nasflow report``,
    or a PostgreSQL/journal storage.

    Raises:
        DashboardUnavailable: optuna-dashboard is not installed.
        StudyRecordError: No such study.
        StorageError: Unreachable storage, or a search holds the SQLite file.
        ValueError: The address cannot be bound.
    """
    require_dashboard()
    stored = open_stored_study(name, storage, out_dir)
    lock = None
    if stored.spec.kind == "sqlite" and stored.spec.path is not None:
        lock = SQLiteLock(stored.spec.path, role="dashboard")
        try:
            lock.acquire()
        except StudyFileBusy as e:
            raise StorageError(
                f"the SQLite study file {str(stored.spec.path)!r} is in use by {e.holder}; "
                f"meanwhile use `nasflow report {name}`, or a postgresql:// or journal:/// "
                "storage that a dashboard may share"
            ) from None
    try:
        with lines_to(log):
            _push_and_serve(stored, name, host, port, stop)
    finally:
        if lock is not None:
            lock.release()


def _push_and_serve(
    stored: StoredStudy,
    name: str,
    host: str,
    port: int,
    stop: threading.Event | None,
) -> None:
    server = dashboard_server(stored.storage, host, port)
    try:
        push_figures(stored.study)
        bound_port = server.server_address[1]
        study_id = stored.storage.get_study_id_from_name(name)
        shown = f"[{host}]" if ":" in host else host
        _LOG.info(
            f"optuna-dashboard for study {name!r} ({stored.spec.safe_url}): "
            f"http://{shown}:{bound_port}/dashboard/studies/{study_id} (Ctrl-C stops it)"
        )
        if not is_loopback(host):
            print(
                f"nasflow: warning: optuna-dashboard has no authentication; anyone who "
                f"can reach {host}:{bound_port} can read and change study {name!r}",
                file=sys.stderr,
            )
        _serve_until_stopped(server, stop or threading.Event())
    finally:
        server.server_close()


def _serve_until_stopped(server: WSGIServer, stop: threading.Event) -> None:
    """Serve from a thread until ``stop`` is set, or SIGINT/SIGTERM arrive.

    The server runs in a thread because wsgiref's request handler swallows every exception,
    ``KeyboardInterrupt`` included, so a Ctrl-C that lands during a request would be lost.
    """
    handlers: dict[int, Any] = {}
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGINT, signal.SIGTERM):
            handlers[sig] = signal.signal(sig, lambda *_: stop.set())
    thread = threading.Thread(target=server.serve_forever, name="optuna-dashboard", daemon=True)
    thread.start()
    try:
        while thread.is_alive() and not stop.wait(0.5):
            pass
    finally:
        server.shutdown()
        thread.join()
        for sig, handler in handlers.items():
            signal.signal(sig, handler)
