"""The JSONL store's reviewer-profile sidecar: kept at append, rebuilt when stale (ADR 0045)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from llm_council.bias_audit import run_bias_audit
from llm_council.bias_audit.records import reviewer_profiles, summary_files
from llm_council.bias_audit.records.jsonl_store import append_records, with_session_counts
from llm_council.bias_audit.records.reviewer_profiles import (
    ReviewerProfile,
    journal_path,
    load_profiles,
    merge_profiles,
    profile_path,
    rebuild_profiles,
    session_profiles,
)
from llm_council.bias_audit.records.schema import ReviewRecord
from llm_council.bias_audit.session.noise_priors import history_variances
from llm_council.bias_audit.session.thresholds import AuditThresholds
from llm_council.errors import InputError

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from generators.independent_council import CouncilSpec, generate_sessions  # noqa: E402


def _session_records(index: int, seed: int = 0) -> list[ReviewRecord]:
    spec = CouncilSpec(n_members=4, noise_sds=[0.5, 0.8, 1.1, 1.5], missing_score_rate=0.1)
    session = generate_sessions(spec, 1, seed + index)[0]
    return [
        ReviewRecord(**{**record, "session_id": f"s{index}", "schema_version": 2})
        for record in session.records()
    ]


def _close(left: dict[str, ReviewerProfile], right: dict[str, ReviewerProfile]) -> None:
    assert left.keys() == right.keys()
    for name in left:
        assert left[name].sessions == right[name].sessions
        assert left[name].residual_sum_of_squares == pytest.approx(
            right[name].residual_sum_of_squares, rel=1e-12, abs=1e-12
        )
        assert left[name].residual_df == pytest.approx(right[name].residual_df, rel=1e-12)


def test_appends_keep_the_sidecar_equal_to_a_rebuild(tmp_path: Path) -> None:
    store = tmp_path / "records.jsonl"
    for index in range(6):
        append_records(store, _session_records(index))
    base_written = profile_path(store).stat().st_mtime_ns
    kept = load_profiles(store)  # base (first session) + journal (5 lines), no rebuild
    assert profile_path(store).stat().st_mtime_ns == base_written
    assert len(journal_path(store).read_text().splitlines()) == 5
    profile_path(store).unlink()
    _close(kept, rebuild_profiles(store))
    assert all(profile.sessions == 6 for profile in kept.values())


def test_a_long_journal_is_folded_into_the_base(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(reviewer_profiles, "JOURNAL_COMPACT_BYTES", 600)
    store = tmp_path / "records.jsonl"
    for index in range(8):
        append_records(store, _session_records(index))
    assert not journal_path(store).exists() or journal_path(store).stat().st_size <= 1200
    base = json.loads(profile_path(store).read_text())
    assert min(values[0] for values in base["reviewers"].values()) > 1  # folded sessions
    assert {profile.sessions for profile in load_profiles(store).values()} == {8}


def test_a_store_written_by_another_program_is_rebuilt(tmp_path: Path) -> None:
    store = tmp_path / "records.jsonl"
    append_records(store, _session_records(0))
    # another writer appends without touching the sidecar (an import, an older version)
    with store.open("a", encoding="utf-8") as handle:
        for record in _session_records(1):
            handle.write(record.model_dump_json() + "\n")
    profiles = load_profiles(store)
    assert {profile.sessions for profile in profiles.values()} == {2}
    # the next append finds a fresh sidecar and merges into it
    append_records(store, _session_records(2))
    assert {profile.sessions for profile in load_profiles(store).values()} == {3}


def test_a_compacted_store_is_rebuilt(tmp_path: Path) -> None:
    store = tmp_path / "records.jsonl"
    for index in range(3):
        append_records(store, _session_records(index))
    load_profiles(store)
    # compaction: the store rewritten with one session fewer (a new file, os.replace)
    lines = store.read_text().splitlines(keepends=True)
    first = [line for line in lines if '"session_id":"s0"' not in line]
    replacement = tmp_path / "compacted.jsonl"
    replacement.write_text("".join(first))
    replacement.replace(store)
    assert {profile.sessions for profile in load_profiles(store).values()} == {2}


def test_a_damaged_sidecar_and_a_missing_store(tmp_path: Path) -> None:
    store = tmp_path / "records.jsonl"
    with pytest.raises(InputError, match="history store does not exist"):
        load_profiles(store)  # history from nowhere is a mistake, not "no history"
    append_records(store, _session_records(0))
    profile_path(store).write_text("{not json")
    assert {profile.sessions for profile in load_profiles(store).values()} == {1}
    # torn last line and a hostile line are skipped by the rebuild
    with store.open("a", encoding="utf-8") as handle:
        handle.write('{"session_id": "x", "score_value": NaN, "reviewer_id": 1}\n{"torn')
    assert {profile.sessions for profile in rebuild_profiles(store).values()} == {1}


def test_profiles_merge_in_any_order() -> None:
    rng = np.random.default_rng(5)
    parts = [
        session_profiles(
            (f"r{r}", f"c{c}", float(rng.integers(1, 11)))
            for r in range(4)
            for c in range(4)
            if r != c
        )
        for _ in range(5)
    ]
    forward: dict[str, ReviewerProfile] = {}
    for part in parts:
        forward = merge_profiles(forward, part)
    backward: dict[str, ReviewerProfile] = {}
    for part in reversed(parts):
        backward = merge_profiles(backward, part)
    _close(forward, backward)


def test_run_bias_audit_reads_history_from_a_store(tmp_path: Path) -> None:
    store = tmp_path / "records.jsonl"
    for index in range(30):
        append_records(store, _session_records(index))
    texts = {f"judge-{i}": "w " * 50 for i in range(4)}
    scores = {
        f"judge-{r}": {
            f"judge-{c}": float(5 + c - 3 * (r == 0)) + 0.3 * ((r + c) % 2) for c in range(4)
        }
        for r in range(4)
    }
    # these hand-written scores are far quieter than the history (residual variances
    # 0.03-0.06 times the history's). A quieter session only costs power, so the default
    # noise check (upper-tailed since ADR 0059) keeps every judge's history; ADR 0051's
    # two-sided check gives every judge the default prior and says why
    kept = AuditThresholds(noise_drift_level=0.0, noise_drift_council_level=0.0)
    audit = run_bias_audit(texts, scores, history=store, thresholds=kept)
    assert "4 from history" in audit.indicator_only["reviewers"]
    assert audit.harsh_reviewers == ["judge-0"]
    default = run_bias_audit(texts, scores, history=store)
    assert "4 from history" in default.indicator_only["reviewers"]
    assert default.harsh_reviewers == ["judge-0"]
    two_sided = AuditThresholds(
        noise_drift_level=0.2, noise_drift_alternative="two-sided", noise_drift_council_level=0.0
    )
    checked = run_bias_audit(texts, scores, history=store, thresholds=two_sided)
    assert "4 from default" in checked.indicator_only["reviewers"]
    assert "'judge-3': residual variance 0.0312 times" in checked.indicator_only["reviewers"]
    assert checked.harsh_reviewers == ["judge-0"]
    # an unknown reviewer in a profiled store borrows the store's prior
    renamed = {("new" if name == "judge-3" else name): row for name, row in scores.items()}
    audit = run_bias_audit(texts, renamed, history=store, thresholds=kept)
    assert "1 from store" in audit.indicator_only["reviewers"]
    # a PostgreSQL URL: tests/bias_audit/session/test_postgres_history.py
    with pytest.raises(InputError, match="not a regular file"):
        run_bias_audit(texts, scores, history=tmp_path)


def _profiles_of(n_members: int, sds: np.ndarray, n_sessions: int, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    profiles: dict[str, ReviewerProfile] = {}
    for _ in range(n_sessions):
        quality = rng.normal(0, 1.5, n_members)
        cells = [
            (f"r{r}", f"c{c}", float(quality[c] + sds[r] * rng.standard_normal()))
            for r in range(n_members)
            for c in range(n_members)
            if r != c
        ]
        profiles = merge_profiles(profiles, session_profiles(cells))
    return profiles


def test_history_variances_are_unbiased_per_reviewer() -> None:
    sds = np.array([0.5, 0.75, 1.0, 1.25, 1.5])
    solved = history_variances(_profiles_of(5, sds, 400, 1))
    estimates = np.array([solved[f"r{r}"][0] for r in range(5)])
    # 400 sessions x ~2.2 df each: relative SE of each variance about 0.07
    assert estimates == pytest.approx(sds**2, rel=0.25)
    # the leverage split alone pulls every reviewer toward the others (judge 0: 0.54 vs 0.25)
    split = _profiles_of(5, sds, 400, 1)["r0"].variance
    assert split is not None and split > 1.8 * sds[0] ** 2 > estimates[0]


def test_three_member_history_keeps_the_pooled_variance() -> None:
    # a 3 x 3 table without self-reviews has 1 residual df: its A is rank 1, the reviewers'
    # variances are not separable, and each keeps the pooled (leverage-split) value
    profiles = _profiles_of(3, np.array([0.5, 1.0, 1.5]), 200, 2)
    solved = history_variances(profiles)
    assert [solved[f"r{r}"][0] for r in range(3)] == [profiles[f"r{r}"].variance for r in range(3)]


def test_a_tampered_sidecar_is_not_trusted(tmp_path: Path) -> None:
    store = tmp_path / "records.jsonl"
    for index in range(2):
        append_records(store, _session_records(index))
    expected = rebuild_profiles(store)
    base = json.loads(profile_path(store).read_text())
    name = next(iter(base["reviewers"]))
    for bad in (float("nan"), -1.0, float("inf")):
        base["reviewers"][name][1] = bad
        profile_path(store).write_text(json.dumps(base))
        _close(load_profiles(store), expected)  # rebuilt, not read
        base = json.loads(profile_path(store).read_text())


def test_a_session_cut_short_is_left_out_of_a_rebuild(tmp_path: Path) -> None:
    store = tmp_path / "records.jsonl"
    for index in range(2):
        append_records(store, _session_records(index))
    # a crash mid-write: 5 of the session's 16 lines, each saying it has 16
    partial = with_session_counts(_session_records(2))[:5]
    with store.open("a", encoding="utf-8") as handle:
        for record in partial:
            handle.write(record.model_dump_json() + "\n")
    assert {profile.sessions for profile in rebuild_profiles(store).values()} == {2}


def test_a_large_stale_store_is_rebuilt_in_the_background_not_in_the_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a session must not stream a large store (56 s at 1M records): above the bound it runs
    # without history and the summary is rebuilt in a daemon thread; the rebuild is kept
    # in memory (a reader never writes beside the store) and the writer's next append
    # writes it
    import asyncio
    import time

    from llm_council.bias_audit.records.background_rebuild import running
    from llm_council.bias_audit.records.reviewer_profiles import fresh_profiles, profile_path
    from llm_council.bias_audit.session import session_audit

    store = tmp_path / "records.jsonl"
    with store.open("w", encoding="utf-8") as handle:  # written by another program
        for index in range(2):
            for record in with_session_counts(_session_records(index)):
                handle.write(record.model_dump_json() + "\n")
    assert fresh_profiles(store) is None  # no summary yet: stale
    monkeypatch.setattr(session_audit, "REBUILD_IN_SESSION_MAX_BYTES", 10)
    assert asyncio.run(session_audit._store_history(store)) == {}
    deadline = time.monotonic() + 120  # a hang-catcher: the rebuild takes well under 1 s
    while fresh_profiles(store) is None and time.monotonic() < deadline:
        time.sleep(0.05)
    while running() and time.monotonic() < deadline:
        time.sleep(0.05)
    fresh = fresh_profiles(store)  # the next session reads it without a rebuild
    assert fresh is not None and {profile.sessions for profile in fresh.values()} == {2}
    assert not profile_path(store).exists()  # nothing written by a reader
    append_records(store, _session_records(2))  # the writer promotes the rebuild
    assert profile_path(store).exists()
    reviewer_profiles._CHAIN_READS.clear()
    summary_files.forget_rebuilt()
    assert {profile.sessions for profile in fresh_profiles(store).values()} == {3}
