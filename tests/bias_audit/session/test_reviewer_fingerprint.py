"""The reviewer fingerprint on every audit record (ADR 0062, issue 33 item 7a)."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import re
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from llm_council import run_full_council
from llm_council.bias_audit.records.jsonl_store import read_records, store_path
from llm_council.bias_audit.records.schema import ReviewerFingerprint, ReviewRecord
from llm_council.bias_audit.session.session_records import records_from_session
from llm_council.config import CouncilConfig, CouncilMember
from llm_council.judge_fingerprint import FINGERPRINT_FIELDS, fingerprint_changes
from llm_council.middleware import Middleware, SessionCompleted
from llm_council.reviewer_fingerprints import reviewer_fingerprints

PERSONA = "You are Ada, a terse reviewer who hates filler."
HASHES = ("prompt_sha256", "rubric_sha256", "options_sha256")


def council(options: dict[str, dict[str, Any]] | None = None, **settings: Any) -> CouncilConfig:
    options = options or {}
    return CouncilConfig(
        members=tuple(
            CouncilMember(name=f"m{i}", spec="simulated:unbiased", options=options.get(f"m{i}", {}))
            for i in range(3)
        ),
        chairman=CouncilMember(name="chair", spec="simulated:unbiased"),
        **settings,
    )


@pytest.fixture
def audit_on(monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("LLM_COUNCIL_BIAS_AUDIT", "true")
    return store_path()


def test_every_record_carries_its_reviewers_fingerprint(audit_on: Path) -> None:
    config = council({"m1": {"leniency": 0.5}})
    asyncio.run(run_full_council("What is 2 + 2?", config=config))
    records = list(read_records(audit_on))
    assert len(records) == 9  # 3 reviewers x 3 answers, each with its reviewer's fingerprint
    expected = reviewer_fingerprints(config)
    for record in records:
        fingerprint = record.reviewer_fingerprint
        assert fingerprint is not None
        assert fingerprint == ReviewerFingerprint(**expected[record.reviewer_id])
        assert (fingerprint.provider, fingerprint.model) == ("simulated", "unbiased")
        assert fingerprint.scale == (1.0, 10.0) and fingerprint.temperature is None
    by_reviewer = {r.reviewer_id: r.reviewer_fingerprint for r in records}
    assert by_reviewer["m1"].options_sha256 != by_reviewer["m0"].options_sha256
    assert by_reviewer["m1"].prompt_sha256 == by_reviewer["m0"].prompt_sha256
    assert "impartial reviewer" not in audit_on.read_text(encoding="utf-8")  # no prompt text


def test_a_persona_enters_the_rubric_as_a_hash_only() -> None:
    fingerprint = reviewer_fingerprints(council({"m0": {"persona": PERSONA}}))["m0"]
    assert "Ada" not in json.dumps(fingerprint) and "terse" not in json.dumps(fingerprint)
    assert all(re.fullmatch("[0-9a-f]{64}", fingerprint[key]) for key in HASHES)


def test_which_component_moves_with_which_setting() -> None:
    base = reviewer_fingerprints(council())["m0"]
    hotter = reviewer_fingerprints(council({"m0": {"temperature": 1.0}}))["m0"]
    persona = reviewer_fingerprints(council({"m0": {"persona": PERSONA}}))["m0"]
    scale = reviewer_fingerprints(council(score_scale=(0.0, 5.0)))["m0"]
    names = lambda a, b: [name for name, _, _ in fingerprint_changes(a, b)]  # noqa: E731
    assert names(base, hotter) == ["temperature", "options_sha256"]
    assert names(base, persona) == ["rubric_sha256", "options_sha256"]
    assert names(base, scale) == ["prompt_sha256", "scale"]  # the prompt states the scale
    assert set(base) == set(FINGERPRINT_FIELDS)
    assert fingerprint_changes(base, dict(base)) == []


def test_a_line_without_a_fingerprint_still_reads() -> None:
    line = {
        "schema_version": 2,
        "session_id": "s",
        "timestamp": "2026-01-01T00:00:00Z",
        "reviewer_id": "r",
        "model_id": "m",
        "position": 0,
        "n_candidates": 2,
        "response_length_chars": 1,
        "response_length_words": 1,
        "score_value": 5.0,
        "is_self_review": False,
        "council_config_hash": "h",
    }
    assert ReviewRecord(**line).reviewer_fingerprint is None


GOOD = {
    "provider": "openai",
    "model": "gpt-4o-2024-08-06",
    "prompt_sha256": "a" * 64,
    "rubric_sha256": "b" * 64,
    "temperature": 0.0,
    "scale": [1, 10],
    "options_sha256": "c" * 64,
}


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"model": "x" * 257}, "model"),
        ({"provider": ""}, "provider"),
        ({"provider": "open\x1b]0;pwned\x07ai"}, "provider"),
        ({"model": "gpt\nfake line"}, "model"),
        ({"prompt_sha256": "not-a-hash"}, "prompt_sha256"),
        ({"prompt_sha256": "A" * 64}, "prompt_sha256"),
        ({"temperature": float("inf")}, "temperature"),
        ({"temperature": -1.0}, "temperature"),
        ({"scale": [10, 1]}, "scale"),
        ({"scale": [1, float("nan")]}, "scale"),
        ({"prompt_text": "the whole prompt"}, "prompt_text"),
    ],
)
def test_hostile_or_oversize_fingerprints_are_refused(change: dict[str, Any], field: str) -> None:
    with pytest.raises(ValidationError, match=re.escape(field)):
        ReviewerFingerprint(**{**GOOD, **change})


class _Capture(Middleware):
    """Keeps the event the council hands its middleware."""

    name = "capture"
    events: list[SessionCompleted] = []

    async def on_session_end(self, event: SessionCompleted) -> dict[str, Any]:
        self.events.append(event)
        return {}


def test_a_bad_fingerprint_in_the_event_leaves_the_reviews_recorded() -> None:
    capture = _Capture()
    asyncio.run(run_full_council("Why?", config=council(), middleware=[capture]))
    event = capture.events[-1]
    long_model = "m" * 300
    fingerprints = dict(event.metadata["reviewer_fingerprints"])
    fingerprints["m2"] = {**fingerprints["m2"], "model": long_model}  # past the bound
    fingerprints["m1"] = {**fingerprints["m1"], "temperature": float("nan")}
    hostile = dataclasses.replace(
        event, metadata={**event.metadata, "reviewer_fingerprints": fingerprints}
    )
    records = records_from_session(hostile, timestamp="2026-01-01T00:00:00Z", query_hash=None)
    assert {r.reviewer_id for r in records} == {"m0", "m1", "m2"}
    assert all((r.reviewer_fingerprint is None) == (r.reviewer_id != "m0") for r in records)
    assert long_model not in json.dumps([r.model_dump(mode="json") for r in records])
    no_metadata = dataclasses.replace(event, metadata={"reviewer_fingerprints": "junk"})
    assert all(
        r.reviewer_fingerprint is None
        for r in records_from_session(no_metadata, timestamp="t", query_hash=None)
    )
