r"""The monitor's learnt noise scale for one session's cells, in Python floats.

The same formula as :func:`~llm_council.stats.monitor.anytime_monitor.learnt_noise_variance`
(see there and the module docstring of ``anytime_monitor``):
:math:`\pi^2 = (d_1\tau_0^2 + \sum_b RSS_b)/(d_1 + \sum_b \nu_b)` per reviewer,
:math:`\tilde\tau^2 = \max((d_0\pi^2 + RSS)/(d_0 + \nu) \cdot \nu'/(\nu' - 1), floor)`,
:math:`RSS = \max(\sum x^2/k - (\sum x/k)^2 / \sum 1/k, 0)` and :math:`\nu = n - 1`. It
uses only ``+ - * /`` and comparisons, which Python floats round exactly as numpy does
(IEEE 754), in the same order, so the result is the array path's bit for bit (tested).

Why a second path: after an audited session the monitor folds one reviewer x bias table
(27 cells at 9 members), where the array path's 30-odd numpy calls cost more than the
arithmetic, most of all with cold caches (the update runs once between whole council
sessions): 212 against 120 us a call in a cold-cache timing (ADR 0053, fourth amendment).
"""

from __future__ import annotations

from collections.abc import Sequence


def learnt_noise_rows(
    n: Sequence[Sequence[int]],
    inv_k_sum: Sequence[Sequence[float]],
    x_over_k_sum: Sequence[Sequence[float]],
    x2_over_k_sum: Sequence[Sequence[float]],
    *,
    prior_df: float,
    prior_variance: float,
    pooled_prior_df: float,
    floor: float,
) -> list[list[float]]:
    """:math:`\\tilde\\tau^2` per (reviewer, bias) from the rows of the running sums
    (``prior_df`` :math:`d_1`, ``prior_variance`` :math:`\\tau_0^2`, ``pooled_prior_df``
    :math:`d_0`, ``floor`` the smallest scale returned)."""
    rows = []
    for counts, inv_k, x_over_k, x2_over_k in zip(
        n, inv_k_sum, x_over_k_sum, x2_over_k_sum, strict=True
    ):
        residuals = []
        dfs = []
        for count, ik, xk, x2k in zip(counts, inv_k, x_over_k, x2_over_k, strict=True):
            mean_term = xk * xk / ik if ik > 0 else 0.0  # x*x: numpy squares so, pow need not
            df = max(float(count) - 1.0, 0.0)
            residuals.append(max(x2k - mean_term, 0.0) if df > 0 else 0.0)
            dfs.append(df)
        # left to right from the first term, as numpy's sum over a row of 3 adds (checked
        # against ``ndarray.sum(axis=-1)`` on 200,000 rows: the other association differs)
        residual_sum = residuals[0]
        df_sum = dfs[0]
        for residual, df in zip(residuals[1:], dfs[1:], strict=True):
            residual_sum += residual
            df_sum += df
        pool_denominator = prior_df + df_sum
        pooled = (
            (prior_df * prior_variance + residual_sum) / pool_denominator
            if pool_denominator > 0
            else prior_variance
        )
        row = []
        for residual, df in zip(residuals, dfs, strict=True):
            nu = pooled_prior_df + df
            moderated = (pooled_prior_df * pooled + residual) / nu if nu > 0 else pooled
            inflation = nu / max(nu - 1.0, 1.0) if nu > 2.0 else 2.0
            row.append(max(moderated * inflation, floor))
        rows.append(row)
    return rows


__all__ = ["learnt_noise_rows"]
