"""The documentation site: every code block of the guide runs, every public package has an
API page, the CLI reference covers every command, and the site builds with warnings as
errors (``mkdocs build --strict``, as ``.ci/run`` builds it)."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from nasflow.cli import build_parser
from tests._codeblocks import ROOT, BlockError, blocks, check_convention, run_python, run_shell
from tests.conftest import require_or_skip

DOCS = ROOT / "docs"
PAGES = sorted(p for p in DOCS.rglob("*.md") if "hooks" not in p.parts)
MKDOCS_YML = ROOT / "mkdocs.yml"
#: Public modules that are not packages but have an API page of their own.
PUBLIC_MODULES = ("nasflow.errors", "nasflow.names", "nasflow.settings", "nasflow.storage")


def _ids(paths: list[Path]) -> list[str]:
    return [str(p.relative_to(DOCS)) for p in paths]


def _hooks() -> ModuleType:
    path = DOCS / "hooks" / "nasflow_docs.py"
    spec = importlib.util.spec_from_file_location("nasflow_docs_hooks", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _with(language: str) -> list[Path]:
    return [p for p in PAGES if any(b.language == language for b in blocks(p))]


def _runnable_shell() -> list[Path]:
    return [p for p in PAGES if any(b.language == "bash" and not b.not_run for b in blocks(p))]


def test_every_code_block_runs_or_says_why() -> None:
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    found = [b for p in PAGES for b in blocks(p)]
    assert len(found) > 20
    for block in found:
        check_convention(block)
        if block.language == "toml":
            tomllib.loads(block.code)


def test_the_convention_is_enforced(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    for text, why in (
        ("```\nx\n```\n", "language ''"),
        ("```sh\nls\n```\n", "language 'sh'"),
        ("<!-- not run: slow -->\n```python\npass\n```\n", "only a shell block"),
        ("<!-- not run: -->\n```bash\nls\n```\n", "without a reason"),
    ):
        page.write_text(text)
        with pytest.raises(BlockError, match=why):
            for block in blocks(page):
                check_convention(block)
    page.write_text("- a list\n  ```python\n  pass\n  ```\n")
    with pytest.raises(BlockError, match="indented"):
        blocks(page)
    page.write_text("<!-- not run: a server -->\n```bash\nnasflow dashboard x\n```\n")
    (block,) = blocks(page)
    assert block.not_run == "a server" and block.language == "bash"


def test_the_guide_shows_what_the_readme_leaves_out() -> None:
    code = "\n".join(b.code for p in PAGES for b in blocks(p) if b.language == "python")
    for call in (
        "class MySpace",
        "ParetoSuccessiveHalvingPruner(",
        "load_image_folder(",
        'weights="fine-tuned"',
        "Stack(",
    ):
        assert call in code, call


@pytest.mark.slow
@pytest.mark.parametrize("page", _with("python"), ids=_ids(_with("python")))
def test_the_python_blocks_of_a_page_run(page: Path, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)  # blocks that write (runs/, exports) write here
    namespace = run_python(page)
    assert len(namespace) > 1


@pytest.mark.slow
@pytest.mark.parametrize("page", _runnable_shell(), ids=_ids(_runnable_shell()))
def test_the_shell_blocks_of_a_page_run(page: Path, tmp_path: Path) -> None:
    for block in blocks(page):
        if block.language == "bash" and not block.not_run:
            run_shell(block, tmp_path)


def _public_packages() -> list[str]:
    """Every public package of nasflow (a folder with ``__init__.py``, no ``_`` in its
    path), and the public modules."""
    names = []
    for init in sorted((ROOT / "nasflow").rglob("__init__.py")):
        parts = init.parent.relative_to(ROOT).parts
        if not any(part.startswith("_") for part in parts):
            names.append(".".join(parts))
    return [*names, *PUBLIC_MODULES]


def test_every_public_package_has_an_api_page_in_the_navigation() -> None:
    pages = {p: p.read_text() for p in (DOCS / "api").glob("*.md")}
    nav = MKDOCS_YML.read_text()
    for name in _public_packages():
        holding = [p for p, text in pages.items() if f"\n::: {name}\n" in text]
        assert holding, f"no API page renders {name} (docs/api/*.md: '::: {name}')"
        assert f"api/{holding[0].name}" in nav, f"{holding[0].name} is not in mkdocs.yml's nav"


def test_every_guide_page_is_in_the_navigation() -> None:
    nav = MKDOCS_YML.read_text()
    for page in PAGES:
        assert str(page.relative_to(DOCS)) in nav, f"{page} is not in mkdocs.yml's nav"


def test_the_cli_reference_covers_every_command() -> None:
    reference = _hooks().cli_reference()
    parser = build_parser()
    (sub,) = (a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    for name, command in sub.choices.items():
        assert f"## `nasflow {name}`" in reference, name
        for action in command._actions:
            for option in action.option_strings:
                assert option in reference, (name, option)


def test_links_into_the_repository_point_at_the_published_pages() -> None:
    hooks = _hooks()
    results = str(ROOT / "benchmarks" / "results" / "b7-largest.md")
    index = str(ROOT / "benchmarks" / "RESULTS.md")
    site = {results: "results/b7-largest.md", index: "results/index.md"}
    page = str(DOCS / "guide" / "pipeline.md")
    text = "see [B7](../../benchmarks/results/b7-largest.md#reading) and [x](spaces.md)"
    assert hooks.rewrite_links(text, page, "guide/pipeline.md", site) == (
        "see [B7](../results/b7-largest.md#reading) and [x](spaces.md)"
    )
    # The index links its files as results/NAME.md: in the site they sit beside it.
    text = "[B7](results/b7-largest.md)"
    assert hooks.rewrite_links(text, index, "results/index.md", site) == "[B7](b7-largest.md)"


def test_every_result_file_the_repository_names_exists() -> None:
    named = set()
    for folder in ("nasflow", "studies", "search_spaces", "benchmarks", "docs", "tests"):
        for path in (ROOT / folder).rglob("*.py"):
            named |= set(re.findall(r"benchmarks/results/([\w-]+\.md)", path.read_text()))
    assert named, "nothing names a result file"
    missing = sorted(n for n in named if not (ROOT / "benchmarks" / "results" / n).is_file())
    assert not missing, f"named but missing in benchmarks/results/: {missing}"


@pytest.mark.slow
def test_the_site_builds_with_warnings_as_errors(tmp_path: Path) -> None:
    require_or_skip(
        importlib.util.find_spec("mkdocs") is not None
        and importlib.util.find_spec("mkdocstrings_handlers") is not None,
        "MkDocs is not installed (pip install -e '.[docs]')",
    )
    site = tmp_path / "site"
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output
    assert "WARNING" not in output, output
    for page in ("guide/pipeline", "api/search", "results/b7-largest", "guide/cli"):
        assert (site / page / "index.html").is_file(), page
    cli = (site / "guide" / "cli" / "index.html").read_text()
    assert "--recalibrate-stack" in cli  # generated from the parser
    pipeline = (site / "guide" / "pipeline" / "index.html").read_text()
    assert 'href="../../results/b7-largest/"' in pipeline  # a repository link, published
