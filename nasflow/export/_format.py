"""The export directory format: file names, ``arch.json`` and the checks made on reading.

An export directory holds:

- ``arch.json``: what the network is (space name, fingerprint and config, the choices),
  which weights it carries (``weights["kind"]``: ``"retrained"`` from scratch in phase 3
  or by ``nasflow retrain``, ``"fine-tuned"`` from inherited supernet weights by the
  fine-tuning phase, or ``"supernet"``; ``weights["description"]`` says it in a sentence),
  the metrics of exactly those weights with what each one is (``metric_notes``), where it
  came from (study, trial) and checksums;
- ``model.safetensors``: the weights, the only file ``load_exported`` reads besides
  ``arch.json``;
- ``model.pt2``: a ``torch.export`` program (``torch.export.load`` unpickles: trusted
  files only);
- ``model.onnx``: the same network in ONNX, checked with onnxruntime when written;
- ``hf/``: for a space whose networks wrap a ``transformers`` model
  (``SearchSpace.hf_model``), that model's ``save_pretrained`` directory (safetensors),
  loadable with ``AutoModelForCausalLM.from_pretrained(".../hf")``;
- ``README.md``: how to load it.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from nasflow import names
from nasflow._regular import file_kind
from nasflow.errors import NasflowError
from nasflow.space import Arch

FORMAT = "nasflow-export"
FORMAT_VERSION = 1

ARCH_FILE = "arch.json"
WEIGHTS_FILE = "model.safetensors"
PROGRAM_FILE = "model.pt2"
ONNX_FILE = "model.onnx"
README_FILE = "README.md"
HF_DIR = "hf"
#: Every file an export may hold at its top level.
EXPECTED_FILES = frozenset({ARCH_FILE, WEIGHTS_FILE, PROGRAM_FILE, ONNX_FILE, README_FILE})
#: The files ``save_pretrained`` writes into ``hf/`` (safetensors weights, JSON configs).
EXPECTED_HF_FILES = frozenset({"config.json", "generation_config.json", WEIGHTS_FILE})

#: Suffixes of files that are (or usually are) pickles, ``torch.save`` archives included.
PICKLE_SUFFIXES = frozenset(
    {".pt", ".pth", ".pkl", ".pickle", ".bin", ".ckpt", ".joblib", ".dill", ".npy", ".npz"}
)
#: ``arch.json`` larger than this is refused before it is parsed.
MAX_ARCH_BYTES = 1 << 20

#: ``weights["kind"]`` of an export: which weights ``model.safetensors`` holds.
RETRAINED, FINE_TUNED, SUPERNET = "retrained", "fine-tuned", "supernet"
WEIGHT_KINDS = (RETRAINED, FINE_TUNED, SUPERNET)


def _epochs(n: object) -> str:
    return f"{n} epoch{'s' * (n != 1)}" if isinstance(n, int) else "epochs not recorded"


def weights_description(kind: str, weights: Mapping[str, Any]) -> str:
    """The sentence an export's ``weights["description"]`` holds: which weights these are.

    Args:
        kind: ``weights["kind"]``.
        weights: The rest of the ``weights`` record (``source``, ``recipe``, ``epochs``,
            ``batch_norm``, ``status``).
    """
    source = weights.get("source", "an unrecorded source")
    if kind == FINE_TUNED:
        stopped = (
            "; successive halving stopped it there (not promoted to the next rung)"
            if weights.get("status") == "stopped"
            else ""
        )
        epochs = weights.get("epochs")
        what = names.finetuned_weights(epochs) if isinstance(epochs, int) else "fine-tuned"
        return f"{what}, by {source}{stopped}"
    if kind == RETRAINED:
        recipe = weights.get("recipe")
        epochs = recipe.get("epochs") if isinstance(recipe, Mapping) else None
        return f"retrained from scratch, {_epochs(epochs)}, in {source}"
    if kind == SUPERNET:
        return (
            f"the supernet's weights ({source}), inherited through weight sharing and not "
            f"trained stand-alone; batch norm {weights.get('batch_norm', 'not recorded')}"
        )
    return f"weights of unknown kind {kind!r} ({source})"


def retrained_notes(how: str) -> dict[str, str]:
    """What the metrics of retrained weights are; ``how`` says which training made them."""
    return {
        "test_accuracy": f"{names.RETRAINED_TEST_ACCURACY}: these weights, retrained from "
        f"scratch in {how}; test split; measured",
        "val_accuracy": f"{names.RETRAINED_VAL_ACCURACY}: these weights, retrained from "
        f"scratch in {how}; validation split; measured",
        "train_seconds_measured": f"{names.MEASURED_COST}: seconds of the from-scratch "
        f"training in {how} (training steps only, on the machine that trained it); measured",
    }


def finetuned_notes(how: str, epochs: int) -> dict[str, str]:
    """What the metrics of a ready model's weights are; ``how`` says which phase made them."""
    what = f"these weights, {names.finetuned_weights(epochs)}, by {how}"
    return {
        "test_accuracy": f"{names.FINETUNED_TEST_ACCURACY}: {what}; test split; measured "
        "once after the fine-tuning (reported, never used to choose)",
        "val_accuracy": f"{names.FINETUNED_ACCURACY}: {what}; validation split; measured "
        "after the last epoch (the split ready models are chosen on)",
        "train_seconds_measured": f"{names.MEASURED_FINETUNE_COST}: seconds of the "
        f"{_epochs(epochs)} of fine-tuning by {how} (training steps only, on the machine "
        "that trained it; the supernet training the weights were inherited from is not "
        "counted); measured",
    }


