"""B2's per-architecture features: the ground-truth tables merged over their seeds, the
supernet's scores, and what costs nothing (parameters, FLOPs, width, zero-cost proxies,
predicted training cost), as one row per (supernet seed, architecture).

The rows are what ``benchmarks/ranking.py --scores-out`` saves (a learned ranker trains on
them) and what ``--from-scores`` reads back.
"""

from __future__ import annotations

import copy
import csv
import functools
import json
import math
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import torch

from nasflow.cost import CostModel, count_flops
from nasflow.proxies import zero_cost_scores
from nasflow.ranker import WIDTH_LABELS
from nasflow.search import StudySpec
from nasflow.space import Arch
from nasflow.supernet import recalibrate_bn
from nasflow.train import SupernetConfig, SupernetTrainer, evaluate
from nasflow.train._checkpoint import list_checkpoints, load_checkpoint
from nasflow.train.stack import Stack

Row = dict[str, Any]


# ---------------------------------------------------------------------------- tables
def _read(path: Path) -> tuple[list[dict[str, str]], int]:
    """A table's complete rows and how many were incomplete (a table still being written
    can end in a half-written line)."""
    with path.open(newline="") as f:
        rows = list(csv.DictReader(f))
    good = []
    for r in rows:
        try:
            int(r["index"]), Arch.from_json(r["arch"]), float(r["test_accuracy"])
            float(r["val_accuracy"]), float(r["params"])
        except (KeyError, TypeError, ValueError):
            continue
        good.append(r)
    return good, len(rows) - len(good)


def load_ground_truth(path: Path, limit: int | None) -> list[tuple[Arch, float, float]]:
    """``(arch, stand-alone val accuracy, stand-alone test accuracy)`` rows, by index."""
    rows, _ = _read(path)
    if not rows:
        raise SystemExit(f"{path} holds no rows; run benchmarks/ground_truth.py first")
    rows.sort(key=lambda r: int(r["index"]))
    out = [
        (Arch.from_json(r["arch"]), float(r["val_accuracy"]), float(r["test_accuracy"]))
        for r in rows
    ]
    return out[:limit] if limit else out


def load_params(path: Path, n: int) -> list[float]:
    """The ``params`` column of a ground-truth table (its first ``n`` rows by index)."""
    rows, _ = _read(path)
    return [float(r["params"]) for r in sorted(rows, key=lambda r: int(r["index"]))[:n]]


def merge_ground_truth(
    tables: list[list[tuple[Arch, float, float]]],
) -> tuple[list[Arch], list[float], list[float]]:
    """Archs present in every table (their common prefix) and their mean val/test accuracy."""
    n = min(len(t) for t in tables)
    for t in tables[1:]:
        for i in range(n):
            if t[i][0] != tables[0][i][0]:
                raise SystemExit(f"ground-truth tables disagree on architecture {i}")
    archs = [a for a, _, _ in tables[0][:n]]
    val = [sum(t[i][1] for t in tables) / len(tables) for i in range(n)]
    test = [sum(t[i][2] for t in tables) / len(tables) for i in range(n)]
    return archs, val, test


@dataclass(frozen=True)
class Table:
    """Ground-truth tables merged over their training seeds: the architectures present in
    every table (by index), in index order.

    Attributes:
        paths: The tables, one per training seed.
        indices: The architectures' sample indices.
        archs: The architectures.
        params: Stand-alone parameter counts (the first table's column).
        val: Per table, the stand-alone validation accuracies.
        test: Per table, the stand-alone test accuracies.
        skipped: Incomplete rows left out, per table.
    """

    paths: tuple[Path, ...]
    indices: list[int]
    archs: list[Arch]
    params: list[float]
    val: list[list[float]]
    test: list[list[float]]
    skipped: tuple[int, ...]

    @property
    def test_mean(self) -> list[float]:
        return [sum(t[i] for t in self.test) / len(self.test) for i in range(len(self.archs))]

    @property
    def val_mean(self) -> list[float]:
        return [sum(t[i] for t in self.val) / len(self.val) for i in range(len(self.archs))]

    def head(self, n: int) -> Table:
        """The first ``n`` architectures."""
        return replace(
            self,
            indices=self.indices[:n],
            archs=self.archs[:n],
            params=self.params[:n],
            val=[v[:n] for v in self.val],
            test=[t[:n] for t in self.test],
        )


