"""BiasAuditMiddleware through the real council: metadata, records, privacy, errors."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from llm_council import run_full_council
from llm_council.bias_audit import BiasAuditResult
from llm_council.bias_audit.middleware import BiasAuditMiddleware
from llm_council.bias_audit.records.jsonl_store import read_records, store_path
from llm_council.config import CouncilConfig, CouncilMember
from llm_council.errors import ConfigError
from llm_council.middleware import SessionCompleted
from llm_council.prompts import extract_candidate_blocks
from llm_council.results import CandidateScore, LabelAssignment, MemberAnswer, Review, Synthesis

# test_audit.py pins these fields to the key names; here the middleware must add
# exactly them plus its store bookkeeping
AUDIT_KEYS = set(BiasAuditResult.model_fields)
QUERY = "How do I reduce tail latency?"
# printf '%s' "How do I reduce tail latency?" | openssl dgst -sha256 -hmac "s3cret-salt"
QUERY_DIGEST = "aa0e129f8b41bd7839751345c1ac8cedc314c7325c570015ed349e4537615d5a"


def simulated_council(
    self_review: str = "exclude_at_aggregation", **per_member: dict[str, Any]
) -> CouncilConfig:
    return CouncilConfig(
        members=tuple(
            CouncilMember(
                name=f"m{i}", spec="simulated:unbiased", options=per_member.get(f"m{i}", {})
            )
            for i in range(5)
        ),
        chairman=CouncilMember(name="chair", spec="simulated:unbiased"),
        self_review=self_review,  # type: ignore[arg-type]
    )


def run(config: CouncilConfig, query: str = QUERY, **kwargs: Any) -> Any:
    return asyncio.run(run_full_council(query, config=config, **kwargs))


@pytest.fixture
def audit_on(monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("LLM_COUNCIL_BIAS_AUDIT", "true")
    return store_path()


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("true", True),
        ("TRUE", True),
        ("1", True),
        ("yes", True),
        (" Yes ", True),
        ("false", False),
        ("0", False),
        ("", False),
        ("on", True),
        ("off", False),
    ],
)
def test_enabled_only_by_the_switch(
    monkeypatch: pytest.MonkeyPatch, value: str, expected: bool
) -> None:
    monkeypatch.setenv("LLM_COUNCIL_BIAS_AUDIT", value)
    assert BiasAuditMiddleware().enabled() is expected
    assert BiasAuditMiddleware.name == "bias_audit"


def test_off_by_default_nothing_added_nothing_written() -> None:
    result = run(simulated_council(), seed=1)
    assert "bias_audit" not in result.metadata
    assert not store_path().exists()


def test_discovered_when_enabled_and_records_match_the_reviews(audit_on: Path) -> None:
    result = run(simulated_council(), seed=3)
    audit = result.metadata["bias_audit"]
    assert set(audit) == AUDIT_KEYS | {
        "records_written",
        "record_store",
        "review_outcomes",
        "similarity_method",
        "monitor",  # the anytime monitor's answer (ADR 0053)
    }
    assert audit["monitor"]["status"] == "ok" and audit["monitor"]["sessions"] == 1
    assert audit["record_store"] == os.environ["LLM_COUNCIL_BIAS_STORE"]  # where they went
    assert audit["review_outcomes"]["m0"] == {
        "review_status": "json",
        "comparable_pairs": audit["review_outcomes"]["m0"]["comparable_pairs"],
        "mismatched_pairs": 0,
    }
    assert audit["records_written"] == 25
    assert audit["record_store"] == str(store_path())  # where they went (issue 28)
    assert audit["sample_sizes"]["n_self_reviews"] == 5 and audit["sample_sizes"]["n_scores"] == 20
    json.dumps(result.metadata)
    records = list(read_records(audit_on))
    assert len(records) == 25
    seen = {(r.reviewer_id, r.model_id): r for r in records}
    lengths = {a.member: a.text for a in result.stage1}
    for review in result.stage2:
        for entry in review.candidates:
            record = seen[(review.reviewer, entry.candidate)]
            assert record.position == entry.display_index
            assert record.is_self_review == (review.reviewer == entry.candidate)
            assert record.score_value == entry.score and record.rank == entry.rank
            assert record.response_length_chars == len(lengths[entry.candidate])
            assert record.session_id == result.metadata["session_id"]
            assert record.council_config_hash == result.metadata["council_config_hash"]
            assert record.query_hash is None


def test_recused_council_has_no_self_reviews(audit_on: Path) -> None:
    result = run(simulated_council(self_review="recuse"), seed=4)
    audit = result.metadata["bias_audit"]
    assert audit["records_written"] == 20 and audit["self_preference"] == {}
    assert not any(r.is_self_review for r in read_records(audit_on))


def test_detects_a_harsh_simulated_member(audit_on: Path) -> None:
    quiet = {"noise_sd": 0.3}
    config = simulated_council(
        m0={"leniency": -3.0, **quiet}, m1=quiet, m2=quiet, m3=quiet, m4=quiet
    )
    audit = run(config, seed=8).metadata["bias_audit"]
    assert audit["harsh_reviewers"] == ["m0"] and audit["generous_reviewers"] == []
    assert audit["overall_bias_risk"] in {"medium", "high"}


def test_query_hash_when_opted_in(audit_on: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LLM_COUNCIL_QUERY_HASH", "true")
    monkeypatch.setenv("LLM_COUNCIL_HASH_SECRET", "s3cret-salt")
    run(simulated_council(), seed=5)
    hashes = {r.query_hash for r in read_records(audit_on)}
    assert hashes == {f"hmac-sha256:{QUERY_DIGEST}"}
    assert "s3cret-salt" not in audit_on.read_text()


def test_hashing_without_secret_refuses_before_any_model_call(
    audit_on: Path, monkeypatch: pytest.MonkeyPatch, scripted_provider: Any
) -> None:
    monkeypatch.setenv("LLM_COUNCIL_QUERY_HASH", "true")
    council = CouncilConfig(
        members=(CouncilMember(name="a", spec="fake:a"), CouncilMember(name="b", spec="fake:b")),
        chairman=CouncilMember(name="c", spec="fake:c"),
    )
    with pytest.raises(ConfigError, match="LLM_COUNCIL_HASH_SECRET"):
        run(council, seed=5)
    assert scripted_provider.calls == [] and not audit_on.exists()


def test_bad_threshold_env_is_reported_by_name(
    audit_on: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LLM_COUNCIL_POSITION_VARIANCE_THRESHOLD", "lots")
    with pytest.raises(ConfigError, match="^LLM_COUNCIL_POSITION_VARIANCE_THRESHOLD='lots'"):
        run(simulated_council(), seed=5)
    assert not audit_on.exists()


def test_unwritable_store_keeps_the_statistics(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LLM_COUNCIL_BIAS_AUDIT", "true")
    (tmp_path / "file").write_text("")
    monkeypatch.setenv("LLM_COUNCIL_BIAS_STORE", str(tmp_path / "file" / "records.jsonl"))
    audit = run(simulated_council(), seed=5).metadata["bias_audit"]
    assert audit["records_written"] == 0 and "cannot append records" in audit["record_store_error"]
    assert set(audit) == AUDIT_KEYS | {
        "records_written",
        "record_store",
        "record_store_error",
        "review_outcomes",
        "similarity_method",
        "monitor",
    }
    # the monitor cannot read a store under a file: answered, never raised
    assert audit["monitor"]["status"] == "unavailable" and audit["monitor"]["reason"]


QUERY_CANARY = "QCANARY-5f1e9a7c-query"
ANSWER_CANARY = "ACANARY-88d3b2e4-answer"


def test_canaries_never_reach_records_through_the_pipeline(
    audit_on: Path, scripted_provider: Any
) -> None:
    def review(request: Any, call_number: int) -> str:
        prompt = "\n".join(message.content for message in request.messages)
        labels = [label for label, _ in extract_candidate_blocks(prompt)]
        scores = {label: 4 + index for index, label in enumerate(labels)}
        return json.dumps({"ranking": labels[::-1], "scores": scores, "rationale": "fine"})

    scripted_provider.scripts = {
        name: {
            "answer": lambda r, n, name=name: f"{ANSWER_CANARY} from {name}: " + "detail " * 30,
            "review": review,
        }
        for name in ("a", "b", "c")
    }
    scripted_provider.scripts["chair"] = {"synthesize": lambda r, n: f"final {ANSWER_CANARY}"}
    config = CouncilConfig(
        members=tuple(CouncilMember(name=n, spec=f"fake:{n}") for n in ("a", "b", "c")),
        chairman=CouncilMember(name="chair", spec="fake:chair"),
    )
    result = run(config, query=f"Tell me about {QUERY_CANARY} please", seed=2)
    assert all(ANSWER_CANARY in a.text for a in result.stage1)  # the canary was really there
    assert result.metadata["bias_audit"]["records_written"] == 9
    stored = audit_on.read_text()
    assert len(stored.splitlines()) == 9
    for secret in (QUERY_CANARY, ANSWER_CANARY, "detail", "please"):
        assert secret not in stored
        assert secret not in json.dumps(result.metadata["bias_audit"])


def _session(query: str, texts: dict[str, str]) -> SessionCompleted:
    names = list(texts)
    reviews = []
    for offset, reviewer in enumerate(names):
        order = names[offset:] + names[:offset]
        reviews.append(
            Review(
                reviewer=reviewer,
                label_to_model={
                    f"Response {'ABC'[i]}": LabelAssignment(model=m, display_index=i)
                    for i, m in enumerate(order)
                },
                candidates=tuple(
                    CandidateScore(
                        candidate=m,
                        label=f"Response {'ABC'[i]}",
                        display_index=i,
                        score=float(5 + i),
                        rank=i + 1,
                        is_self_review=m == reviewer,
                    )
                    for i, m in enumerate(order)
                ),
                parse_status="json",
            )
        )
    return SessionCompleted(
        session_id="s-prop",
        query=query,
        council_config_hash="sha256:0",
        answers=tuple(MemberAnswer(member=n, spec=f"fake:{n}", text=t) for n, t in texts.items()),
        reviews=tuple(reviews),
        standings=(),
        synthesis=Synthesis(chairman="c", text="x"),
        started_at="2026-11-22T00:00:00+00:00",
    )


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    query=st.text(max_size=200),
    bodies=st.lists(st.text(max_size=300), min_size=3, max_size=3),
)
def test_records_never_contain_input_text(
    query: str, bodies: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = tmp_path / f"prop-{os.getpid()}-{abs(hash((query, tuple(bodies))))}.jsonl"
    monkeypatch.setenv("LLM_COUNCIL_BIAS_STORE", str(store))
    texts = {f"m{i}": f"{ANSWER_CANARY}{body}{ANSWER_CANARY}" for i, body in enumerate(bodies)}
    event = _session(f"{QUERY_CANARY}{query}{QUERY_CANARY}", texts)
    audit = asyncio.run(BiasAuditMiddleware().on_session_end(event))
    stored = store.read_text(encoding="utf-8")
    for canary in (QUERY_CANARY, ANSWER_CANARY):
        assert canary not in stored and canary not in json.dumps(audit)
    records = list(read_records(store))
    assert len(records) == 9
    for record in records:
        assert record.response_length_chars == len(texts[record.model_id])
        assert record.response_length_words == len(texts[record.model_id].split())
    store.unlink()


def test_the_switch_accepts_on_and_refuses_a_typo(monkeypatch: pytest.MonkeyPatch) -> None:
    # review finding: "on" (accepted by the sibling switches) and a typo both silently meant off
    from llm_council.bias_audit.middleware import BiasAuditMiddleware
    from llm_council.errors import ConfigError

    monkeypatch.setenv("LLM_COUNCIL_BIAS_AUDIT", "on")
    assert BiasAuditMiddleware().enabled()
    monkeypatch.setenv("LLM_COUNCIL_BIAS_AUDIT", "ture")
    with pytest.raises(ConfigError, match="LLM_COUNCIL_BIAS_AUDIT='ture'"):
        BiasAuditMiddleware().enabled()
    monkeypatch.delenv("LLM_COUNCIL_BIAS_AUDIT")
    monkeypatch.setenv("BIAS_AUDIT_ENABLED", "true")
    assert BiasAuditMiddleware().enabled()


@pytest.mark.parametrize("audit", ["false", "true"])
def test_the_audits_statistics_are_imported_only_when_the_audit_is_on(
    audit: str, tmp_path: Path
) -> None:
    """The entry point loads the middleware class in every council process; its numpy
    work loads only when the audit runs, and scipy never on the session path (ADR 0063:
    tests/test_import_cost.py holds the whole list)."""
    import subprocess
    import sys

    code = (
        "import asyncio, sys\n"
        "from llm_council import run_full_council\n"
        "result = asyncio.run(run_full_council('q?', seed=1))\n"
        "print('bias_audit' in result.metadata, 'scipy' in sys.modules,"
        " 'llm_council.bias_audit.session.session_audit' in sys.modules)\n"
    )
    environment = {
        **os.environ,
        "LLM_COUNCIL_BIAS_AUDIT": audit,
        "LLM_COUNCIL_BIAS_STORE": str(tmp_path / "records.jsonl"),
    }
    environment.pop("BIAS_AUDIT_ENABLED", None)
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=environment
    )
    assert result.returncode == 0, result.stderr
    expected = "True False True" if audit == "true" else "False False False"
    assert result.stdout.split("\n")[-2] == expected