def supernet_notes(batch_norm: str, data: str) -> dict[str, str]:
    """What the metrics of supernet weights are; ``batch_norm`` says how BN was set and
    ``data`` which study's data they were measured on."""
    return {
        "val_accuracy": f"{names.SUPERNET_SCORE}: these weights, the supernet's (inherited, "
        f"not trained stand-alone; batch norm {batch_norm}); validation split of {data}; "
        "measured at export",
    }


class ExportError(NasflowError, ValueError):
    """An export cannot be written, or a directory is not a loadable, untampered export."""


def check_regular(path: os.PathLike | str) -> os.stat_result:
    """``os.lstat(path)`` after checking that ``path`` is a regular file, not a link.

    Raises:
        ExportError: It is missing, or a directory, link, FIFO, socket or device (opening
            a FIFO would wait forever for a writer), naming it.
    """
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        raise ExportError(f"{str(path)!r} does not exist") from None
    kind = file_kind(st.st_mode)
    if kind is not None:
        raise ExportError(f"{str(path)!r} is {kind}, not a regular file; refusing to open it")
    return st


def open_regular(path: os.PathLike | str) -> BinaryIO:
    """Open ``path`` for reading only if it is a regular file: no link is followed and
    the open never blocks (checked on the opened file too, so a swap is caught)."""
    check_regular(path)
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError as e:
        raise ExportError(f"cannot open {str(path)!r}: {e.strerror}") from None
    kind = file_kind(os.fstat(fd).st_mode)
    if kind is not None:
        os.close(fd)
        raise ExportError(f"{str(path)!r} is {kind}, not a regular file; refusing to open it")
    return os.fdopen(fd, "rb")


def sha256_file(path: os.PathLike | str) -> str:
    """Hex SHA-256 of a regular file's bytes (``ExportError`` for anything else)."""
    h = hashlib.sha256()
    with open_regular(path) as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _looks_pickled(path: Path) -> bool:
    """Whether a regular file starts like a pickle (protocol 2+) or a ``torch.save`` zip."""
    try:
        with open_regular(path) as f:
            head = f.read(4)
    except OSError:
        return False
    return (len(head) >= 2 and head[0] == 0x80 and 2 <= head[1] <= 5) or head == b"PK\x03\x04"


