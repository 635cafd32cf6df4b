"""Where things may live: every ``nasflow:*`` key in ``nasflow.record._keys``, no private
``nasflow.search`` module imported from outside ``nasflow/search/``; and how large they may
grow: no module of ``nasflow/`` over 600 lines, no function over 100."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RECORD = ROOT / "nasflow" / "record" / "_keys.py"

#: A key: ``nasflow:`` followed by a key name, or ending the literal (a bare prefix).
#: Prose ("nasflow: error: ...") has a space after the colon.
_KEY = re.compile(r"(?<![\w.-])nasflow:(?=[A-Za-z_{]|$)")


def _sources(*folders: str) -> list[Path]:
    return sorted(p for f in folders for p in (ROOT / f).rglob("*.py"))


def _docstrings(tree: ast.Module) -> set[int]:
    """``id`` of every docstring node (module, class, function)."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                found.add(id(body[0].value))
    return found


def key_literals(source: str) -> list[str]:
    """The string literals of ``source`` (docstrings aside) that hold a ``nasflow:`` key."""
    tree = ast.parse(source)
    docs = _docstrings(tree)
    hits = []
    for node in ast.walk(tree):
        text = node.value if isinstance(node, ast.Constant) else None
        if isinstance(text, str) and id(node) not in docs and _KEY.search(text):
            hits.append(text)
    return hits


def test_the_key_check_finds_keys_and_ignores_prose() -> None:
    found = key_literals(
        '"""nasflow: a docstring naming ``"nasflow:space"``."""\n'
        'A = "nasflow:space"\n'
        'B = f"nasflow:retrain:{n}"\n'
        'C = "nasflow:"\n'
        "D = f\"space: {attrs.get('nasflow:fingerprint', '?')}\"\n"
        'E = ("No record (study user attribute "\n     "nasflow:stack). Prose around.")\n'
        'print(f"nasflow: error: {e}")\n'
    )
    assert sorted(found) == [
        "No record (study user attribute nasflow:stack). Prose around.",
        "nasflow:",
        "nasflow:fingerprint",
        "nasflow:retrain:",
        "nasflow:space",
    ]


def test_every_nasflow_key_is_defined_in_the_record_module() -> None:
    assert key_literals(RECORD.read_text(encoding="utf-8"))  # the check sees them there
    outside = {
        str(path.relative_to(ROOT)): hits
        for path in _sources("nasflow", "benchmarks")
        if path != RECORD and (hits := key_literals(path.read_text(encoding="utf-8")))
    }
    assert not outside, f"nasflow:* keys outside nasflow/record/_keys.py: {outside}"


@pytest.mark.parametrize("package", ["search", "pipeline"])
def test_no_private_module_of_search_or_pipeline_is_imported_from_outside(package: str) -> None:
    inside, tests_inside = ROOT / "nasflow" / package, ROOT / "tests" / package
    private = re.compile(rf"\bnasflow\.{package}\._\w+")
    outside = {}
    for path in _sources("nasflow", "benchmarks", "tests"):
        if inside in path.parents or tests_inside in path.parents or path == Path(__file__):
            continue
        text = path.read_text(encoding="utf-8")
        hits = private.findall(text)
        tree = ast.parse(text)
        for node in ast.walk(tree):  # from nasflow.pipeline import _runner
            if isinstance(node, ast.ImportFrom) and node.module == f"nasflow.{package}":
                hits += [f"nasflow.{package}.{a.name}" for a in node.names if a.name[0] == "_"]
            if isinstance(node, ast.ImportFrom) and node.module == f"tests.{package}":
                hits += [f"tests.{package}.{a.name}" for a in node.names if a.name[0] == "_"]
        hits += re.findall(rf"\btests\.{package}\._\w+", text)
        if hits:
            outside[str(path.relative_to(ROOT))] = sorted(set(hits))
    assert not outside, f"private nasflow.{package} modules imported outside it: {outside}"


