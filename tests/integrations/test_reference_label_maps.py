"""A reference session with a label that cannot be mapped loses that record, not the session."""

from __future__ import annotations

import logging

import pytest

from llm_council.bias_persistence import ConsentLevel, create_bias_records_from_session
from llm_council.integrations.reference_label_maps import usable_label_maps

STAGE1 = [{"model": m, "response": m * 4} for m in ("m/a", "m/b", "m/c")]


def test_unmappable_duplicate_and_clashing_labels_are_dropped_and_named() -> None:
    labels = {
        "Response A": {"model": "m/a", "display_index": 0},
        "Response B": {"model": "m/b", "display_index": 1},
        "Response Alpha": {"model": "m/c"},  # no display position
        "Response C": {"model": "m/ghost", "display_index": 2},  # no stage-1 answer
        "Response D": {"model": "m/a", "display_index": 2},  # m/a shown twice
        "Response F": {"model": "m/b", "display_index": 3},  # past the 3 answers
        "Response E": {"model": "m/c", "display_index": 1},  # slot 1 is m/b's
    }
    stage2 = [
        {
            "model": "rev",
            "parsed_ranking": {
                "ranking": ["Response D", "Response B", "Response A"],
                "scores": {"Response A": 4, "Response D": 9, "Response B": 6},
            },
        }
    ]
    cleaned, kept, dropped = usable_label_maps(STAGE1, stage2, labels)
    assert set(kept) == {"Response A", "Response B"}
    assert len(dropped) == 5
    assert any("'Response Alpha'" in d and "no display position" in d for d in dropped)
    assert any("'Response F'" in d and "no display position" in d for d in dropped)
    assert any("'m/ghost' has no answer" in d for d in dropped)
    assert any("'Response D'" in d and "another label" in d for d in dropped)
    assert any("'Response E'" in d and "position 1 is taken" in d for d in dropped)
    assert cleaned[0]["parsed_ranking"]["ranking"] == ["Response B", "Response A"]
    assert cleaned[0]["parsed_ranking"]["scores"] == {"Response A": 4, "Response B": 6}
    assert stage2[0]["parsed_ranking"]["scores"]["Response D"] == 9  # the input is untouched


def test_the_session_keeps_its_other_records_and_the_drop_is_counted(
    caplog: pytest.LogCaptureFixture,
) -> None:
    per_reviewer = {
        "r1": {"Response A": "m/a", "Response B": "m/b", "Response C": "m/ghost"},
        "r2": {"Response A": "m/c", "Response B": "m/a"},
    }
    stage2 = [
        {"model": "r1", "parsed_ranking": ["Response C", "Response A", "Response B"]},
        {"model": "r2", "parsed_ranking": {"scores": {"Response A": 3, "Response B": 8}}},
    ]
    with caplog.at_level(logging.WARNING):
        records = create_bias_records_from_session(
            "s1", STAGE1, stage2, per_reviewer, consent_level=ConsentLevel.LOCAL_ONLY
        )
    assert "1 label(s) dropped" in caplog.text and "m/ghost" in caplog.text
    r1 = {r.model_id: r for r in records if r.reviewer_id == "r1"}
    # r1's ranking without the dropped label: m/a above m/b, rank points on (1, 2)
    assert {m: (r.score_value, r.score_scale) for m, r in r1.items()} == {
        "m/a": (2.0, "1-2"),
        "m/b": (1.0, "1-2"),
    }
    assert {(r.model_id, r.position) for r in records if r.reviewer_id == "r2"} == {
        ("m/c", 0),
        ("m/a", 1),
    }


def test_shapes_the_builder_refuses_pass_through_unchanged() -> None:
    assert usable_label_maps("not a list", [], {"Response A": "m/a"})[2] == []
    assert usable_label_maps(STAGE1, [], ["not", "a", "map"])[1] == ["not", "a", "map"]
