"""Parse outcomes from merged per-reviewer sums (ADR 0092): merged parts equal the whole
store's summary array for array and finish to the same result; payloads round-trip and
malformed ones are refused by field."""

from __future__ import annotations

import json
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from bias_audit.report.analyses.split_stores import (
    connection_of,
    independent_sessions,
    merged_in_three_orders,
    ranked_sessions,
    write_parts,
)
from llm_council.bias_audit.report.analyses.parse_outcomes import (
    PARSE_OUTCOMES,
    ParseOutcomesSummary,
)

STATUSES = ("final_ranking", "refused", "unparseable", "error", "missing")


def _with_statuses(sessions: list[list[dict[str, Any]]]) -> list[list[dict[str, Any]]]:
    """Each (session, reviewer)'s review status drawn from its index; every 7th session
    written before the field existed (no status)."""
    out = []
    for index, session in enumerate(sessions):
        records = []
        for record in session:
            salt = zlib.crc32(record["reviewer_id"].encode()) % 3
            status = STATUSES[(index + salt) % len(STATUSES)]
            changed = dict(record)
            changed["review_status"] = None if index % 7 == 0 else status
            records.append(changed)
        out.append(records)
    return out


STORES = {
    "rank-4": lambda: ranked_sessions(4, 45, 5),
    "independent-3-missing": lambda: _with_statuses(
        independent_sessions(3, 45, 6, missing_score_rate=0.2, missing_review_rate=0.1)
    ),
    "independent-9": lambda: _with_statuses(independent_sessions(9, 20, 7)),
}


def _parts(name: str, directory: Path) -> tuple[list[ParseOutcomesSummary], ParseOutcomesSummary]:
    sessions = STORES[name]()
    n = len(sessions)
    paths = write_parts(sessions, [range(0, n, 3), range(1, n, 3), range(2, n, 3)], directory)
    summaries = [PARSE_OUTCOMES.summarize(connection_of(path)) for path in paths]
    return summaries[:-1], summaries[-1]


@pytest.mark.parametrize("name", list(STORES))
def test_merged_parts_equal_the_whole_store(name: str, tmp_path: Path) -> None:
    (a, b, c), whole = _parts(name, tmp_path)
    cold = PARSE_OUTCOMES.finish(whole)
    assert cold  # something to compare
    if name == "rank-4":
        assert sum(outcome.n_comparable_pairs for outcome in cold) > 0
    else:
        assert any(outcome.n_reviews_unknown for outcome in cold)
    for merged in merged_in_three_orders(PARSE_OUTCOMES, a, b, c):
        assert merged.reviewers == whole.reviewers and merged.statuses == whole.statuses
        np.testing.assert_array_equal(merged.status_counts, whole.status_counts)
        np.testing.assert_array_equal(merged.pair_sums, whole.pair_sums)
        assert repr(PARSE_OUTCOMES.finish(merged)) == repr(cold)


def test_the_summary_does_not_grow_with_the_sessions(tmp_path: Path) -> None:
    (a, _, _), whole = _parts("rank-4", tmp_path)
    assert whole.status_counts.shape == a.status_counts.shape
    assert whole.pair_sums.shape == (4, 6)


def test_the_payload_round_trips_through_json(tmp_path: Path) -> None:
    (a, b, _), _ = _parts("independent-3-missing", tmp_path)
    merged = PARSE_OUTCOMES.merge(a, b)
    meta, arrays = PARSE_OUTCOMES.to_payload(merged)
    back = PARSE_OUTCOMES.from_payload(json.loads(json.dumps(meta)), arrays)
    assert repr(PARSE_OUTCOMES.finish(back)) == repr(PARSE_OUTCOMES.finish(merged))


_BROKEN = {
    "unsorted reviewers": ("reviewers", lambda m, a: m.update(reviewers=m["reviewers"][::-1])),
    "repeated status": ("statuses", lambda m, a: m.update(statuses=m["statuses"][:1] * 2)),
    "no sums": ("pair_sums", lambda m, a: a.pop("pair_sums")),
    "float counts": (
        "status_counts",
        lambda m, a: a.update(status_counts=a["status_counts"].astype(float)),
    ),
    "short counts": (
        "status_counts",
        lambda m, a: a.update(status_counts=a["status_counts"][:, :-1]),
    ),
    "negative count": (
        "status_counts",
        lambda m, a: a.update(status_counts=a["status_counts"] - 10**6),
    ),
    "more events than pairs": (
        "pair_sums",
        lambda m, a: a.update(pair_sums=a["pair_sums"] + np.array([0, 10**6, 0, 0, 0, 0])),
    ),
}


@pytest.mark.parametrize("how", list(_BROKEN))
def test_a_malformed_payload_is_refused_naming_the_field(how: str, tmp_path: Path) -> None:
    (a, _, _), _ = _parts("rank-4", tmp_path)
    meta, arrays = PARSE_OUTCOMES.to_payload(a)
    meta, arrays = json.loads(json.dumps(meta)), dict(arrays)
    field, breaks = _BROKEN[how]
    breaks(meta, arrays)
    with pytest.raises(ValueError, match=f"parse outcomes summary: field '{field}'"):
        PARSE_OUTCOMES.from_payload(meta, arrays)
