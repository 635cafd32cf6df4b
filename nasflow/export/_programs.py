"""Graph exports of a stand-alone network: a ``torch.export`` program and an ONNX file."""

from __future__ import annotations

import contextlib
import io
import warnings
from pathlib import Path

import torch
from torch import nn

from nasflow._disk import writing
from nasflow.export._format import ExportError

#: Largest allowed |graph export - PyTorch| on the check input (ONNX and torch.export).
ONNX_TOLERANCE = 1e-4


def require_onnx() -> None:
    """Import guard for the optional ONNX stack, naming the extra to install."""
    missing = []
    for module in ("onnx", "onnxruntime", "onnxscript"):
        try:
            __import__(module)
        except ImportError:
            missing.append(module)
    if missing:
        raise ExportError(
            f"ONNX export needs {', '.join(missing)}: pip install 'nasflow[onnx]' "
            "(or export without ONNX: --no-onnx)"
        )


def export_program(net: nn.Module, example: torch.Tensor) -> torch.export.ExportedProgram:
    """``torch.export`` of ``net`` (in eval mode) with a dynamic batch dimension."""
    batch = torch.export.Dim("batch", min=1)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return torch.export.export(net, (example,), dynamic_shapes=({0: batch},))
    except Exception as e:  # torch.export raises many types for untraceable code
        first = (str(e).strip().splitlines() or [type(e).__name__])[0][:300]
        raise ExportError(f"torch.export failed: {type(e).__name__}: {first}") from e


def write_file(path: Path, data: bytes | memoryview) -> None:
    """Write one export file in one call: a full disk, a file-size limit or a permission is
    one ``WriteError`` naming ``path`` (the serialisers below write to memory first; their
    own file writers abort or raise untyped errors on a full disk)."""
    with writing(path), open(path, "wb") as f:
        f.write(data)


def save_program(program: torch.export.ExportedProgram, path: Path) -> None:
    """Save the program without the Python stack traces ``torch.export`` records per node:
    they hold this machine's absolute file paths, which an export must not carry.

    Serialised in memory: ``torch.export.save``'s own file writer aborts the process
    (SIGABRT) when the disk fills up.
    """
    for node in program.graph.nodes:
        node.meta.pop("stack_trace", None)
    buffer = io.BytesIO()
    torch.export.save(program, buffer)
    write_file(path, buffer.getbuffer())


def program_deviation(
    program: torch.export.ExportedProgram, net: nn.Module, x: torch.Tensor
) -> float:
    """Largest |program(x) - net(x)|."""
    with torch.no_grad():
        return float((program.module()(x) - net(x)).abs().max())


def save_onnx(program: torch.export.ExportedProgram, example: torch.Tensor, path: Path) -> None:
    """Write the program as one ONNX file (weights inside), input ``input``, output
    ``logits``, batch dimension dynamic."""
    require_onnx()
    chatter = io.StringIO()  # the exporter prints its progress to stdout
    try:
        with (
            warnings.catch_warnings(),
            contextlib.redirect_stdout(chatter),
            contextlib.redirect_stderr(chatter),
        ):
            warnings.simplefilter("ignore")
            onnx_program = torch.onnx.export(
                program,
                (example,),
                None,  # serialised below, written in one call
                dynamo=True,
                external_data=False,
                input_names=["input"],
                output_names=["logits"],
            )
            assert onnx_program is not None, "the dynamo exporter returns its program"
            data = onnx_program.model_proto.SerializeToString()
    except Exception as e:
        first = (str(e).strip().splitlines() or [type(e).__name__])[0][:300]
        raise ExportError(f"ONNX export failed: {type(e).__name__}: {first}") from e
    write_file(path, data)


def onnx_deviation(path: Path, net: nn.Module, x: torch.Tensor) -> float:
    """Largest |onnxruntime(x) - net(x)|; raises ``ExportError`` above ``ONNX_TOLERANCE``."""
    require_onnx()
    import onnx
    import onnxruntime as ort

    try:
        onnx.checker.check_model(str(path))
    except onnx.checker.ValidationError as e:
        raise ExportError(f"the ONNX file does not pass onnx.checker: {e}") from None
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    (got,) = session.run(["logits"], {"input": x.numpy()})
    with torch.no_grad():
        want = net(x)
    diff = float((torch.from_numpy(got) - want).abs().max())
    if not diff <= ONNX_TOLERANCE:
        raise ExportError(
            f"onnxruntime output differs from PyTorch by {diff:.3g} (> {ONNX_TOLERANCE})"
        )
    return diff
