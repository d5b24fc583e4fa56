"""The second generator draws what its docstring says (so tests built on it mean something)."""

from __future__ import annotations

import numpy as np
import pytest

from generators.independent_council import CouncilSpec, generate_sessions, write_store
from llm_council.bias_audit.records.schema import ReviewRecord


@pytest.mark.parametrize("n_members", [3, 9])
def test_scores_are_clipped_integers_with_ties(n_members: int) -> None:
    sessions = generate_sessions(CouncilSpec(n_members=n_members, base=8.5), 40, seed=3)
    scores = [
        s
        for session in sessions
        for given in session.stage2_scores.values()
        for s in given.values()
    ]
    assert all(s is not None and s == int(s) and 1 <= s <= 10 for s in scores)
    assert scores.count(10.0) > len(scores) * 0.1  # the ceiling is reached often
    assert len(set(scores)) < len(scores)  # ties


def test_missing_cells_and_reviews() -> None:
    spec = CouncilSpec(missing_score_rate=0.2, missing_review_rate=1.0)
    sessions = generate_sessions(spec, 50, seed=4)
    assert all(len(session.stage2_scores) == spec.n_members - 1 for session in sessions)
    cells = [s for session in sessions for g in session.stage2_scores.values() for s in g.values()]
    assert 0.12 < sum(s is None for s in cells) / len(cells) < 0.28


def test_shared_order_gives_one_display_order_per_session() -> None:
    session = generate_sessions(CouncilSpec(shared_order=True), 1, seed=5)[0]
    orders = {tuple(sorted(m.items())) for m in session.position_mapping.values()}
    assert len(orders) == 1
    assert sorted(session.flat_position_mapping().values()) == list(range(5))


def test_quality_length_correlation_is_what_was_asked() -> None:
    sessions = generate_sessions(CouncilSpec(quality_length_correlation=0.8), 400, seed=6)
    quality = [q for s in sessions for q in s.quality.values()]
    log_words = [np.log(w) for s in sessions for w in s.words.values()]
    # words are rounded to integers, so the correlation is a little below the latent 0.8
    assert np.corrcoef(quality, log_words)[0, 1] == pytest.approx(0.8, abs=0.04)


def test_records_match_the_store_schema(tmp_path) -> None:
    sessions = generate_sessions(CouncilSpec(n_members=4, missing_score_rate=0.1), 3, seed=7)
    for record in sessions[0].records():
        ReviewRecord.model_validate(record)
    assert write_store(tmp_path / "store.jsonl", sessions) == 3 * 4 * 4


def test_slot_effect_shifts_only_that_reviewers_slot() -> None:
    spec = CouncilSpec(slot_effects=[[2.0], [0.0], [0.0], [0.0], [0.0]], base=5.0)
    sessions = generate_sessions(spec, 600, seed=8)
    at_a = {"judge-0": [], "judge-1": []}
    elsewhere = {"judge-0": [], "judge-1": []}
    for session in sessions:
        for reviewer in at_a:
            for candidate, slot in session.position_mapping[reviewer].items():
                score = session.stage2_scores[reviewer][candidate]
                (at_a if slot == 0 else elsewhere)[reviewer].append(score)
    gap = {r: np.mean(at_a[r]) - np.mean(elsewhere[r]) for r in at_a}
    assert gap["judge-0"] == pytest.approx(2.0, abs=0.3)  # clipping shaves a little
    assert abs(gap["judge-1"]) < 0.3