def refuse_pickles(folder: Path) -> None:
    """Raise ``ExportError`` if ``folder`` holds a file that could be a pickle.

    Anything that is not a regular file or a folder (a symbolic link, a FIFO, a socket, a
    device) is refused first, without opening it. The expected top-level files and the
    expected files of ``hf/`` are skipped (they are never unpickled by nasflow or by
    ``from_pretrained``); any other file is refused when its suffix is a pickle suffix or
    its first bytes are a pickle or ``torch.save`` header. Nothing is unpickled to find
    out.
    """
    for root, dirs, files in os.walk(folder):
        dirs.sort()
        for name in [*dirs, *sorted(files)]:
            path = Path(root) / name
            rel = path.relative_to(folder)
            kind = file_kind(path.lstat().st_mode)
            if kind == "a directory":
                continue
            if kind is not None:
                raise ExportError(
                    f"export {str(folder)!r} contains {str(rel)!r}, which is {kind}; an export "
                    "holds regular files and folders only: remove it"
                )
            if rel.parent == Path(".") and name in EXPECTED_FILES:
                continue
            if rel.parent == Path(HF_DIR) and name in EXPECTED_HF_FILES:
                continue  # a safetensors header can start like a pickle; never unpickled
            if path.suffix.lower() in PICKLE_SUFFIXES or _looks_pickled(path):
                raise ExportError(
                    f"export {str(folder)!r} contains {str(rel)!r}, which may be a pickle; "
                    "nasflow loads exports from arch.json and model.safetensors only and "
                    "refuses directories carrying pickles: remove the file if you trust it"
                )


def _finite_metrics(metrics: Mapping[str, Any]) -> dict[str, float]:
    out: dict[str, float] = {}
    for k, v in metrics.items():
        if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
            raise ExportError(f"metric {k!r} is {v!r}; metrics must be finite numbers")
        out[str(k)] = float(v)
    return out