def load_tables(paths: Sequence[Path], limit: int | None = None) -> Table:
    """Merge ``paths`` over the architectures (sample indices) present in all of them.

    Raises:
        SystemExit: A table without rows, or two tables that disagree on an index's arch.
    """
    read = [_read(Path(p)) for p in paths]
    by_index = [{int(r["index"]): r for r in rows} for rows, _ in read]
    for path, rows in zip(paths, by_index, strict=True):
        if not rows:
            raise SystemExit(f"{path} holds no rows; run benchmarks/ground_truth.py first")
    common = sorted(set.intersection(*(set(t) for t in by_index)))
    for i in common:
        archs = {Arch.from_json(t[i]["arch"]) for t in by_index}
        if len(archs) > 1:
            raise SystemExit(f"ground-truth tables disagree on architecture {i}")
    common = common[:limit] if limit else common
    first = by_index[0]
    return Table(
        paths=tuple(Path(p) for p in paths),
        indices=common,
        archs=[Arch.from_json(first[i]["arch"]) for i in common],
        params=[float(first[i]["params"]) for i in common],
        val=[[float(t[i]["val_accuracy"]) for i in common] for t in by_index],
        test=[[float(t[i]["test_accuracy"]) for i in common] for t in by_index],
        skipped=tuple(s for _, s in read),
    )


# ---------------------------------------------------------------------------- the supernet
def supernet_config(study: StudySpec, overrides: dict[str, Any], seed: int) -> SupernetConfig:
    """The study's supernet recipe with ``overrides`` (``SupernetConfig`` fields) and
    ``seed``; where the epochs change and the warm-up is not given, the warm-up keeps its
    share of the epochs.

    Raises:
        SystemExit: An unknown field or a bad value (one line naming it).
    """
    base = study.supernet
    fields = set(SupernetConfig.__dataclass_fields__)
    unknown = sorted(set(overrides) - fields)
    if unknown:
        raise SystemExit(
            f"--supernet: unknown field(s) {unknown}; SupernetConfig has {sorted(fields)}"
        )
    changes = dict(overrides)
    if "epochs" in changes and "warmup_epochs" not in changes:
        changes["warmup_epochs"] = base.warmup_epochs * changes["epochs"] / base.epochs
    try:
        return replace(base, **changes, seed=seed)
    except (TypeError, ValueError) as e:
        raise SystemExit(f"--supernet {json.dumps(overrides)}: {e}") from None


def _frozen_bn_supernet(space: Any) -> torch.nn.Module:
    """``space``'s supernet with every batch norm's affine parameters frozen at 1 and 0."""
    net = space.supernet()
    for m in net.modules():
        if isinstance(m, torch.nn.modules.batchnorm._BatchNorm) and m.affine:
            m.weight.requires_grad_(False)
            m.bias.requires_grad_(False)
    return net


def supernet_features(
    study: StudySpec,
    cfg: SupernetConfig,
    archs: Sequence[Arch],
    data: Any,
    bn_batches: int,
    stack: Stack | None = None,
    frozen_bn_affine: bool = False,
    average_last: int = 0,
) -> tuple[list[float], list[float], float]:
    """Train one supernet and score every arch as search does: its path extracted, BN
    re-estimated on the same ``bn_batches`` training batches for every path, validation
    accuracy and cross-entropy. With ``average_last`` > 0 the scores are the supernet's
    weights averaged over its last ``average_last`` epoch-end checkpoints (late-checkpoint
    averaging; strict fairness is untouched: no op trains differently). Returns
    ``(accuracies, losses, training seconds)``."""
    space = study.space
    if frozen_bn_affine:
        space = copy.copy(space)
        space.supernet = functools.partial(_frozen_bn_supernet, study.space)  # type: ignore[method-assign]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) if average_last else None
        trainer = SupernetTrainer(space, data.train, cfg, stack=stack, checkpoint_dir=folder)
        t0 = time.perf_counter()
        supernet = trainer.fit().supernet
        seconds = time.perf_counter() - t0
        if folder is not None:
            supernet = averaged_supernet(supernet, folder, average_last)
    bn = data.batches("train", study.train.batch_size, study.seed).fixed(bn_batches)
    val = data.batches("val")
    accs, losses = [], []
    for arch in archs:
        net = supernet.extract(study.space.path(arch))
        if bn_batches:
            recalibrate_bn(net, bn, bn_batches)
        acc, loss = evaluate(net, val)
        accs.append(acc)
        losses.append(loss)
    return accs, losses, seconds


