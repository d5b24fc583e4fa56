"""A PostgreSQL store's messages: one line, the store named by its redacted URL, and the
password scrubbed from any driver message quoted (below the store's writer and readers)."""

from __future__ import annotations

from psycopg import Error as DriverError
from psycopg.conninfo import conninfo_to_dict

from llm_council.bias_audit.records.store_urls import redact_url
from llm_council.errors import RecordError


def scrub_message(message: str, url: str) -> str:
    """A driver message on one line, with the URL's password (if any) blanked out."""
    line = " ".join(message.split())
    try:
        password = conninfo_to_dict(url).get("password")
    except DriverError:
        password = None
    if password:
        line = line.replace(str(password), "***")
    return line.replace(url, redact_url(url))


def store_error(url: str, doing: str, error: BaseException) -> RecordError:
    detail = scrub_message(str(error), url) or type(error).__name__
    return RecordError(f"{redact_url(url)}: {doing}: {detail}")


def check_url(url: str) -> None:
    """Raise :class:`RecordError` (password redacted) if ``url`` is not a usable conninfo URL."""
    try:
        conninfo_to_dict(url)
    except DriverError as error:
        raise store_error(url, "not a valid PostgreSQL URL", error) from None
