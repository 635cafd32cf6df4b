"""``nasflow export`` and ``nasflow retrain``: a study's models as plain folders, and an
exported architecture trained again from scratch."""

from __future__ import annotations

import argparse
from pathlib import Path

from nasflow.cli._common import UsageError, add_named_storage, one_line_errors

#: ``--weights``: the kinds ``nasflow.export.export`` takes besides its default ``"auto"``
#: (written out here so that parsing imports no torch; a test checks they agree).
WEIGHT_CHOICES = ("retrained", "fine-tuned", "supernet")


def add_parsers(sub: argparse._SubParsersAction) -> None:
    """The ``export`` and ``retrain`` commands."""
    p = one_line_errors(
        sub.add_parser("export", help="export trials of a study as plain PyTorch and ONNX")
    )
    p.add_argument("name", help="study name, or the study file (.py) that ran it")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--trial", type=int, help="export this trial number")
    g.add_argument(
        "--best",
        action="store_true",
        help="the model the study kept (the summary's 'kept model'; default), or the most "
        "accurate Pareto trial of a study that retrained nothing; with --weights fine-tuned, "
        "the ready model with the best validation accuracy",
    )
    g.add_argument("--pareto", action="store_true", help="every Pareto trial, one folder each")
    g.add_argument(
        "--ready",
        metavar="{best|TRIAL}",
        help="a ready model of the fine-tuning phase (--weights fine-tuned with --best or "
        "--trial TRIAL): its fine-tuned weights exactly as saved, not recalibrated",
    )
    p.add_argument("--out", required=True, help="export directory to create")
    p.add_argument(
        "--weights",
        choices=WEIGHT_CHOICES,
        help="retrained: the winner phase 3 retrained from scratch (an error where it did "
        "not); fine-tuned: a ready model of the fine-tuning phase, as saved; supernet: the "
        "supernet's, BN-recalibrated (default: retrained where saved, else supernet)",
    )
    add_named_storage(p)
    p.add_argument("--study", help="study file or ready study with the data for BN statistics")
    p.add_argument(
        "--no-recalibrate",
        action="store_true",
        help="supernet weights: keep the supernet's BN statistics",
    )
    p.add_argument("--no-onnx", action="store_true", help="skip model.onnx")
    p.add_argument(
        "--force",
        action="store_true",
        help="replace the complete nasflow export at --out (with --pareto: the trial-N "
        "folders this export writes; other complete trial-N exports there are kept); a file "
        "nasflow did not write, or changed since (README.md included), is refused",
    )

    p = one_line_errors(
        sub.add_parser("retrain", help="retrain an exported architecture from scratch")
    )
    p.add_argument("export_dir", help="a directory written by `nasflow export`")
    p.add_argument("--epochs", type=int, help="epochs (default: the study's training budget)")
    p.add_argument("--study", help="study file or ready study with the data and recipe")
    p.add_argument(
        "--out",
        help="export directory for the retrained weights (default: EXPORT_DIR itself, "
        "updated in place)",
    )
    p.add_argument("--force", action="store_true", help="replace an existing export at --out")
    p.add_argument(
        "--no-onnx", action="store_true", help="skip model.onnx (default: as EXPORT_DIR has)"
    )
    p.add_argument("--quiet", action="store_true", help="print no per-epoch lines")


def _ready_choice(value: str) -> str | int:
    """``--ready``'s value: ``"best"`` or a trial number."""
    if value == "best":
        return value
    if value.isdecimal() and value.isascii():
        return int(value)
    raise UsageError(f"--ready must be 'best' or a trial number, got {value!r}")


def _choice(args: argparse.Namespace) -> tuple[str | int, str]:
    """``(which, weights)`` for ``nasflow.export.export`` from the command line."""
    which: str | int = "pareto" if args.pareto else "best"
    if args.trial is not None:
        if args.trial < 0:
            raise UsageError(f"--trial must be a trial number >= 0, got {args.trial}")
        which = args.trial
    weights = args.weights or "auto"
    if args.ready is not None:
        if args.weights:
            raise UsageError(
                "--ready exports the fine-tuned weights as saved; --weights does not apply to it"
            )
        which, weights = _ready_choice(args.ready), "fine-tuned"
    if weights == "fine-tuned" and args.no_recalibrate:
        raise UsageError(
            "fine-tuned weights are exported as saved; --no-recalibrate does not apply to them"
        )
    return which, weights


def run_export(args: argparse.Namespace) -> int:
    """``nasflow export``: one call of ``nasflow.export.export``."""
    from nasflow.export import export

    which, weights = _choice(args)
    name, study_file = args.name, args.study
    if name.endswith(".py") and Path(name).is_file():  # a study file: its own space and data
        from nasflow.search import load_study_file

        name, study_file = load_study_file(name).name, study_file or name
    export(
        name,
        args.out,
        which=which,
        weights=weights,
        storage=args.storage,
        runs=args.runs,
        study_file=study_file,
        recalibrate=not args.no_recalibrate,
        onnx=not args.no_onnx,
        force=args.force,
    )
    return 0


def run_retrain(args: argparse.Namespace) -> int:
    """``nasflow retrain``: train an export's architecture again, write its export."""
    from nasflow.export import require_onnx, retrain_exported, retrain_target, write_retrained

    if args.epochs is not None and args.epochs < 1:
        raise UsageError(f"--epochs must be >= 1, got {args.epochs}")
    out = retrain_target(args.export_dir, args.out, args.force)  # checked before training
    onnx = not args.no_onnx and (Path(args.export_dir) / "model.onnx").is_file()
    if onnx:
        require_onnx()

    def on_epoch(epoch: int, loss: float) -> None:
        if not args.quiet:
            print(f"epoch {epoch}: loss {loss:.4f}", flush=True)

    done = retrain_exported(args.export_dir, args.epochs, args.study, on_epoch=on_epoch)
    res, before = done.result, done.exported.info
    print(
        f"retrained {args.export_dir} from scratch for {done.recipe.epochs} epochs "
        f"({done.data}): test accuracy {res.test_accuracy:.4f} (retrained weights, test "
        f"split), val accuracy {res.val_accuracy:.4f} (validation split), training cost "
        f"measured {res.seconds:.3g}s"
    )
    predicted = before.study.get("train_cost_predicted_s", before.metrics.get("train_cost"))
    if isinstance(predicted, int | float):
        print(f"predicted training cost during search: {predicted:.1f}s")
    write_retrained(done, out, force=args.force, onnx=onnx)
    print(f"wrote the retrained weights, arch.json and README.md to {out}")
    return 0