def test_what_a_study_is_never_imports_how_it_runs() -> None:
    """``nasflow.search`` (spec, budgets, phase settings, samplers, pruners) knows nothing
    of ``nasflow.pipeline`` (the runner, its phases, the kept model, the summary)."""
    found = {
        str(path.relative_to(ROOT)): line.strip()
        for path in _sources("nasflow/search")
        for line in path.read_text(encoding="utf-8").splitlines()
        if re.match(r"\s*(from|import) nasflow\.pipeline\b", line)
    }
    assert not found, f"nasflow.search imports nasflow.pipeline: {found}"


def _is_user_attrs(node: ast.AST) -> bool:
    """``x.user_attrs`` (a trial's or a study's user attributes)."""
    return isinstance(node, ast.Attribute) and node.attr == "user_attrs"


def trial_attr_literals(source: str, keys: tuple[str, ...]) -> list[str]:
    """Bare literals of the trial user attributes ``keys`` used as attribute keys in
    ``source``: ``set_user_attr("k", ...)``, ``x.user_attrs["k"]``,
    ``x.user_attrs.get("k")`` and ``"k" in x.user_attrs``. (The same words name other
    things, an objective ``"train_cost"`` or an optimizer group's ``"params"``: only their
    use as a trial attribute key counts.)"""
    hits = []

    def key(node: ast.AST) -> str | None:
        return node.value if isinstance(node, ast.Constant) and node.value in keys else None

    for node in ast.walk(ast.parse(source)):
        found = None
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.args:
            attr = node.func.attr
            if attr == "set_user_attr" or (
                attr in ("get", "pop") and _is_user_attrs(node.func.value)
            ):
                found = key(node.args[0])
        elif isinstance(node, ast.Subscript) and _is_user_attrs(node.value):
            found = key(node.slice)
        elif isinstance(node, ast.Compare) and any(_is_user_attrs(c) for c in node.comparators):
            found = key(node.left)
        if found is not None:
            hits.append(found)
    return hits


def test_the_trial_attribute_check_finds_uses_as_keys_only() -> None:
    found = trial_attr_literals(
        't.set_user_attr("arch", a)\n'
        'x = t.user_attrs["train_cost"]\n'
        'y = t.user_attrs.get("params", 0)\n'
        'z = "skipped" in t.user_attrs\n'
        'p = [q for g in opt.param_groups for q in g["params"]]\n'
        'objectives = ("accuracy", "train_cost")\n',
        ("arch", "train_cost", "params", "skipped"),
    )
    assert sorted(found) == ["arch", "params", "skipped", "train_cost"]


def test_trial_attributes_are_read_and_written_through_the_record_module() -> None:
    from nasflow.record import TRIAL_ATTRS

    outside = {
        str(path.relative_to(ROOT)): hits
        for path in _sources("nasflow")
        if path != RECORD
        and (hits := trial_attr_literals(path.read_text(encoding="utf-8"), TRIAL_ATTRS))
    }
    assert not outside, (
        f"trial attribute keys as bare literals outside nasflow/record/_keys.py (use its "
        f"*_ATTR constants or TrialRecord): {outside}"
    )


#: Most lines a module of ``nasflow/`` may have, and a function (its ``def`` line to its
#: last line, docstring included).
MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 100
#: Functions allowed over the limit for now, each until it is split into named steps
#: (remove its entry then; nothing is added to this list):
OVERSIZED_FUNCTIONS: set[str] = set()


def oversized(root: Path, package: str = "nasflow") -> tuple[dict[str, int], dict[str, int]]:
    """Modules of ``root / package`` over ``MAX_MODULE_LINES`` lines and functions (methods
    and nested functions included, named ``path::name``) over ``MAX_FUNCTION_LINES``."""
    modules, functions = {}, {}
    for path in sorted((root / package).rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        text = path.read_text(encoding="utf-8")
        if (n := len(text.splitlines())) > MAX_MODULE_LINES:
            modules[rel] = n
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                size = (node.end_lineno or node.lineno) - node.lineno + 1
                if size > MAX_FUNCTION_LINES:
                    functions[f"{rel}::{node.name}"] = size
    return modules, functions


def test_the_size_check_finds_a_long_module_and_a_long_function(tmp_path) -> None:
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_FUNCTION_LINES))
    short = "def fits():\n" + "\n".join(f"    y{i} = {i}" for i in range(99)) + "\n"
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "long.py").write_text(
        "class A:\n    def method(self):\n" + body.replace("    ", "        ") + "\n"
    )
    (tmp_path / "pkg" / "big.py").write_text(short + "z = 0\n" * (MAX_MODULE_LINES - 99))
    modules, functions = oversized(tmp_path, "pkg")
    assert modules == {"pkg/big.py": MAX_MODULE_LINES + 1}
    assert functions == {"pkg/long.py::method": MAX_FUNCTION_LINES + 1}


