"""FastChat pairwise rows -> replay records: orders, winners, errors, repetitions."""

from __future__ import annotations

from typing import Any

import pytest

from llm_council.calibration.importers import records_to_pairs
from llm_council.calibration.importers.fastchat import fastchat_pair_records
from llm_council.errors import InputError


def row(**overrides: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "question_id": 101,
        "model_1": "alpha",
        "model_2": "beta",
        "g1_winner": "model_1",
        "g2_winner": "model_1",
        "judge": ["gpt-4", "pair-v2"],
        "turn": 1,
    }
    return {**base, **overrides}


def numbered(*rows: dict[str, Any]) -> list[tuple[int, dict[str, Any]]]:
    return list(enumerate(rows, start=1))


def test_game_two_is_the_swapped_order_already_mapped_back() -> None:
    # model_1 = alpha = a. Game 1 shows alpha first (ab); game 2 shows beta first (ba);
    # both winners name models, so model_1 in game 2 is still a.
    result = fastchat_pair_records(numbered(row(g1_winner="model_1", g2_winner="model_2")), "f")
    (record,) = result.records
    assert record["judgments"] == [
        {"order": "ab", "winner": "a", "repetition": 1},
        {"order": "ba", "winner": "b", "repetition": 1},
    ]
    assert record["id"] == "q101-t1-alpha-vs-beta" and record["judge"] == "gpt-4"
    assert record["metadata"]["judge_prompt"] == "pair-v2"


def test_models_named_in_reverse_share_one_pair_and_labels() -> None:
    # model_1 = beta = b: game 1 shows b first (ba), model_1 -> b; game 2 (ab), model_2 -> a
    result = fastchat_pair_records(
        numbered(row(model_1="beta", model_2="alpha", g1_winner="model_1", g2_winner="model_2")),
        "f",
    )
    (record,) = result.records
    assert record["id"] == "q101-t1-alpha-vs-beta"
    assert (record["metadata"]["model_a"], record["metadata"]["model_b"]) == ("alpha", "beta")
    assert record["judgments"] == [
        {"order": "ba", "winner": "b", "repetition": 1},
        {"order": "ab", "winner": "a", "repetition": 1},
    ]


def test_error_is_dropped_and_counted_never_a_tie() -> None:
    result = fastchat_pair_records(numbered(row(g1_winner="tie", g2_winner="error")), "f")
    (record,) = result.records
    assert record["judgments"] == [{"order": "ab", "winner": "tie", "repetition": 1}]
    assert record["metadata"]["error_games"] == 1
    assert result.counts["error_games_dropped"] == 1 and result.counts["games"] == 1
    (pair,) = records_to_pairs(result, "f")
    assert [j.winner for j in pair.judgments] == ["tie"]  # no invented verdict for ba


def test_repeated_row_adds_repetitions_and_turns_are_separate_pairs() -> None:
    result = fastchat_pair_records(
        numbered(
            row(),
            row(g1_winner="model_2", g2_winner="error"),
            row(turn=2, judge=["gpt-4", "pair-v2-multi-turn"]),
        ),
        "f",
    )
    first, second = result.records
    assert [(j["order"], j["repetition"]) for j in first["judgments"]] == [
        ("ab", 1), ("ba", 1), ("ab", 2)
    ]  # fmt: skip
    assert second["id"] == "q101-t2-alpha-vs-beta"
    assert result.counts["repeated_rows"] == 1 and result.counts["pairs"] == 2


def test_several_judges_keep_their_own_records() -> None:
    result = fastchat_pair_records(numbered(row(), row(judge=["claude-v1", "pair-v2"])), "f")
    assert [r["judge"] for r in result.records] == ["gpt-4", "claude-v1"]
    assert result.counts["judges"] == 2
    pairs = records_to_pairs(result, "f")  # (judge, id) unique: the replay parser accepts it
    assert {p.judge for p in pairs} == {"gpt-4", "claude-v1"}


def test_same_judge_other_prompt_on_same_pair_is_an_error() -> None:
    rows = numbered(row(), row(judge=["gpt-4", "pair-v1"]))
    with pytest.raises(InputError, match=r"^f:2: field 'judge': prompt 'pair-v1' differs"):
        fastchat_pair_records(rows, "f")


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (
            {"g1_winner": "A"},
            "f:1: field 'g1_winner' must be one of model_1, model_2, tie, error; got 'A'",
        ),
        ({"g2_winner": None}, "f:1: field 'g2_winner' must be one of"),
        ({"judge": "gpt-4"}, "f:1: field 'judge' must be a [model, prompt_name] list, got 'gpt-4'"),
        ({"judge": ["gpt-4"]}, "f:1: field 'judge' must be a [model, prompt_name] list"),
        ({"model_2": "alpha"}, "f:1: fields 'model_1' and 'model_2' name the same model 'alpha'"),
        ({"model_1": 7}, "f:1: field 'model_1' must be a non-empty string, got 7"),
        ({"turn": 0}, "f:1: field 'turn' must be an integer >= 1, got 0"),
        ({"turn": True}, "f:1: field 'turn' must be an integer >= 1, got True"),
        ({"turn": "\u00b2"}, "f:1: field 'turn' must be an integer >= 1, got '\u00b2'"),
        ({"turn": " 0"}, "f:1: field 'turn' must be an integer >= 1, got ' 0'"),
        ({"question_id": [1]}, "f:1: field 'question_id' must be an integer or a string, got [1]"),
        ({"question_id": None}, "f:1: missing field 'question_id'"),
    ],
)
def test_malformed_field_is_named_with_its_line(overrides: dict[str, Any], message: str) -> None:
    with pytest.raises(InputError) as caught:
        fastchat_pair_records(numbered(row(**overrides)), "f")
    assert str(caught.value).startswith(message)
    assert "\n" not in str(caught.value)


def test_hostile_model_names_survive_the_round_trip() -> None:
    hostile = 'x"\n\u2028</script>{"id": 1}'
    result = fastchat_pair_records(numbered(row(model_2=hostile)), "f")
    (pair,) = records_to_pairs(result, "f")
    assert pair.model_b == hostile or pair.model_a == hostile
