"""Retry classification and retry-after parsing, on plain values."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from llm_council.providers.error_mapping import (
    empty_answer_error,
    is_retryable_status,
    parse_duration_seconds,
    parse_retry_after,
    redact,
    server_message_from_body,
    status_error,
)

# RFC 9110's example date. Hand derivation of its epoch time: 2015-10-21 is day 16729 after
# 1970-01-01 (45 years with 11 leap days = 16436 days, plus 293 days of 2015 before
# 21 October), and 16729 * 86400 + 7 h 28 min (26880 s) = 1445412480.
RFC_DATE = "Wed, 21 Oct 2015 07:28:00 GMT"
RFC_DATE_EPOCH = 1445412480.0


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"Retry-After": "7"}, 7.0),
        ({"retry-after": "0.05"}, 0.05),
        ({"retry-after-ms": "1500"}, 1.5),
        ({"retry-after-ms": "250", "retry-after": "9"}, 0.25),  # the precise header wins
        ({"retry-after-ms": "soon", "retry-after": "9"}, 9.0),  # a bad ms value falls back
        ({"retry-after": RFC_DATE}, 30.0),  # "now" is 30 s before the date
        ({}, None),
        ({"retry-after": "later"}, None),
        ({"retry-after": "-3"}, None),
        ({"retry-after": "nan"}, None),
        ({"retry-after": "inf"}, None),
    ],
)
def test_parse_retry_after(headers, expected):
    parsed = parse_retry_after(headers, now=RFC_DATE_EPOCH - 30)
    if expected is None:
        assert parsed is None
    else:
        assert parsed == pytest.approx(expected)


def test_retry_after_date_in_the_past_means_no_wait():
    assert parse_retry_after({"retry-after": RFC_DATE}, now=RFC_DATE_EPOCH + 3600) == 0.0


@given(st.dictionaries(st.sampled_from(["retry-after", "retry-after-ms", "x"]), st.text()))
def test_parse_retry_after_never_raises_and_is_never_negative(headers):
    parsed = parse_retry_after(headers)
    assert parsed is None or parsed >= 0.0


@pytest.mark.parametrize(
    ("status", "retryable"),
    [
        (408, True),
        (409, True),
        (429, True),
        (500, True),
        (502, True),
        (503, True),
        (529, True),
        (400, False),
        (401, False),
        (403, False),
        (404, False),
        (413, False),
        (422, False),
    ],
)
def test_retryable_statuses(status, retryable):
    assert is_retryable_status(status) is retryable


def test_non_retryable_status_ignores_retry_after():
    error = status_error("openai:gpt-4o", "openai", 400, {"retry-after": "5"}, "bad request")
    assert not error.retryable and error.retry_after is None
    assert str(error) == "openai:gpt-4o: HTTP error 400: bad request"


def test_explicit_retry_after_overrides_headers():
    error = status_error("google:g", "google", 429, {"retry-after": "5"}, "quota", retry_after=2.0)
    assert error.retryable and error.retry_after == 2.0 and error.status_code == 429


def test_long_multiline_server_message_is_shortened_to_one_line():
    error = status_error("p:m", "p", 500, {}, "line one\nline two " + "x" * 1000)
    text = str(error)
    assert "\n" not in text
    assert "line one line two" in text and text.endswith("...")
    assert len(text) < 350


def test_redact_replaces_secrets_but_not_short_placeholders():
    # one redactor with the logs (log_setup.redact): values under 6 characters are not secrets
    text = "key sk-canary-XYZ-0123456789 and none"
    assert redact(text, ["sk-canary-XYZ-0123456789", "none"]) == "key [redacted] and none"
    escaped = "header b'Bearer sk-canary-XYZ-0123456789\\nrest'"
    assert "sk-canary" not in redact(escaped, ["sk-canary-XYZ-0123456789\nrest"])


@pytest.mark.parametrize(
    ("text", "expected"),
    [("13s", 13.0), ("0.5s", 0.5), (" 2s ", 2.0), ("13", None), ("", None), (None, None)],
)
def test_parse_duration_seconds(text, expected):
    assert parse_duration_seconds(text) == expected


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ({"error": {"message": "nested"}}, "nested"),
        ({"error": "flat"}, "flat"),
        ({"message": "top"}, "top"),
        ("plain text body", "plain text body"),
        ({"unexpected": 1}, "fallback"),
        (None, "fallback"),
    ],
)
def test_server_message_from_body(body, expected):
    assert server_message_from_body(body, "fallback") == expected


def test_empty_answer_from_truncation_suggests_more_tokens():
    assert "raise max_tokens" in str(empty_answer_error("p:m", "p", "length"))
    assert "raise max_tokens" not in str(empty_answer_error("p:m", "p", "stop"))
