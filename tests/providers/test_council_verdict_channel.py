"""Whole sessions through the real OpenAI SDK: which channel each verdict arrives on.

The members are ``openai:`` providers pointed at a loopback council server
(``fakes/council_server.py``); the simulated council speaks the same structured path.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from fakes.council_server import CouncilServer
from llm_council import run_full_council
from llm_council.config import CouncilConfig, CouncilMember
from llm_council.providers.calling import RetryPolicy


@pytest.fixture
def council_server() -> Iterator[CouncilServer]:
    with CouncilServer().running() as server:
        yield server


def _council(server: CouncilServer, **options: Any) -> CouncilConfig:
    member_options = {"base_url": server.base_url, **options}
    return CouncilConfig(
        members=tuple(
            CouncilMember(name=f"m{i}", spec=f"openai:model-{i}", options=member_options)
            for i in range(3)
        ),
        chairman=CouncilMember(name="chair", spec="openai:chair", options=member_options),
        retry=RetryPolicy(max_attempts=2, timeout_s=5.0, initial_backoff_s=0.01),
    )


def _run(config: CouncilConfig) -> Any:
    return asyncio.run(run_full_council("How?", config=config, seed=3, middleware=[]))


def test_native_structured_output_carries_every_verdict(council_server, no_vendor_env):
    result = _run(_council(council_server, structured_output="native"))
    assert [r.verdict_channel for r in result.stage2] == ["structured"] * 3
    assert all(
        r.parse_status == "json" and r.structured_output_refused is None for r in result.stage2
    )
    assert council_server.kinds["structured_review"] == 3


def test_a_compatible_server_gets_the_nonce_path_by_default(council_server, no_vendor_env):
    result = _run(_council(council_server))
    assert [r.verdict_channel for r in result.stage2] == ["nonce"] * 3
    assert all(r.parse_status == "json" for r in result.stage2)
    assert council_server.kinds["nonce_review"] == 3 and council_server.kinds["refused"] == 0


def test_a_json_schema_refusal_falls_back_once_to_the_nonce_path_and_is_recorded(no_vendor_env):
    with CouncilServer(refuse_json_schema=True).running() as server:
        result = _run(_council(server, structured_output="native"))
    for review in result.stage2:
        assert (review.parse_status, review.verdict_channel) == ("json", "nonce")
        assert review.structured_output_refused is not None
        assert "HTTP error 400" in review.structured_output_refused
        assert review.attempts == 2  # the refused call and the nonce call, both counted
    assert (server.kinds["refused"], server.kinds["nonce_review"]) == (3, 3)
    assert result.metadata["degraded"] == []


def test_the_simulated_council_reviews_on_the_structured_channel() -> None:
    config = CouncilConfig(
        members=tuple(
            CouncilMember(name=name, spec=f"simulated:{name}") for name in ("balanced", "harsh")
        ),
        chairman=CouncilMember(name="chair", spec="simulated:balanced"),
    )
    result = _run(config)
    assert [r.verdict_channel for r in result.stage2] == ["structured"] * 2
    assert all(r.parse_status == "json" and r.raw_text.startswith("{") for r in result.stage2)
