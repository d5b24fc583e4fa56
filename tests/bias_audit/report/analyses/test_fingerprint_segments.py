"""bias-report splits a reviewer's history where its fingerprint changed (ADR 0062, issue 33
item 7c), on the independent generator with fingerprints written by the test's generator."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from generators.fingerprinted_council import fingerprint, write_fingerprinted_store
from generators.independent_council import CouncilSpec
from llm_council.bias_audit.report.analyses.fingerprints import cluster_mean
from llm_council.bias_audit.report.build import build_report
from llm_council.bias_audit.report.load.parquet_compaction import compact_store
from llm_council.bias_audit.report.render.render_html import render_html
from llm_council.bias_audit.report.render.render_tables import render_csv, render_json
from llm_council.bias_audit.report.render.render_text import render_text


def _report(path: Path):
    return build_report(path, n_resamples=20, seed=0)


@pytest.mark.parametrize("n_members", [3, 9])
def test_a_model_update_that_moves_leniency_is_split_named_and_found(
    tmp_path: Path, n_members: int
) -> None:
    path = tmp_path / "store.jsonl"
    spec = CouncilSpec(n_members=n_members, missing_score_rate=0.05, missing_review_rate=0.1)
    write_fingerprinted_store(path, spec, 60, seed=n_members, change_at=30, shift=1.0)
    report = _report(path)
    section = report.fingerprints
    assert section is not None
    assert section.n_reviewers_with_fingerprints == n_members
    assert section.n_reviewers_single_fingerprint == n_members - 1
    (moved,) = section.reviewers
    assert moved.reviewer == "judge-0"
    first, second = moved.segments
    # a missing review (rate 0.1) can drop a session from the reviewer's history
    assert first.last_session < "indep-000030" <= second.first_session
    assert 25 <= first.n_sessions <= 30 and 25 <= second.n_sessions <= 30
    (change,) = moved.changes
    assert [(c.component, c.before, c.after) for c in change.components] == [
        ("model", "gpt-4o-2024-08-06", "gpt-4o-2024-11-20")
    ]
    # the truth is +1 point of leniency; integer scores clipped at 1 and 10 shave a little
    assert change.difference.ci_low < 1.0 < change.difference.ci_high
    assert change.difference.ci_low > 0.0 and change.finding
    assert change.difference.estimate == pytest.approx(
        second.leniency.estimate - first.leniency.estimate
    )
    tested = [f for f in report.findings if f.family == "fingerprint changes"]
    assert [f.subject for f in tested] == ["judge-0"]
    text = render_text(report)
    assert "model id changed: gpt-4o-2024-08-06 -> gpt-4o-2024-11-20; leniency" in text
    assert "FINDING" in text


def test_an_update_that_changes_nothing_is_not_a_finding(tmp_path: Path) -> None:
    path = tmp_path / "store.jsonl"
    write_fingerprinted_store(path, CouncilSpec(n_members=5), 60, seed=1, change_at=30)
    (moved,) = _report(path).fingerprints.reviewers  # type: ignore[union-attr]
    (change,) = moved.changes
    assert change.difference.ci_low < 0.0 < change.difference.ci_high
    assert not change.finding


def test_a_reverted_setting_makes_three_segments_and_names_the_temperature(
    tmp_path: Path,
) -> None:
    path = tmp_path / "store.jsonl"
    hot = fingerprint("gpt-4o-2024-08-06", temperature=1.0)
    write_fingerprinted_store(path, CouncilSpec(n_members=4), 30, seed=2, change_at=10, after=hot)
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    for line in lines:  # back to the first set-up from session 20
        if int(line["session_id"].split("-")[1]) >= 20:
            line["reviewer_fingerprint"] = fingerprint("gpt-4o-2024-08-06")
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    (moved,) = _report(path).fingerprints.reviewers  # type: ignore[union-attr]
    assert [s.n_sessions for s in moved.segments] == [10, 10, 10]
    assert moved.segments[0].fingerprint == moved.segments[2].fingerprint
    assert [[(c.component, c.before, c.after) for c in ch.components] for ch in moved.changes] == [
        [("temperature", None, 1.0)],
        [("temperature", 1.0, None)],
    ]


def test_older_lines_without_fingerprints_form_an_unrecorded_segment(tmp_path: Path) -> None:
    path = tmp_path / "store.jsonl"
    write_fingerprinted_store(
        path, CouncilSpec(n_members=3), 24, seed=3, change_at=24, unfingerprinted=range(12)
    )
    report = _report(path)
    section = report.fingerprints
    assert section is not None and len(section.reviewers) == 3
    for reviewer in section.reviewers:
        assert reviewer.segments[0].fingerprint is None
        assert reviewer.changes[0].components == []
    assert "fingerprint first recorded" in render_text(report)


def test_a_store_without_fingerprints_has_no_section(tmp_path: Path) -> None:
    path = tmp_path / "store.jsonl"
    write_fingerprinted_store(
        path, CouncilSpec(n_members=3), 10, seed=4, change_at=10, unfingerprinted=range(10)
    )
    report = _report(path)
    assert report.fingerprints is None
    assert "Reviewer fingerprints" not in render_text(report)


def test_hostile_and_oversize_fingerprints_are_read_as_unrecorded(tmp_path: Path) -> None:
    path = tmp_path / "store.jsonl"
    hostile = {**fingerprint("gpt\x1b]0;pwned\x07-4o"), "prompt_text": "secret prompt"}
    huge = {**fingerprint("x" * 5000)}
    write_fingerprinted_store(
        path, CouncilSpec(n_members=3), 12, seed=5, change_at=6, before=hostile, after=huge
    )
    report = _report(path)
    section = report.fingerprints
    assert section is not None
    assert section.n_invalid_fingerprints == 1  # the oversize one is never even read
    assert section.reviewers == []  # nothing valid to split on
    text = render_text(report)
    assert "\x1b" not in text and "secret prompt" not in text and "x" * 300 not in text
    assert "secret prompt" not in render_json(report)


def test_every_renderer_shows_the_segments(tmp_path: Path) -> None:
    path = tmp_path / "store.jsonl"
    evil = fingerprint("<script>alert(1)</script>")
    write_fingerprinted_store(
        path, CouncilSpec(n_members=4), 20, seed=6, change_at=10, shift=1.0, after=evil
    )
    report = _report(path)
    html = render_html(report)
    assert 'id="section-fingerprints"' in html and "<script>" not in html
    csv_text = render_csv(report)
    assert '"fingerprint_change","judge-0","leniency_difference:0:model"' in csv_text
    assert '"fingerprint_segment","judge-0","leniency:1"' in csv_text
    payload = json.loads(render_json(report))
    assert payload["fingerprints"]["reviewers"][0]["changes"][0]["components"][0] == {
        "component": "model",
        "before": "gpt-4o-2024-08-06",
        "after": "<script>alert(1)</script>",
    }


def test_the_parquet_store_keeps_the_fingerprints(tmp_path: Path) -> None:
    path = tmp_path / "store.jsonl"
    write_fingerprinted_store(path, CouncilSpec(n_members=3), 20, seed=7, change_at=10, shift=1.0)
    compact_store(path, tmp_path / "pq")
    from_parquet = _report(tmp_path / "pq").fingerprints
    assert from_parquet == _report(path).fingerprints


def test_cluster_mean_by_hand() -> None:
    # deviations 1, 3 in session 0 and 2 in session 1: mean 2, cluster sums of (d - 2):
    # (-1 + 1) = 0 and 0; SE 0. With 1, 3 | 5: mean 3, sums -2 + 0 = -2 and 2,
    # SE^2 = 2/1 * (4 + 4) / 9 = 16/9, SE = 4/3. Given as (count, sum) per session.
    mean, se, groups = cluster_mean(np.array([2, 1]), np.array([4.0, 2.0]))
    assert (mean, se, groups) == (2.0, 0.0, 2)
    mean, se, groups = cluster_mean(np.array([2, 1, 0]), np.array([4.0, 5.0, 0.0]))
    assert mean == 3.0 and se == pytest.approx(4 / 3) and groups == 2
    assert math.isnan(cluster_mean(np.array([1]), np.array([1.0]))[1])
    assert math.isnan(cluster_mean(np.array([0]), np.array([0.0]))[0])
