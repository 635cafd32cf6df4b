"""The error of a bad study file or ``StudySpec``, and the check of a study's name."""

from __future__ import annotations

from typing import Any

from nasflow.errors import NasflowError


class StudyFileError(NasflowError, ValueError):
    """A study file is missing, does not run, or declares no valid ``study``."""


#: Largest seed (the samplers' random generators take 32-bit seeds).
MAX_SEED = 2**32 - 1


#: Longest study name, in bytes of UTF-8 (it is a folder name, which file systems limit to
#: 255 bytes, not characters; an emoji takes 4), and a word of the suggested commands.
MAX_NAME_LENGTH = 100
#: Characters a shell reads as syntax: refused in study names, which the summary's hints
#: put in commands (quoted too).
SHELL_METACHARACTERS = frozenset(";&|$`<>()'\"*?[]{}!#~\\")


def check_study_name(name: Any) -> None:
    """A study name is also a folder name (``OUT/NAME``) and a word of the commands the
    summary suggests: one plain path component, no shell syntax, at most 100 bytes."""
    if not isinstance(name, str) or not name.strip():
        raise StudyFileError(f"study name must be a non-empty string, got {name!r}")
    size = len(name.encode("utf-8", "surrogatepass"))
    if size > MAX_NAME_LENGTH:
        raise StudyFileError(
            f"study name {name[:40]!r}... is {size} bytes long in UTF-8 ({len(name)} "
            f"characters); use at most {MAX_NAME_LENGTH} bytes (it names a folder: a "
            "non-ASCII character takes 2 to 4)"
        )
    if (
        name in (".", "..")
        or name != name.strip()
        or any(c in name for c in "/\\")
        or any(ord(c) < 32 or ord(c) == 127 for c in name)
    ):
        raise StudyFileError(
            f"study name {name!r} must be one plain folder name (no '/', '\\', control "
            "characters, surrounding blanks, '.' or '..')"
        )
    shell = sorted(set(name) & SHELL_METACHARACTERS)
    if shell:
        raise StudyFileError(
            f"study name {name!r} holds shell metacharacters {''.join(shell)!r}; use letters, "
            "digits, '-', '_', '.' and spaces"
        )
