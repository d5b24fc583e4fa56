"""Style mimicry from per-session products, merged, against the full fit
(:func:`mimicry_slopes`, itself tested against a dense reference in test_style_mimicry.py):
parts in any order, integer scores, a constant judge, missing cells and the alternating
projections' fallback give the same slopes, CV3 intervals and sds up to rounding."""

from __future__ import annotations

import numpy as np
import pytest

from llm_council.stats.bias_effects.style_mimicry import MimicrySlopes, mimicry_slopes
from llm_council.stats.bias_effects.style_mimicry_sums import (
    mimicry_session_products,
    mimicry_slopes_from_products,
)
from llm_council.stats.numerics.moments import merged_moments


def _council(seed: int, n_reviewers: int, n_sessions: int, missing: float) -> dict:
    rng = np.random.default_rng(seed)
    cells = [
        (s, r, s * n_reviewers + m)
        for s in range(n_sessions)
        for r in range(n_reviewers)
        for m in range(n_reviewers)
        if r != m and rng.random() >= missing
    ]
    rows = np.array(cells)
    n = rows.shape[0]
    similarity = rng.random(n)
    score = rng.normal(size=n) + 2.0 * similarity * (rows[:, 1] == 0) + 0.2 * (rows[:, 2] % 5)
    return {
        "score": score,
        "similarity": similarity,
        "log_words": np.log(rng.integers(20, 400, n).astype(float)),
        "reviewer": rows[:, 1],
        "answer": rows[:, 2],
        "session": rows[:, 0],
    }


def _merged_fit(columns: dict, n_reviewers: int, parts: int) -> MimicrySlopes:
    pieces = []
    for part in range(parts):
        keep = columns["session"] % parts == part
        pieces.append(
            mimicry_session_products({k: v[keep] for k, v in columns.items()}, n_reviewers)
        )
    pieces = pieces[::-1]  # merged in another order than the sessions
    moments = pieces[0].own_moments
    for piece in pieces[1:]:
        moments = merged_moments(moments, piece.own_moments)
    return mimicry_slopes_from_products(
        np.concatenate([p.products for p in pieces]),
        sum(p.abs_sums for p in pieces),
        sum(p.reviewer_sessions for p in pieces),
        moments,
        sum(p.n_rows for p in pieces),
    )


def _assert_close(got: MimicrySlopes, want: MimicrySlopes) -> None:
    assert (got.n_observations, got.n_clusters) == (want.n_observations, want.n_clusters)
    for a, b in zip(got.slopes, want.slopes, strict=True):
        assert a.n_clusters == b.n_clusters
        fields = ("estimate", "ci_low", "ci_high", "standard_error", "p_value")
        for x, y in ((getattr(a, f), getattr(b, f)) for f in fields):
            assert (np.isnan(x) and np.isnan(y)) or x == pytest.approx(y, rel=1e-9, abs=1e-12)
    np.testing.assert_allclose(got.within_answer_sd, want.within_answer_sd, rtol=1e-12)


@pytest.mark.parametrize(
    ("n_reviewers", "missing", "integer", "constant"),
    [
        (4, 0.0, False, False),
        (5, 0.15, True, False),
        (9, 0.05, False, True),
        (3, 0.0, False, False),
    ],
)
def test_merged_products_equal_the_full_fit(
    n_reviewers: int, missing: float, integer: bool, constant: bool
) -> None:
    columns = _council(n_reviewers, n_reviewers, 40, missing)
    if integer:
        columns["score"] = np.round(columns["score"] * 2)
    if constant:  # reviewer 1 always gives 5
        columns["score"] = np.where(columns["reviewer"] == 1, 5.0, columns["score"])
    full = mimicry_slopes(**{k: v.copy() for k, v in columns.items()}, n_reviewers=n_reviewers)
    _assert_close(_merged_fit(columns, n_reviewers, 3), full)
    if n_reviewers == 4:
        assert full.slopes[0].p_value < 0.01  # a real effect is compared, not NaNs


def test_a_repeated_cell_takes_the_alternating_projections_and_still_merges() -> None:
    columns = _council(11, 4, 30, 0.0)
    repeat = np.flatnonzero(columns["session"] == 2)[:1]
    columns = {k: np.concatenate([v, v[repeat]]) for k, v in columns.items()}
    columns["score"][-1] += 1.0
    order = np.argsort(columns["session"], kind="stable")
    columns = {k: v[order] for k, v in columns.items()}
    full = mimicry_slopes(**{k: v.copy() for k, v in columns.items()}, n_reviewers=4)
    merged = _merged_fit(columns, 4, 2)
    for a, b in zip(merged.slopes, full.slopes, strict=True):
        assert a.estimate == pytest.approx(b.estimate, rel=1e-8, abs=1e-10)
        assert a.standard_error == pytest.approx(b.standard_error, rel=1e-6)


def test_no_rows_and_one_session_give_no_slopes() -> None:
    columns = _council(3, 4, 1, 0.0)
    one = _merged_fit(columns, 4, 1)
    assert one.n_clusters == 1 and all(np.isnan(s.estimate) for s in one.slopes)
    empty = mimicry_session_products({k: v[:0] for k, v in columns.items()}, 4)
    assert empty.products.shape[0] == 0 and empty.n_rows == 0
