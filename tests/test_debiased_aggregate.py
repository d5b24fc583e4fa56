"""The debiased aggregate (ADR 0046): hand-derived standings from known adjustments."""

from __future__ import annotations

import math

import pytest

from llm_council.aggregate import aggregate_reviews
from llm_council.debiased_aggregate import (
    ReviewerAdjustment,
    centred_log_lengths,
    chairman_standings,
    debiased_aggregate,
)
from llm_council.results import CandidateScore, LabelAssignment, Review


def _review(
    reviewer: str, shown: list[str], scores: dict[str, float | None], review_order: int = 0
) -> Review:
    """``shown`` in display order; ranks follow the scores (ties by name)."""
    ranked = sorted(
        (c for c in shown if scores.get(c) is not None), key=lambda c: (-(scores[c] or 0), c)
    )
    return Review(
        reviewer=reviewer,
        label_to_model={
            f"Response {chr(65 + i)}": LabelAssignment(model=c, display_index=i)
            for i, c in enumerate(shown)
        },
        candidates=tuple(
            CandidateScore(
                candidate=c,
                label=f"Response {chr(65 + i)}",
                display_index=i,
                score=scores.get(c),
                rank=ranked.index(c) + 1 if c in ranked else None,
                is_self_review=c == reviewer,
            )
            for i, c in enumerate(shown)
        ),
        ranking=tuple(ranked),
        parse_status="json",
        review_order=review_order,
    )


EQUAL = {"x": 1000, "y": 1000, "z": 1000}


def test_a_harsh_judge_no_longer_lifts_its_own_answer() -> None:
    # x is 3 points harsh. Raw means (self-votes out): x by y, z: 6, 6 -> 6.0;
    # y by x, z: 3, 7 -> 5.0; z by x, y: 4, 7 -> 5.5. x wins raw only because it never
    # scores itself. Remove x's -3: y: (6 + 7) / 2 = 6.5, z: (7 + 7) / 2 = 7.0, x: 6.0.
    reviews = [
        _review("x", ["x", "y", "z"], {"x": 9, "y": 3, "z": 4}),
        _review("y", ["x", "y", "z"], {"x": 6, "y": 9, "z": 7}),
        _review("z", ["x", "y", "z"], {"x": 6, "y": 7, "z": 9}),
    ]
    raw = aggregate_reviews(reviews, ["x", "y", "z"])
    debiased = debiased_aggregate(reviews, EQUAL, {"x": ReviewerAdjustment(leniency=-3.0)}, raw)
    by_model = {d.model: d for d in debiased}
    assert [d.model for d in debiased] == ["z", "y", "x"]
    assert by_model["z"].debiased_mean_score == pytest.approx(7.0)
    assert by_model["y"].debiased_mean_score == pytest.approx(6.5)
    assert by_model["x"].debiased_mean_score == pytest.approx(6.0)
    # the size of the adjustment: mean points taken off (-3 on one of two votes)
    assert by_model["y"].leniency_adjustment == pytest.approx(-1.5)
    assert by_model["x"].leniency_adjustment == pytest.approx(0.0)
    assert by_model["y"].mean_score - by_model["y"].debiased_mean_score == pytest.approx(-1.5)
    assert {d.model: d.raw_place for d in debiased} == {s.model: s.place for s in raw}


def test_slot_and_length_adjustments_follow_the_formula() -> None:
    # reviewer r adds +2 at slot A and 1 point per doubling of length. Lengths 1000, 2000,
    # 4000 chars: log2 = 9.97, 10.97, 11.97, centred -1, 0, +1.
    chars = {"a": 1000, "b": 2000, "c": 4000}
    assert centred_log_lengths(chars) == pytest.approx({"a": -1.0, "b": 0.0, "c": 1.0})
    reviews = [_review("r", ["c", "a", "b"], {"a": 5, "b": 5, "c": 8})]
    adjustment = ReviewerAdjustment(slot_effects=(2.0, 0.0, 0.0), length_slope=1.0)
    raw = aggregate_reviews(reviews, ["a", "b", "c"])
    debiased = {d.model: d for d in debiased_aggregate(reviews, chars, {"r": adjustment}, raw)}
    # c: 8 - 2 (slot A) - 1 (length +1) = 5; a: 5 - 0 - (-1) = 6; b: 5
    assert debiased["c"].debiased_mean_score == pytest.approx(5.0)
    assert debiased["a"].debiased_mean_score == pytest.approx(6.0)
    assert debiased["b"].debiased_mean_score == pytest.approx(5.0)
    assert debiased["c"].slot_adjustment == pytest.approx(2.0)
    assert debiased["a"].length_adjustment == pytest.approx(-1.0)
    assert debiased["a"].place == 1
    # tie on 5.0 between b and c: broken by the raw place (c first raw)
    assert debiased["c"].place < debiased["b"].place


