"""A trained architecture on disk: ``RUNS/NAME/winners/trial-N/`` holds its weights
(``model.safetensors``) and its record (``record.json``: recipe, seed, stack, data,
validation and test accuracy, measured training time), written atomically and
checksummed; :func:`find_winner` reuses a saved one with the same identity instead of
training it again."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from torch import nn

from nasflow._files import atomic_write
from nasflow._regular import open_regular
from nasflow.errors import NasflowError

RECORD_FILE = "record.json"


WEIGHTS_FILE = "model.safetensors"


FORMAT = "nasflow-winner"


FORMAT_VERSION = 1


#: Record keys that must equal what a run would train for the winner to be reused.
IDENTITY = ("space", "fingerprint", "arch", "recipe", "seed", "stack", "data")


class WinnerError(NasflowError, ValueError):
    """A saved winner is missing, corrupt, or not the training that is asked for."""


def _json_normal(value: Any) -> Any:
    """``value`` as it reads back from JSON (tuples become lists), for comparisons."""
    return json.loads(json.dumps(value))


def save_winner(folder: os.PathLike | str, net: nn.Module, record: dict[str, Any]) -> dict:
    """Write ``net``'s weights and ``record`` (plus format and checksum) into ``folder``.

    The weights are written first and the record last, each atomically: an interrupted
    save leaves either the previous winner or no record, never a record of other weights.

    Returns:
        The record as written.
    """
    from safetensors.torch import save

    folder = Path(folder)
    # clone(): safetensors refuses tensors that share storage (tied weights).
    state = {k: v.detach().cpu().clone().contiguous() for k, v in net.state_dict().items()}
    data = save(state, metadata={"format": "pt"})
    full = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        **_json_normal(record),
        "weights": {
            "file": WEIGHTS_FILE,
            "sha256": hashlib.sha256(data).hexdigest(),
            "bytes": len(data),
        },
    }
    atomic_write(folder / WEIGHTS_FILE, lambda f: f.write(data))
    text = json.dumps(full, indent=2) + "\n"
    atomic_write(folder / RECORD_FILE, lambda f: f.write(text), mode="w")
    return full


#: The numbers a winner's record must hold.
WINNER_NUMBERS = ("test_accuracy", "val_accuracy", "measured_train_cost")


def read_winner(
    folder: os.PathLike | str, numbers: tuple[str, ...] = WINNER_NUMBERS
) -> dict[str, Any]:
    """The record of the winner saved in ``folder``, after checking its weights' SHA-256.

    Args:
        folder: The winner's folder (or a ready model's: the fine-tuning phase saves them
            in this format too).
        numbers: Keys whose values must be numbers (a ready model records its validation
            accuracy per epoch and its cost per epoch, not as one number).

    Raises:
        WinnerError: No record, a record that is not valid JSON or of another format, or
            weights that are missing or do not match the record's checksum.
    """
    folder = Path(folder)
    path = folder / RECORD_FILE
    try:
        with open_regular(path, WinnerError) as f:
            record = json.loads(f.read().decode("utf-8"))
    except FileNotFoundError:
        raise WinnerError(f"no {RECORD_FILE} in {str(folder)!r}") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise WinnerError(f"{str(path)!r} is not a readable JSON record: {e}") from None
    if not isinstance(record, dict) or record.get("format") != FORMAT:
        raise WinnerError(f"{str(path)!r} is not a nasflow winner record")
    if record.get("format_version") != FORMAT_VERSION:
        raise WinnerError(
            f"{str(path)!r} has format_version {record.get('format_version')!r}; this "
            f"nasflow reads {FORMAT_VERSION}"
        )
    weights = record.get("weights")
    want = weights.get("sha256") if isinstance(weights, dict) else None
    if not isinstance(want, str):
        raise WinnerError(f"{str(path)!r} records no SHA-256 of its weights")
    have = _sha256(folder / WEIGHTS_FILE)
    if have is None:
        raise WinnerError(f"{str(folder / WEIGHTS_FILE)!r} is missing")
    if have != want:
        raise WinnerError(
            f"{str(folder / WEIGHTS_FILE)!r} has SHA-256 {have[:16]}..., its record "
            f"{want[:16]}...: the weights are corrupt or were changed"
        )
    for key in numbers:
        value = record.get(key)
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise WinnerError(f"{str(path)!r}: {key} is {value!r}, not a number")
    return record


def _sha256(path: Path) -> str | None:
    h = hashlib.sha256()
    try:
        with open_regular(path, WinnerError) as f:  # (a FIFO would block a plain open)
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
    except FileNotFoundError:
        return None
    return h.hexdigest()


def find_winner(folder: os.PathLike | str, identity: dict[str, Any]) -> tuple[dict | None, str]:
    """A saved winner in ``folder`` that trained exactly ``identity`` (see ``IDENTITY``).

    Returns:
        ``(record, "")`` when it can be reused, else ``(None, why)``; ``why`` is ``""``
        when nothing was ever saved there.
    """
    folder = Path(folder)
    if not os.path.lexists(folder / RECORD_FILE):
        return None, ""
    try:
        record = read_winner(folder)
    except WinnerError as e:
        return None, str(e)
    want = _json_normal(identity)
    differs = [k for k in IDENTITY if record.get(k) != want.get(k)]
    if differs:
        return None, f"the saved winner in {str(folder)!r} was trained with another {differs}"
    return record, ""


def load_winner_weights(folder: os.PathLike | str, record: dict[str, Any]) -> dict[str, Any]:
    """The tensors of a saved winner, checked against the record's SHA-256 as read.

    Raises:
        WinnerError: The file is missing, changed since ``record`` was read, or invalid.
    """
    from safetensors.torch import load

    path = Path(folder) / WEIGHTS_FILE
    try:
        with open_regular(path, WinnerError) as f:
            data = f.read()
    except OSError as e:
        raise WinnerError(f"cannot read {str(path)!r}: {e.strerror}") from None
    if hashlib.sha256(data).hexdigest() != record["weights"]["sha256"]:
        raise WinnerError(f"{str(path)!r} does not match its record's SHA-256")
    try:
        return load(data)
    except Exception as e:  # safetensors raises its own error types
        raise WinnerError(f"{str(path)!r} is not a valid safetensors file: {e}") from None
