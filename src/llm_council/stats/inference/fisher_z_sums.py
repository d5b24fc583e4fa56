r"""Fisher-z pooled correlation from sums over sessions, so it merges across appends.

:func:`~llm_council.stats.inference.pooling.fisher_z_pooled_correlation` needs every
session's correlation; its estimate and cluster variance only use

.. math::

    C,\ \sum w_s,\ \sum w_s z_s,\ \sum w_s^2,\ \sum w_s^2 z_s,\ \sum w_s^2 z_s^2,

since :math:`\sum w_s^2 (z_s - \bar z)^2 = \sum w_s^2 z_s^2 - 2 \bar z \sum w_s^2 z_s +
\bar z^2 \sum w_s^2` (the same expansion as a CR1 meat, Cameron & Miller 2015,
J. Human Resources 50(2)). Equal to the per-session formula up to rounding.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from llm_council.stats.inference.pooling import _R_CLIP, IntervalEstimate
from llm_council.stats.numerics.distribution_functions import t_ppf, t_sf

#: the columns of a row of sums
FISHER_Z_SUM_COLUMNS = ("n", "w", "wz", "ww", "wwz", "wwzz")
_ROUNDING_SHARE = 1e-12


def fisher_z_terms(session_r: ArrayLike, session_weights: ArrayLike) -> np.ndarray:
    """``(C, 6)``: each usable session's terms of the six sums (``FISHER_Z_SUM_COLUMNS``):
    finite r, positive finite weight, r clipped as the per-session formula does."""
    r = np.asarray(session_r, dtype=float)
    w = np.asarray(session_weights, dtype=float)
    usable = np.isfinite(r) & np.isfinite(w) & (w > 0)
    r, w = r[usable], w[usable]
    z = np.arctanh(np.clip(r, -_R_CLIP, _R_CLIP))
    ww = w * w
    return np.column_stack([np.ones_like(w), w, w * z, ww, ww * z, ww * z * z])


def fisher_z_sums(session_r: ArrayLike, session_weights: ArrayLike) -> np.ndarray:
    """The six sums of the module docstring over the usable sessions."""
    return fisher_z_terms(session_r, session_weights).sum(axis=0)


def fisher_z_pooled_from_sums(sums: ArrayLike, confidence: float = 0.95) -> IntervalEstimate:
    r"""The pooled correlation and its t interval from :func:`fisher_z_sums` (added over
    any partition of the sessions). A variance within :data:`_ROUNDING_SHARE` of zero
    relative to :math:`\sum w^2 z^2` is taken as zero (all sessions equal)."""
    n_f, w_sum, wz, ww, wwz, wwzz = (float(value) for value in np.asarray(sums, dtype=float))
    n = int(round(n_f))
    nan = float("nan")
    if n < 2:
        return IntervalEstimate(nan, nan, nan, nan, nan, n)
    z_bar = wz / w_sum
    spread = wwzz - 2 * z_bar * wwz + z_bar * z_bar * ww
    if spread <= _ROUNDING_SHARE * abs(wwzz):
        spread = 0.0
    se = float(np.sqrt(n / (n - 1) * spread / w_sum**2))
    if se == 0.0:
        value = float(np.tanh(z_bar))
        return IntervalEstimate(value, value, value, 0.0, 1.0 if z_bar == 0 else 0.0, n)
    t_crit = float(t_ppf(0.5 + confidence / 2, n - 1))
    p_value = float(2 * t_sf(abs(z_bar / se), n - 1))
    return IntervalEstimate(
        float(np.tanh(z_bar)),
        float(np.tanh(z_bar - t_crit * se)),
        float(np.tanh(z_bar + t_crit * se)),
        se,
        p_value,
        n,
    )
