"""``nasflow show``, ``nasflow report`` and ``nasflow dashboard``: what a stored study found."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nasflow.cli._common import UsageError, add_named_storage, add_storage

if TYPE_CHECKING:
    import optuna


def add_parsers(sub: argparse._SubParsersAction) -> None:
    """The ``show``, ``report`` and ``dashboard`` commands."""
    p = sub.add_parser(
        "show", help="print the screening's Pareto set (or the trained models), with a header row"
    )
    p.add_argument("name", help="study name")
    add_named_storage(p)
    p.add_argument(
        "--trained",
        action="store_true",
        help="the models the run trained (anchors, fine-tuned, retrained) at their measured "
        "numbers, the kept one marked, instead of the screening's Pareto set",
    )
    p.add_argument("--json", action="store_true", help="print the rows as a JSON list")

    p = sub.add_parser("report", help="write a study's offline HTML report")
    p.add_argument("name", help="study name")
    add_storage(p)
    p.add_argument("--out-file", help="the HTML file (default: RUNS/NAME/report.html)")

    p = sub.add_parser("dashboard", help="push the report's figures and serve optuna-dashboard")
    p.add_argument("name", help="study name")
    add_storage(p)
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default: 127.0.0.1)")
    p.add_argument("--port", type=int, default=8080, help="port (default 8080; 0: a free one)")


def _scored_with(supernet_accuracy: float | None, epochs: object) -> str:
    """How the search scored a trial: a table, fine-tuned weights or the supernet's."""
    if supernet_accuracy is None:
        return "table look-up"
    if isinstance(epochs, int) and epochs > 0:
        return f"fine-tuned {epochs} ep"
    return "supernet, BN-recal."


def show_rows(study: optuna.Study, run_dir: Path) -> list[dict[str, Any]]:
    """The Pareto trials of a study as ``nasflow show`` rows, best accuracy first.

    ``run_dir`` (``RUNS/NAME``) is where phase 3 saved the retrained winners' weights.
    """
    import json

    from nasflow.pipeline import pareto_trials
    from nasflow.record import RunFolder, TrialRecord, study_objectives, study_retrains

    retrains = study_retrains(study)
    names = study_objectives(study)
    rows = []
    for t in pareto_trials(study):
        trial = TrialRecord.from_trial(t)
        retrain = retrains.get(t.number)
        saved = RunFolder(run_dir).winner(t.number)
        rows.append(
            {
                "trial": t.number,
                "objectives": {
                    (names[i] if i < len(names) else f"objective_{i}"): v
                    for i, v in enumerate(t.values)
                },
                "scored_with": _scored_with(trial.supernet_accuracy, trial.epochs_trained),
                "supernet_val_accuracy": trial.supernet_accuracy,
                "retrained": (
                    {
                        "test_accuracy": retrain.test_accuracy,
                        "val_accuracy": retrain.val_accuracy,
                        "measured_train_cost": retrain.measured_train_cost,
                        "weights": str(saved) if saved.is_dir() else None,
                    }
                    if retrain is not None
                    else None
                ),
                "arch": json.loads(trial.arch or "{}"),
            }
        )
    return rows


def trained_rows(study: optuna.Study) -> list[dict[str, Any]]:
    """Every model the study trained as ``nasflow show --trained`` rows: the kept one
    first, then by test accuracy (those without one last), each at its own measured
    numbers (:func:`nasflow.report.trained_front`)."""
    from nasflow.report import trained_front

    front = trained_front(study)
    models = sorted(
        [*front.models, *front.untested],
        key=lambda m: (not m.kept, -(m.test_accuracy if m.test_accuracy is not None else -1.0)),
    )
    return [
        {
            "trial": m.number,
            "kept": m.kept,
            "kind": m.kind,
            "weights": m.weights,
            "epochs": m.epochs,
            "val_accuracy": m.val_accuracy,
            "test_accuracy": m.test_accuracy,
            "measured_train_seconds": m.seconds,
            "predicted_train_cost": m.predicted,
            "params": m.params,
            "on_trained_front": m.on_front,
            "arch": m.arch,
        }
        for m in models
    ]


