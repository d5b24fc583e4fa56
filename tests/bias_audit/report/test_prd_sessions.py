"""The PRD Vicuna80 reviews as records: the report must agree with a direct recount.

tests/data/prd_vicuna80/prd_sessions.jsonl.gz is written by build_sessions.py there from
/work/shared/data/prd-vicuna80 (MIT): 1600 sessions (80 questions x 20 ordered pairs),
5 reviewers who each saw that session's one shared order, verdicts as 1 / 0 / 0.5.

Recount (build_sessions.py prints it; mean score at slot A minus 0.5, which is half of
"mean at A minus mean at B" because each reviewer's two scores in a session add up to 1):

    council     0.5361 at A vs 0.4639 at B -> +0.0361
    bard        0.8009 -> +0.3009   (favours the first shown)
    gpt4        0.6050 -> +0.1050   (favours the first shown)
    gpt35       0.4919 -> -0.0081
    vicuna-13b  0.4091 -> -0.0909   (favours the second shown)
    claude      0.3734 -> -0.1266   (favours the second shown)

(The issue quotes council +0.028 and gpt4 +0.12 from its own conversion; bard, claude and
vicuna-13b agree with it to two decimals.) The old council-wide "within-reviewer
deviation" subtracted the other reviewers' score on the same answer, and those reviewers
saw it at the same slot: with a shared order that removes the council's own slot effect
and left -0.01, the wrong sign. The joint model's slot term is confounded with the answer
fixed effect here and must say so instead of printing "-0.00 [-0.00, -0.00]" and an F test.
"""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path

import pytest

from llm_council.bias_audit.report import build_report, render_text
from llm_council.bias_audit.report.model import BiasReport

FIXTURE = Path(__file__).parents[2] / "data" / "prd_vicuna80" / "prd_sessions.jsonl.gz"
RECOUNT_SLOT_A = {
    "bard": 0.3009,
    "gpt4": 0.1050,
    "gpt35": -0.0081,
    "vicuna-13b": -0.0909,
    "claude": -0.1266,
}


@pytest.fixture(scope="module")
def prd_report(tmp_path_factory: pytest.TempPathFactory) -> BiasReport:
    store = tmp_path_factory.mktemp("prd") / "prd.jsonl"
    with gzip.open(FIXTURE, "rb") as source, store.open("wb") as target:
        shutil.copyfileobj(source, target)
    return build_report(store, n_resamples=20)


def test_store_shape(prd_report: BiasReport) -> None:
    assert (prd_report.n_records, prd_report.n_sessions, prd_report.n_reviewers) == (16000, 1600, 5)


def test_council_slot_effect_matches_the_recount(prd_report: BiasReport) -> None:
    position = prd_report.position
    assert position is not None and position.test_n_candidates == 2
    council = position.council
    assert council.identified
    assert council.slot_effect[0].estimate == pytest.approx(0.0361, abs=5e-4)
    assert council.slot_effect[1].estimate == pytest.approx(-0.0361, abs=5e-4)
    assert council.slot_effect[0].ci_low > 0  # the sign the recount has
    assert position.mean_score[0].estimate == pytest.approx(0.5361, abs=5e-4)


def test_per_reviewer_slot_effects_match_the_recount(prd_report: BiasReport) -> None:
    assert prd_report.position is not None
    by_reviewer = {p.subject: p for p in prd_report.position.per_reviewer}
    assert set(by_reviewer) == set(RECOUNT_SLOT_A)
    for reviewer, expected in RECOUNT_SLOT_A.items():
        profile = by_reviewer[reviewer]
        assert profile.slot_effect[0].estimate == pytest.approx(expected, abs=5e-4), reviewer
    # opposite judges, each clearly flagged in its own direction
    assert by_reviewer["bard"].direction == "primacy" and by_reviewer["bard"].flagged
    assert by_reviewer["gpt4"].direction == "primacy" and by_reviewer["gpt4"].flagged
    assert by_reviewer["claude"].direction == "recency" and by_reviewer["claude"].flagged
    assert by_reviewer["vicuna-13b"].direction == "recency" and by_reviewer["vicuna-13b"].flagged
    assert not by_reviewer["gpt35"].flagged


def test_joint_model_says_the_shared_order_slot_is_not_identified(
    prd_report: BiasReport,
) -> None:
    joint = prd_report.joint
    assert joint is not None
    slot_b = next(e for e in joint.effects if e.group == "position")
    assert not slot_b.identified
    assert not joint.position_identified
    text = render_text(prd_report)
    assert "Slots jointly: not identified" in text
    assert "Slots jointly: F =" not in text
    # identified terms are still estimated: gpt4's self-review bonus is real here
    gpt4_self = next(e for e in joint.effects if e.group == "self_review" and e.term == "gpt4")
    assert gpt4_self.identified and gpt4_self.ci_low > 0


def test_leniency_on_a_forced_choice_scale_is_not_identified(prd_report: BiasReport) -> None:
    assert {p.leniency_label for p in prd_report.profiles} == {"not identified"}
    joint = prd_report.joint
    assert joint is not None
    assert not any(e.identified for e in joint.effects if e.group == "reviewer_leniency")
