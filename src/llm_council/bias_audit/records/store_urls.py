"""Store URLs: which specs name a PostgreSQL store, and how to show one without its password.

Below both the record stores (which write) and the report's loaders (which read), so a
message anywhere names a store the same way and never with its password.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

POSTGRES_SCHEMES = ("postgresql", "postgres")


def is_postgres_url(spec: str | Path) -> bool:
    """Whether ``spec`` names a PostgreSQL store (``postgresql://...`` or ``postgres://...``)."""
    return isinstance(spec, str) and spec.split("://", 1)[0].lower() in POSTGRES_SCHEMES


def redact_url(url: str) -> str:
    """``url`` with any password replaced by ``***`` (also in a ``password=`` query parameter)."""
    try:
        parts = urlsplit(url)
    except ValueError:  # an unclosed "[": the URL as given, its password masked by hand
        password = url_password(url)
        return url.replace(f":{password}@", ":***@", 1) if password else url
    netloc = parts.netloc
    if "@" in netloc:
        credentials, host = netloc.rsplit("@", 1)
        user = credentials.split(":", 1)[0]
        netloc = f"{user}:***@{host}" if ":" in credentials else f"{user}@{host}"
    query = "&".join(
        "password=***" if item.lower().startswith("password=") else item
        for item in parts.query.split("&")
        if item
    )
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def url_password(url: str) -> str | None:
    """The password in ``url``'s credentials, found without a URL parser (``urlsplit``
    raises on an unclosed ``[``, its ``port`` on ``:99999``); None when there is none."""
    netloc = url.split("://", 1)[-1].split("/", 1)[0]
    if "@" not in netloc:
        return None
    credentials = netloc.rsplit("@", 1)[0]
    return credentials.split(":", 1)[1] if ":" in credentials else None
