"""Text that UTF-8 can store: a lone UTF-16 surrogate is the one ``str`` it cannot.

Python strings may hold a lone surrogate (``"\\ud800"``: ``json.loads`` makes one from a
JSON escape, a web framework from a malformed request). Such a string cannot be encoded
as UTF-8, so it cannot be sent to a provider's HTTP API or written to a JSONL line: it
used to fail deep inside an SDK or the record writer with ``UnicodeEncodeError``. The
council refuses it at the door instead, naming the field and the character.
"""

from __future__ import annotations

from llm_council.errors import InputError


def lone_surrogate_at(text: str) -> int | None:
    """The index of the first character UTF-8 cannot encode (a lone surrogate); ``None``
    when there is none (an ASCII string is decided without encoding it)."""
    if text.isascii():
        return None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as error:
        return error.start
    return None


def require_storable(field: str, text: str) -> None:
    """:class:`InputError` naming ``field`` when ``text`` holds a lone surrogate."""
    at = lone_surrogate_at(text)
    if at is not None:
        raise InputError(
            f"{field} holds a lone UTF-16 surrogate ({ascii(text[at])}) at character {at}: "
            "not valid Unicode text, so it cannot be sent to a model or stored"
        )


__all__ = ["lone_surrogate_at", "require_storable"]
