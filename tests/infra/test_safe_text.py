"""Escaping untrusted text for a terminal: one-line ids and multi-line answers."""

from __future__ import annotations

from llm_council.infra.safe_text import terminal_safe, terminal_safe_lines


def test_one_line_text_escapes_every_control_character_line_feed_included() -> None:
    assert terminal_safe("a\nb\tc\x1b[2J\u202e") == "a\\u000ab\\u0009c\\u001b[2J\\u202e"


def test_multi_line_text_keeps_line_feeds_and_tabs_and_escapes_the_rest() -> None:
    answer = "first line\r\n\tindented\nprogress 50%\rdone\x1b]0;title\x07 \u2067x\u2069 \x85"
    assert terminal_safe_lines(answer) == (
        "first line\n\tindented\nprogress 50%\\u000ddone\\u001b]0;title\\u0007 "
        "\\u2067x\\u2069 \\u0085"
    )


def test_multi_line_text_leaves_ordinary_unicode_alone() -> None:
    text = "été 模型 — ok\n✓ emoji 🙂"
    assert terminal_safe_lines(text) == text
