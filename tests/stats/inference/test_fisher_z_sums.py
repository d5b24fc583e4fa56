"""The Fisher-z pooled correlation from sums equals the per-session formula, written out
here with numpy (Hedges & Olkin pooling, CR1 variance), and merges by adding sums."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from llm_council.stats.inference.fisher_z_sums import (
    fisher_z_pooled_from_sums,
    fisher_z_sums,
)


def _direct(r: np.ndarray, w: np.ndarray) -> tuple[float, float, float, float]:
    """tanh(z_bar) and its t interval, and the z-scale se, from the per-session values."""
    z = np.arctanh(r)
    z_bar = (w * z).sum() / w.sum()
    c = r.size
    se = np.sqrt(c / (c - 1) * (w**2 * (z - z_bar) ** 2).sum() / w.sum() ** 2)
    t = stats.t.ppf(0.975, c - 1)
    return (
        float(np.tanh(z_bar)),
        float(np.tanh(z_bar - t * se)),
        float(np.tanh(z_bar + t * se)),
        float(se),
    )


@pytest.mark.parametrize("seed", range(5))
def test_the_sums_give_the_per_session_formula(seed: int) -> None:
    rng = np.random.default_rng(seed)
    r = np.tanh(rng.normal(0.2, 0.4, size=30))
    w = rng.integers(3, 12, size=30).astype(float)
    pooled = fisher_z_pooled_from_sums(fisher_z_sums(r, w))
    estimate, low, high, se = _direct(r, w)
    assert pooled.estimate == pytest.approx(estimate, rel=1e-12)
    assert (pooled.ci_low, pooled.ci_high) == pytest.approx((low, high), rel=1e-10)
    assert pooled.standard_error == pytest.approx(se, rel=1e-10)
    assert pooled.n_clusters == 30
    # sums of two parts add to the sums of the whole
    parts = fisher_z_sums(r[:11], w[:11]) + fisher_z_sums(r[11:], w[11:])
    np.testing.assert_allclose(parts, fisher_z_sums(r, w), rtol=1e-13)


def test_unusable_sessions_are_left_out_and_equal_sessions_have_no_spread() -> None:
    r = np.array([0.3, np.nan, 0.3, 0.3, 2.0])
    w = np.array([5.0, 5.0, 5.0, 5.0, 0.0])
    pooled = fisher_z_pooled_from_sums(fisher_z_sums(r, w))
    assert pooled.n_clusters == 3
    assert pooled.standard_error == 0.0 and pooled.ci_low == pooled.ci_high
    assert pooled.estimate == pytest.approx(0.3, rel=1e-12)
    one = fisher_z_pooled_from_sums(fisher_z_sums([0.5], [4.0]))
    assert one.n_clusters == 1 and np.isnan(one.estimate)
