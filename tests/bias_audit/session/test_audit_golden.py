"""The sped-up audit computes exactly what the audit computed before (ADR 0029).

The golden file was written by the code before the per-design caches and batched tests
(``audit_golden_cases.py``); every number must agree to 1e-12 and everything else
(flags, names, notes, counts, None-ness) must be equal.

ADR 0047 made the pooled self-preference precision-weighted and re-saved, deliberately,
only what that changes: ``pooled_self_preference(_p_value)`` of the moderated cases (22 of
164 sessions), and in ``moderated-5-biased#3`` the self-preference flag, which the case
plants (``self_bias`` 1.5 in all five members) and the weighted mean now finds.

ADR 0050 re-saved, deliberately, what the session's error rate and the slot-adjusted
self-preference change (121 of 164 sessions; the rest only gained the new fields
``risk_p_values``, ``risk_p_values_adjusted`` and ``session_error_rate``):

- self-preference predicted with slot effects where the orders identify them
  (``self_preference_adjusted`` / ``_p_values`` / ``pooled_*`` and the
  ``indicator_only["self_preference"]`` note in 119 sessions);
- flags the session's Holm procedure no longer raises (19 sessions: ``null-7#7``
  self-preference; ``missing-5#2`` and ``biased-5#4, 8, 11, 15, 18`` position;
  ``biased-6-harsh#0, 1, 4-9`` leniency, ``#3`` keeps judge-1 only; ``moderated-5-biased#2,
  3, 4, 6`` self-preference, ``#1`` judge-3 and ``#5, 9, 10`` judge-0 no longer named);
- reviewer offsets and their p-values where the step-down now stops at an earlier step
  (12 sessions);
- ``null-3#2`` and ``moderated-3#5``: a 3-member position test that cannot fire (8
  orderings) is no longer reported as tested.

The case ``moderated-6-two-harsh`` was added so the step-down still removes two reviewers.
"""

from __future__ import annotations

import json
import math
from typing import Any

from bias_audit.session.audit_golden_cases import CASES, GOLDEN_PATH, audit_cases

TOLERANCE = 1e-12


def _differences(expected: Any, actual: Any, where: str) -> list[str]:
    if isinstance(expected, dict) and isinstance(actual, dict):
        if expected.keys() != actual.keys():
            return [f"{where}: keys {sorted(expected)} != {sorted(actual)}"]
        return [
            difference
            for key in expected
            for difference in _differences(expected[key], actual[key], f"{where}.{key}")
        ]
    if isinstance(expected, list) and isinstance(actual, list):
        if len(expected) != len(actual):
            return [f"{where}: {expected!r} != {actual!r}"]
        return [
            difference
            for position, (left, right) in enumerate(zip(expected, actual, strict=True))
            for difference in _differences(left, right, f"{where}[{position}]")
        ]
    if (
        isinstance(expected, float)
        and isinstance(actual, float | int)
        and not isinstance(actual, bool)
    ):
        if math.isclose(expected, actual, rel_tol=TOLERANCE, abs_tol=TOLERANCE):
            return []
        return [f"{where}: {expected!r} != {actual!r}"]
    return (
        []
        if expected == actual and type(expected) is type(actual)
        else [f"{where}: {expected!r} != {actual!r}"]
    )


def _as_saved(result: dict[str, Any]) -> dict[str, Any]:
    """The result in the golden file's vocabulary.

    The golden file predates ADR 0032, which added ``risk_tests_run`` and the
    ``not_tested`` risk level (a session where no risk test ran used to read "low"), and
    ADR 0039 (``position_bias_detected`` None when untested); those changes are deliberate and tested in ``test_risk_not_tested.py``, so it is mapped back
    here and everything else must still be equal.

    ADR 0040 added the note ``indicator_only["confounded_with_slot"]`` to sessions where
    every reviewer saw one identical order (self-preference is then not flagged nor
    counted as tested); in the golden cases it fires on the shared-order case only, where
    no self-preference was flagged, so nothing else changed. It is removed here and tested
    in ``test_rank_and_fixed_order.py``.
    """
    saved = dict(result)
    saved["indicator_only"] = {
        key: note for key, note in saved["indicator_only"].items() if key != "confounded_with_slot"
    }
    tests_run = saved.pop("risk_tests_run")
    # ADR 0039: an untested position reads None (the reference design's convention), where
    # the golden file has False
    if saved["position_bias_detected"] is None:
        assert saved["position_score_p_value"] is None
        saved["position_bias_detected"] = False
    # issue 28 added a note (no number changed) where a small pooled self-preference
    # p-value sits beside no flag; test_pooled_self_preference_note.py covers it
    notes = dict(saved["indicator_only"])
    pooled_note = notes.pop("pooled_self_preference", None)
    if pooled_note is not None:
        assert saved["pooled_self_preference_p_value"] < saved["significance_level"]
        assert not saved["self_preference_detected"]
    # issue 37 C.5 added a note (no number changed) where the council-wide test flags
    # self-preference and no reviewer is named; test_pooled_self_preference_note.py covers it
    council_note = notes.pop("council_self_preference", None)
    if council_note is not None:
        assert saved["self_preference_detected"] and not saved["self_preferring_reviewers"]
    saved["indicator_only"] = notes
    if saved["overall_bias_risk"] == "not_tested":
        assert not tests_run
        saved["overall_bias_risk"] = "low"
    return saved


