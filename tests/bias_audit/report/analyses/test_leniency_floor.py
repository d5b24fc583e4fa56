"""harsh / generous need a material difference, not only a significant one.

Over hundreds of sessions a tenth of a point is significant; "harsh" on that would send a
user to recalibrate a judge whose difference no single verdict shows. The floor is
``MATERIAL_LENIENCY_SHARE`` of the scale's range: 0.025 x 9 = 0.225 points on 1-10.
"""

from __future__ import annotations

import pytest

from llm_council.bias_audit.report.analyses.reviewers import (
    MATERIAL_LENIENCY_SHARE,
    _leniency_label,
)
from llm_council.stats.inference.pooling import IntervalEstimate
from llm_council.stats.reviewers.robust_leniency import ReviewerLeniency


def _result(estimate: float, flagged: bool) -> ReviewerLeniency:
    interval = IntervalEstimate(estimate, estimate - 0.05, estimate + 0.05, 0.025, 1e-6, 400)
    return ReviewerLeniency(interval, 1e-5 if flagged else 0.5, flagged, not flagged)


MATERIAL = MATERIAL_LENIENCY_SHARE * 9.0  # 0.225 points on the 1-10 scale


@pytest.mark.parametrize(
    ("estimate", "flagged", "label"),
    [
        (-1.5, True, "harsh"),
        (0.30, True, "generous"),
        (-0.14, True, "neutral"),  # significant, not material
        (0.22, True, "neutral"),
        (-1.5, False, "neutral"),  # material but not significant: never a label
    ],
)
def test_a_label_needs_both_the_test_and_the_floor(
    estimate: float, flagged: bool, label: str
) -> None:
    assert _leniency_label(_result(estimate, flagged), MATERIAL) == label


def test_the_floor_scales_with_the_score_range() -> None:
    # on a 0-1 scale the same share is 0.025 points: 0.05 is material there
    assert _leniency_label(_result(-0.05, True), MATERIAL_LENIENCY_SHARE * 1.0) == "harsh"
