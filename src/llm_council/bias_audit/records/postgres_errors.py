"""A PostgreSQL store's messages: one line, the store named by its redacted URL, and the
password scrubbed from any driver message quoted (below the store's writer and readers)."""

from __future__ import annotations

from psycopg import Error as DriverError
from psycopg.conninfo import conninfo_to_dict

from llm_council.bias_audit.records.store_urls import (
    MASK,
    ambiguous_credentials,
    redact_url,
    url_secrets,
)
from llm_council.errors import RecordError


def scrub_message(message: str, url: str) -> str:
    """A driver message on one line, with the URL's password (as written, percent-decoded
    and as libpq read it) and any ``password=`` value blanked out."""
    secrets = sorted(url_secrets(url), key=len, reverse=True)
    line = message.replace(url, redact_url(url))
    for secret in secrets:
        line = line.replace(secret, MASK)
    line = " ".join(line.split())
    # libpq quotes the URL's parts raw, so a password with runs of spaces showed once the
    # line's whitespace was collapsed ("00000 =  " became "00000 = "): blank that form too
    for secret in secrets:
        collapsed = " ".join(secret.split())
        if collapsed:
            line = line.replace(collapsed, MASK)
    return line


def store_error(url: str, doing: str, error: BaseException) -> RecordError:
    detail = scrub_message(str(error), url) or type(error).__name__
    return RecordError(f"{redact_url(url)}: {doing}: {detail}")


def check_url(url: str) -> None:
    """Raise :class:`RecordError` (password redacted) if ``url`` is not a usable conninfo
    URL, or if libpq could read its credentials differently from :func:`redact_url` (a raw
    ``@`` or ``/`` in the password: it would connect with part of it and show the rest)."""
    if ambiguous_credentials(url):
        raise RecordError(
            f"{redact_url(url)}: not a usable PostgreSQL URL: a raw '@' or '/' in the "
            "password (or after a '/') is read differently by libpq; percent-encode it "
            "('@' as %40, '/' as %2F)"
        )
    try:
        conninfo_to_dict(url)
    except DriverError as error:
        raise store_error(url, "not a valid PostgreSQL URL", error) from None
    except UnicodeDecodeError:
        # libpq decodes %XX escapes into bytes that psycopg then reads as UTF-8
        raise RecordError(
            f"{redact_url(url)}: not a usable PostgreSQL URL: a percent-encoded byte "
            "(%XX) does not decode as UTF-8"
        ) from None
