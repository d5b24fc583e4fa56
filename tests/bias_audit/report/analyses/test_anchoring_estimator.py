"""The anchoring test's definition against a brute-force recount, and its known confounds.

x for the answer at slot i of reviewer r's review is the mean of the *other reviewers'
consensus* over the earlier slots minus its mean over every other slot; y is r's paired
deviation, self-reviews left out; both centred within slot (report/analyses/anchoring.py). The
earlier definition (x = r's own earlier scores) flagged every drifting judge, a third of
self-preferring ones, and every reviewer of pairwise forced-choice data; these tests keep
those cases unflagged and an anchored judge flagged.
"""

from __future__ import annotations

import gzip
import json
import math
import shutil
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy import stats

from generators.independent_council import CouncilSpec, generate_sessions, write_store
from llm_council.bias_audit.report.analyses.anchoring import (
    ReviewerAnchoring,
    anchoring_by_reviewer,
)
from llm_council.bias_audit.report.load.loading import load_store
from llm_council.bias_audit.report.load.tables import create_analysis_tables
from llm_council.simulation.profile import SimulatedProfile
from llm_council.simulation.simulated_records import write_record_store

PRD_FIXTURE = Path(__file__).parents[3] / "data" / "prd_vicuna80" / "prd_sessions.jsonl.gz"


def _anchoring(path: Path) -> dict[str, ReviewerAnchoring]:
    store = load_store(path)
    try:
        create_analysis_tables(store.connection)
        return {item.reviewer: item for item in anchoring_by_reviewer(store.connection)}
    finally:
        store.connection.close()


def _recount(records: list[dict[str, Any]], reviewer: str) -> float:
    """The conditional r for ``reviewer`` by plain loops over the records."""
    scores: dict[tuple[str, str], dict[str, float]] = defaultdict(dict)  # (session, model)
    reviews: dict[tuple[str, str], list[tuple[int, str, float]]] = defaultdict(list)
    for record in records:
        if record["score_value"] is None:
            continue
        key = (record["session_id"], record["model_id"])
        scores[key][record["reviewer_id"]] = float(record["score_value"])
        reviews[(record["session_id"], record["reviewer_id"])].append(
            (int(record["position"]), record["model_id"], float(record["score_value"]))
        )

    def others_mean(session: str, model: str, leave_out: str) -> float:
        values = [
            value
            for judge, value in scores[(session, model)].items()
            if judge not in (leave_out, model)  # self-reviews never enter a consensus
        ]
        return float(np.mean(values)) if values else math.nan

    by_slot: dict[int, list[tuple[float, float]]] = defaultdict(list)
    for (session, judge), shown in reviews.items():
        if judge != reviewer:
            continue
        shown.sort()
        consensus = [others_mean(session, model, judge) for _, model, _ in shown]
        for i, (slot, model, value) in enumerate(shown):
            earlier = [c for c in consensus[:i] if math.isfinite(c)]
            rest = [c for j, c in enumerate(consensus) if j != i and math.isfinite(c)]
            if model == judge or not earlier or len(rest) == len(earlier):
                continue
            if not math.isfinite(consensus[i]):
                continue
            x = float(np.mean(earlier) - np.mean(rest))
            by_slot[slot].append((x, value - consensus[i]))
    xs: list[float] = []
    ys: list[float] = []
    for pairs in by_slot.values():
        x, y = np.array(pairs).T
        xs.extend(x - x.mean())
        ys.extend(y - y.mean())
    return float(stats.pearsonr(xs, ys)[0])


def test_conditional_r_matches_a_brute_force_recount(tmp_path: Path) -> None:
    spec = CouncilSpec(n_members=5, missing_score_rate=0.1)
    path = tmp_path / "store.jsonl"
    write_store(path, generate_sessions(spec, 60, seed=21))
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    found = _anchoring(path)
    for reviewer in ("judge-0", "judge-3"):
        assert found[reviewer].identified
        assert found[reviewer].conditional.estimate == pytest.approx(
            _recount(records, reviewer), abs=1e-9
        )


def _store(path: Path, seed: int, **bias: float) -> Path:
    members = [("j0", SimulatedProfile(noise_sd=1.0, **bias))] + [
        (f"j{i}", SimulatedProfile(noise_sd=1.0)) for i in range(1, 5)
    ]
    write_record_store(
        path,
        members,
        300,
        seed=seed,
        end_time=datetime(2026, 6, 1, tzinfo=UTC),
        session_spacing=timedelta(weeks=5) / 300,
    )
    return path


@pytest.mark.parametrize(
    "bias", [{"leniency_drift_per_week": 0.4}, {"self_preference": 1.5}], ids=["drift", "self"]
)
def test_drift_and_self_preference_are_not_anchoring(
    tmp_path: Path, bias: dict[str, float]
) -> None:
    # the old definition flagged j0 in 20/20 (drift) and 7/20 (self) such stores
    found = _anchoring(_store(tmp_path / "store.jsonl", 3, **bias))
    assert not any(item.detected for item in found.values())
    assert found["j0"].identified and abs(found["j0"].conditional.estimate) < 0.1


def test_an_anchored_judge_is_flagged(tmp_path: Path) -> None:
    found = _anchoring(_store(tmp_path / "store.jsonl", 3, anchoring=0.5))
    assert found["j0"].detected and found["j0"].conditional.ci_low > 0
    assert not any(found[f"j{i}"].detected for i in range(1, 5))


def test_two_answers_per_review_is_not_identified(tmp_path: Path) -> None:
    # real pairwise forced-choice data: the old definition gave r near -0.7 for every reviewer
    store = tmp_path / "prd.jsonl"
    with gzip.open(PRD_FIXTURE, "rb") as source, store.open("wb") as target:
        shutil.copyfileobj(source, target)
    found = _anchoring(store)
    assert len(found) == 5
    for item in found.values():
        assert not item.identified and not item.detected
        assert math.isnan(item.conditional.estimate) and math.isnan(item.holm_p)
