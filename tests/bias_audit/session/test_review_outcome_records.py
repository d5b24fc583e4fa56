"""Reviews without a verdict still leave records (ADR 0027), through the real OpenAI SDK.

A loopback OpenAI-compatible council server (``fakes/council_server.py``) plays three
members: model-0 refuses every review through the API's ``message.refusal`` field, model-1
returns a nonce-tagged empty ranking, model-2's reviews fail with a 400. Model-3 reviews
normally with a long rationale. The audit must write one record per answer shown in every
review, with score and rank null and ``review_status`` saying why; ``bias-report`` must
count them and never read them as scores.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterator

import pytest

from fakes.council_server import CouncilServer, verdict_for
from fakes.loopback_http import ReceivedRequest, Reply, openai_completion_body
from llm_council import run_full_council
from llm_council.bias_audit.records.jsonl_store import read_records, store_path
from llm_council.bias_audit.report.build import build_report
from llm_council.config import CouncilConfig, CouncilMember
from llm_council.providers.calling import RetryPolicy

_NONCE = re.compile(r"<<<VERDICT id=([0-9a-f]+)>>>")
_LABEL = re.compile(r"<<<CANDIDATE (Response [A-Z]+) id=")
LONG_RATIONALE = "Because " + "the second answer checks its units. " * 40


class AbstainingCouncilServer(CouncilServer):
    def choose_reply(self, request: ReceivedRequest) -> Reply:
        body = request.body if isinstance(request.body, dict) else {}
        model = str(body.get("model", ""))
        prompt = "\n".join(
            str(m.get("content", "")) for m in body.get("messages") or [] if m.get("role") == "user"
        )
        tags = _NONCE.findall(prompt)
        if not tags or "As chairman" in prompt:
            return super().choose_reply(request)
        nonce = tags[-1]
        if model == "model-0":
            refusal = openai_completion_body("", model)
            refusal["choices"][0]["message"] = {
                "role": "assistant",
                "content": None,
                "refusal": "I can't help with comparing these.",
            }
            return Reply(200, refusal)
        if model == "model-1":
            text = f'<<<VERDICT id={nonce}>>>\n{{"ranking": [], "scores": {{}}}}\n'
            return Reply(200, openai_completion_body(text + f"<<<END VERDICT id={nonce}>>>", model))
        if model == "model-2":
            error = {"message": "bad request: context too long", "type": "invalid_request_error"}
            return Reply(400, {"error": error})
        verdict = {**verdict_for(_LABEL.findall(prompt)), "rationale": LONG_RATIONALE}
        text = f"<<<VERDICT id={nonce}>>>\n{json.dumps(verdict)}\n<<<END VERDICT id={nonce}>>>"
        return Reply(200, openai_completion_body(text, model))


@pytest.fixture
def server() -> Iterator[CouncilServer]:
    with AbstainingCouncilServer().running() as running:
        yield running


def _council(server: CouncilServer) -> CouncilConfig:
    options = {"base_url": server.base_url}
    return CouncilConfig(
        members=tuple(
            CouncilMember(name=f"m{i}", spec=f"openai:model-{i}", options=options) for i in range(4)
        ),
        chairman=CouncilMember(name="chair", spec="openai:chair", options=options),
        retry=RetryPolicy(max_attempts=1, timeout_s=5.0, initial_backoff_s=0.01),
    )


def test_refused_and_failed_reviews_leave_null_records_with_their_status(
    server: CouncilServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LLM_COUNCIL_BIAS_AUDIT", "true")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-outcomes-000000")
    for seed in range(12):  # 12 sessions, so the report has enough to work with
        result = asyncio.run(
            run_full_council("How?", config=_council(server), seed=seed, middleware=None)
        )
    statuses = {review.reviewer: review.parse_status for review in result.stage2}
    assert result.metadata["middleware_errors"] == []  # the per-session audit took the nulls
    assert result.metadata["bias_audit"]["sample_sizes"]["n_scores"] == 3  # m3's, not 0s
    outcomes_now = result.metadata["bias_audit"]["review_outcomes"]
    assert outcomes_now["m0"] == {
        "review_status": "refused",
        "comparable_pairs": 0,
        "mismatched_pairs": 0,
    }
    assert outcomes_now["m2"]["review_status"] == "error"
    assert outcomes_now["m3"]["comparable_pairs"] == 6  # 4 answers, distinct scores 9..6
    assert statuses == {"m0": "refused", "m1": "refused", "m2": "missing", "m3": "json"}
    assert "finish_reason=refusal" in (result.stage2[0].parse_error or "")
    assert "checks its units" not in store_path().read_text(encoding="utf-8")  # lengths only
    records = list(read_records(store_path()))
    assert len(records) == 12 * 4 * 4  # every answer shown in every review, verdict or not
    by_reviewer: dict[str, set[str | None]] = {}
    for record in records:
        by_reviewer.setdefault(record.reviewer_id, set()).add(record.review_status)
        if record.reviewer_id != "m3":
            assert record.score_value is None and record.rank is None
            assert record.rationale_chars is None
        else:
            assert record.score_value is not None and record.rank is not None
            assert record.rationale_chars == len(LONG_RATIONALE)
    assert by_reviewer == {"m0": {"refused"}, "m1": {"refused"}, "m2": {"error"}, "m3": {"json"}}

    report = build_report(store_path(), n_resamples=20)
    assert report.families is not None
    outcomes = {item.reviewer: item for item in report.families.parse_outcomes}
    assert outcomes["m0"].refusal_rate.estimate == 1.0 and outcomes["m0"].n_reviews == 12
    assert outcomes["m1"].status_counts == {"refused": 12}
    assert outcomes["m2"].failure_rate.estimate == 1.0
    assert outcomes["m3"].refusal_rate.estimate == 0.0
    assert outcomes["m3"].n_discordant_pairs == 0 and outcomes["m3"].n_comparable_pairs > 0
    # only m3 scored anything: no estimate ever sees the other reviewers' null records
    assert [profile.reviewer for profile in report.profiles if profile.n_scores > 0] == ["m3"]
    refuser = next(profile for profile in report.profiles if profile.reviewer == "m0")
    assert (refuser.n_sessions, refuser.reliability) == (0, "insufficient")
    assert refuser.n_missing_scores == 12 * 4
