"""Council reliability in bias-report (ADR 0062): alpha over the store's reviews and each
reviewer's score resolution, checked on generators independent of llm_council.simulation."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from generators import independent_council, rank_council
from generators.independent_council import CouncilSpec, generate_sessions
from llm_council.bias_audit.report.build import build_report
from llm_council.bias_audit.report.render.render_html import render_html
from llm_council.bias_audit.report.render.render_tables import render_csv, render_json
from llm_council.bias_audit.report.render.render_text import render_text


def _reference_alpha(sessions, metric: str) -> float:
    """Alpha by the `krippendorff` package on a matrix built here from the generator's own
    sessions: rows = reviewers, columns = (session, candidate), self-reviews left out."""
    krippendorff = pytest.importorskip("krippendorff")
    reviewers = sorted({r for s in sessions for r in s.position_mapping})
    columns = []
    for session in sessions:
        for candidate in session.quality:
            column = []
            for reviewer in reviewers:
                score = session.stage2_scores.get(reviewer, {}).get(candidate)
                own = reviewer == candidate
                column.append(math.nan if score is None or own else float(score))
            columns.append(column)
    table = np.asarray(columns, dtype=float).T
    return float(krippendorff.alpha(reliability_data=table, level_of_measurement=metric))


def _store(tmp_path: Path, spec: CouncilSpec, n_sessions: int, seed: int):
    sessions = generate_sessions(spec, n_sessions, seed)
    path = tmp_path / f"store-{spec.n_members}-{seed}.jsonl"
    independent_council.write_store(path, sessions)
    return path, sessions


@pytest.mark.parametrize("n_members", [3, 9])
def test_alpha_equals_the_package_on_the_independent_generator(tmp_path: Path, n_members: int):
    spec = CouncilSpec(n_members=n_members, missing_score_rate=0.1, missing_review_rate=0.3)
    path, sessions = _store(tmp_path, spec, 30, seed=n_members)
    section = build_report(path, n_resamples=60, seed=1).reliability
    assert section is not None
    assert section.reviewers == spec.members()
    for alpha in section.alphas:
        assert alpha.alpha.estimate == pytest.approx(
            _reference_alpha(sessions, alpha.metric), abs=1e-9
        )
        assert alpha.alpha.ci_low < alpha.alpha.estimate < alpha.alpha.ci_high
        assert not alpha.undefined_reason
    assert section.n_sessions == 30
    assert section.resamples == 60
    # integer 1-10 scores: every reviewer's resolution is finite and within the scale
    assert {item.reviewer for item in section.resolution} == set(spec.members())
    for item in section.resolution:
        assert 1.0 <= item.effective_levels <= item.distinct_levels <= 10


def test_a_noisy_reviewer_is_the_one_whose_removal_raises_alpha(tmp_path: Path):
    spec = CouncilSpec(n_members=5, noise_sds=[0.6, 0.6, 0.6, 0.6, 3.0])
    path, _ = _store(tmp_path, spec, 60, seed=3)
    section = build_report(path, n_resamples=100, seed=0).reliability
    assert section is not None
    for alpha in section.alphas:
        changes = alpha.change_without
        assert changes[4].ci_low > 0.0  # leaving judge-4 out raises agreement
        assert all(change.estimate < 0.0 for change in changes[:4])


def test_seeded_report_repeats_its_intervals_exactly(tmp_path: Path):
    path, _ = _store(tmp_path, CouncilSpec(n_members=4), 20, seed=9)
    first = build_report(path, n_resamples=50, seed=5).reliability
    again = build_report(path, n_resamples=50, seed=5).reliability
    assert first == again


def test_a_judge_that_always_gives_the_same_score(tmp_path: Path):
    lines = []
    members = ["a", "b", "c"]
    for session in range(6):
        for reviewer in members:
            for slot, candidate in enumerate(members):
                lines.append(
                    {
                        "schema_version": 2,
                        "session_id": f"s{session}",
                        "timestamp": f"2026-01-0{1 + session % 9}T00:00:00Z",
                        "reviewer_id": reviewer,
                        "model_id": candidate,
                        "position": slot,
                        "n_candidates": 3,
                        "response_length_chars": 100,
                        "response_length_words": 20 + slot,
                        "score_value": 7.0,
                        "score_scale": [1.0, 10.0],
                        "rank": slot + 1,
                        "is_self_review": reviewer == candidate,
                        "council_config_hash": "h",
                        "session_n_records": 9,
                    }
                )
    path = tmp_path / "constant.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    report = build_report(path, n_resamples=20)
    section = report.reliability
    assert section is not None
    for alpha in section.alphas:
        assert math.isnan(alpha.alpha.estimate)
        assert "every score is the same value" in alpha.undefined_reason
    for item in section.resolution:
        assert item.effective_levels == 1.0 and item.distinct_levels == 1
        assert item.unused_levels == [1, 2, 3, 4, 5, 6, 8, 9, 10]
        assert item.cannot_rank
    text = render_text(report)
    block = text[text.index("=== Council reliability") :]
    assert "undefined (every score is the same value" in block
    assert "nan" not in block.lower().replace("nance", "")  # never a NaN printed
    assert "CANNOT RANK" in block
    assert json.loads(render_json(report))["reliability"]["alphas"][0]["alpha"]["estimate"] is None


def test_rank_only_store_says_not_applicable(tmp_path: Path):
    spec = rank_council.RankCouncilSpec(n_members=4, order="reviewer")
    path = tmp_path / "ranks.jsonl"
    rank_council.write_store(path, rank_council.generate_sessions(spec, 20, seed=2))
    report = build_report(path, n_resamples=20)
    section = report.reliability
    assert section is not None
    assert section.alphas == [] and section.resolution == []
    assert section.rank_only_reviewers == spec.members()
    text = render_text(report)
    assert "Alpha: not applicable" in text
    assert "not applicable (no reviewer gives scores: rankings only)" in text


def test_every_renderer_shows_the_section_and_escapes_hostile_ids(tmp_path: Path):
    hostile = '<img src=x onerror=alert(1)>=cmd|"/c calc"!A1'
    spec = CouncilSpec(n_members=3, member_prefix=hostile)
    path, _ = _store(tmp_path, spec, 15, seed=4)
    report = build_report(path, n_resamples=30)
    html = render_html(report)
    assert 'id="section-reliability"' in html
    assert "<img src=x" not in html
    csv_text = render_csv(report)
    assert '"reliability","council","alpha_interval"' in csv_text
    assert '"reliability","council","alpha_ordinal"' in csv_text
    assert "score_resolution" in csv_text
    assert ',"=cmd' not in csv_text  # formula cells neutralised
    assert "Alpha (interval)" in render_text(report)


def test_resolution_from_counts_reads_tallies_as_tallies() -> None:
    from llm_council.bias_audit.report.analyses.reliability import resolution_from_counts

    # A: 3e11 sevens and 1e11 eights (never expanded: that would be 3.2 TB of floats);
    # B: a rank-only reviewer, left out; C: a degenerate judge, always 5, on two scales
    # (its resolution is on the scale with more scores, 1-10).
    rows = [
        ("A", 1, 10, 7.0, 300_000_000_000),
        ("A", 1, 10, 8.0, 100_000_000_000),
        ("B", 1, 10, 3.0, 9),
        ("C", 0, 5, 5.0, 2),
        ("C", 1, 10, 5.0, 4),
    ]
    by_reviewer = {item.reviewer: item for item in resolution_from_counts(rows, {"B"})}
    assert sorted(by_reviewer) == ["A", "C"]
    a, c = by_reviewer["A"], by_reviewer["C"]
    # H = -(0.75 log2 0.75 + 0.25 log2 0.25) = 0.811278 bits -> 2^H = 1.754765
    assert a.effective_levels == pytest.approx(1.7547654, abs=1e-6)
    assert a.n_scores == 400_000_000_000 and a.distinct_levels == 2
    assert a.unused_levels == [1, 2, 3, 4, 5, 6, 9, 10]
    assert c.scale == (1.0, 10.0) and c.n_scores == 4
    assert c.effective_levels == 1.0 and c.cannot_rank
