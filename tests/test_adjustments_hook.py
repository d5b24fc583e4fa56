"""The reviewer_adjustments middleware hook and what the chairman sees (ADR 0046)."""

from __future__ import annotations

import asyncio
import json
import math
import re
from collections.abc import Mapping
from typing import Any

import pytest

from llm_council.config import CouncilConfig, CouncilMember
from llm_council.council import run_full_council
from llm_council.debiased_aggregate import ReviewerAdjustment
from llm_council.middleware import AdjustmentsRequested, Middleware

#: x is 3 points harsh; y and z score fairly (the hand example of test_debiased_aggregate)
SCORES = {
    "x": {"x": 9, "y": 3, "z": 4},
    "y": {"x": 6, "y": 9, "z": 7},
    "z": {"x": 6, "y": 7, "z": 9},
}


def _review_script(reviewer: str) -> Any:
    def review(request: Any, call_number: int) -> str:
        prompt = request.messages[-1].content
        # each answer "answer by NAME" sits in a block opened with its label
        labels = {
            member: label
            for label, member in re.findall(
                r"<<<CANDIDATE (Response [A-Z]) id=\w+>>>\nanswer by (\w)", prompt
            )
        }
        scores = {labels[m]: s for m, s in SCORES[reviewer].items() if m in labels}
        ranking = sorted(scores, key=lambda label: -scores[label])
        return json.dumps({"ranking": ranking, "scores": scores})

    return review


@pytest.fixture
def council(scripted_provider: Any) -> CouncilConfig:
    prompts: list[str] = []
    scripted_provider.scripts = {
        name: {
            "answer": lambda r, n, name=name: f"answer by {name}",
            "review": _review_script(name),
        }
        for name in SCORES
    }
    scripted_provider.scripts["chair"] = {
        "synthesize": lambda r, n: prompts.append(r.messages[-1].content) or "final"
    }
    scripted_provider.prompts = prompts
    return CouncilConfig(
        members=tuple(CouncilMember(name=n, spec=f"fake:{n}") for n in SCORES),
        chairman=CouncilMember(name="chair", spec="fake:chair"),
        aggregation="debiased",
    )


class Supplier(Middleware):
    name = "supplier"

    def __init__(self, supplied: Any) -> None:
        self.supplied = supplied
        self.requests: list[AdjustmentsRequested] = []

    async def reviewer_adjustments(
        self, event: AdjustmentsRequested
    ) -> Mapping[str, ReviewerAdjustment] | None:
        self.requests.append(event)
        if isinstance(self.supplied, Exception):
            raise self.supplied
        return self.supplied  # type: ignore[no-any-return]


def _run(config: CouncilConfig, supplier: Middleware) -> Any:
    return asyncio.run(run_full_council("q", config=config, seed=5, middleware=[supplier]))


def test_the_scripts_reproduce_the_hand_example(council: CouncilConfig) -> None:
    supplier = Supplier({})
    result = _run(council.model_copy(update={"aggregation": "raw"}), supplier)
    rows = {r["model"]: r for r in result.metadata["aggregate_rankings"]}
    # mean rank among the others' answers: z 1.0, y 1.5, x 2.0 (ranks ignore leniency);
    # mean scores: x (6 + 6) / 2 = 6.0 lifted above y 5.0 and z 5.5 by x's harshness
    assert [r["model"] for r in result.metadata["aggregate_rankings"]] == ["z", "y", "x"]
    assert (rows["x"]["mean_score"], rows["y"]["mean_score"], rows["z"]["mean_score"]) == (
        6.0,
        5.0,
        5.5,
    )
    # raw: the hook is never called and nothing new is written
    assert supplier.requests == []
    assert "debiased_rankings" not in result.metadata
    assert "aggregation_used" not in result.metadata
    assert "debias" not in result.metadata["stage_durations_s"]


def test_the_chairman_sees_the_debiased_order(
    council: CouncilConfig, scripted_provider: Any
) -> None:
    supplier = Supplier({"x": ReviewerAdjustment(leniency=-3.0, n_scores=30)})
    result = _run(council, supplier)
    metadata = result.metadata
    assert supplier.requests[0].reviewers == ("x", "y", "z")
    assert supplier.requests[0].council_config_hash == metadata["council_config_hash"]
    assert [r["model"] for r in metadata["aggregate_rankings"]] == ["z", "y", "x"]  # raw kept
    assert [r["model"] for r in metadata["debiased_rankings"]] == ["z", "y", "x"]
    assert metadata["aggregation_used"] == "debiased"
    assert metadata["reviewer_adjustments"]["x"]["leniency"] == -3.0
    assert metadata["stage_durations_s"]["debias"] >= 0
    (prompt,) = scripted_provider.prompts
    label_of = {v["model"]: k for k, v in metadata["chairman_label_to_model"].items()}
    assert f"1. {label_of['z']} (debiased mean score 7.00)" in prompt
    assert f"3. {label_of['x']} (debiased mean score 6.00)" in prompt


@pytest.mark.parametrize(
    ("supplied", "error"),
    [
        (RuntimeError("store gone"), "RuntimeError: store gone"),
        ([1, 2], "returned list, not a mapping"),
    ],
)
def test_a_failing_supplier_leaves_the_raw_order(
    council: CouncilConfig, scripted_provider: Any, supplied: Any, error: str
) -> None:
    result = _run(council, Supplier(supplied))
    assert result.metadata["aggregation_used"] == "raw"
    assert result.metadata["debiased_rankings"] is None
    assert result.metadata["middleware_errors"][0]["hook"] == "reviewer_adjustments"
    assert error in result.metadata["middleware_errors"][0]["error"]
    (prompt,) = scripted_provider.prompts
    assert "mean rank" in prompt and "debiased" not in prompt


def test_non_finite_or_wrongly_typed_adjustments_are_left_out(council: CouncilConfig) -> None:
    supplied = {
        "x": ReviewerAdjustment(leniency=math.nan),
        "y": {"leniency": 1.0},
        "z": ReviewerAdjustment(leniency=0.5),
    }
    result = _run(council, Supplier(supplied))
    assert set(result.metadata["reviewer_adjustments"]) == {"z"}
    assert "2 adjustment(s)" in result.metadata["middleware_errors"][0]["error"]
    assert result.metadata["aggregation_used"] == "debiased"