def test_zero_adjustments_rank_by_mean_score_and_two_orders_count_once() -> None:
    first = _review("r", ["a", "b"], {"a": 8, "b": 6})
    second = _review("r", ["b", "a"], {"a": 6, "b": 6}, review_order=1)
    other = _review("s", ["a", "b"], {"a": 5, "b": 7})
    raw = aggregate_reviews([first, other], ["a", "b"])
    debiased = {
        d.model: d for d in debiased_aggregate([first, second, other], {"a": 10, "b": 10}, {}, raw)
    }
    # r counts once with its two orders averaged: a (8 + 6) / 2 = 7, then s: 5 -> 6.0
    assert debiased["a"].debiased_mean_score == pytest.approx(6.0)
    assert debiased["a"].score_votes == 2
    assert debiased["b"].debiased_mean_score == pytest.approx(6.5)
    # with order-specific slot effects the per-order slots are used: A +1 for r
    adjusted = {
        d.model: d
        for d in debiased_aggregate(
            [first, second, other],
            {"a": 10, "b": 10},
            {"r": ReviewerAdjustment(slot_effects=(1.0, -1.0))},
            raw,
        )
    }
    # a: r's orders (8 - 1, 6 + 1) -> 7; with s: 6.0. b: r's (6 + 1, 6 - 1) -> 6; 6.5
    assert adjusted["a"].debiased_mean_score == pytest.approx(6.0)
    assert adjusted["a"].slot_adjustment == pytest.approx(0.0)


def test_unscored_and_unparsed_reviews_and_checks_add_nothing() -> None:
    review = _review("r", ["a", "b"], {"a": None, "b": 4})
    failed = Review(reviewer="s", label_to_model={}, parse_status="unparseable")
    check = _review("t", ["a", "b"], {"a": 10, "b": 1}).model_copy(update={"check_kind": "repeat"})
    raw = aggregate_reviews([review], ["a", "b"])
    debiased = debiased_aggregate([review, failed, check], {}, {}, raw)
    assert [d.model for d in debiased] == ["b", "a"]
    assert debiased[1].debiased_mean_score is None
    assert debiased[1].score_votes == 0


def test_chairman_standings_follow_the_debiased_places() -> None:
    reviews = [
        _review("x", ["x", "y", "z"], {"x": 9, "y": 3, "z": 4}),
        _review("y", ["x", "y", "z"], {"x": 6, "y": 9, "z": 7}),
        _review("z", ["x", "y", "z"], {"x": 6, "y": 7, "z": 9}),
    ]
    raw = aggregate_reviews(reviews, ["x", "y", "z"])
    debiased = debiased_aggregate(reviews, EQUAL, {"x": ReviewerAdjustment(leniency=-3.0)}, raw)
    shown = chairman_standings(raw, debiased)
    assert [(s.model, s.place) for s in shown] == [("z", 1), ("y", 2), ("x", 3)]
    assert shown[0].mean_rank == next(s.mean_rank for s in raw if s.model == "z")


def test_adjustment_finiteness_and_slots_out_of_range() -> None:
    assert not ReviewerAdjustment(leniency=math.nan).is_finite()
    assert not ReviewerAdjustment(slot_effects=(math.inf,)).is_finite()
    assert ReviewerAdjustment(slot_effects=(1.0,)).slot_effect(5) == 0.0
    assert ReviewerAdjustment(slot_effects=(1.0,)).slot_effect(-1) == 0.0
