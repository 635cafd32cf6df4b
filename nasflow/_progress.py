"""Progress bars in a Jupyter kernel without ipywidgets: the text bar, without a warning.

``tqdm.auto`` (which nasflow's phase bars and Optuna's own progress bar import) picks the
notebook widget inside a Jupyter kernel; where ipywidgets is not installed it falls back to
the text bar and warns once, when first imported (``TqdmWarning: IProgress not found``),
about a widget nobody asked for. :func:`quiet_notebook_bars` imports it first with that
one warning filtered, so the bars are text bars and the notebook's output stays clean.
Install ipywidgets to get widget bars instead.
"""

from __future__ import annotations

import sys
import warnings
from importlib.util import find_spec


def quiet_notebook_bars() -> bool:
    """In an IPython kernel without ipywidgets, import ``tqdm.autonotebook`` (which
    ``tqdm.auto`` wraps) with its "IProgress not found" warning filtered; elsewhere
    nothing. Returns whether it did (``False`` too when tqdm was imported already)."""
    if "IPython" not in sys.modules or "tqdm.autonotebook" in sys.modules:
        return False
    if find_spec("ipywidgets") is not None:  # widget bars: nothing to warn about
        return False
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="IProgress not found")
        import tqdm.autonotebook  # noqa: F401  (cached: later imports do not warn again)
    return True