def test_no_module_over_600_lines_and_no_function_over_100() -> None:
    modules, functions = oversized(ROOT)
    assert not modules, f"modules over {MAX_MODULE_LINES} lines: {modules}"
    over = {k: v for k, v in functions.items() if k not in OVERSIZED_FUNCTIONS}
    assert not over, f"functions over {MAX_FUNCTION_LINES} lines (split them): {over}"
    gone = OVERSIZED_FUNCTIONS - set(functions)
    assert not gone, f"split now, remove them from OVERSIZED_FUNCTIONS: {sorted(gone)}"


# ---------------------------------------------------------------------- study records
#: What the record checks scan: nasflow's modules and the benchmarks, less the record
#: package (the one place that reads and writes a study's attributes).
RECORD_PACKAGE = ROOT / "nasflow" / "record"


def user_attrs_reads(source: str) -> list[str]:
    """Each read of user attributes by key in ``source``: ``x.user_attrs.get(...)`` and
    ``x.user_attrs[...]`` (loads, not stores), as source text. Membership tests (``k in
    x.user_attrs``), iteration and writes (``set_user_attr``) are not reads of a key."""
    hits = []
    for node in ast.walk(ast.parse(source)):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "get"
            and _is_user_attrs(node.func.value)
        ) or (
            isinstance(node, ast.Subscript)
            and isinstance(node.ctx, ast.Load)
            and _is_user_attrs(node.value)
        ):
            hits.append(ast.unparse(node))
    return hits


def test_the_user_attrs_check_finds_reads_and_ignores_writes_and_membership() -> None:
    found = user_attrs_reads(
        'a = study.user_attrs.get("nasflow:stack")\n'
        "b = t.user_attrs[ARCH_ATTR]\n"
        'c = "arch" in t.user_attrs\n'
        "t.set_user_attr(ARCH_ATTR, a)\n"
        "d = {k: v for k, v in t.user_attrs.items()}\n"
        "e = config.get('user_attrs')\n"
    )
    assert found == ["study.user_attrs.get('nasflow:stack')", "t.user_attrs[ARCH_ATTR]"]


#: Modules that still read user attributes by key, each until it reads them through
#: ``nasflow.record`` (remove its entry then; nothing is added to this list):
READS_ATTRIBUTES: set[str] = set()


def test_no_user_attributes_are_read_outside_the_record_package() -> None:
    """Study records and trial attributes are read through ``nasflow.record``'s readers
    (``study_stack(study)``, ``TrialRecord.from_trial(t)``...), which check them once."""
    found = {
        path.relative_to(ROOT).as_posix(): hits
        for path in _sources("nasflow", "benchmarks")
        if RECORD_PACKAGE not in path.parents
        and (hits := user_attrs_reads(path.read_text(encoding="utf-8")))
    }
    outside = {k: v for k, v in found.items() if k not in READS_ATTRIBUTES}
    assert not outside, f"user attributes read outside nasflow/record/: {outside}"
    gone = READS_ATTRIBUTES - set(found)
    assert not gone, f"they read through nasflow.record now: remove {sorted(gone)}"