def _print_trained(rows: list[dict[str, Any]], supernet_seconds: float | None) -> None:
    """The trained models as tab-separated rows under a header; what the numbers are goes
    to stderr, so stdout stays a table (``supernet_seconds``: the supernet phase's measured
    seconds, which no fine-tuned model's figure holds)."""
    import sys

    def cell(v: Any, spec: str) -> str:
        return "-" if v is None else format(v, spec)

    print(
        "\t".join(
            ["trial", "kept", "weights", "validation accuracy", "test accuracy",
             "measured training (s)", "predicted training cost (s)", "parameters",
             "on the trained front", "arch"]
        )
    )  # fmt: skip
    for r in rows:
        print(
            "\t".join(
                [str(r["trial"]), "kept" if r["kept"] else "", r["weights"],
                 cell(r["val_accuracy"], ".4f"), cell(r["test_accuracy"], ".4f"),
                 cell(r["measured_train_seconds"], ".2f"), cell(r["predicted_train_cost"], ".4g"),
                 cell(r["params"], ","), "yes" if r["on_trained_front"] else "", r["arch"]]
            )
        )  # fmt: skip
    supernet = "" if supernet_seconds is None else f", {supernet_seconds:.1f} s measured"
    print(
        "(validation chose, test reports; measured: wall time of the training steps, a "
        f"fine-tuned model's without the supernet its weights come from{supernet}; the "
        "trained front: no other model trained from scratch tests higher and trains faster)",
        file=sys.stderr,
    )


def _location(args: argparse.Namespace, stored: Any) -> list[str]:
    """The arguments that find the study again as given (the storage, password hidden;
    the runs folder where it is not the default), for the commands a command prints."""
    return (["--storage", stored.spec.safe_url] if args.storage else []) + (
        ["--runs", args.runs] if Path(args.runs) != Path("runs") else []
    )


def run_show(args: argparse.Namespace) -> int:
    """``nasflow show``: the screening's Pareto set (``--trained``: the trained models) as
    tab-separated rows (or JSON)."""
    import json
    import sys

    from nasflow.record import RunFolder, open_stored_study

    stored = open_stored_study(args.name, args.storage, args.runs)
    study = stored.study
    if args.trained:
        trained = trained_rows(study)
        if args.json:
            print(json.dumps(trained, indent=2))
        elif trained:
            from nasflow.record import study_seconds

            _print_trained(trained, study_seconds(study).get("supernet"))
        else:
            print(f"study {args.name!r} has trained no model yet")
        return 0
    rows = show_rows(study, RunFolder.of(args.runs, args.name).root)
    if not rows and not args.json:
        from collections import Counter

        counts = Counter(t.state.name.lower() for t in study.get_trials(deepcopy=False))
        held = ", ".join(f"{n} {state}" for state, n in sorted(counts.items())) or "no trials"
        print(f"study {args.name!r} has no completed trial yet ({held})")
        return 0
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    from nasflow import names
    from nasflow.record import study_metric_names

    header = [
        "trial",
        *study_metric_names(study),
        "scored with",
        names.RETRAINED_TEST_ACCURACY,
        "arch",
    ]
    print("\t".join(header))
    for row in rows:
        retrained = row["retrained"]
        test = retrained.get("test_accuracy") if isinstance(retrained, dict) else None
        arch = ", ".join(f"{k}={v}" for k, v in row["arch"].items())
        print(
            "\t".join(
                [
                    str(row["trial"]),
                    *(f"{v:.4g}" for v in row["objectives"].values()),
                    str(row["scored_with"]),
                    f"{test:.4f}" if isinstance(test, float) else "-",
                    arch,
                ]
            )
        )
    import shlex

    command = shlex.join(["nasflow", "show", args.name, *_location(args, stored), "--trained"])
    print(
        "(the screening's Pareto set: supernet scores on the validation split against "
        f"predicted costs; the models the run trained, the kept one marked: `{command}`)",
        file=sys.stderr,
    )
    return 0


def run_report(args: argparse.Namespace) -> int:
    """``nasflow report``: the study's offline HTML report."""
    from nasflow.record import RunFolder, open_stored_study
    from nasflow.report import write_report

    out = Path(args.out_file) if args.out_file else RunFolder.of(args.runs, args.name).report
    if out.is_dir():
        raise UsageError(f"--out-file {str(out)!r} is a folder; give a file name")
    try:
        stored = open_stored_study(args.name, args.storage, args.runs)
        where = _location(args, stored)
        path = write_report(stored.study, out, storage_label=stored.spec.safe_url, location=where)
    except ValueError as e:  # no such study or file, a malformed record
        raise UsageError(str(e)) from None
    print(f"report: {path}")
    return 0


def run_dashboard(args: argparse.Namespace) -> int:
    """``nasflow dashboard``: push the report's figures and serve optuna-dashboard."""
    from nasflow.report import DashboardUnavailable, serve_dashboard

    if not args.host:
        raise UsageError("--host must not be empty (default 127.0.0.1)")
    try:
        serve_dashboard(
            args.name,
            args.storage,
            args.runs,
            args.host,
            args.port,
            log=lambda line: print(line, flush=True),
        )
    except (ValueError, DashboardUnavailable) as e:  # no study, bad address, no extra
        raise UsageError(str(e)) from None
    return 0
