"""Loading an export from ``arch.json`` and ``model.safetensors`` only; never pickle."""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

from nasflow.export._format import (
    ARCH_FILE,
    WEIGHTS_FILE,
    ExportError,
    ExportInfo,
    check_regular,
    refuse_pickles,
    sha256_file,
)
from nasflow.space import Arch, SearchSpace, rebuild_space


@dataclass(frozen=True)
class Exported:
    """A checked export: its record, the re-created space and the architecture."""

    path: Path
    info: ExportInfo
    space: SearchSpace
    arch: Arch


def _space_for(
    info: ExportInfo, space: SearchSpace | type[SearchSpace] | str | None
) -> SearchSpace:
    """Re-create the recorded space (registry, or the class/instance given) and check it."""
    if isinstance(space, str):  # a registered space's name: the registry's, if it is this
        if space != info.space:
            raise ExportError(f"the export is of space {info.space!r}, not {space!r}")
        space = None
    if not (
        space is None
        or isinstance(space, SearchSpace)
        or (isinstance(space, type) and issubclass(space, SearchSpace))
    ):
        raise ExportError(
            "space must be a SearchSpace, a SearchSpace class, a registered space's name or "
            f"None, got {space!r}"
        )
    if isinstance(space, SearchSpace):
        if space.name != info.space or space.fingerprint() != info.fingerprint:
            raise ExportError(
                f"the given space {space.name!r} (fingerprint {space.fingerprint()!r}) is not "
                f"the recorded {info.space!r} (fingerprint {info.fingerprint!r})"
            )
        return space
    try:
        return rebuild_space(info.space, info.space_config, info.fingerprint, cls=space)
    except ValueError as e:
        raise ExportError(f"{ARCH_FILE}: {e}") from None


def _check_arch_file(folder: Path) -> None:
    """Refuse a missing ``arch.json`` (naming any per-trial folders inside) or one that is
    not a regular file, before anything in ``folder`` is opened."""
    if not os.path.lexists(folder / ARCH_FILE):
        ExportInfo.read(folder)  # raises, naming any per-trial folders inside
    check_regular(folder / ARCH_FILE)


def read_export(
    path: os.PathLike | str, space: SearchSpace | type[SearchSpace] | str | None = None
) -> Exported:
    """Check an export directory and re-create its space and architecture (no weights).

    Args:
        path: The export directory.
        space: A space class or instance to use instead of the registry (a space defined
            in a script or a notebook); its name and fingerprint are checked all the same.
            A registered space's name is the registry's (checked to be the export's).

    Raises:
        ExportError: Not a directory, a file that may be a pickle, a malformed
            ``arch.json``, an unknown space, a fingerprint mismatch, or an architecture
            that is not a point of the space.
    """
    folder = Path(path)
    if not folder.is_dir():
        raise ExportError(f"export {str(folder)!r} is not a directory")
    _check_arch_file(folder)
    refuse_pickles(folder)  # also refuses links, FIFOs, sockets and devices, unopened
    info = ExportInfo.read(folder)
    sp = _space_for(info, space)
    try:
        arch = sp.validate(info.arch)
    except ValueError as e:
        raise ExportError(f"{ARCH_FILE}: {e}") from None
    if info.input_shape != tuple(sp.config.get("input_shape", info.input_shape)):
        raise ExportError(
            f"{ARCH_FILE}: input_shape {list(info.input_shape)} differs from the space's "
            f"{sp.config['input_shape']}"
        )
    return Exported(folder, info, sp, arch)


def load_weights(folder: Path, info: ExportInfo) -> dict[str, torch.Tensor]:
    """The tensors of ``model.safetensors`` after checking its recorded SHA-256."""
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    path = folder / WEIGHTS_FILE
    if not os.path.lexists(path):
        raise ExportError(f"export {str(folder)!r} has no {WEIGHTS_FILE}")
    check_regular(path)  # (safetensors opens it by name)
    want = info.weights.get("sha256")
    if not isinstance(want, str):
        raise ExportError(f"{ARCH_FILE} records no sha256 of {WEIGHTS_FILE}")
    have = sha256_file(path)
    if have != want:
        raise ExportError(
            f"{WEIGHTS_FILE} has SHA-256 {have[:16]}..., {ARCH_FILE} records {want[:16]}...: "
            "the weights were changed or corrupted after export"
        )
    try:
        state = load_file(path, device="cpu")
    except (SafetensorError, OSError, ValueError) as e:
        raise ExportError(f"{WEIGHTS_FILE} is not a valid safetensors file: {e}") from None
    _warn_non_finite(path, state)
    return state


class NonFiniteWeightsWarning(UserWarning):
    """Exported weights hold NaN or infinite values: the network's outputs will too (a
    training that diverged, or weights edited and checksummed again)."""


def _warn_non_finite(path: Path, state: dict[str, torch.Tensor]) -> None:
    """Warn, once, naming the file and the tensors, where ``state`` holds NaN or inf."""
    bad = {
        name: int((~torch.isfinite(t)).sum())
        for name, t in state.items()
        if t.is_floating_point() and not bool(torch.isfinite(t).all())
    }
    if bad:
        total = sum(t.numel() for t in state.values())
        names = ", ".join(f"{k!r} ({n})" for k, n in list(bad.items())[:3])
        more = f" and {len(bad) - 3} more tensors" if len(bad) > 3 else ""
        warnings.warn(
            f"{str(path)!r}: {sum(bad.values())} of {total} weights are NaN or infinite, in "
            f"{names}{more}; the network's outputs will be too",
            NonFiniteWeightsWarning,
            stacklevel=3,
        )


def build_with_weights(exported: Exported, state: dict[str, torch.Tensor]) -> nn.Module:
    """``space.build(arch)`` with exactly the tensors of ``state`` (names and shapes)."""
    with torch.random.fork_rng(devices=[]):  # build() initialises: keep the caller's RNG
        net = exported.space.build(exported.arch)
    own = net.state_dict()
    missing = sorted(set(own) - set(state))
    extra = sorted(set(state) - set(own))
    wrong = sorted(k for k in set(own) & set(state) if own[k].shape != state[k].shape)
    if missing or extra or wrong:
        detail = "; ".join(
            f"{what}: {names[:5]}"
            for what, names in (("missing", missing), ("unexpected", extra), ("shape", wrong))
            if names
        )
        raise ExportError(f"{WEIGHTS_FILE} does not fit the recorded architecture ({detail})")
    net.load_state_dict(state, strict=True)
    return net.eval()


def load_exported(
    path: os.PathLike | str, space: SearchSpace | type[SearchSpace] | str | None = None
) -> nn.Module:
    """Rebuild an exported network from ``arch.json`` and ``model.safetensors`` only.

    Nothing is unpickled: the space is re-created from the registry (the ``nasflow.spaces``
    entry points) and its recorded config, the architecture is checked against it, the
    network is built by ``space.build(arch)`` and the weights are read from safetensors
    after their SHA-256 is checked against ``arch.json``.

    Args:
        path: The export directory (``nasflow export ... --out DIR``).
        space: A space class or instance to use instead of the registry, or a registered
            space's name (see ``read_export``).

    Returns:
        The network, in eval mode, on the CPU.

    Raises:
        ExportError: Any problem with the directory, naming it.
    """
    exported = read_export(path, space)
    state = load_weights(exported.path, exported.info)
    return build_with_weights(exported, state)