def test_every_seeded_audit_equals_the_saved_result_to_1e_12() -> None:
    golden = json.loads(GOLDEN_PATH.read_text(encoding="utf-8"))
    recomputed = list(audit_cases())
    assert len(recomputed) == len(golden) == sum(case[2] for case in CASES)
    problems: list[str] = []
    n_not_tested = 0
    for saved, (name, index, result) in zip(golden, recomputed, strict=True):
        assert (saved["case"], saved["index"]) == (name, index)
        n_not_tested += result["overall_bias_risk"] == "not_tested"
        shared = name == "shared-order-5"
        assert ("confounded_with_slot" in result["indicator_only"]) == shared, (name, index)
        problems += _differences(saved["result"], _as_saved(result), f"{name}#{index}")
    # the 3-member null cases are where nothing can be tested
    assert 0 < n_not_tested < len(golden)
    assert not problems, "\n".join(problems[:20])


def test_the_golden_cases_exercise_every_flag_and_note() -> None:
    """A comparison that never meets a flag, a step-down removal or a refusal proves little."""
    golden = json.loads(GOLDEN_PATH.read_text(encoding="utf-8"))
    flags = {flag for saved in golden for flag in saved["result"]["flags_raised"]}
    assert flags == {
        "length_bias_detected",
        "position_bias_detected",
        "harsh_or_generous_reviewers",
        "self_preference_detected",
    }
    notes = {note for saved in golden for note in saved["result"]["indicator_only"]}
    assert {"reviewers", "position"} <= notes
    assert any(len(saved["result"]["harsh_reviewers"]) >= 2 for saved in golden)


def test_the_session_table_equals_the_mapping_table_of_the_same_session() -> None:
    """Both entry points of the audit build one table (the golden cases use the mappings)."""
    import asyncio

    import numpy as np

    from llm_council import run_full_council
    from llm_council.bias_audit.session.score_table import (
        score_table_from_mappings,
        score_table_from_session,
    )
    from llm_council.config import CouncilConfig, CouncilMember
    from llm_council.middleware import Middleware, SessionCompleted

    events: list[SessionCompleted] = []

    class Capture(Middleware):
        name = "capture"

        async def on_session_end(self, event: SessionCompleted) -> None:
            events.append(event)
            return None

    config = CouncilConfig(
        members=tuple(CouncilMember(name=f"m{i}", spec="simulated:unbiased") for i in range(4)),
        chairman=CouncilMember(name="chair", spec="simulated:unbiased"),
    )
    for seed in range(3):
        asyncio.run(run_full_council("q", config=config, seed=seed, middleware=[Capture()]))
    for event in events:
        session = score_table_from_session(event.answers, event.reviews)
        mapped = score_table_from_mappings(
            {answer.member: answer.text or "" for answer in event.answers if answer.ok},
            {
                review.reviewer: {entry.candidate: entry.score for entry in review.candidates}
                for review in event.reviews
            },
            {
                review.reviewer: {e.candidate: e.display_index for e in review.candidates}
                for review in event.reviews
            },
        )
        assert session.reviewers == mapped.reviewers
        assert session.candidates == mapped.candidates
        for field in ("scores", "positions", "is_self", "length_chars", "length_words"):
            left, right = getattr(session, field), getattr(mapped, field)
            assert left.dtype == right.dtype and left.shape == right.shape, field
            assert np.array_equal(left, right, equal_nan=left.dtype.kind == "f"), field