def averaged_supernet(supernet: torch.nn.Module, folder: Path, last: int) -> torch.nn.Module:
    """``supernet`` with its parameters replaced by their mean over the last ``last``
    epoch-end checkpoints in ``folder`` (``torch.optim.swa_utils.AveragedModel``'s equal
    average; buffers are the newest checkpoint's, the final epoch's: screening re-estimates
    batch norm per path).

    Raises:
        SystemExit: ``folder`` holds fewer than ``last`` epoch checkpoints.
    """
    epochs = [p for at, p in list_checkpoints(folder) if not at.batch][:last]
    if len(epochs) < last:
        raise SystemExit(f"--average-last {last}: only {len(epochs)} epoch checkpoints")
    scratch = copy.deepcopy(supernet)
    averaged = torch.optim.swa_utils.AveragedModel(supernet, use_buffers=False)
    for path in reversed(epochs):  # oldest first
        scratch.load_state_dict(load_checkpoint(path)["model"])
        averaged.update_parameters(scratch)
    return averaged.module


# ---------------------------------------------------------------------------- free features
def default_width_label(study: StudySpec) -> str | None:
    """``width`` where the space has it, ``n_embd`` in GPT-2 spaces, else none (the
    study's ranker reads the same choice, ``WIDTH_LABELS``)."""
    labels = study.space.labels
    return next((label for label in WIDTH_LABELS if label in labels), None)


@dataclass(frozen=True)
class FreeFeatures:
    """What costs nothing, per architecture (proxies per initialisation seed)."""

    flops: list[float]
    predicted_cost: list[float | None]
    proxies: dict[int, dict[str, list[float]]]
    failures: list[str]
    cost_source: str


def cost_features(
    study: StudySpec, archs: Sequence[Arch], x: torch.Tensor, steps: int, quick: bool
) -> tuple[list[float], list[float | None], str]:
    """``(training FLOPs, predicted training seconds, where they came from)`` of every arch,
    from the cost model the study predicts with (fp32, or the precision the study's stack
    names); ``quick``: a rough table measured now and not kept.

    Where the cost model's tracer finds no op in the space's paths (it decomposes the
    supernet's choice modules; a space whose supernet is one module, as GPT-2's, has
    none), there is no prediction: the costs are ``None`` and the FLOPs are counted on
    each whole stand-alone network instead (``count_flops``, on the meta device).
    """
    stack = study.stack if isinstance(study.stack, Stack) else None
    kwargs: dict[str, Any] = {"storage_url": "sqlite://", "share": False} if quick else {}
    if quick:
        kwargs.update(rounds=1, iters=1)
    model = CostModel.for_space(
        study.space,
        input_shape=tuple(x.shape[1:]),
        batch_size=study.train.batch_size,
        precision=stack.amp if stack and stack.amp else "fp32",
        input_dtype=x.dtype,
        **kwargs,
    )
    paths = [study.space.path(a) for a in archs]
    if not all(model.units(p) for p in paths):
        shape = (study.train.batch_size, *x.shape[1:])
        flops = [
            float(count_flops(study.space.build(a), shape, input_dtype=x.dtype).total) * steps
            for a in archs
        ]
        why = (
            f"no predicted cost: the cost model's tracer finds no op in space {study.space.name!r}"
        )
        return flops, [None] * len(archs), why + "; FLOPs counted on whole networks"
    model = model.fit(n=2, rounds=1, iters=1) if quick else model.fit()
    flops = [float(model.flops(p).total) * steps for p in paths]
    cost: list[float | None] = [model.predict_train_seconds(p, steps) for p in paths]
    source = "rough quick table, not kept" if quick else str((model.stability or {}).get("source"))
    return flops, cost, f"predicted cost: cost model ({source})"


