"""Each call priced in USD (config override, else the genai-prices table; else "unpriced",
never 0), ``metadata["cost_usd"]`` per stage and member, and ``max_cost_usd`` stopping
reviews that were not yet sent."""

from __future__ import annotations

import asyncio
from decimal import Decimal
from typing import Any

import pytest

from llm_council.call_pricing import ModelPrice, SessionCosts, price_usd, unpriced_reason
from llm_council.config import CouncilConfig, CouncilMember
from llm_council.council import run_full_council
from llm_council.errors import ConfigError
from llm_council.providers.base import Usage

SIM = ["simulated:balanced", "simulated:harsh", "simulated:primacy"]
# 2 USD per million input tokens, 10 per million output tokens
PRICE = ModelPrice(input_usd_per_mtok=2.0, output_usd_per_mtok=10.0)


def test_an_override_prices_by_hand() -> None:
    cost, why = price_usd("simulated:harsh", 1500, 300, {"simulated:harsh": PRICE})
    # (1500 * 2 + 300 * 10) / 1e6 = 6000 / 1e6
    assert why is None and cost == Decimal("0.006")


def test_the_public_table_prices_a_known_model() -> None:
    pytest.importorskip("genai_prices")
    cost, why = price_usd("openai:gpt-4o", 1000, 500, {})
    # gpt-4o list price in the table: 2.50 / 10.00 USD per million -> 0.0025 + 0.005
    assert why is None and cost == Decimal("0.0075")


@pytest.mark.parametrize(
    ("spec", "tokens", "reason"),
    [
        ("openai:no-such-model-xyz", (10, 10), "not in the price table"),
        ("simulated:harsh", (10, 10), "no public price for provider 'simulated'"),
        ("openai:gpt-4o", (None, 10), "reported no token counts"),
    ],
)
def test_unknown_is_unpriced_never_zero(
    spec: str, tokens: tuple[int | None, int | None], reason: str
) -> None:
    pytest.importorskip("genai_prices")
    cost, why = price_usd(spec, *tokens, {})
    assert cost is None and why is not None and reason in why


def test_the_tally_keeps_unpriced_apart() -> None:
    costs = SessionCosts(overrides={"simulated:a": PRICE})
    costs.add("answer", "a", "simulated:a", Usage(input_tokens=1000, output_tokens=100))
    costs.add("answer", "b", "simulated:b", Usage(input_tokens=1000, output_tokens=100))
    meta = costs.as_metadata()
    assert meta["usd"] == pytest.approx(0.003) and meta["complete"] is False
    assert meta["by_member"]["b"] == {"usd": None, "calls": 1, "unpriced_calls": 1}
    assert meta["by_stage"]["answer"]["unpriced_calls"] == 1
    assert meta["unpriced"][0]["member"] == "b"


def _config(**settings: Any) -> CouncilConfig:
    return CouncilConfig(
        members=tuple(CouncilMember(name=spec.split(":")[1], spec=spec) for spec in SIM),
        chairman=CouncilMember(name="chair", spec="simulated:balanced"),
        **settings,
    )


def test_a_session_reports_its_cost_by_stage_and_member() -> None:
    config = _config(prices={spec: PRICE for spec in SIM})
    result = asyncio.run(run_full_council("Why is the sky blue?", config=config, seed=3))
    cost = result.metadata["cost_usd"]
    assert cost["complete"] is True and cost["max_cost_usd"] is None
    assert set(cost["by_stage"]) == {"answer", "review", "synthesize"}
    assert cost["by_stage"]["review"]["calls"] == 3  # one call per reviewer over all answers
    stage_sum = sum(s["usd"] for s in cost["by_stage"].values())
    member_sum = sum(m["usd"] for m in cost["by_member"].values())
    assert cost["usd"] == pytest.approx(stage_sum) == pytest.approx(member_sum)
    # the token counts the session reports, priced by hand
    tokens = result.metadata["token_usage"]
    by_hand = (tokens["input_tokens"] * 2 + tokens["output_tokens"] * 10) / 1e6
    assert cost["usd"] == pytest.approx(by_hand)


def test_unpriced_members_say_so_without_a_budget() -> None:
    result = asyncio.run(run_full_council("q?", config=_config(), seed=1))
    cost = result.metadata["cost_usd"]
    assert cost["usd"] is None and cost["complete"] is False
    assert all(m["usd"] is None for m in cost["by_member"].values())


def test_the_budget_stops_reviews_and_marks_them_missing_with_the_reason() -> None:
    # stage 1 alone costs more than this budget: every review is stopped, none is sent
    config = _config(prices={spec: PRICE for spec in SIM}, max_cost_usd=1e-9)
    result = asyncio.run(run_full_council("Why is the sky blue?", config=config, seed=3))
    assert {r.parse_status for r in result.stage2} == {"missing"}
    assert all("max_cost_usd" in (r.error or "") for r in result.stage2)
    cost = result.metadata["cost_usd"]
    assert len(cost["reviews_stopped_by_budget"]) == len(result.stage2)
    assert "review" not in cost["by_stage"]  # nothing was sent, nothing was spent
    assert "pass max_cost_usd" in cost["reviews_stopped_by_budget"][0]["why"]
    assert result.stage3.text  # the chairman still answers (a synthesis of the answers)


@pytest.mark.parametrize("concurrency", [1, 16])
def test_the_budget_is_never_passed_and_binds_monotonically(concurrency: int) -> None:
    priced = _config(prices={spec: PRICE for spec in SIM}, max_concurrency=concurrency)
    full = asyncio.run(run_full_council("Why is the sky blue?", config=priced, seed=3))
    stage1 = full.metadata["cost_usd"]["by_stage"]["answer"]["usd"]
    sent_counts = []
    for budget in [stage1 * 1.01, *(stage1 + k * 0.0015 for k in range(12, 20)), 1.0]:
        config = priced.model_copy(update={"max_cost_usd": budget})
        result = asyncio.run(run_full_council("Why is the sky blue?", config=config, seed=3))
        cost = result.metadata["cost_usd"]
        stopped = cost["reviews_stopped_by_budget"]
        assert [r.parse_status for r in result.stage2].count("missing") == len(stopped)
        spent_before_synthesis = cost["usd"] - cost["by_stage"]["synthesize"]["usd"]
        assert spent_before_synthesis <= budget  # a reservation holds each review's most
        sent_counts.append(len(result.stage2) - len(stopped))
    # each review reserves its prompt and all of its max_tokens (2048 x 10 USD/M = 0.0205)
    # and costs about 0.0017 here: budgets between one and two reservations send 1 or 2
    assert sent_counts == sorted(sent_counts) and sent_counts[0] == 0 and sent_counts[-1] == 3
    assert {1, 2} <= set(sent_counts)


def test_a_budget_with_an_unpriced_member_is_refused_before_any_call() -> None:
    with pytest.raises(ConfigError, match="max_cost_usd needs a price for every member"):
        asyncio.run(run_full_council("q?", config=_config(max_cost_usd=1.0), seed=1))
    assert unpriced_reason("simulated:harsh", {"simulated:harsh": PRICE}) is None


@pytest.mark.parametrize("bad", [0, -1, float("nan"), float("inf")])
def test_bad_budgets_and_prices_are_config_errors(bad: float) -> None:
    with pytest.raises(ValueError):
        _config(max_cost_usd=bad)
    if bad != 0:
        with pytest.raises(ValueError):
            ModelPrice(input_usd_per_mtok=bad, output_usd_per_mtok=1)