def study_record_keys() -> set[str]:
    """The keys of the study records (``nasflow:stack``, ``nasflow:finetuned``... and what
    they hold): the field names of their typed records, nested ones included, and the
    parts of the multipliers' record. A field that only holds the record as stored
    (``stored``, ``extra``, ``fields``) names no key, nor does a multiplier part's ``key``
    (its place in the record); a stack layer's ``name`` names a space, a study and a
    data set in as many other formats, and is left out."""
    import dataclasses

    from nasflow import record

    top = (
        record.StackRecord, record.CostTableRecord, record.MultipliersRecord,
        record.FineTuneResult, record.AnchorsRecord, record.SupernetRecord,
        record.ScreeningRecord, record.TrustRecord, record.RetrainRecord, record.KeptRecord,
        record.ReproducibilityRecord, record.BaselineRecord,
    )  # fmt: skip
    nested = (
        record.StackLayer, record.StackDecision, record.StackOrigin, record.StackCalibration,
        record.CostCalibration, record.CalibrationStep, record.MultiplierPart,
        record.FineTuned, record.EarlyStopping, record.AnchorEntry,
    )  # fmt: skip
    keys = {f.name for cls in top + nested for f in dataclasses.fields(cls)}
    return (keys | set(record.MULTIPLIER_PARTS)) - {"stored", "extra", "fields", "key", "name"}


#: Study-record keys that also name the fields of other things, by the module that reads
#: those (each entry says what): the check lets the module read that word. An entry no
#: longer needed fails the test.
OTHER_FORMATS = {
    # A saved model's record.json (its identity) and a supernet checkpoint's state.
    "nasflow/export/_study.py": {"arch", "device", "split", "stack"},
    "nasflow/export/_ready.py": {"device", "stack"},
    "nasflow/train/_supernet.py": {"seconds", "split"},
    # An export's arch.json: its "weights" and "study" blocks.
    "nasflow/export/_format.py": {"arch", "epochs", "kind", "source", "status"},
    "nasflow/export/_readme.py": {"batch_size", "epochs", "params", "source", "trial"},
    "nasflow/export/_retrain.py": {"stack"},
    "nasflow/pipeline/_arch/_winners.py": {"weights"},
    # A fine-tuning checkpoint's state, and the cost model's fitted points.
    "nasflow/pipeline/_arch/_ready.py": {"arch"},
    "nasflow/pipeline/_arch/_scoring.py": {"arch"},
    "nasflow/pipeline/_cost.py": {"arch"},
    # ``nasflow show``'s own rows.
    "nasflow/cli/_report.py": {"test_accuracy"},
}
#: The measuring packages make the stack's and the cost table's records from measurement
#: rows of the same keys; the study reads its copy through the typed records.
PRODUCERS = ("nasflow/calibrate", "nasflow/cost")


def record_key_gets(source: str, keys: set[str]) -> list[str]:
    """The keys of ``keys`` that ``source`` reads with ``.get("key")`` (any receiver)."""
    return [
        node.args[0].value
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "get"
        and node.args
        and isinstance(node.args[0], ast.Constant)
        and node.args[0].value in keys
    ]


def test_the_record_key_check_finds_gets_of_record_keys() -> None:
    keys = study_record_keys()
    assert {"val_samples", "chosen_multiplier", "median_score_ms", "origin", "kind"} <= keys
    found = record_key_gets(
        'n = finetuned.get("val_samples")\n'
        'm = (record.get("calibration") or {}).get("min_gain")\n'
        'x = config.get("input_shape")\n'
        "y = record.get(KEY)\n",
        keys,
    )
    assert sorted(found) == ["calibration", "min_gain", "val_samples"]


def test_study_records_are_read_through_their_types() -> None:
    """No ``.get("<key>")`` of a study record's key outside ``nasflow/record/`` (and the
    packages that make the stack's and the cost table's records): a record is read once,
    by its type, and its fields are attributes."""
    keys = study_record_keys()
    outside, used = {}, {}
    for path in _sources("nasflow"):
        rel = path.relative_to(ROOT).as_posix()
        if RECORD_PACKAGE in path.parents or rel.startswith(PRODUCERS):
            continue
        hits = set(record_key_gets(path.read_text(encoding="utf-8"), keys))
        allowed = OTHER_FORMATS.get(rel, set())
        used[rel] = hits & allowed
        if hits - allowed:
            outside[rel] = sorted(hits - allowed)
    assert not outside, f"study-record keys read with .get() outside nasflow/record/: {outside}"
    stale = {k: sorted(v - used.get(k, set())) for k, v in OTHER_FORMATS.items()}
    stale = {k: v for k, v in stale.items() if v}
    assert not stale, f"OTHER_FORMATS entries no longer needed (remove them): {stale}"
