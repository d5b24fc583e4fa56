"""The isotonic confidence map (calibration/confidence_map.py): fit, held-out ECE, save, apply."""

from __future__ import annotations

import json

import numpy as np
import pytest

from llm_council.calibration.confidence_map import (
    fit_confidence_map,
    read_confidence_map,
)
from llm_council.calibration.pairs import parse_pairs_lines
from llm_council.calibration.report import ReportOptions, compute_report, outcomes_from_judgments
from llm_council.cli.app import _run, app
from llm_council.errors import InputError


def test_pava_by_hand():
    # confidences 0.1..0.6 with right = 1,0,0,1,0,1: pool adjacent violators:
    # [1, 0] -> 0.5, 0.5; then [0.5, 0.5, 0] -> 1/3 x3; [1, 0] -> 0.5 x2; 1 stays
    mapping = fit_confidence_map([0.1, 0.2, 0.3, 0.4, 0.5, 0.6], [1, 0, 0, 1, 0, 1])
    assert mapping.x == (0.1, 0.2, 0.3, 0.4, 0.5, 0.6)
    assert mapping.y == pytest.approx([1 / 3, 1 / 3, 1 / 3, 0.5, 0.5, 1.0])
    # linear between points, clipped outside them
    assert mapping.apply([0.0, 0.35, 0.55, 0.9]) == pytest.approx([1 / 3, 5 / 12, 0.75, 1.0])


def test_ties_in_confidence_are_one_weighted_point():
    mapping = fit_confidence_map([0.8, 0.8, 0.8, 0.9], [True, True, False, False])
    # 0.8 -> 2/3 (weight 3) and 0.9 -> 0 violate; pooled: (2 + 0) / 4 = 0.5 both
    assert mapping.x == (0.8, 0.9) and mapping.y == pytest.approx([0.5, 0.5])


def _overconfident_pairs(n: int, seed: int) -> list[str]:
    """A judge that states 0.7-0.99 but is right with probability 2 * confidence - 1."""
    rng = np.random.default_rng(seed)
    lines = []
    for i in range(n):
        judgments = []
        for order in ("ab", "ba"):
            stated = float(rng.uniform(0.7, 0.99))
            right = rng.random() < 2 * stated - 1
            judgments.append(
                {"order": order, "winner": "a" if right else "b", "confidence": stated}
            )
        lines.append(
            json.dumps(
                {
                    "id": f"p{i}",
                    "prompt": "q",
                    "response_a": "x",
                    "response_b": "y",
                    "human_label": "a",
                    "judge": "j",
                    "judgments": judgments,
                }  # fmt: skip
            )
        )
    return lines


def test_held_out_ece_falls_for_an_overconfident_judge():
    pairs = parse_pairs_lines(_overconfident_pairs(300, 1), "x.jsonl")
    section = compute_report(outcomes_from_judgments(pairs), ReportOptions(judge="j"))[
        "confidence_calibration"
    ]
    isotonic = section["isotonic"]
    assert isotonic["available"]
    assert sum(h["n_held_out"] for h in isotonic["halves"]) == section["n_verdicts"] == 600
    # stated ~0.85 vs right ~0.69: ECE about 0.15 before; the map removes most of it
    assert isotonic["ece_before"] > 0.1
    assert isotonic["ece_after"] < isotonic["ece_before"] / 2


def test_save_then_apply_the_map(tmp_path):
    pairs_file = tmp_path / "pairs.jsonl"
    pairs_file.write_text("\n".join(_overconfident_pairs(300, 2)) + "\n")
    saved = tmp_path / "map.json"
    assert _run(
        ["calibrate", str(pairs_file), "--save-confidence-map", str(saved), "--output",
         str(tmp_path / "before.json")],
        "llm-council", app,
    ) in (0, 3)  # fmt: skip
    mapping = read_confidence_map(saved)
    assert json.loads(saved.read_text())["n_verdicts"] == 600
    assert _run(
        ["calibrate", str(pairs_file), "--confidence-map", str(saved), "--output",
         str(tmp_path / "after.json")],
        "llm-council", app,
    ) in (0, 3)  # fmt: skip
    before = json.loads((tmp_path / "before.json").read_text())["reports"][0]
    after = json.loads((tmp_path / "after.json").read_text())["reports"][0]
    # in-sample the mapped confidences are the isotonic fit: ECE near zero
    assert after["confidence_calibration"]["ece"] < before["confidence_calibration"]["ece"] / 3
    # the saved map is the one the report fitted on every verdict
    assert list(mapping.x) == before["confidence_calibration"]["isotonic_map"]["x"]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("not json", "cannot read a confidence map"),
        ('{"format": "x"}', "not a confidence map"),
        ('{"format": "llm-council-confidence-map/1", "x": [0.5], "y": []}', "equal length"),
        ('{"format": "llm-council-confidence-map/1", "x": [0.5, 0.4], "y": [0.1, 0.2]}',
         "non-decreasing"),
        ('{"format": "llm-council-confidence-map/1", "x": [0.5], "y": [2.0]}', "in \\[0, 1\\]"),
        ('{"format": "llm-council-confidence-map/1", "x": [NaN], "y": [0.5]}', "finite"),
        ("[" * 100000, "cannot read"),
    ],
)  # fmt: skip
def test_a_bad_map_file_is_one_line(tmp_path, content, message):
    path = tmp_path / "map.json"
    path.write_text(content)
    with pytest.raises(InputError, match=message):
        read_confidence_map(path)
