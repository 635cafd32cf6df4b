"""MkDocs hooks of nasflow's documentation (``mkdocs.yml``: ``hooks``).

- The benchmark results (``benchmarks/RESULTS.md`` and ``benchmarks/results/*.md``) are
  published under ``results/`` without being copied into ``docs/``.
- A relative link is written as it resolves in the repository (``../../benchmarks/results/
  b7-largest.md`` from ``docs/guide/``), so it also works when the Markdown is read on its
  own; the hook points it at the page's place in the site.
- ``<!-- nasflow-cli-reference -->`` becomes the ``--help`` of every ``nasflow`` command,
  taken from the parser itself, so the reference cannot fall behind the CLI.
"""

from __future__ import annotations

import argparse
import os
import posixpath
import re
from pathlib import Path
from typing import Any

CLI_MARKER = "<!-- nasflow-cli-reference -->"
#: Columns argparse wraps the help to (it reads ``COLUMNS``).
HELP_COLUMNS = 92
#: Where the published results live in the site.
RESULTS_DIR = "results"

_LINK = re.compile(r"(\]\()([^)\s#]+\.md)(#[^)\s]*)?(\))")


def _repo(config: Any) -> Path:
    return Path(config["config_file_path"]).resolve().parent


def on_files(files: Any, config: Any) -> Any:
    """Add the benchmark results to the site: ``RESULTS.md`` as ``results/index.md``."""
    from mkdocs.structure.files import File

    benchmarks = _repo(config) / "benchmarks"
    pages = {f"{RESULTS_DIR}/index.md": benchmarks / "RESULTS.md"}
    for path in sorted((benchmarks / "results").glob("*.md")):
        pages[f"{RESULTS_DIR}/{path.name}"] = path
    for uri, path in pages.items():
        files.append(File.generated(config, uri, abs_src_path=str(path)))
    return files


def _site_paths(files: Any) -> dict[str, str]:
    """Real source path -> the page's path in the site, for every Markdown page."""
    return {
        os.path.normpath(f.abs_src_path): f.src_uri
        for f in files.documentation_pages()
        if f.abs_src_path
    }


def rewrite_links(markdown: str, source: str, uri: str, site: dict[str, str]) -> str:
    """Point every relative ``.md`` link that resolves (from the page's real ``source``
    file) to a published page at that page's place in the site, relative to ``uri``.

    Links to anything else are left as written, for MkDocs to check.
    """

    def repl(m: re.Match[str]) -> str:
        target = m.group(2)
        if "://" in target or target.startswith("/"):
            return m.group(0)
        real = os.path.normpath(os.path.join(os.path.dirname(source), target))
        if real not in site:
            return m.group(0)
        new = posixpath.relpath(site[real], posixpath.dirname(uri) or ".")
        return f"{m.group(1)}{new}{m.group(3) or ''}{m.group(4)}"

    return _LINK.sub(repl, markdown)


def cli_reference() -> str:
    """Markdown: the ``--help`` of ``nasflow`` and of each of its commands."""
    from nasflow.cli import build_parser

    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = str(HELP_COLUMNS)
    try:
        parser = build_parser()
        sections = [("nasflow", parser.format_help())]
        (sub,) = (a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        seen: set[int] = set()
        for name, command in sub.choices.items():
            if id(command) in seen:  # an alias of a command already shown
                continue
            seen.add(id(command))
            sections.append((f"nasflow {name}", command.format_help()))
    finally:
        if old is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = old
    return "\n".join(
        f"## `{title}`\n\n```text\n{text.rstrip()}\n```\n" for title, text in sections
    )


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    if CLI_MARKER in markdown:
        markdown = markdown.replace(CLI_MARKER, cli_reference())
    return rewrite_links(markdown, page.file.abs_src_path, page.file.src_uri, _site_paths(files))
