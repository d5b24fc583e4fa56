"""A record whose text UTF-8 cannot store (a lone UTF-16 surrogate, e.g. in a member name
set from Python) is refused by both stores in one line naming the session and the field,
and nothing of its session is written."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from bias_audit.records.test_store import make_record
from llm_council.bias_audit.records.jsonl_store import append_records
from llm_council.bias_audit.records.postgres_store import check_session
from llm_council.bias_audit.records.schema import ReviewerFingerprint, lone_surrogate_field
from llm_council.errors import RecordError

SHA = "0" * 64


def _fingerprint(model: str) -> ReviewerFingerprint:
    return ReviewerFingerprint(
        provider="openai", model=model, prompt_sha256=SHA, scale=(1.0, 10.0), options_sha256=SHA
    )


def test_the_field_and_character_are_found() -> None:
    assert lone_surrogate_field(make_record("s1")) is None
    assert lone_surrogate_field(make_record("s1", reviewer="r\ud800")) == ("reviewer_id", 1)
    hashed = make_record("s1", council_config_hash="sha256:\udfff")
    assert lone_surrogate_field(hashed) == ("council_config_hash", 7)


def test_the_fingerprint_s_patterns_refuse_it_when_the_record_is_made() -> None:
    with pytest.raises(ValidationError, match="unable to parse raw data as a unicode string"):
        _fingerprint("gpt-\udfff")


def test_the_jsonl_store_refuses_the_session_whole(tmp_path: Path) -> None:
    """Before: ``PydanticSerializationError ... surrogates not allowed``, naming no field."""
    store = tmp_path / "records.jsonl"
    append_records(store, [make_record("before")])
    kept = store.read_bytes()
    session = [make_record("s\ud800", candidate="c1"), make_record("s\ud800", candidate="c2")]
    with pytest.raises(RecordError) as caught:
        append_records(store, session)
    assert str(caught.value) == (
        "record of session 's\\ud800': field 'session_id' holds a lone UTF-16 surrogate at "
        "character 1, which UTF-8 cannot store"
    )
    assert store.read_bytes() == kept  # nothing of the session, the store as it was


def test_the_postgres_store_refuses_it_before_connecting() -> None:
    url = "postgresql://writer:s3cret@db.example/records"
    with pytest.raises(RecordError) as caught:
        check_session(url, [make_record("s1"), make_record("s1", candidate="c\udc80")])
    message = str(caught.value)
    assert "session 's1' record 1: field 'model_id' holds a lone UTF-16 surrogate" in message
    assert "s3cret" not in message
