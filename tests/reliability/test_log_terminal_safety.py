"""Log lines on the console show control and bidi characters escaped, never raw.

An error message quotes what a provider's server sent; a hostile or broken server can put
an escape sequence in it. Raw, it would clear the screen or retitle the window of whoever
reads the log; JSON lines already escape it and keep the text exact.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator

import pytest
import structlog

from llm_council.infra.log_setup import configure_logging

HOSTILE = "boom\x1b]0;pwned\x07\x1b[2J\u202egnp.exe"


@pytest.fixture(autouse=True)
def _restore_logging() -> Iterator[None]:
    yield
    configure_logging(level="WARNING")


def test_console_lines_escape_control_and_bidi_characters(
    capsys: pytest.CaptureFixture[str],
) -> None:
    configure_logging(level="info")
    structlog.get_logger().warning("member_failed\x1b[31m", error=HOSTILE, member="m\x07")
    logging.getLogger("openai._base_client").warning("server said %s", HOSTILE)
    err = capsys.readouterr().err
    lines = err.splitlines()
    assert len(lines) == 2
    for raw in ("\x1b", "\x07", "\u202e"):
        assert raw not in err
    assert "member_failed\\u001b[31m" in lines[0]
    assert "error=boom\\u001b]0;pwned\\u0007\\u001b[2J\\u202egnp.exe" in lines[0]
    assert "member=m\\u0007" in lines[0]
    assert "server said boom\\u001b]0;pwned" in lines[1]


def test_json_lines_keep_the_text_exact(capsys: pytest.CaptureFixture[str]) -> None:
    configure_logging(json_logs=True, level="info")
    structlog.get_logger().warning("member_failed", error=HOSTILE)
    err = capsys.readouterr().err
    assert "\x1b" not in err and "\u202e" not in err
    assert json.loads(err)["error"] == HOSTILE
