"""``similarity_to_own`` through the real council and audit middleware: filled, null where
it must be, never text, and an embeddings failure never breaks the session."""

from __future__ import annotations

import asyncio
import math
from pathlib import Path
from typing import Any

import pytest

from fakes.loopback_http import LoopbackJsonServer, ReceivedRequest, Reply
from llm_council import run_full_council
from llm_council.bias_audit.records.jsonl_store import read_records, store_path
from llm_council.bias_audit.session.similarity import ngram_cosine
from llm_council.config import CouncilConfig, CouncilMember
from llm_council.errors import ConfigError

QUERY = "How do I reduce tail latency?"
CANARY_KEY = "sk-canary-audit-similarity-42"


def council(self_review: str = "exclude_at_aggregation") -> CouncilConfig:
    return CouncilConfig(
        members=tuple(CouncilMember(name=f"m{i}", spec="simulated:unbiased") for i in range(4)),
        chairman=CouncilMember(name="chair", spec="simulated:unbiased"),
        self_review=self_review,  # type: ignore[arg-type]
    )


def run(config: CouncilConfig, seed: int) -> Any:
    return asyncio.run(run_full_council(QUERY, config=config, seed=seed))


@pytest.fixture
def audit_on(monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("LLM_COUNCIL_BIAS_AUDIT", "true")
    return store_path()


def test_lexical_by_default_against_the_reviewers_own_answer(audit_on: Path) -> None:
    result = run(council(), seed=3)
    assert result.metadata["bias_audit"]["similarity_method"] == "lexical"
    texts = {answer.member: answer.text for answer in result.stage1}
    records = list(read_records(audit_on))
    assert len(records) == 16
    for record in records:
        if record.is_self_review:
            assert record.similarity_to_own is None
        else:
            expected = ngram_cosine(texts[record.reviewer_id], texts[record.model_id])
            assert record.similarity_to_own == pytest.approx(expected)
            assert 0.0 < record.similarity_to_own < 1.0
    # only the number is stored: no answer text reaches the store
    stored = audit_on.read_text(encoding="utf-8")
    assert not any(text and text[:40] in stored for text in texts.values())


def test_off_leaves_every_similarity_null(audit_on: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LLM_COUNCIL_SIMILARITY", "off")
    result = run(council(self_review="recuse"), seed=4)
    assert result.metadata["bias_audit"]["similarity_method"] == "off"
    assert {r.similarity_to_own for r in read_records(audit_on)} == {None}


def test_unknown_similarity_stops_the_session_before_it_runs(
    audit_on: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LLM_COUNCIL_SIMILARITY", "bert-base")
    with pytest.raises(ConfigError, match="unknown similarity 'bert-base'"):
        run(council(), seed=5)
    assert not audit_on.exists()


class _Embeddings(LoopbackJsonServer):
    """``/v1/embeddings``: one 3-d vector per input (from its length), or a 503."""

    def __init__(self, status: int = 200) -> None:
        super().__init__()
        self.status = status
        self.calls = 0

    def choose_reply(self, request: ReceivedRequest) -> Reply:
        self.calls += 1
        if self.status != 200:
            return Reply(self.status, {"error": {"message": f"overloaded {CANARY_KEY}"}})
        inputs = request.body["input"]
        data = [
            {"object": "embedding", "index": i, "embedding": [1.0, len(text) % 7, 2.0]}
            for i, text in enumerate(inputs)
        ]
        return Reply(200, {"object": "list", "data": data, "model": "m", "usage": {}})


def test_embeddings_fill_the_records(audit_on: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with _Embeddings().running() as server:
        monkeypatch.setenv("LLM_COUNCIL_SIMILARITY", "openai:text-embedding-3-small")
        monkeypatch.setenv("OPENAI_API_KEY", CANARY_KEY)
        monkeypatch.setenv("OPENAI_BASE_URL", f"{server.url}/v1")
        result = run(council(), seed=6)
        assert server.calls == 1
    audit = result.metadata["bias_audit"]
    assert audit["similarity_method"] == "openai:text-embedding-3-small"
    values = [r.similarity_to_own for r in read_records(audit_on) if not r.is_self_review]
    assert len(values) == 12 and all(v is not None and 0.5 <= v <= 1.0 for v in values)


def test_embeddings_failure_degrades_to_nulls_with_a_note(
    audit_on: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with _Embeddings(status=503).running() as server:
        monkeypatch.setenv("LLM_COUNCIL_SIMILARITY", "openai:text-embedding-3-small")
        monkeypatch.setenv("OPENAI_API_KEY", CANARY_KEY)
        monkeypatch.setenv("OPENAI_BASE_URL", f"{server.url}/v1")
        result = run(council(), seed=7)
    audit = result.metadata["bias_audit"]
    assert audit["records_written"] == 16  # the session and its records are still there
    assert "embeddings call failed" in audit["similarity_error"]
    assert CANARY_KEY not in str(result.metadata)
    assert {r.similarity_to_own for r in read_records(audit_on)} == {None}
    assert result.metadata["middleware_errors"] == []


def test_a_member_without_an_answer_has_null_similarities(audit_on: Path) -> None:
    members = (
        CouncilMember(name="mute", spec="simulated:unbiased", options={"fail_tasks": ["answer"]}),
        *(CouncilMember(name=f"m{i}", spec="simulated:unbiased") for i in range(3)),
    )
    config = CouncilConfig(
        members=members, chairman=CouncilMember(name="c", spec="simulated:unbiased")
    )
    run(config, seed=8)
    records = list(read_records(audit_on))
    assert records and all(r.reviewer_id != "mute" and r.model_id != "mute" for r in records)
    assert all((r.similarity_to_own is None) == r.is_self_review for r in records), (
        "every non-self record of the answering members has a similarity"
    )
    assert all(r.similarity_to_own is None or math.isfinite(r.similarity_to_own) for r in records)
