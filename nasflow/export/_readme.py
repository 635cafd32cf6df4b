"""The ``README.md`` written into every export directory."""

from __future__ import annotations

import importlib.util
import inspect
from pathlib import Path

from nasflow.export._format import FINE_TUNED, RETRAINED, SUPERNET, ExportInfo
from nasflow.space import SearchSpace, is_registered, rebuild_space

#: Module names of code that no other process can import: a script or notebook
#: (``__main__``), a study file run by ``nasflow.search.load_study_file``.
_NOT_IMPORTABLE = ("__main__", "nasflow_study")


def _arch_table(info: ExportInfo) -> str:
    rows = ["| choice | value |", "|---|---|"]
    rows += [f"| `{k}` | `{v}` |" for k, v in info.arch.items()]
    return "\n".join(rows)


def _metrics(info: ExportInfo) -> str:
    """The metrics of these weights, each with what it is (weights, split, measured)."""
    if not info.metrics:
        return "No accuracy was measured with these weights."
    rows = []
    for k, v in info.metrics.items():
        note = info.notes.get(k)
        rows.append(f"- `{k}`: {v:.4f}" + (f" — {note}" if note else ""))
    return "\n".join(rows)


def _weights(info: ExportInfo) -> str:
    """One paragraph saying which weights ``model.safetensors`` holds."""
    w = info.weights
    bn = w.get("batch_norm", "?")
    if info.kind == RETRAINED:
        recipe = w.get("recipe")
        detail = ""
        if isinstance(recipe, dict):
            detail = (
                f" with {recipe.get('epochs')} epochs, batch size {recipe.get('batch_size')}, "
                f"learning rate {recipe.get('lr')}, seed {w.get('seed')}"
            )
        return (
            f"**Weights: retrained from scratch** in {w.get('source', '?')}{detail}; not the "
            f"supernet's. Batch norm: {bn}. The test accuracy below is that of these weights "
            "on the study's test split."
        )
    if info.kind == FINE_TUNED:
        return (
            f"**Weights: fine-tuned from inherited supernet weights**, {w.get('epochs')} "
            f"epoch{'s' * (w.get('epochs') != 1)}, by {w.get('source', '?')}: a ready model, "
            "exported as saved (nothing recalibrated or trained since). Batch norm: "
            f"{bn}. The accuracies below are those of these weights, on the splits named."
        )
    if info.kind == SUPERNET:
        return (
            "**Weights: the supernet's** (inherited through weight sharing, not trained "
            f"stand-alone; {w.get('source', '?')}). Batch norm: {bn}. Their test accuracy "
            "was not measured; retrain them from scratch (below), or export the retrained "
            "winner (`nasflow export NAME --weights retrained`) where the search retrained it, "
            "or a ready model (`nasflow export NAME --ready best`) where it fine-tuned some."
        )
    return f"Weights: {w.get('source', 'unknown origin')}. Batch norm: {bn}."


def _search(info: ExportInfo) -> str:
    """What the search predicted for the architecture (not measured with these weights)."""
    rows = []
    if isinstance(info.study.get("params"), int | float):
        rows.append(f"- parameters: {int(info.study['params']):,}")
    if isinstance(info.study.get("train_cost_predicted_s"), int | float):
        rows.append(
            "- training time predicted by the cost model during the search: "
            f"{info.study['train_cost_predicted_s']:.1f}s (a prediction for the architecture)"
        )
    return "\n".join(rows)


def _defined_in(cls: type) -> str | None:
    """The name (not the path) of the file that defines ``cls``, where Python knows it."""
    for value in vars(cls).values():
        code = getattr(value, "__code__", None)
        if code is not None:
            return Path(code.co_filename).name
    try:
        return Path(inspect.getfile(cls)).name
    except (TypeError, OSError):
        return None


def _rebuilds(space: SearchSpace) -> bool:
    """Whether ``load_exported(dir, space=type(space))`` re-creates ``space`` from its
    recorded config (its class's ``from_config``, the same fingerprint)."""
    try:
        rebuild_space(space.name, space.config, space.fingerprint(), cls=type(space))
    except ValueError:
        return False
    return True


