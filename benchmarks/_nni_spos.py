"""B1 method (d): NNI 3.0's ``RandomOneShot`` (SPOS) then ``RegularizedEvolution``.

The proving grounds' residual spaces (``MNIST1DSpace`` in 1-D, ``CIFARCNNSpace`` in 2-D)
written as an NNI model space: every searchable layer a ``LayerChoice`` over the ops (keyed
by op name), the width multiplier a ``LayerChoice`` over one copy of the network per width,
whose layer choices share their labels (NNI's one-shot supernet has no elastic
convolutions, so weights are shared between architectures of the same width only; nasflow
shares them across widths). The rest follows NNI's documented SPOS workflow: pre-train the
supernet with ``RandomOneShot`` through the ``Classification`` evaluator, then search it
with ``RegularizedEvolution`` in a second experiment whose evaluator recalibrates BN on
training batches and scores the validation split, then retrain the best-scored
architectures from scratch with the same recipe as every other method.

Needs NNI 3.0 and PyTorch Lightning (``pip install -e ".[nni]"``).
"""

from __future__ import annotations

import tempfile
from typing import Any

import torch
from torch import nn

from nasflow.search_spaces.cifar_cnn import CIFARCNNSpace
from nasflow.search_spaces.mnist1d import MNIST1DSpace

# Per dimensionality: (conv, batch norm, max-pool, global average pool).
_LAYERS: dict[int, tuple[type[nn.Module], ...]] = {
    1: (nn.Conv1d, nn.BatchNorm1d, nn.MaxPool1d, nn.AdaptiveAvgPool1d),
    2: (nn.Conv2d, nn.BatchNorm2d, nn.MaxPool2d, nn.AdaptiveAvgPool2d),
}


def _conv_bn(cin: int, cout: int, k: int, relu: bool, dims: int) -> list[nn.Module]:
    conv, bn = _LAYERS[dims][:2]
    layers: list[nn.Module] = [conv(cin, cout, k, padding=k // 2, bias=False), bn(cout)]
    return [*layers, nn.ReLU()] if relu else layers


class _Residual(nn.Module):
    def __init__(self, ch: int, kernel: int, expand: int, dims: int) -> None:
        super().__init__()
        inner = ch * expand
        self.body = nn.Sequential(
            *_conv_bn(ch, inner, kernel, True, dims), *_conv_bn(inner, ch, 1, False, dims)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x + self.body(x))


def _op(name: str, ch: int, dims: int) -> nn.Module:
    if name == "skip":
        return nn.Identity()
    k, e = name.split("_")
    return _Residual(ch, int(k[1:]), int(e[1:]), dims)


def model_space(space: MNIST1DSpace | CIFARCNNSpace) -> Any:
    """The NNI ``ModelSpace`` of ``space`` (same ops, widths and layout)."""
    from nni.nas.nn.pytorch import LayerChoice, ModelSpace

    if isinstance(space, CIFARCNNSpace):  # RGB images: stem k3
        dims, cin, stem = 2, 3, 3
    else:  # MNIST-1D sequences: one channel, stem k5
        dims, cin, stem = 1, 1, 5
    _, _, pool, gap = _LAYERS[dims]

    def body(width: float) -> nn.Module:
        c1 = round(space.base_channels * width)
        c2 = 2 * c1
        layers: list[nn.Module] = _conv_bn(cin, c1, stem, True, dims)
        for s, ch in ((1, c1), (2, c2)):
            if s == 2:
                layers.append(pool(2))  # (B, C, *S) -> (B, C, *S/2)
                layers.extend(_conv_bn(c1, c2, 3, True, dims))
            for i in range(space.layers_per_stage):
                label = f"s{s}_l{i}"  # NNI labels take no "/": mapped back by _to_arch
                layers.append(
                    LayerChoice({op: _op(op, ch, dims) for op in space.ops}, label=label)
                )
        layers += [
            gap(1),  # (B, C, *S) -> (B, C, *1)
            nn.Flatten(),  # (B, C, *1) -> (B, C)
            nn.Linear(c2, space.num_classes),
        ]
        return nn.Sequential(*layers)

    class Space(ModelSpace):
        def __init__(self) -> None:
            super().__init__()
            # Module names take no ".": width 0.75 is the candidate "w075".
            self.net = LayerChoice({_key(w): body(w) for w in space.widths}, label="width")

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.net(x)

    return Space()


def search(
    spec: Any,
    data: Any,
    seed: int,
    supernet_epochs: int,
    trials: int,
    top_k: int,
) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """SPOS pre-training + regularized evolution; the ``top_k`` best archs, best first."""
    import nni
    from nni.nas.evaluator import FunctionalEvaluator
    from nni.nas.evaluator.pytorch import Classification, DataLoader
    from nni.nas.experiment import NasExperiment
    from nni.nas.strategy import RandomOneShot, RegularizedEvolution

    from nasflow.supernet import recalibrate_bn
    from nasflow.train import evaluate

    torch.manual_seed(seed)
    train_ds, val_ds = data.train, data.val
    recipe = spec.supernet
    space = model_space(spec.space)
    with tempfile.TemporaryDirectory() as tmp:
        evaluator = Classification(
            criterion=nn.CrossEntropyLoss,
            learning_rate=recipe.lr,
            weight_decay=recipe.weight_decay,
            optimizer=torch.optim.AdamW,
            train_dataloaders=DataLoader(train_ds, batch_size=recipe.batch_size, shuffle=True),
            val_dataloaders=DataLoader(val_ds, batch_size=512),
            max_epochs=supernet_epochs,
            num_classes=spec.space.num_classes,
            export_onnx=False,
            accelerator="cpu",
            enable_progress_bar=False,
            enable_model_summary=False,
            logger=False,
            enable_checkpointing=False,
            default_root_dir=tmp,
        )
        exp = NasExperiment(space, evaluator, RandomOneShot())
        exp.config.experiment_working_directory = tmp
        exp.run()

        bn = data.batches("train", spec.train.batch_size, seed)
        val = data.batches("val")

        def score(model: nn.Module) -> None:
            recalibrate_bn(model, bn.epoch(0), spec.bn_batches)
            nni.report_final_result(evaluate(model, val)[0])

        strategy = RegularizedEvolution(population_size=20, sample_size=5, seed=seed)
        exp2 = NasExperiment(space, FunctionalEvaluator(score), strategy)
        exp2.config.experiment_working_directory = tmp
        exp2.config.max_trial_number = trials
        exp2.run()
        top = exp2.export_top_models(top_k=top_k, formatter="dict")
    counts = {"supernet_epochs": supernet_epochs, "trials": trials}
    return [_to_arch(sample, spec.space.widths) for sample in top], counts


def _key(width: float) -> str:
    return "w" + f"{width:.2f}".replace(".", "")


def _to_arch(sample: dict[str, Any], widths: tuple[float, ...]) -> dict[str, Any]:
    """NNI's sample (``s1_l0``: op name; ``width``: ``w075``) -> a nasflow arch."""
    by_key = {_key(w): w for w in widths}
    return {k.replace("_", "/"): (by_key[v] if k == "width" else v) for k, v in sample.items()}
