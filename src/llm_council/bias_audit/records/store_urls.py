"""Store URLs: which specs name a PostgreSQL store, and how to show one without its password.

Below both the record stores (which write) and the report's loaders (which read), so a
message anywhere names a store the same way and never with its password.

A URL parser and libpq do not read a URL alike. ``urlsplit`` ends the authority at the
first ``/``, ``?`` or ``#``; libpq ends the user information at the first ``@`` (unless a
``/`` comes first) and knows no fragment. So ``postgresql://u:p#ss@h/db`` connects with the
password ``p#ss`` while ``urlsplit`` sees a host ``u:p`` and a fragment. The redaction
here therefore uses no URL parser: it hides everything from the first ``:`` of the
credentials to the *last* ``@`` of the URL, which covers libpq's password whatever the
characters in it (ADR 0056), and the value of every ``password=`` parameter up to the
next ``&``. It may hide more than the password (a raw ``@`` in a later parameter), never
less. :func:`ambiguous_credentials` names the URLs the two readings disagree on, which
the PostgreSQL store refuses before connecting.
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote

POSTGRES_SCHEMES = ("postgresql", "postgres")
MASK = "***"

# a password= parameter: its value ends at the next "&" (libpq splits the query there)
_QUERY_PASSWORD = re.compile(r"([?&]password=)[^&]*", re.IGNORECASE)


def is_postgres_url(spec: str | Path) -> bool:
    """Whether ``spec`` names a PostgreSQL store (``postgresql://...`` or ``postgres://...``)."""
    return isinstance(spec, str) and spec.split("://", 1)[0].lower() in POSTGRES_SCHEMES


def _split_credentials(url: str) -> tuple[str, str, str | None, str] | None:
    """``(prefix, user, password, rest)`` around the credentials, or ``None`` without an
    ``@``: the credentials run from after ``://`` to the last ``@`` of the URL, the user
    to their first ``:`` (libpq splits user and password there too)."""
    if "://" not in url:
        return None
    scheme, after = url.split("://", 1)
    at = after.rfind("@")
    if at < 0:
        return None
    credentials, rest = after[:at], after[at + 1 :]
    user, colon, password = credentials.partition(":")
    return f"{scheme}://", user, (password if colon else None), rest


def redact_url(url: str) -> str:
    """``url`` with its password replaced by ``***`` (in the credentials and in any
    ``password=`` parameter); no URL parser, so no URL makes it raise or leak."""
    parts = _split_credentials(url)
    if parts is not None:
        prefix, user, password, rest = parts
        url = f"{prefix}{user}:{MASK}@{rest}" if password is not None else url
    return _QUERY_PASSWORD.sub(lambda match: match.group(1) + MASK, url)


def url_password(url: str) -> str | None:
    """The password text of ``url``'s credentials as :func:`redact_url` hides it (from the
    first ``:`` to the last ``@``, at least libpq's password); None when there is none."""
    parts = _split_credentials(url)
    return None if parts is None else parts[2]


def url_secrets(url: str) -> list[str]:
    """Every text a message about ``url`` must not show: the credentials' password as
    written and percent-decoded, libpq's own reading of it, and each ``password=``
    value; longest first, so a shorter one never leaves part of a longer one."""
    found: set[str] = set()
    password = url_password(url)
    if password:
        found.update({password, unquote(password)})
    for match in _QUERY_PASSWORD.finditer(url):
        value = match.group(0)[len(match.group(1)) :]
        found.update({value, unquote(value)})
    libpq_password = _libpq_password(url)
    if libpq_password:
        found.add(libpq_password)
    return sorted((text for text in found if text), key=len, reverse=True)


def _libpq_password(url: str) -> str | None:
    """The password libpq reads from ``url``, when psycopg is installed and parses it."""
    try:
        from psycopg import Error as DriverError
        from psycopg.conninfo import conninfo_to_dict
    except ImportError:
        return None
    try:
        password = conninfo_to_dict(url).get("password")
    except DriverError:
        return None
    return str(password) if password else None


def ambiguous_credentials(url: str) -> bool:
    """Whether libpq could read ``url``'s user and password differently from this module:
    more than one ``@``, or a ``/`` before the ``@`` (libpq then sees no credentials at
    all, and the password's pieces become a host, a port or a database name)."""
    if "://" not in url:
        return False
    after = url.split("://", 1)[1]
    if after.count("@") > 1:
        return True
    at = after.find("@")
    return at >= 0 and "/" in after[:at]
