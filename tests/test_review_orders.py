"""review_orders = 2 (ADR 0046): the reverse order, the merge, the council's metadata."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import simulated_config
from llm_council.anonymize import assign_labels, reversed_labels
from llm_council.config import (
    council_config_from_mapping,
    load_council_config,
    with_limit_overrides,
)
from llm_council.council import run_full_council
from llm_council.errors import ConfigError
from llm_council.results import CandidateScore, LabelAssignment, Review
from llm_council.review_orders import merge_review_orders


@given(st.lists(st.text(min_size=1, max_size=5), min_size=1, max_size=9, unique=True))
def test_the_reverse_order_is_a_bijection_with_every_slot_mirrored(members: list[str]) -> None:
    first = assign_labels(members, "r", 7)
    second = reversed_labels(first)
    n = len(members)
    assert sorted(a.model for a in second.values()) == sorted(members)
    for label, assignment in second.items():
        assert label == f"Response {chr(65 + assignment.display_index)}"
    where = {a.model: a.display_index for a in first.values()}
    for assignment in second.values():
        assert assignment.display_index == n - 1 - where[assignment.model]


def _review(scores: dict[str, float], order: int, parse_status: str = "json") -> Review:
    ranked = sorted(scores, key=lambda c: -scores[c])
    return Review(
        reviewer="r",
        label_to_model={
            f"Response {chr(65 + i)}": LabelAssignment(model=c, display_index=i)
            for i, c in enumerate(scores)
        },
        candidates=tuple(
            CandidateScore(
                candidate=c,
                label=f"Response {chr(65 + i)}",
                display_index=i,
                score=scores[c],
                rank=ranked.index(c) + 1,
            )
            for i, c in enumerate(scores)
        ),
        ranking=tuple(ranked),
        parse_status=parse_status,  # type: ignore[arg-type]
        review_order=order,
    )


def test_two_orders_merge_into_mean_scores_and_ranks() -> None:
    # order 1: a 9 (rank 1), b 5 (2), c 4 (3); order 2: a 4 (3), b 8 (1), c 6 (2)
    first = _review({"a": 9, "b": 5, "c": 4}, 0)
    second = _review({"a": 4, "b": 8, "c": 6}, 1)
    (merged,) = merge_review_orders([first, second])
    scores = {c.candidate: c.score for c in merged.candidates}
    assert scores == {"a": 6.5, "b": 6.5, "c": 5.0}
    # mean ranks: a 2.0, b 1.5, c 2.5
    assert merged.ranking == ("b", "a", "c")
    assert {c.candidate: c.rank for c in merged.candidates} == {"b": 1, "a": 2, "c": 3}
    assert merged.review_order == 0


def test_an_unparsed_second_order_leaves_the_first_as_it_is() -> None:
    first = _review({"a": 9, "b": 5}, 0)
    second = _review({"a": 1, "b": 1}, 1, parse_status="unparseable")
    assert merge_review_orders([first, second]) == [first]
    assert merge_review_orders([first]) == [first]


def test_review_orders_comes_from_the_environment_and_is_checked() -> None:
    config = load_council_config(environ={})
    assert config.review_orders == 1 and config.aggregation == "raw"
    assert with_limit_overrides(config, {"LLM_COUNCIL_REVIEW_ORDERS": "2"}).review_orders == 2
    with pytest.raises(ConfigError, match="LLM_COUNCIL_REVIEW_ORDERS"):
        with_limit_overrides(config, {"LLM_COUNCIL_REVIEW_ORDERS": "3"})
    assert with_limit_overrides(config, {"LLM_COUNCIL_AGGREGATION": "Debiased"}).aggregation == (
        "debiased"
    )
    with pytest.raises(ConfigError, match="'raw' or 'debiased'.*'fair'"):
        with_limit_overrides(config, {"LLM_COUNCIL_AGGREGATION": "fair"})
    document = {
        "council": {
            "members": [
                {"name": "a", "spec": "simulated:balanced"},
                {"name": "b", "spec": "simulated:balanced"},
            ],
            "chairman": {"name": "c", "spec": "simulated:balanced"},
            "aggregation": "fair",
        }
    }
    with pytest.raises(ConfigError, match="council.toml: field 'aggregation'.*'fair'"):
        council_config_from_mapping(document, "council.toml")
    document["council"] = {**document["council"], "aggregation": "raw", "review_orders": 0}
    with pytest.raises(ConfigError, match="field 'review_orders'"):
        council_config_from_mapping(document, "council.toml")
    # a second order changes what reviewers see: another config hash; one order: the same
    assert config.model_copy(update={"review_orders": 2}).config_hash() != config.config_hash()
    assert config.model_copy(update={"aggregation": "debiased"}).config_hash() == (
        config.config_hash()
    )


def test_a_council_with_two_orders_pays_for_both_and_records_both(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    members = [(n, "balanced", {}) for n in ("a", "b", "c")]
    one = simulated_config(*members)
    two = simulated_config(*members, review_orders=2)
    store = tmp_path / "records.jsonl"
    monkeypatch.setenv("LLM_COUNCIL_BIAS_STORE", str(store))
    monkeypatch.setenv("LLM_COUNCIL_BIAS_AUDIT", "true")
    single = asyncio.run(run_full_council("q", config=one, seed=3))
    double = asyncio.run(run_full_council("q", config=two, seed=3))
    assert len(single.stage2) == 3 and len(double.stage2) == 6
    assert [r.review_order for r in double.stage2] == [0, 0, 0, 1, 1, 1]
    # the first orders are the single-order session's own labels
    assert double.metadata["label_to_model"] == single.metadata["label_to_model"]
    assert "review_orders" not in single.metadata
    second = double.metadata["review_orders"]
    assert second["orders"] == 2 and set(second["label_to_model"]) == {"a", "b", "c"}
    for reviewer, labels in second["label_to_model"].items():
        first = double.metadata["label_to_model"][reviewer]
        assert [v["model"] for v in labels.values()] == [v["model"] for v in first.values()][::-1]
    # the cost: three more review calls' tokens
    review_input = sum(r.input_tokens or 0 for r in double.stage2)
    first_input = sum(r.input_tokens or 0 for r in double.stage2 if r.review_order == 0)
    assert review_input > first_input > 0
    assert (
        double.metadata["token_usage"]["input_tokens"]
        > single.metadata["token_usage"]["input_tokens"]
    )
    lines = [json.loads(line) for line in store.read_text().splitlines()]
    of_double = [r for r in lines if r["session_id"] == double.metadata["session_id"]]
    assert len(of_double) == 18
    second_records = [r for r in of_double if r["check_kind"] == "second_order"]
    assert len(second_records) == 9
    for record in second_records:
        first = next(
            r
            for r in of_double
            if r["check_kind"] is None
            and (r["reviewer_id"], r["model_id"]) == (record["reviewer_id"], record["model_id"])
        )
        assert record["check_of_position"] == first["position"]
        assert record["position"] == 2 - first["position"]
    # the per-session audit counted each reviewer once
    assert set(double.metadata["bias_audit"]["review_outcomes"]) == {"a", "b", "c"}


_SCORES = st.one_of(st.none(), st.integers(1, 10).map(float))


@given(
    st.lists(st.tuples(_SCORES, _SCORES), min_size=1, max_size=6),
    st.booleans(),
)
def test_a_merge_always_gives_one_review_with_ranks_1_to_k(
    pairs: list[tuple[float | None, float | None]], second_parsed: bool
) -> None:
    names = [f"m{i}" for i in range(len(pairs))]

    def review(order: int, scores: dict[str, float | None], status: str) -> Review:
        ranked = sorted((c for c in scores if scores[c] is not None), key=lambda c: -scores[c])  # type: ignore[operator]
        return Review(
            reviewer="r",
            label_to_model={
                f"Response {chr(65 + i)}": LabelAssignment(model=c, display_index=i)
                for i, c in enumerate(scores)
            },
            candidates=tuple(
                CandidateScore(
                    candidate=c,
                    label=f"Response {chr(65 + i)}",
                    display_index=i,
                    score=scores[c],
                    rank=ranked.index(c) + 1 if c in ranked else None,
                )
                for i, c in enumerate(scores)
            ),
            ranking=tuple(ranked),
            parse_status=status,  # type: ignore[arg-type]
            review_order=order,
        )

    first = review(0, dict(zip(names, (p[0] for p in pairs), strict=True)), "json")
    second = review(
        1,
        dict(zip(names, (p[1] for p in pairs), strict=True)),
        "json" if second_parsed else "unparseable",
    )
    (merged,) = merge_review_orders([first, second])
    ranks = sorted(c.rank for c in merged.candidates if c.rank is not None)
    assert ranks == list(range(1, len(ranks) + 1))
    by_rank = sorted(
        (c for c in merged.candidates if c.rank is not None), key=lambda c: c.rank or 0
    )
    assert list(merged.ranking) == [c.candidate for c in by_rank]
    for candidate, (a, b) in zip(merged.candidates, pairs, strict=True):
        given_scores = [s for s in ((a, b) if second_parsed else (a,)) if s is not None]
        expected = sum(given_scores) / len(given_scores) if given_scores else None
        assert candidate.score == expected
