"""Helpers for database URLs shared by the storage and cost-table code."""

from __future__ import annotations

import re


def redact(url: str) -> str:
    """``url`` with any password replaced by ``***`` (safe for logs and errors)."""
    return re.sub(r"(://[^:/@]*:)[^@]*@", r"\1***@", url)
