"""Writing an export directory, all or nothing."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
import stat
import tempfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path, PurePosixPath
from typing import Any

import torch
from torch import nn

from nasflow._disk import write_error, writing
from nasflow.errors import WriteError
from nasflow.export import _hf, _programs
from nasflow.export._format import (
    ARCH_FILE,
    ONNX_FILE,
    PROGRAM_FILE,
    README_FILE,
    RETRAINED,
    SUPERNET,
    WEIGHT_KINDS,
    WEIGHTS_FILE,
    ExportError,
    ExportInfo,
    sha256_file,
    weights_description,
)
from nasflow.export._loader import Exported, build_with_weights, load_weights
from nasflow.export._readme import readme
from nasflow.space import SearchSpace
from nasflow.supernet import Supernet, recalibrate_bn

#: Largest allowed |loaded - exported| on the check input (same ops, same weights).
ROUND_TRIP_TOLERANCE = 1e-6


def _not_own_export(folder: Path) -> str | None:
    """Why ``folder`` is not one complete export written by nasflow, or ``None``.

    It must hold a valid ``arch.json`` and exactly the files nasflow wrote with it
    (``arch.json``, ``README.md``, ``model.safetensors`` and the files ``arch.json``
    records, with the recorded checksums): regular files and folders only, nothing else.
    """
    try:
        info = ExportInfo.read(folder)
    except ExportError as e:
        return str(e)
    expected = {ARCH_FILE, README_FILE, WEIGHTS_FILE, *info.files}
    dirs = {p for name in expected for p in map(str, PurePosixPath(name).parents) if p != "."}
    found: set[str] = set()
    for root, subdirs, files in os.walk(folder):
        for name in [*subdirs, *files]:
            path = Path(root) / name
            rel = path.relative_to(folder).as_posix()
            mode = path.lstat().st_mode
            if stat.S_ISDIR(mode) and rel in dirs:
                continue
            if not stat.S_ISREG(mode) or rel not in expected:
                return f"it holds {rel!r}, which nasflow did not write"
            found.add(rel)
    if found != expected:
        return f"it lacks {sorted(expected - found)}"
    sums = {WEIGHTS_FILE: info.weights.get("sha256"), **info.files}
    for rel, want in sums.items():
        if sha256_file(folder / rel) != want:
            return f"{rel!r} was changed after it was exported"
    return None


def not_replaceable(folder: Path) -> str | None:
    """Why ``--force`` must not replace ``folder``, or ``None``: it is one complete
    nasflow export, or holds only ``trial-N`` folders that each are one."""
    if (folder / ARCH_FILE).exists() or (folder / ARCH_FILE).is_symlink():
        return _not_own_export(folder)
    entries = sorted(folder.iterdir())
    for entry in entries:
        if not (entry.name.startswith("trial-") and stat.S_ISDIR(entry.lstat().st_mode)):
            return f"it holds {entry.name!r} and no {ARCH_FILE}"
        why = _not_own_export(entry)
        if why is not None:
            return f"{entry.name}: {why}"
    return None


def check_target(out: Path, force: bool) -> None:
    """Refuse an output path that is a file, or a non-empty directory without ``force``.

    ``force`` replaces only a directory that is recognisably a complete nasflow export
    (see ``not_replaceable``), so a mistyped ``--out`` never deletes anything else.
    """
    if out.exists() and not out.is_dir():
        raise ExportError(f"--out {str(out)!r} exists and is not a directory")
    if out.is_dir() and any(out.iterdir()):
        if not force:
            raise ExportError(
                f"--out {str(out)!r} exists and is not empty; pass --force to replace it"
            )
        why = not_replaceable(out)
        if why is not None:
            raise ExportError(
                f"--out {str(out)!r} is not empty and is not a nasflow export ({why}); "
                "refusing to replace it even with --force"
            )


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _finish(folder: Path) -> None:
    """Flush ``folder`` to disk and give it and its content the modes of ordinary new
    files (temporary directories are created private, some writers create private files)."""
    umask = os.umask(0)
    os.umask(umask)
    for root, dirs, files in os.walk(folder):
        for d in dirs:
            os.chmod(Path(root) / d, 0o777 & ~umask)
        for f in files:
            os.chmod(Path(root) / f, 0o666 & ~umask)
            _fsync(Path(root) / f)
        _fsync(Path(root))
    os.chmod(folder, 0o777 & ~umask)


@contextlib.contextmanager
def atomic_dir(out: os.PathLike | str, force: bool = False) -> Iterator[Path]:
    """Yield a fresh temporary directory next to ``out`` that becomes ``out`` on success.

    On any failure the temporary directory (and any parent folder created for it) is
    removed and an existing ``out`` is left as it was. A failure of the disk or of
    permissions is one ``WriteError`` naming the file under ``out`` that could not be
    written and the room left on its disk.
    """
    out = Path(out)
    check_target(out, force)
    created = [p for p in reversed(out.parents) if not p.exists()]
    with writing(out, "the export"):
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent))
    try:
        yield tmp
        _finish(tmp)
        if out.is_dir() and any(out.iterdir()):
            old = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".old", dir=out.parent))
            os.replace(out, old / "x")
            try:
                # Checked again once moved aside: nothing written there meanwhile is lost.
                why = not_replaceable(old / "x")
                if why is not None:
                    raise ExportError(
                        f"--out {str(out)!r} changed during the export ({why}); "
                        "refusing to replace it"
                    )
                os.replace(tmp, out)
            except BaseException:
                os.replace(old / "x", out)  # put the previous export back
                shutil.rmtree(old, ignore_errors=True)
                raise
            shutil.rmtree(old, ignore_errors=True)
        else:
            if out.is_dir():
                out.rmdir()
            os.replace(tmp, out)
        _fsync(out.parent)
    except BaseException as e:
        shutil.rmtree(tmp, ignore_errors=True)
        for p in reversed(created):
            with contextlib.suppress(OSError):
                p.rmdir()
        failed = _destination_error(e, tmp, out)
        if failed is None:
            raise
        raise failed from e


def _destination_error(err: BaseException, tmp: Path, out: Path) -> WriteError | None:
    """A failed write of the export as a ``WriteError`` naming the file where it would
    have ended up (under ``out``, not the temporary folder), or ``None`` for any other
    failure."""
    path = Path(err.path) if isinstance(err, WriteError) else out
    with contextlib.suppress(ValueError):
        path = out / path.relative_to(tmp)
    return write_error(path, err, "the export file" if path != out else "the export")


def example_input(
    input_shape: Sequence[int], batch: int = 2, seed: int = 0, vocab: int | None = None
) -> torch.Tensor:
    """A reproducible input of ``(batch, *input_shape)``: standard-normal floats, or int64
    token ids in ``[0, vocab)`` when ``vocab`` is given (see ``_hf.token_vocab``)."""
    if vocab is not None:
        return _hf.example_tokens(input_shape, vocab, batch, seed)
    g = torch.Generator().manual_seed(seed)
    return torch.randn((batch, *input_shape), generator=g)


def input_shape_of(space: SearchSpace, fallback: Sequence[int] | None = None) -> tuple[int, ...]:
    """The space's ``config["input_shape"]``, else ``fallback`` (the study data's)."""
    shape = space.config.get("input_shape", fallback)
    if shape is None:
        raise ExportError(
            f"space {space.name!r} records no config['input_shape'] and no study data gives "
            "one; export needs the shape of one input sample"
        )
    return tuple(int(n) for n in shape)


def write_export(
    folder: Path,
    space: SearchSpace,
    net: nn.Module,
    info: ExportInfo,
    onnx: bool = True,
) -> ExportInfo:
    """Write every file of an export of ``net`` into the empty ``folder``.

    The weights are read back through the loader and must reproduce ``net`` exactly; the
    ONNX file must match within ``ONNX_TOLERANCE`` under onnxruntime. A space with a
    Hugging Face model (``space.hf_model(net)``) also gets ``hf/``, reloaded offline and
    checked within ``_hf.HF_TOLERANCE``.
    """
    from safetensors.torch import save

    folder.mkdir(parents=True, exist_ok=True)
    net = net.eval()
    state = {k: v.detach().cpu().contiguous() for k, v in net.state_dict().items()}
    _programs.write_file(folder / WEIGHTS_FILE, save(state, metadata={"format": "pt"}))
    weights = {**info.weights, "sha256": sha256_file(folder / WEIGHTS_FILE)}
    info = dataclasses.replace(info, weights=weights)
    vocab = _hf.token_vocab(space)
    x = example_input(info.input_shape, batch=2, vocab=vocab)
    check = example_input(info.input_shape, batch=3, seed=1, vocab=vocab)
    loaded = build_with_weights(
        Exported(folder, info, space, info.arch), load_weights(folder, info)
    )
    with torch.no_grad():
        gap = float((loaded(check) - net(check)).abs().max())
    if not gap <= ROUND_TRIP_TOLERANCE:
        raise ExportError(
            f"space {space.name!r}: build(arch) with the exported weights differs from the "
            f"extracted network by {gap:.3g}; its build() and supernet().extract() disagree"
        )
    checks: dict[str, Any] = {"reload_max_abs_diff": gap}
    program = _programs.export_program(net, x)
    _programs.save_program(program, folder / PROGRAM_FILE)
    checks["program_max_abs_diff"] = _programs.program_deviation(program, net, check)
    if not checks["program_max_abs_diff"] <= _programs.ONNX_TOLERANCE:
        raise ExportError(
            f"the torch.export program differs from the network by "
            f"{checks['program_max_abs_diff']:.3g} (> {_programs.ONNX_TOLERANCE})"
        )
    files = {PROGRAM_FILE: sha256_file(folder / PROGRAM_FILE)}
    if onnx:
        _programs.save_onnx(program, x, folder / ONNX_FILE)
        checks["onnx_max_abs_diff"] = _programs.onnx_deviation(folder / ONNX_FILE, net, check)
        checks["onnx_tolerance"] = _programs.ONNX_TOLERANCE
        files[ONNX_FILE] = sha256_file(folder / ONNX_FILE)
    with writing(folder / _hf.HF_DIR):  # (save_pretrained writes its own files)
        hf = _hf.save_hf(space, net, folder, check)
    if hf is not None:
        files.update(hf[0])
        checks["hf_max_abs_diff"] = hf[1]
    info = dataclasses.replace(info, checks=checks, files=files)
    text = readme(info, space, onnx)
    _programs.write_file(folder / README_FILE, text.encode("utf-8"))
    # Its checksum too, so `export --force` notices a README edited since (not a loader
    # check: editing the README never makes an export unloadable).
    files = {**files, README_FILE: sha256_file(folder / README_FILE)}
    info = dataclasses.replace(info, files=files)
    _programs.write_file(folder / ARCH_FILE, info.to_json().encode("utf-8"))
    return info


def weights_record(kind: str, fields: Mapping[str, Any]) -> dict[str, Any]:
    """An export's ``weights`` record: ``kind``, the sentence that says which weights these
    are (``description``), then ``fields`` (``source``, ``batch_norm``, ``recipe``...)."""
    return {"kind": kind, "description": weights_description(kind, fields), **fields}


def prepare_export(
    space: SearchSpace,
    supernet: Supernet,
    arch: Mapping[str, Any],
    *,
    metrics: Mapping[str, float] | None = None,
    study: Mapping[str, Any] | None = None,
    calibration: Iterable[Any] | None = None,
    bn_batches: int = 10,
    input_shape: Sequence[int] | None = None,
    source: str = "supernet",
    notes: Mapping[str, str] | None = None,
    stack: Mapping[str, Any] | None = None,
) -> tuple[nn.Module, ExportInfo]:
    """The stand-alone network of ``arch`` (BN recalibrated if asked) and its record.

    Arguments as for ``export_arch``; ``notes`` says what each metric is; ``stack`` (a
    ``Stack.to_dict()``) is the speedup stack the supernet trained with, recorded so that
    ``nasflow retrain`` of a ``stack="auto"`` study trains through it too.
    """
    try:
        full = space.validate(arch)
    except ValueError as e:
        raise ExportError(str(e)) from None
    if supernet.space.fingerprint() != space.fingerprint():
        raise ExportError(
            f"the supernet is of a space with fingerprint {supernet.space.fingerprint()!r}, "
            f"not {space.fingerprint()!r}"
        )
    shape = input_shape_of(space, input_shape)
    net = supernet.extract(space.path(full)).cpu().eval()
    bn = "supernet running statistics (not recalibrated)"
    if calibration is not None:
        used = recalibrate_bn(net, calibration, bn_batches, device="cpu")
        bn = f"recalibrated on {used} training batches" if used else "no batch norm layers"
    info = ExportInfo(
        space.name,
        space.fingerprint(),
        dict(space.config),
        full,
        shape,
        metrics=dict(metrics or {}),
        study=dict(study or {}),
        weights=weights_record(
            SUPERNET,
            {"source": source, "batch_norm": bn}
            | ({"stack": dict(stack)} if stack is not None else {}),
        ),
        notes=dict(notes or {}),
    )
    return net, info


def prepare_trained(
    space: SearchSpace,
    arch: Mapping[str, Any],
    state: Mapping[str, torch.Tensor],
    *,
    metrics: Mapping[str, float],
    notes: Mapping[str, str],
    kind: str = RETRAINED,
    study: Mapping[str, Any] | None = None,
    weights: Mapping[str, Any] | None = None,
    input_shape: Sequence[int] | None = None,
) -> tuple[nn.Module, ExportInfo]:
    """``space.build(arch)`` with trained weights ``state`` (retrained from scratch, or a
    ready model's fine-tuned ones) exactly as given, and its record.

    Args:
        space: The space ``arch`` belongs to.
        arch: A full architecture of ``space``.
        state: The trained network's ``state_dict`` (exactly its names and shapes).
        metrics: Numbers measured with these weights.
        notes: What each metric is (weights, split, measured or predicted).
        kind: ``weights["kind"]``: ``"retrained"`` or ``"fine-tuned"``.
        study: Provenance to record.
        weights: Where the weights came from (``source``, ``recipe``, ``seed``...) and
            how their batch-norm statistics were obtained (``batch_norm``; default: those
            of the from-scratch training).
        input_shape: One sample's shape when the space's config records none.

    Raises:
        ExportError: ``arch`` is not in ``space``, or ``state`` does not fit it.
    """
    if kind not in WEIGHT_KINDS or kind == SUPERNET:
        raise ExportError(f"kind must be 'retrained' or 'fine-tuned', got {kind!r}")
    try:
        full = space.validate(arch)
    except ValueError as e:
        raise ExportError(str(e)) from None
    info = ExportInfo(
        space.name,
        space.fingerprint(),
        dict(space.config),
        full,
        input_shape_of(space, input_shape),
        metrics=dict(metrics),
        study=dict(study or {}),
        weights=weights_record(
            kind,
            {"batch_norm": "running statistics of the from-scratch training", **(weights or {})},
        ),
        notes=dict(notes),
    )
    net = build_with_weights(Exported(Path("."), info, space, full), dict(state))
    return net, info


def export_arch(
    space: SearchSpace,
    supernet: Supernet,
    arch: Mapping[str, Any],
    out: os.PathLike | str,
    *,
    metrics: Mapping[str, float] | None = None,
    study: Mapping[str, Any] | None = None,
    calibration: Iterable[Any] | None = None,
    bn_batches: int = 10,
    input_shape: Sequence[int] | None = None,
    onnx: bool = True,
    force: bool = False,
    source: str = "supernet",
) -> ExportInfo:
    """Export one architecture with its supernet weights into the directory ``out``.

    Args:
        space: The space ``arch`` belongs to.
        supernet: The trained supernet of ``space`` (not modified).
        arch: A full architecture of ``space`` (hyper-parameters included).
        out: The export directory; created, or replaced with ``force`` (an export only).
        metrics: Numbers to record (objective values, parameter count...).
        study: Provenance to record (study name, storage, trial number...).
        calibration: Training batches to re-estimate batch-norm statistics for this path
            (what the search scores with); ``None`` keeps the supernet's statistics.
        bn_batches: How many calibration batches to use.
        input_shape: One sample's shape when the space's config records none.
        onnx: Also write and check ``model.onnx`` (needs the ``onnx`` extra).
        force: Replace an existing export at ``out``.
        source: Where the weights come from, for the record.

    Returns:
        The record written to ``arch.json``.

    Raises:
        ExportError: Bad arguments, a failed check, or a missing optional dependency;
            nothing is left at ``out``.
    """
    if onnx:
        _programs.require_onnx()
    check_target(Path(out), force)
    net, info = prepare_export(
        space,
        supernet,
        arch,
        metrics=metrics,
        study=study,
        calibration=calibration,
        bn_batches=bn_batches,
        input_shape=input_shape,
        source=source,
    )
    with atomic_dir(out, force) as tmp:
        return write_export(tmp, space, net, info, onnx)
