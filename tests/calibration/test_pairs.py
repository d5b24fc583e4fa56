"""Reading pairs files: valid records, and one-line errors naming file, line and field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from llm_council.calibration.pairs import (
    pair_to_record,
    parse_pairs_lines,
    read_pairs,
    slot_to_original,
)
from llm_council.errors import InputError

GOOD = {
    "id": "p1",
    "prompt": "q",
    "response_a": "x",
    "response_b": "y",
    "metadata": {"model_a": "gpt-4"},
}


def _lines(*records: object) -> list[str]:
    return [json.dumps(r) for r in records]


def test_reads_required_and_optional_fields() -> None:
    record = {**GOOD, "human_label": "TIE", "subset_tags": ["math"], "reference_answer": "r"}
    (pair,) = parse_pairs_lines(_lines(record), "f.jsonl")
    assert (pair.pair_id, pair.model_a, pair.model_b) == ("p1", "gpt-4", None)
    assert pair.human_label == "tie"
    assert pair.subset_tags == ("math",)
    assert pair.line == 1


def test_repetitions_are_numbered_per_order_in_file_order() -> None:
    record = {
        **GOOD,
        "judge": "j",
        "judgments": [
            {"order": "ab", "winner": "a"},
            {"order": "ba", "winner": "b"},
            {"order": "ab", "winner": "tie"},
        ],
    }
    (pair,) = parse_pairs_lines(_lines(record), "f.jsonl")
    assert [(j.order, j.winner, j.repetition) for j in pair.judgments] == [
        ("ab", "a", 0),
        ("ba", "b", 0),
        ("ab", "tie", 1),
    ]


@pytest.mark.parametrize(
    ("record", "message"),
    [
        (
            {k: v for k, v in GOOD.items() if k != "response_b"},
            "f.jsonl:2: missing field 'response_b'",
        ),
        (
            {**GOOD, "human_label": "A+"},
            "f.jsonl:2: field 'human_label' must be one of a, b, tie; got 'A+'",
        ),
        (
            {**GOOD, "judge": "j", "judgments": [{"order": "xy", "winner": "a"}]},
            "judgments[0].order",
        ),
        ({**GOOD, "judgments": [{"order": "ab", "winner": "a"}]}, "field 'judge' is required"),
        ({**GOOD, "id": ""}, "field 'id' must be a non-empty string"),
        ({**GOOD, "prompt": 3}, "field 'prompt' must be a string, got int"),
    ],
)
def test_bad_records_name_line_and_field(record: dict, message: str) -> None:
    other = {**GOOD, "id": "other"}
    with pytest.raises(InputError) as caught:
        parse_pairs_lines(_lines(other, record), "f.jsonl")
    assert message in str(caught.value)
    assert caught.value.line == 2


def test_invalid_json_and_duplicates_are_reported_with_line() -> None:
    with pytest.raises(InputError, match=r"f.jsonl:2: invalid JSON"):
        parse_pairs_lines([json.dumps(GOOD), "{not json"], "f.jsonl")
    with pytest.raises(InputError, match=r"f.jsonl:3: duplicate id 'p1' \(first on line 1\)"):
        parse_pairs_lines([json.dumps(GOOD), "", json.dumps(GOOD)], "f.jsonl")


def test_same_id_for_two_judges_is_allowed() -> None:
    records = [{**GOOD, "judge": judge, "judgments": []} for judge in ("a", "b")]
    assert len(parse_pairs_lines(_lines(*records), "f.jsonl")) == 2


def test_missing_and_empty_files(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="file not found"):
        read_pairs(tmp_path / "absent.jsonl")
    (tmp_path / "empty.jsonl").write_text("\n")
    with pytest.raises(InputError, match="no pairs"):
        read_pairs(tmp_path / "empty.jsonl")


def test_round_trip_through_record() -> None:
    record = {
        **GOOD,
        "human_label": "b",
        "judge": "j",
        "judgments": [{"order": "ba", "winner": "a"}],
    }
    (pair,) = parse_pairs_lines(_lines(record), "f.jsonl")
    (again,) = parse_pairs_lines(_lines(pair_to_record(pair)), "f.jsonl")
    assert again == pair


def test_swapped_order_maps_back_to_original_labels() -> None:
    assert slot_to_original("ab", "first") == "a"
    assert slot_to_original("ba", "first") == "b"  # response_b was shown first
    assert slot_to_original("ba", "second") == "a"
    assert slot_to_original("ba", "tie") == "tie"