def _importable(module: str) -> bool:
    if module in _NOT_IMPORTABLE:
        return False
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def _load_section(info: ExportInfo, space: SearchSpace, sample: str) -> str:
    """How to load the export in PyTorch: ``load_exported(dir)`` for a registered space,
    else code that loads without the registry (the program, or the space passed in)."""
    if is_registered(space):
        return f"""```python
import torch
import nasflow

model = nasflow.load_exported("path/to/this/directory")  # eval mode, CPU
logits = model({sample})
```

`load_exported` reads only `arch.json` and `model.safetensors`: it re-creates the space
`{info.space}` (fingerprint `{info.fingerprint}`) from the installed nasflow spaces and
the recorded config, checks the architecture against it, builds the network and loads the
weights after checking their SHA-256. It never unpickles anything, and it refuses a
directory that carries a pickle (`*.pt`, `*.pkl`, `*.bin`, ...)."""
    cls = type(space)
    where = _defined_in(cls)
    if _importable(cls.__module__) and _rebuilds(space):
        give = f"from {cls.__module__} import {cls.__qualname__}\n\n"
        arg, said = cls.__qualname__, f"the class `{cls.__module__}.{cls.__qualname__}`"
    elif not _importable(cls.__module__) and where and where.endswith(".py"):
        give = (
            "from nasflow.search import load_study_file\n\n"
            f'space = load_study_file("path/to/{where}").space  # runs the study file\n'
        )
        arg = "space"
        said = f"the study file that defines it (`{where}`)"
    else:  # nothing this process knows rebuilds it: the user's own instance
        give = ""
        arg = "space"
        said = (
            f"the `{cls.__qualname__}` instance the study searched (`{cls.__module__}`; "
            f"`{cls.__qualname__}.from_config` does not rebuild it from the recorded config), "
            "bound to `space`"
        )
    return f"""Space `{info.space}` is not registered with nasflow (no `nasflow.spaces` entry
point re-creates it), so `nasflow.load_exported(directory)` alone cannot rebuild it. The
torch.export program loads with PyTorch alone:

```python
import torch

program = torch.export.load("path/to/this/directory/model.pt2")  # unpickles: trusted files only
model = program.module()
logits = model({sample})
```

Or rebuild the network from `arch.json` and `model.safetensors` with the space given, from
{said}:

```python
import torch
import nasflow
{give}model = nasflow.load_exported("path/to/this/directory", space={arg})  # eval mode, CPU
logits = model({sample})
```

`load_exported` then checks the space's name and fingerprint (`{info.fingerprint}`)
against the record, checks the architecture, builds the network and loads the weights
after checking their SHA-256. It never unpickles anything, and it refuses a directory that
carries a pickle (`*.pt`, `*.pkl`, `*.bin`, ...)."""


def _retrain_command(space: SearchSpace) -> str:
    """``nasflow retrain`` for this export (with ``--study`` where the space needs it)."""
    if is_registered(space):
        return "nasflow retrain path/to/this/directory --epochs 20 --out path/to/retrained"
    where = _defined_in(type(space))
    own = not _importable(type(space).__module__) and where and where.endswith(".py")
    study = where if own else "STUDY_FILE.py"
    return (
        f"nasflow retrain path/to/this/directory --study path/to/{study} --epochs 20 "
        "--out path/to/retrained"
    )


def readme(info: ExportInfo, space: SearchSpace, onnx: bool) -> str:
    """Markdown that says what the export is and how to load each file."""
    origin = ""
    if info.study:
        origin = (
            f"Trial {info.study.get('trial')} of study `{info.study.get('name')}` "
            f"({info.study.get('storage', '')}).\n\n"
        )
    shape = ", ".join(str(n) for n in info.input_shape)
    vocab = info.space_config.get("vocab_size")
    tokens = info.space_config.get("input_dtype") == "int64"
    what = f"a tensor of int64 token ids in [0, {vocab})" if tokens else "a float tensor"
    sample = f"torch.randint(0, {vocab}, (8, {shape}))" if tokens else f"torch.randn(8, {shape})"
    np_sample = f"np.zeros((8, {shape}), {'np.int64' if tokens else 'np.float32'})"
    hf_part = (
        """
## Hugging Face

```python
from transformers import AutoModelForCausalLM

model = AutoModelForCausalLM.from_pretrained("path/to/this/directory/hf", local_files_only=True)
```

Checked when written, reloaded offline: largest logit difference from the exported
"""
        f"network {info.checks.get('hf_max_abs_diff', float('nan')):.3g}.\n"
        if any(name.startswith("hf/") for name in info.files)
        else ""
    )
    onnx_part = (
        f"""
## ONNX

```python
import numpy as np
import onnxruntime as ort

session = ort.InferenceSession("model.onnx")
logits = session.run(["logits"], {{"input": {np_sample}}})[0]
```

Checked with onnxruntime when written: largest difference from PyTorch
{info.checks.get("onnx_max_abs_diff", float("nan")):.3g} (tolerance
{info.checks.get("onnx_tolerance", float("nan")):.0e}).
"""
        if onnx
        else "\nNo ONNX file was written (exported with `--no-onnx`).\n"
    )
    kind = (
        f"\n\n`arch.json`: `weights.kind` is `{info.kind}`: {info.weights['description']}."
        if "description" in info.weights
        else ""
    )
    return f"""# Exported architecture: space `{info.space}`

{origin}A plain PyTorch network (no nasflow supernet code).

{_weights(info)}{kind}

## Metrics of these weights

{_metrics(info)}

Input: {what} of shape `(batch, {shape})`; output: logits.

## Load it (PyTorch)

{_load_section(info, space, sample)}

## torch.export program

```python
import torch

program = torch.export.load("path/to/this/directory/model.pt2")  # unpickles: trusted files only
logits = program.module()({sample})
```
{onnx_part}{hf_part}
## Retrain from scratch

```bash
{_retrain_command(space)}
```

## Architecture

{_arch_table(info)}

{_search(info)}

Space description: {space.description or space.name}.
"""