@dataclass(frozen=True)
class ExportInfo:
    """The content of ``arch.json``.

    Attributes:
        space: Name of the space (its registry name).
        fingerprint: The space's fingerprint when exported.
        space_config: The space's ``config``; ``SearchSpace.from_config`` re-creates it.
        arch: The full architecture (path and hyper-parameters).
        input_shape: Shape of one input sample, without the batch dimension.
        metrics: Numbers measured with exactly these weights (``test_accuracy``,
            ``val_accuracy``, ``train_seconds_measured``...); never another network's.
        study: Where the trial came from: study name, storage (password-free), trial
            number, objectives, and what the search predicted for the architecture
            (``params``, ``train_cost_predicted_s``). Empty for an export made outside a
            study.
        weights: Which weights these are (``kind``: ``"retrained"``, ``"fine-tuned"`` or
            ``"supernet"``, and ``description``, the same in a sentence), where they came
            from (``source``, ``recipe``, ``seed``), how batch-norm statistics were
            obtained, and the SHA-256 of ``model.safetensors``.
        checks: Results of the checks made while writing (ONNX and program deviations).
        files: SHA-256 of every other file written.
        notes: What each metric is: which weights, which split, measured or predicted
            (``arch.json``'s ``metric_notes``).
    """

    space: str
    fingerprint: str
    space_config: dict[str, Any]
    arch: Arch
    input_shape: tuple[int, ...]
    metrics: dict[str, float] = field(default_factory=dict)
    study: dict[str, Any] = field(default_factory=dict)
    weights: dict[str, Any] = field(default_factory=dict)
    checks: dict[str, Any] = field(default_factory=dict)
    files: dict[str, str] = field(default_factory=dict)
    notes: dict[str, str] = field(default_factory=dict)

    @property
    def kind(self) -> str | None:
        """``"retrained"``, ``"fine-tuned"``, ``"supernet"``, or ``None`` for an export
        that does not say."""
        kind = self.weights.get("kind")
        return kind if kind in WEIGHT_KINDS else None

    def to_json(self) -> str:
        data = {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "space": {
                "name": self.space,
                "fingerprint": self.fingerprint,
                "config": self.space_config,
            },
            "arch": self.arch.to_dict(),
            "input_shape": list(self.input_shape),
            "metrics": self.metrics,
            "metric_notes": self.notes,
            "study": self.study,
            "weights": self.weights,
            "checks": self.checks,
            "files": self.files,
        }
        return json.dumps(data, indent=2, sort_keys=False) + "\n"

    @classmethod
    def read(cls, folder: Path) -> ExportInfo:
        """Parse and check the shape of ``folder/arch.json`` (not yet against the space).

        Raises:
            ExportError: Missing, not a regular file (a link, a FIFO...), too large, not
                JSON, another format or version, or a field of the wrong type; the message
                names it.
        """
        path = folder / ARCH_FILE
        if not os.path.lexists(path):
            trials = sorted(p.name for p in folder.glob("trial-*") if (p / ARCH_FILE).is_file())
            hint = f"; it holds one export per trial: {trials}" if trials else ""
            raise ExportError(f"{str(folder)!r} has no {ARCH_FILE}{hint}")
        if check_regular(path).st_size > MAX_ARCH_BYTES:
            raise ExportError(f"{str(path)!r} is larger than {MAX_ARCH_BYTES} bytes")
        try:
            with open_regular(path) as f:
                data = json.loads(f.read(MAX_ARCH_BYTES + 1).decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as e:
            raise ExportError(f"{str(path)!r} is not valid JSON: {e}") from None
        return cls.from_dict(data, str(path))

    @classmethod
    def from_dict(cls, data: Any, where: str = ARCH_FILE) -> ExportInfo:
        """Build from parsed ``arch.json`` content, checking every field's type."""
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise ExportError(f'{where} is not a nasflow export (no "format": {FORMAT!r})')
        version = data.get("format_version")
        if version != FORMAT_VERSION:
            raise ExportError(
                f"{where} has format_version {version!r}; this nasflow reads {FORMAT_VERSION}"
            )
        space = data.get("space")
        if not isinstance(space, dict):
            raise ExportError(f'{where}: "space" must be an object, got {space!r}')
        name, fp, config = space.get("name"), space.get("fingerprint"), space.get("config")
        if not isinstance(name, str) or not name:
            raise ExportError(f"{where}: space name must be a non-empty string, got {name!r}")
        if not isinstance(fp, str) or not fp:
            raise ExportError(f"{where}: space fingerprint must be a string, got {fp!r}")
        if not isinstance(config, dict):
            raise ExportError(f"{where}: space config must be an object, got {config!r}")
        if not isinstance(data.get("arch"), dict):
            raise ExportError(f'{where}: "arch" must be an object, got {data.get("arch")!r}')
        try:
            arch = Arch(data["arch"])
        except ValueError as e:
            raise ExportError(f"{where}: {e}") from None
        shape = data.get("input_shape")
        if not (
            isinstance(shape, list)
            and shape
            and all(isinstance(n, int) and not isinstance(n, bool) and n > 0 for n in shape)
        ):
            raise ExportError(
                f"{where}: input_shape must be a list of positive ints, got {shape!r}"
            )
        parts = {}
        for key in ("metrics", "metric_notes", "study", "weights", "checks", "files"):
            value = data.get(key, {})
            if not isinstance(value, dict):
                raise ExportError(f"{where}: {key!r} must be an object, got {value!r}")
            parts[key] = value
        return cls(
            name,
            fp,
            config,
            arch,
            tuple(shape),
            metrics=_finite_metrics(parts["metrics"]),
            study=parts["study"],
            weights=parts["weights"],
            checks=parts["checks"],
            files={str(k): str(v) for k, v in parts["files"].items()},
            notes={str(k): str(v) for k, v in parts["metric_notes"].items()},
        )
