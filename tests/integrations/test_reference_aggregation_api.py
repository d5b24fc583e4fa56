"""Code written against the reference design's documented aggregation API runs unchanged.

Each call below is spelled as the reference's users write it (store path first, its
field names); the numbers are ours and are checked against independent computations.
"""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from llm_council.bias_aggregation import (
    AggregatedBiasAuditResult,
    AggregatedBiasResult,
    detect_anomalies,
    detect_temporal_trends,
    generate_bias_report_json,
    generate_bias_report_text,
    pooled_correlation_with_ci,
    run_aggregated_bias_audit,
)
from llm_council.bias_amplification import SessionAgreement, SessionDecomposition
from llm_council.bias_persistence import BiasMetricRecord, append_bias_records
from llm_council.errors import InputError

START = datetime(2026, 11, 1, tzinfo=UTC)


def _store_records(n_sessions: int, shift_after: int | None = None) -> list[BiasMetricRecord]:
    """3 reviewers x 4 answers per session, reference-format lines, one session a day."""
    rng = np.random.default_rng(7)
    records = []
    for s in range(n_sessions):
        stamp = (START + timedelta(days=s)).isoformat()
        bump = 2.0 if shift_after is not None and s >= shift_after else 0.0
        for reviewer in ("r/a", "r/b", "r/c"):
            for slot, model in enumerate(("m/1", "m/2", "m/3", "m/4")):
                records.append(
                    BiasMetricRecord(
                        session_id=f"s{s:02d}",
                        timestamp=stamp,
                        reviewer_id=reviewer,
                        model_id=model,
                        position=slot,
                        response_length_chars=int(rng.integers(50, 900)),
                        score_value=float(np.clip(rng.normal(6 + bump, 1.2), 1, 10)),
                    )
                )
    return records


@pytest.fixture
def store(tmp_path: Path) -> Path:
    path = tmp_path / "bias_metrics.jsonl"
    append_bias_records(_store_records(12), path)
    return path


def test_the_references_calls_and_fields(store: Path) -> None:
    result = run_aggregated_bias_audit(store)
    assert isinstance(result, AggregatedBiasAuditResult) and AggregatedBiasResult is type(result)
    assert (result.unique_sessions, result.total_records) == (12, 144)
    assert result.overall_confidence == "preliminary"
    assert result.window_start.startswith("2026-11-01") and result.window_end.startswith(
        "2026-11-12"
    )
    assert [p.reviewer_id for p in result.reviewer_profiles] == ["r/a", "r/b", "r/c"]
    length = result.length_correlation
    assert length is not None and length.sample_size == 144 and length.sessions_pooled == 12
    assert length.statistical_confidence == "preliminary"
    assert length.fisher_z == pytest.approx(math.atanh(length.point_estimate))
    # positional filters, as the reference: the last 5 sessions
    last5 = run_aggregated_bias_audit(store, 5, None)
    assert last5.unique_sessions == 5 and last5.length_correlation is None  # < 10 sessions
    assert "at least 10" in last5.warnings[0]
    # this facade's earlier names still read
    assert (result.sessions_analyzed, result.total_reviews) == (12, 144)
    assert result.confidence_level.value == "preliminary"


def test_an_empty_or_missing_store_says_so(tmp_path: Path) -> None:
    result = run_aggregated_bias_audit(tmp_path / "none.jsonl")
    assert result.unique_sessions == 0 and result.warnings == ["No bias data found in store"]


def test_records_with_store_filters_are_refused() -> None:
    with pytest.raises(InputError, match="max_sessions and max_days filter a store"):
        run_aggregated_bias_audit(records=_store_records(2), max_sessions=1)
    with pytest.raises(InputError, match="store_path must be a path"):
        run_aggregated_bias_audit(42)  # type: ignore[arg-type]


def test_the_json_report_is_strict_json(store: Path) -> None:
    report = json.loads(generate_bias_report_json(store))
    assert report["unique_sessions"] == 12 and report["overall_confidence"] == "preliminary"
    assert {p["reviewer_id"] for p in report["reviewer_profiles"]} == {"r/a", "r/b", "r/c"}
    text = generate_bias_report_text(store)
    assert "Sessions Analyzed: 12" in text and "r/b: mean" in text


def test_pooled_correlation_with_ci_is_the_pooled_fisher_estimate() -> None:
    records = _store_records(12)
    at_95 = pooled_correlation_with_ci(records)
    at_80 = pooled_correlation_with_ci(records, alpha=0.2)
    assert at_95 is not None and at_80 is not None
    # independent: per-session r of ln(chars) vs score, z-mean with weights n - 3 = 9
    rs = []
    for s in range(12):
        rows = [r for r in records if r.session_id == f"s{s:02d}"]
        rs.append(
            stats.pearsonr(
                np.log([r.response_length_chars for r in rows]), [r.score_value for r in rows]
            ).statistic
        )
    z = np.arctanh(rs)
    assert at_95.point_estimate == pytest.approx(math.tanh(z.mean()))
    se = math.sqrt(12 / 11 * np.sum((z - z.mean()) ** 2) / 12**2)
    assert at_95.fisher_se == pytest.approx(se)
    t95 = stats.t.ppf(0.975, 11)
    assert at_95.ci_lower == pytest.approx(math.tanh(z.mean() - t95 * se))
    assert at_80.ci_upper - at_80.ci_lower < at_95.ci_upper - at_95.ci_lower
    with pytest.raises(InputError, match="alpha"):
        pooled_correlation_with_ci(records, alpha=1.5)


def test_trends_find_a_real_shift_and_call_noise_stable() -> None:
    assert detect_temporal_trends(_store_records(12))["trend_direction"] == "stable"
    shifted = detect_temporal_trends(_store_records(12, shift_after=6))
    assert shifted is not None and shifted["trend_direction"] == "increasing"
    assert shifted["p_value"] < 0.05 and shifted["difference"] == pytest.approx(
        shifted["late_mean"] - shifted["early_mean"]
    )
    assert shifted["sample_size"] == 144 and shifted["n_sessions"] == 12
    assert detect_temporal_trends(_store_records(12)[:9]) is None  # < 10 records


def test_anomalies_list_an_outlying_session_only() -> None:
    records = _store_records(12)
    assert detect_anomalies(records) == []
    for record in records:
        if record.session_id == "s03":
            record.score_value = 1.0
    (anomaly,) = detect_anomalies(records)
    assert anomaly["session_id"] == "s03" and anomaly["direction"] == "low"
    assert anomaly["adjusted_p_value"] < 0.05 and anomaly["z_score"] < -2.5


def test_session_decomposition_is_the_references_name() -> None:
    assert SessionAgreement is SessionDecomposition
    assert "n_models" in SessionDecomposition.__dataclass_fields__
