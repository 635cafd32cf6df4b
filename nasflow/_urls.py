"""Redacting credentials from database URLs: the one place every shown URL goes through."""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, unquote

MASK = "***"
#: Shortest credential masked wherever it appears in a message (``redact(text, url)``).
MIN_ECHOED = 4
#: Query-string (and ``key=value``) keys whose values are credentials (case-insensitive,
#: matched as substrings: ``sslpassword``, ``client_secret`` and ``access_token`` too).
SECRET_KEYS = ("password", "passwd", "pwd", "secret", "token", "apikey", "api_key", "credential")

#: A URL inside free text (an error message): scheme, ``://``, then up to a blank or quote.
_URL_IN_TEXT = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://[^\s'\"<>]*")
#: A string that is one URL (no line break in it).
_WHOLE_URL = re.compile(r"\A[A-Za-z][A-Za-z0-9+.\-]*://[^\n]*\Z")
#: ``key=value`` pairs with a secret key outside any URL (a libpq DSN in a driver error).
_PAIR_IN_TEXT = re.compile(
    r"(?i)(\b[a-z_]*(?:"
    + "|".join(SECRET_KEYS)
    + r")[a-z_]*\s*=\s*)('[^']*'|\"[^\"]*\"|[^\s&'\",;)]+)"
)


def _is_secret(key: str) -> bool:
    key = unquote(key).lower()
    return any(s in key for s in SECRET_KEYS)


def _split(url: str) -> tuple[str, str, str, str] | None:
    """``(scheme, userinfo, rest of the address, query)`` of ``url``, or ``None``.

    The userinfo runs to the *last* ``@`` before the query, so a password holding an
    unescaped ``@`` (or ``/``) is all of it (SQLAlchemy's parser would read the part after
    its first ``@`` as the host, and print it). A URL with an empty host
    (``sqlite:///PATH``) has none: an ``@`` in its path is not a credential.
    """
    scheme, sep, rest = url.partition("://")
    if not sep:
        return None
    address, _, query = rest.partition("?")
    at = -1 if address.startswith("/") else address.rfind("@")  # sqlite:///PATH: no host
    return scheme, address[:at] if at >= 0 else "", address[at + 1 :], query


def redact_url(url: str) -> str:
    """``url`` with its password and the values of secret query keys replaced by ``***``.

    Covers ``scheme://user:PASSWORD@host/db`` (escaped or not, ``@`` and ``/`` in it
    included) and ``?password=...`` / ``passwd`` / ``pwd`` / ``secret`` / ``token`` keys in
    the query string, the forms SQLAlchemy's ``make_url`` hands to a driver. A URL
    without credentials comes back unchanged.
    """
    # Not SQLAlchemy's ``make_url(url).render_as_string(hide_password=True)``: measured
    # with SQLAlchemy 2.1 (``test_sqlalchemy_rendering_is_still_unfit`` pins it), it
    # prints "postgresql://u:***@ssw0rdTail@127.0.0.1/d" for the password "p@ssw0rdTail"
    # (an unescaped "@" ends the password, the tail becomes the host); it leaves
    # "?password=QuerySecret" and "?token=..." as they are (it hides only the userinfo
    # password); and it rewrites the rest (query keys sorted, "sqlite:///a:b@c.db" as
    # "sqlite:///a%3Ab%40c.db", "sqlite:////tmp/x?y/study.db" cut to "sqlite:////tmp/x").
    # Where it is right, the well-formed "u:pw@host", it would replace one f-string below.
    parts = _split(url)
    if parts is None:
        return _PAIR_IN_TEXT.sub(lambda m: m.group(1) + MASK, url)
    scheme, userinfo, address, query = parts
    base = url.partition("?")[0]
    if ":" in userinfo:
        base = f"{scheme}://{userinfo.split(':', 1)[0]}:{MASK}@{address}"
    if "?" not in url:
        return base
    pairs = [
        p.partition("=")[0] + "=" + MASK if "=" in p and _is_secret(p.partition("=")[0]) else p
        for p in query.split("&")
    ]
    return base + "?" + "&".join(pairs)


def url_secrets(url: str) -> list[str]:
    """The credentials of ``url`` (password, values of secret query keys) as written and
    percent-decoded, longest first: what must never appear in anything shown."""
    parts = _split(url)
    if parts is None:
        return []
    _, userinfo, _, query = parts
    found: set[str] = set()
    if ":" in userinfo:
        password = userinfo.split(":", 1)[1]
        # SQLAlchemy reads what follows an unescaped "@" as the host: a driver's error
        # ("could not translate host name ...") shows those pieces.
        pieces = password.split("@")
        found.update([password, *("@".join(pieces[i:]) for i in range(1, len(pieces)))])
    found.update(p.partition("=")[2] for p in query.split("&") if _is_secret(p.partition("=")[0]))
    found.update(v for k, v in parse_qsl(query, keep_blank_values=True) if _is_secret(k))
    found.update({unquote(s) for s in found})
    return sorted((s for s in found if s), key=len, reverse=True)


def redact(text: str, url: str | None = None) -> str:
    """A URL, or any text holding URLs (an error message, a log line), safe to print, log,
    store or put in a report.

    A string that is one URL is redacted as a whole (``redact_url``); in other text every
    URL is redacted and every ``password=...``-like pair masked. Given the ``url`` the text
    is about, every occurrence of that URL's credentials is masked too (a driver may echo
    them, decoded or not), unless shorter than ``MIN_ECHOED`` characters (masking every
    "a" of a message would make it unreadable).
    """
    if _WHOLE_URL.match(text):
        text = redact_url(text)
    else:
        text = _URL_IN_TEXT.sub(lambda m: redact_url(m.group(0)), text)
    text = _PAIR_IN_TEXT.sub(lambda m: m.group(1) + MASK, text)
    if url is not None:
        for secret in url_secrets(url):
            if len(secret) >= MIN_ECHOED:
                text = text.replace(secret, MASK)
    return text
