"""Text UTF-8 cannot store (a lone UTF-16 surrogate) is refused at the council's door, in
one line naming the field and the character, before any model is called."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from llm_council import run_full_council
from llm_council.errors import InputError
from llm_council.middleware import Middleware, SessionStarted
from llm_council.storable_text import lone_surrogate_at, require_storable


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("plain ascii", None),
        ("", None),
        ("caf\u00e9 \U0001f600 \u4e2d", None),  # non-ASCII that UTF-8 stores
        ("ab\ud800c", 2),  # a lone high surrogate
        ("\udc00", 0),  # a lone low surrogate
        # JSON's escaped pair, as ``json.loads`` reads it: one character, stored fine
        (json.loads('"\\ud83d\\ude00"'), None),
        ("x\ud83d\ude00", 1),  # the same two code units left apart in a str: refused
    ],
)
def test_the_first_unencodable_character_is_found(text: str, expected: int | None) -> None:
    assert lone_surrogate_at(text) == expected


def test_the_error_names_the_field_and_the_character() -> None:
    with pytest.raises(InputError) as caught:
        require_storable("session_id", "web-\ud800-1")
    assert str(caught.value) == (
        "session_id holds a lone UTF-16 surrogate ('\\ud800') at character 4: "
        "not valid Unicode text, so it cannot be sent to a model or stored"
    )
    require_storable("session_id", "web-\U0001f600-1")  # a real emoji passes


class _Recorder(Middleware):
    name = "recorder"

    def __init__(self) -> None:
        self.events: list[object] = []

    async def on_session_start(self, event: SessionStarted) -> None:
        self.events.append(event)


@pytest.mark.parametrize(
    ("query", "session_id", "field"),
    [
        ("What is 2+2?\ud800", None, "the query"),
        ("What is 2+2?", "web-\ud800-1", "session_id"),
    ],
)
def test_the_council_refuses_it_before_the_session_starts(
    query: str, session_id: str | None, field: str, make_simulated_config: Any
) -> None:
    """Before: the query reached the providers (an SDK's JSON encoder fails on it), and a
    session id failed only at the record writer, as an opaque serialization error."""
    recorder = _Recorder()
    with pytest.raises(InputError, match=f"^{field} holds a lone UTF-16 surrogate"):
        asyncio.run(run_full_council(query, session_id=session_id, middleware=[recorder]))
    assert recorder.events == []