def free_features(
    study: StudySpec,
    archs: Sequence[Arch],
    data: Any,
    seeds: Sequence[int],
    proxies: Sequence[str],
    proxy_batch: int,
    quick: bool = False,
    log: Callable[[str], None] = print,
) -> FreeFeatures:
    """FLOPs and predicted cost once, and the proxies once per seed (initialisation seed =
    supernet seed), on one batch of ``proxy_batch`` training inputs."""
    x, _ = data.batches("train", proxy_batch, 0).fixed(1)[0]
    steps = len(data.train) // study.train.batch_size * study.train.epochs
    flops, cost, source = cost_features(study, archs, x, steps, quick)
    log(source)
    by_seed: dict[int, dict[str, list[float]]] = {}
    failures: list[str] = []
    for seed in seeds:
        if not proxies:
            by_seed[seed] = {}
            continue
        rec = zero_cost_scores(study.space, archs, x, proxies, seed=seed)
        by_seed[seed] = {p: list(rec.values[p]) for p in proxies}
        failures += [f"seed {seed}: {line}" for line in rec.lines()]
        log(
            f"proxies, seed {seed}: "
            + ", ".join(f"{k} {v:.1f}s" for k, v in rec.seconds.items())
            + f" for {len(archs)} architectures (batch of {rec.batch_size})"
        )
    return FreeFeatures(flops, cost, by_seed, failures, source)


# ---------------------------------------------------------------------------- rows
def make_rows(
    ground: str,
    table: Table,
    seeds: Sequence[int],
    free: FreeFeatures,
    width_label: str | None,
    supernet: dict[int, tuple[list[float], list[float]]],
    recipe: dict[int, dict[str, Any]],
) -> list[Row]:
    """One row per (seed, architecture): every feature and the tables' accuracies."""
    rows = []
    for seed in seeds:
        acc, loss = supernet.get(seed, (None, None))
        for i, arch in enumerate(table.archs):
            row: Row = {
                "ground": ground,
                "supernet_seed": seed,
                "index": table.indices[i],
                "arch": arch.to_json(),
                "supernet_accuracy": None if acc is None else acc[i],
                "supernet_loss": None if loss is None else loss[i],
                "params": table.params[i],
                "flops": free.flops[i],
                "width": arch.get(width_label) if width_label else None,
                "width_label": width_label,
                "predicted_cost": free.predicted_cost[i],
            }
            for p, values in free.proxies.get(seed, {}).items():
                row[p] = values[i] if math.isfinite(values[i]) else None
            for k, (v, t) in enumerate(zip(table.val, table.test, strict=True)):
                row[f"val_seed{k}"], row[f"test_seed{k}"] = v[i], t[i]
            row["val_mean"], row["test_mean"] = table.val_mean[i], table.test_mean[i]
            row["supernet_config"] = json.dumps(recipe[seed]) if seed in recipe else None
            rows.append(row)
    return rows


def write_rows(path: Path, rows: Sequence[Row]) -> None:
    """JSON lines (``.jsonl``) or CSV (anything else), every row's keys as columns."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".jsonl":
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
        return
    fields = list(dict.fromkeys(k for r in rows for k in r))
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fields)
        writer.writeheader()
        writer.writerows({k: ("" if v is None else v) for k, v in r.items()} for r in rows)


def read_rows(path: Path) -> list[Row]:
    """Rows written by ``write_rows`` (CSV cells parsed back: numbers, empty = ``None``)."""
    if path.suffix == ".jsonl":
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    with path.open(newline="") as f:
        return [{k: _cell(k, v) for k, v in r.items()} for r in csv.DictReader(f)]


def _cell(key: str, value: str) -> Any:
    if value == "":
        return None
    if key in ("ground", "arch", "supernet_config", "width_label"):
        return value
    try:
        return int(value) if key in ("supernet_seed", "index") else float(value)
    except ValueError:
        return value  # a categorical width


def rows_from_old_json(path: Path, bn_batches: int) -> tuple[dict[int, tuple[list, list]], str]:
    """Supernet scores of a ``--json`` written by the earlier B2 (fair against uniform):
    seed -> (accuracies, cross-entropies), positional over the merged tables of then (the
    first architectures by index); the fair sampler's where present, at ``bn_batches``
    where scored, else at the first BN size. Returns them and a line saying which."""
    old = json.loads(path.read_text())
    sampler = (
        "fair" if old["results"].get("fair") else next(k for k, v in old["results"].items() if v)
    )
    out = {}
    for r in old["results"][sampler]:
        sizes = sorted(int(n) for n in r["scores"])
        n = bn_batches if bn_batches in sizes else sizes[0]
        acc = r["scores"][str(n)] if str(n) in r["scores"] else r["scores"][n]
        neg = (r.get("loss_scores") or {}).get(str(n))
        loss = [-v for v in neg] if neg is not None else [None] * len(acc)
        out[int(r["seed"])] = (acc, loss)
    return (
        out,
        f"{path}: the {sampler} supernets' scores at {n} BN batches, {len(acc)} architectures",
    )
