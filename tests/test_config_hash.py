"""config_hash: every setting that changes what reviewers see, computed once per session."""

from __future__ import annotations

import asyncio
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from llm_council import run_full_council
from llm_council.bias_audit.middleware import BiasAuditMiddleware
from llm_council.config import CouncilConfig, CouncilMember

MEMBERS = (
    CouncilMember(name="a", spec="simulated:unbiased", options={"leniency": 0.5}),
    CouncilMember(name="b", spec="simulated:unbiased"),
)
CHAIR = CouncilMember(name="chair", spec="simulated:unbiased")


def _config(**fields: Any) -> CouncilConfig:
    return CouncilConfig(members=MEMBERS, chairman=CHAIR, **fields)


def test_the_hash_at_the_legacy_cap_is_the_earlier_hash() -> None:
    # derived by hand: the canonical JSON the hash was defined on before the answer cap
    # entered it, so stores written earlier keep matching a config at 100,000 characters
    canonical = {
        "members": [
            ["a", "simulated:unbiased", {"leniency": 0.5}],
            ["b", "simulated:unbiased", {}],
        ],
        "chairman": ["chair", "simulated:unbiased"],
        "self_review": "exclude_at_aggregation",
        "score_scale": [1.0, 10.0],
    }
    digest = hashlib.sha256(json.dumps(canonical, sort_keys=True).encode()).hexdigest()
    assert _config(max_answer_chars=100_000).config_hash() == f"sha256:{digest[:16]}"


def test_the_answer_cap_changes_the_hash() -> None:
    # reviewers of a 5,000-character cap see cut answers: not comparable sessions
    base = _config().config_hash()
    assert _config(max_answer_chars=5_000).config_hash() != base
    assert (
        _config(max_answer_chars=5_000).config_hash()
        != _config(max_answer_chars=6_000).config_hash()
    )
    assert _config(self_review="recuse").config_hash() != base
    assert _config(score_scale=(0.0, 5.0)).config_hash() != base


@pytest.mark.parametrize(
    "fields",
    [{"session_deadline_s": 5.0}, {"max_concurrency": 2}, {"bias_check_probability": 0.5}],
)
def test_limits_and_bias_checks_leave_the_hash_alone(fields: dict[str, Any]) -> None:
    assert _config(**fields).config_hash() == _config().config_hash()


class CountingConfig(CouncilConfig):
    """A council config that counts how often its hash is computed."""

    def config_hash(self) -> str:
        CALLS.append(1)
        return super().config_hash()


CALLS: list[int] = []


def test_the_hash_is_computed_once_per_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LLM_COUNCIL_BIAS_STORE", str(tmp_path / "records.jsonl"))
    config = CountingConfig(members=MEMBERS, chairman=CHAIR, max_answer_chars=5_000)
    CALLS.clear()
    result = asyncio.run(
        run_full_council("q", config=config, seed=1, middleware=[BiasAuditMiddleware()])
    )
    assert len(CALLS) == 1
    records = [json.loads(line) for line in (tmp_path / "records.jsonl").read_text().splitlines()]
    assert {r["council_config_hash"] for r in records} == {result.metadata["council_config_hash"]}
    assert (
        result.metadata["council_config_hash"]
        == CouncilConfig(members=MEMBERS, chairman=CHAIR, max_answer_chars=5_000).config_hash()
    )
