"""MT-bench human judgments: majority labels, agreement, ties between annotators, text."""

from __future__ import annotations

from typing import Any

import pytest

from llm_council.calibration.importers import records_to_pairs
from llm_council.calibration.importers.fastchat import fastchat_pair_records
from llm_council.calibration.importers.mtbench_human import (
    attach_human_judgments,
    human_pair_records,
    read_human_judgments,
)
from llm_council.calibration.majority import strict_plurality
from llm_council.errors import InputError


def vote(winner: str, annotator: str, **overrides: Any) -> dict[str, Any]:
    base = {"question_id": 7, "model_a": "alpha", "model_b": "beta", "turn": 1}
    return {**base, "winner": winner, "judge": annotator, **overrides}


def numbered(*rows: dict[str, Any]) -> list[tuple[int, dict[str, Any]]]:
    return list(enumerate(rows, start=1))


@pytest.mark.parametrize(
    ("labels", "expected"),
    [(["a", "a", "b"], "a"), (["a", "b"], None), (["tie", "tie", "a", "b"], "tie"), ([], None)],
)
def test_majority_is_a_strict_plurality(labels: list[str], expected: str | None) -> None:
    assert strict_plurality(labels) == expected


def test_votes_become_a_majority_label_with_agreement() -> None:
    # beta = b. Votes: b (model_b), b (model_a of the swapped row = beta), tie (bothbad)
    rows = numbered(
        vote("model_b", "author_0"),
        vote("model_a", "author_1", model_a="beta", model_b="alpha"),
        vote("tie (bothbad)", "expert_0"),
    )
    result = human_pair_records(read_human_judgments(rows, "h"))
    (record,) = result.records
    assert record["human_label"] == "b"
    assert record["metadata"]["human_agreement"] == pytest.approx(2 / 3)
    assert [v["label"] for v in record["human_labels"]] == ["b", "b", "tie"]
    assert "judge" not in record and "judgments" not in record
    assert result.counts["human_agreement_mean"] == pytest.approx(2 / 3)
    assert result.counts["human_unanimous"] == 0
    (pair,) = records_to_pairs(result, "h")
    assert pair.human_label == "b"


def test_tied_annotators_give_no_label_and_are_counted() -> None:
    rows = numbered(vote("model_a", "x"), vote("model_b", "y"), vote("tie", "x"), vote("tie", "y"))
    result = human_pair_records(read_human_judgments(rows, "h"))  # a: 1, b: 1, tie: 2 -> tie
    assert result.records[0]["human_label"] == "tie"
    assert result.counts["human_repeat_votes"] == 2
    rows = numbered(vote("model_a", "x"), vote("model_b", "y"))
    result = human_pair_records(read_human_judgments(rows, "h"))
    (record,) = result.records
    assert "human_label" not in record and record["metadata"]["human_agreement"] is None
    assert result.counts["human_no_majority"] == 1
    assert result.counts["human_agreement_mean"] is None  # nothing to average, not 0


def test_conversations_supply_the_turn_text() -> None:
    conversation_alpha = [
        {"role": "user", "content": "Q1"}, {"role": "assistant", "content": "alpha 1"},
        {"role": "user", "content": "Q2"}, {"role": "assistant", "content": "alpha 2"},
    ]  # fmt: skip
    conversation_beta = [
        {"role": "user", "content": "Q1"}, {"role": "assistant", "content": "beta 1"},
        {"role": "user", "content": "Q2"}, {"role": "assistant", "content": "beta 2"},
    ]  # fmt: skip
    # the row names beta as model_a: its conversation_a is beta's
    rows = numbered(
        vote(
            "model_a", "x", turn=2, model_a="beta", model_b="alpha",
            conversation_a=conversation_beta, conversation_b=conversation_alpha,
        )
    )  # fmt: skip
    (record,) = human_pair_records(read_human_judgments(rows, "h")).records
    assert (record["prompt"], record["response_a"], record["response_b"]) == (
        "Q2", "alpha 2", "beta 2"
    )  # fmt: skip
    assert record["metadata"]["answer_text"] is True and record["human_label"] == "b"


def test_short_conversation_is_an_error_naming_the_field() -> None:
    rows = numbered(
        vote("tie", "x", turn=2, conversation_a=[{"role": "user", "content": "Q1"}],
             conversation_b=[])
    )  # fmt: skip
    with pytest.raises(
        InputError, match=r"^h:1: field 'conversation_a' has no assistant message 2"
    ):
        read_human_judgments(rows, "h")


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (
            {"winner": "A"},
            "h:1: field 'winner' must be one of model_a, model_b, tie, tie (bothbad); got 'A'",
        ),
        ({"judge": None}, "h:1: field 'judge' must be the annotator id string, got None"),
        ({"model_b": ""}, "h:1: field 'model_b' must be a non-empty string, got ''"),
    ],
)
def test_malformed_human_row(overrides: dict[str, Any], message: str) -> None:
    with pytest.raises(InputError) as caught:
        read_human_judgments(numbered({**vote("tie", "x"), **overrides}), "h")
    assert str(caught.value) == message


def test_attach_matches_question_turn_and_models_in_either_order() -> None:
    judge_rows = numbered(
        {"question_id": 7, "model_1": "beta", "model_2": "alpha", "g1_winner": "model_1",
         "g2_winner": "model_1", "judge": ["gpt-4", "pair-v2"], "turn": 1},
        {"question_id": 7, "model_1": "beta", "model_2": "alpha", "g1_winner": "tie",
         "g2_winner": "tie", "judge": ["gpt-4", "pair-v2-multi-turn"], "turn": 2},
    )  # fmt: skip
    judged = fastchat_pair_records(judge_rows, "j")
    human = read_human_judgments(numbered(vote("model_b", "x"), vote("model_b", "y")), "h")
    result = attach_human_judgments(judged, human)
    turn1, turn2 = result.records
    assert turn1["human_label"] == "b" and turn1["metadata"]["human_agreement"] == 1.0
    assert "human_label" not in turn2  # humans judged turn 1 only
    assert result.counts["human_pairs_attached"] == 1
    assert result.counts["human_pairs_unmatched"] == 0
    assert "human_label" not in judged.records[0]  # the input result is not mutated
