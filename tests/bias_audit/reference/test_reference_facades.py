"""The reference design's three modules over ours: numbers against independent computations.

The reference's own tests run unchanged in tests/reference_suite; these check what they do
not: the statistics against scipy / a hand derivation, the amplification flag's
false-positive rate and power, and that the facades read and write our store.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import math
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from llm_council.bias_aggregation import (
    StatisticalConfidence,
    aggregate_reviewer_profiles,
    determine_confidence_level,
    pooled_length_correlation,
    run_aggregated_bias_audit,
)
from llm_council.bias_amplification import session_agreement_decomposition
from llm_council.bias_audit import audit_external, read_records
from llm_council.bias_persistence import (
    BiasMetricRecord,
    ConsentLevel,
    hash_query_if_enabled,
    persist_session_bias_data,
    read_bias_records,
)


def _session(session_id: str, lengths: list[int], scores: list[float]) -> list[BiasMetricRecord]:
    return [
        BiasMetricRecord(
            session_id=session_id,
            reviewer_id=f"r{i % 2}",
            model_id=f"m{i}",
            position=i,
            response_length_chars=length,
            score_value=score,
        )
        for i, (length, score) in enumerate(zip(lengths, scores, strict=True))
    ]


def test_the_pooled_length_correlation_is_the_weighted_fisher_z_mean() -> None:
    a = _session("a", [10, 40, 90, 200, 500], [3, 4, 6, 5, 9])
    b = _session("b", [20, 30, 300, 80, 60, 150], [7, 6, 2, 5, 4, 3])
    c = _session("c", [15, 45, 70, 400], [2, 5, 4, 8])
    report = pooled_length_correlation(a + b + c)
    assert report is not None and report.sessions_pooled == 3
    # by hand: r_s from scipy on ln(chars), z = atanh r, weights n_s - 3, tanh of the mean
    r = [stats.pearsonr(np.log([x.response_length_chars for x in s]), [x.score_value for x in s])[0]
         for s in (a, b, c)]  # fmt: skip
    weights = np.array([2.0, 3.0, 1.0])
    z_bar = float(np.sum(weights * np.arctanh(r)) / weights.sum())
    assert report.point_estimate == pytest.approx(math.tanh(z_bar), abs=1e-12)
    assert report.ci_lower < report.point_estimate < report.ci_upper


def test_confidence_levels_follow_the_blog_boundaries() -> None:
    levels = [determine_confidence_level(n) for n in (0, 9, 10, 19, 20, 49, 50, 500)]
    assert [level.value for level in levels] == [
        "insufficient",
        "insufficient",
        "preliminary",
        "preliminary",
        "moderate",
        "moderate",
        "high",
        "high",
    ]


def test_below_min_sessions_nothing_is_estimated() -> None:
    records = _session("a", [10, 40, 90, 200], [3, 4, 6, 5])
    result = run_aggregated_bias_audit(records, min_sessions=2)
    assert result.confidence_level is StatisticalConfidence.INSUFFICIENT
    assert result.length_correlation is None and result.reviewer_profiles == []
    assert "at least 2" in result.warnings[0]


def test_reviewer_profiles_use_the_student_t_interval() -> None:
    records = [
        BiasMetricRecord(session_id="s", reviewer_id=reviewer, model_id=f"m{i}", score_value=v)
        for reviewer, values in {"r1": [4, 6, 5, 7], "r2": [8, 9, 7, 8]}.items()
        for i, v in enumerate(values)
    ]
    profiles = aggregate_reviewer_profiles(records)  # a list, as the reference's
    assert [p.reviewer_id for p in profiles] == ["r1", "r2"]
    profile = profiles[0]
    low, high = stats.t.interval(0.95, 3, loc=5.5, scale=stats.sem([4, 6, 5, 7]))
    assert (profile.ci_lower, profile.ci_upper) == (pytest.approx(low), pytest.approx(high))
    # two reviewers: z = (5.5 - 6.75) / sd(5.5, 8) = -1.25 / 1.7678 = -0.7071
    assert profile.harshness_z_score == pytest.approx(-1 / math.sqrt(2))


def _amplification_session(rng: np.random.Generator, sid: str, primacy: float) -> list:
    """4 reviewers x 5 answers, each reviewer its own random order; scores = quality +
    ``primacy`` points for each slot nearer the front + noise."""
    quality = rng.normal(6, 1.5, 5)
    rows = []
    for reviewer in range(4):
        order = rng.permutation(5)  # order[slot] = answer
        for slot, answer in enumerate(order):
            score = quality[answer] + primacy * (4 - slot) + rng.normal(0, 0.5)
            rows.append(
                BiasMetricRecord(
                    session_id=sid,
                    reviewer_id=f"r{reviewer}",
                    model_id=f"m{answer}",
                    position=slot,
                    score_value=float(score),
                )
            )
    return rows


def test_the_amplification_flag_false_positive_rate_and_power() -> None:
    """Null (no slot effect): flag rate <= 5% + 2.58 MC sd; with a 1-point-per-slot
    primacy the flag fires in most agreeing sessions. Measured: see the ADR 0039 table."""
    rng = np.random.default_rng(3)
    n = 300
    null = session_agreement_decomposition(
        [row for s in range(n) for row in _amplification_session(rng, f"n{s}", 0.0)], seed=1
    )
    rate = sum(s.amplification_suspect for s in null) / n
    assert rate <= 0.05 + 2.58 * math.sqrt(0.05 * 0.95 / n), rate
    biased = session_agreement_decomposition(
        [row for s in range(100) for row in _amplification_session(rng, f"b{s}", 1.0)], seed=1
    )
    agreeing = [s for s in biased if s.agreement_index is not None and s.agreement_index >= 0.7]
    power = sum(s.amplification_suspect for s in agreeing) / len(agreeing)
    assert power >= 0.8, power
    assert all(s.position_alignment is not None and s.position_alignment > 0 for s in agreeing)


def test_the_research_hash_is_the_references_format_under_our_secret(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("LLM_COUNCIL_HASH_SECRET", "s3cret-of-16-chars")
    query = "q" * 150
    # the reference's format: HMAC-SHA256 over the first 100 characters, 16 hex kept
    expected = hmac.new(b"s3cret-of-16-chars", ("q" * 100).encode(), hashlib.sha256)
    assert hash_query_if_enabled(query, ConsentLevel.RESEARCH) == expected.hexdigest()[:16]
    assert hash_query_if_enabled(query, ConsentLevel.ENHANCED) is None
    # without a secret: a private per-install key (tests/integrations checks the file)
    monkeypatch.delenv("LLM_COUNCIL_HASH_SECRET")
    monkeypatch.setenv("LLM_COUNCIL_HASH_SECRET_FILE", str(tmp_path / "hash_secret"))
    first = hash_query_if_enabled(query, ConsentLevel.RESEARCH)
    assert first is not None and first != expected.hexdigest()[:16]
    assert hash_query_if_enabled(query, ConsentLevel.RESEARCH) == first


def test_persist_writes_our_records_and_read_bias_records_reads_our_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = tmp_path / "records.jsonl"
    monkeypatch.setenv("LLM_COUNCIL_BIAS_STORE", str(store))
    monkeypatch.setenv("BIAS_PERSISTENCE_ENABLED", "true")
    stage1 = [{"model": m, "response": m * 3} for m in ("a", "b", "c")]
    stage2 = [
        {"model": "a", "parsed_ranking": {"scores": {"Response A": 7, "Response B": 5}}},
        {"model": "b", "parsed_ranking": ["Response C", "Response A", "Response B"]},
        {"model": "c", "abstained": True},
    ]
    labels = {"Response A": "a", "Response B": "b", "Response C": "c"}
    assert persist_session_bias_data("s1", stage1, stage2, labels) == 9
    ours = list(read_records(store, strict=True))  # our reader, strict: our schema
    assert len(ours) == 9 and {r.review_status for r in ours} == {
        "json",
        "final_ranking",
        "refused",
    }
    audit_external(stage1, stage2, labels, session_id="s2")
    lines = read_bias_records(store)
    # scored records only (the reference's line has no "no score"): 2 + 3 per session
    assert len(lines) == 10 and {r.session_id for r in lines} == {"s1", "s2"}
    assert {r.score_scale for r in lines if r.reviewer_id == "b"} == {"1-3"}  # rank points
    # an unknown consent value fails closed (OFF: nothing written), as the reference's 0.53
    monkeypatch.setenv("BIAS_CONSENT_LEVEL", "EVERYTHING")
    assert persist_session_bias_data("s3", stage1, stage2, labels) == 0
    assert len(read_bias_records(store)) == 10


def test_read_bias_records_upgrades_our_version_1_lines(tmp_path: Path) -> None:
    line = {
        "schema_version": 1,
        "session_id": "old",
        "timestamp": "2026-01-01T00:00:00+00:00",
        "reviewer_id": "r",
        "model_id": "m",
        "position": 1,
        "n_candidates": 2,
        "response_length_chars": 40,
        "response_length_words": 7,
        "score_value": 6.5,
        "is_self_review": False,
        "council_config_hash": "abc",
    }
    store = tmp_path / "v1.jsonl"
    store.write_text(json.dumps(line) + "\n" + json.dumps({**line, "score_value": None}) + "\n")
    (record,) = read_bias_records(store)  # the unscored line has no reference form: skipped
    assert (record.session_id, record.position, record.score_value) == ("old", 1, 6.5)
    assert record.score_scale == "1-10" and record.position_is_display_order


# --- the shims at the reference's paths forward to bias_audit/reference/ (ADR 0066) -------


def test_the_shims_give_the_implementations_objects() -> None:
    import llm_council.bias_aggregation as aggregation_shim
    import llm_council.bias_persistence as persistence_shim
    from llm_council.bias_audit.reference import aggregation, persistence

    assert persistence_shim.BiasMetricRecord is persistence.BiasMetricRecord
    assert aggregation_shim.run_aggregated_bias_audit is aggregation.run_aggregated_bias_audit
    # a private name the reference's tests import is read from the implementation
    from llm_council.bias_persistence import _extract_query_metadata

    assert _extract_query_metadata is persistence._extract_query_metadata
    assert "_get_bias_store_path" in dir(persistence_shim)


def _reference_session() -> dict[str, object]:
    return {
        "session_id": "shim-session",
        "stage1_results": [{"model": "m", "response": "r"}],
        "stage2_results": [{"model": "r", "parsed_ranking": {"scores": {"Response A": 7.0}}}],
        "label_to_model": {"Response A": {"model": "m", "display_index": 0}},
    }


def test_patching_a_private_name_through_the_shim_reaches_the_implementation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # as the reference's TestPersistSessionBiasData does: patch("...bias_persistence._x")
    from unittest import mock

    from llm_council.bias_audit.reference import persistence

    original = persistence._get_bias_persistence_enabled
    store = tmp_path / "records.jsonl"
    monkeypatch.setenv("BIAS_PERSISTENCE_ENABLED", "true")
    with (
        mock.patch("llm_council.bias_persistence._get_bias_persistence_enabled", new=lambda: False),
        mock.patch("llm_council.bias_persistence._get_bias_store_path", new=lambda: store),
    ):
        assert persist_session_bias_data(**_reference_session()) == 0  # type: ignore[arg-type]
    assert not store.exists()
    with mock.patch("llm_council.bias_persistence._get_bias_store_path", new=lambda: store):
        assert persist_session_bias_data(**_reference_session()) == 1  # type: ignore[arg-type]
    assert store.exists()
    # both patches are undone, in the implementation as well
    assert persistence._get_bias_persistence_enabled is original
    assert persistence._get_bias_store_path.__name__ == "_get_bias_store_path"


def test_patching_a_public_name_through_the_shim_patches_both_and_is_undone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # as the reference's @patch("llm_council.bias_aggregation.read_bias_records")
    import llm_council.bias_aggregation as aggregation_shim
    from llm_council.bias_audit.reference import aggregation

    record = _session("s1", [100], [8.5])[0]
    original = aggregation.read_bias_records
    monkeypatch.setattr("llm_council.bias_aggregation.read_bias_records", lambda *a, **k: [record])
    assert aggregation.read_bias_records is aggregation_shim.read_bias_records
    csv_text = aggregation_shim.generate_bias_report_csv()
    assert "s1" in csv_text and "8.5" in csv_text
    monkeypatch.undo()
    assert aggregation.read_bias_records is original
    assert aggregation_shim.read_bias_records is original


def test_a_reloaded_shim_still_forwards_and_unknown_names_fail_plainly() -> None:
    import importlib

    import llm_council.bias_persistence as persistence_shim
    from llm_council.bias_audit.reference.forwarding import ForwardingModule

    reloaded = importlib.reload(persistence_shim)
    assert type(reloaded) is ForwardingModule
    assert reloaded.hash_query_if_enabled("q", reloaded.ConsentLevel.LOCAL_ONLY) is None
    with pytest.raises(AttributeError):
        reloaded.no_such_name  # noqa: B018
    # dunders are the shim's own, never the implementation's (inspect and mock probe them)
    assert reloaded.__name__ == "llm_council.bias_persistence"
    with pytest.raises(AttributeError):
        reloaded.__wrapped__  # noqa: B018


def test_nested_patches_of_a_private_name_undo_in_order(monkeypatch: pytest.MonkeyPatch) -> None:
    from unittest import mock

    import llm_council.bias_persistence as persistence_shim
    from llm_council.bias_audit.reference import persistence

    original = persistence._get_bias_store_path
    assert "_get_bias_store_path" not in vars(persistence_shim)  # read through, not held
    first, second = (lambda: Path("first")), (lambda: Path("second"))
    monkeypatch.setattr("llm_council.bias_persistence._get_bias_store_path", first)
    with mock.patch.object(persistence_shim, "_get_bias_store_path", new=second):
        assert persistence._get_bias_store_path() == Path("second")
    assert persistence._get_bias_store_path is first
    monkeypatch.undo()
    assert persistence._get_bias_store_path is original
    assert persistence_shim._get_bias_store_path is original
    # a name created through the shim (raising=False) is removed again on undo
    monkeypatch.setattr(persistence_shim, "NOT_THERE_BEFORE", 1, raising=False)
    assert persistence.NOT_THERE_BEFORE == 1  # type: ignore[attr-defined]
    monkeypatch.undo()
    assert not hasattr(persistence, "NOT_THERE_BEFORE")


def test_the_facade_logs_under_the_references_name(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    # an unknown consent level is OFF with a warning (ADR 0039), logged at the old name
    import logging

    monkeypatch.setenv("BIAS_PERSISTENCE_ENABLED", "true")
    monkeypatch.setenv("BIAS_CONSENT_LEVEL", "EVERYTHING")
    with caplog.at_level(logging.WARNING, logger="llm_council.bias_persistence"):
        assert persist_session_bias_data(**_reference_session()) == 0  # type: ignore[arg-type]
    names = {record.name for record in caplog.records if "EVERYTHING" in record.getMessage()}
    assert names == {"llm_council.bias_persistence"}
