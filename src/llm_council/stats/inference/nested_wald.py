"""One p-value for two nested cluster-robust Wald tests of the same estimate: the min-p test.

The report's council position family tests two hypotheses on one vector of slot effects
(ADR 0076): "the first and the last slot each equal the others' mean" (the edge test, two
contrasts) and "every slot is equal" (the all-slots test, K - 1 contrasts). The second
implies the first, so their intersection is the all-slots hypothesis, and a closed test may
test it with any valid test of that hypothesis (ADR 0082). The min-p test below is that
test: it rejects when either p-value is small, at the level their *joint* null distribution
gives, which is below the Bonferroni bound ``2 min(p)`` because the two statistics share
the estimate and its covariance.
"""

from __future__ import annotations

import math

#: below this smallest p the integral's inputs lose precision (``1 - m`` rounds); the
#: Bonferroni bound ``2 m`` (valid for any dependence) is returned instead
SMALLEST_INTEGRATED_P = 1e-12


def _f_density(x: float, dfn: int, dfd: int) -> float:
    """The F(dfn, dfd) density at ``x > 0`` (from the log of its closed form)."""
    from scipy import special

    log_density = (
        dfn / 2 * math.log(dfn / dfd)
        + (dfn / 2 - 1) * math.log(x)
        - (dfn + dfd) / 2 * math.log1p(dfn * x / dfd)
        - float(special.betaln(dfn / 2, dfd / 2))
    )
    return math.exp(log_density)


def _full_rejects_beyond_sub(
    m_sub: float, m_full: float, q_sub: int, q_full: int, nu: int
) -> float:
    """P(the full test rejects at ``m_full`` and the sub-space test does not at ``m_sub``):
    the integral of :func:`nested_wald_min_p`'s docstring."""
    from scipy import integrate, special

    df_sub, df_full, df_rest = nu - q_sub + 1, nu - q_full + 1, q_full - q_sub
    f_sub = float(special.fdtri(q_sub, df_sub, 1.0 - m_sub))
    f_full = float(special.fdtri(q_full, df_full, 1.0 - m_full))
    t_full = f_full * q_full * nu / df_full
    to_t = q_sub * nu / df_sub  # T^2_sub = to_t * F_sub

    def rejected_by_full(x: float) -> float:
        t = x * to_t
        rest_needed = (t_full - t) * df_full / ((nu + t) * df_rest)
        tail = 1.0 if t >= t_full else float(special.fdtrc(df_rest, df_full, rest_needed))
        return _f_density(x, q_sub, df_sub) * tail if x > 0 else 0.0

    kink = t_full / to_t
    integral, _ = integrate.quad(
        rejected_by_full,
        0.0,
        f_sub,
        points=[kink] if 0.0 < kink < f_sub else None,
        limit=200,
        epsabs=1e-13,
        epsrel=1e-10,
    )
    return float(integral)


def nested_wald_min_p(
    p_sub: float,
    p_full: float,
    q_sub: int,
    q_full: int,
    n_clusters: int,
    sub_weight: float = 0.5,
) -> float:
    r"""The p-value of the weighted min-p test of two nested Hotelling-type Wald tests on
    the same estimate and cluster-robust covariance, under their joint null.

    With weights :math:`w` (``sub_weight``) and :math:`1 - w`, the test rejects at level
    :math:`\alpha` when :math:`p_{sub} \le w\,c` or :math:`p_{full} \le (1 - w)\,c`, with
    :math:`c \ge \alpha` the largest value that keeps the joint null probability at
    :math:`\alpha`; its p-value is that probability at
    :math:`u = \min(p_{sub} / w,\ p_{full} / (1 - w))`. ``w = 1/2`` is the plain min-p test.

    Both p-values are those of :func:`~llm_council.stats.design.joint_model.wald_test`:
    with :math:`\nu = C - 1` (C clusters), a Wald statistic :math:`T^2_q` on q contrasts
    is referred to :math:`F = \frac{\nu - q + 1}{q\,\nu} T^2_q \sim F_{q,\,\nu - q + 1}`,
    the Hotelling :math:`T^2` approximation (Pustejovsky & Tipton 2018). The ``q_sub``
    contrasts of the first test span a subspace of the ``q_full`` contrasts of the second
    (a Wald statistic does not depend on the basis of its contrasts). Under the same
    Hotelling model, Rao's test of additional information (Rao 1948, JRSS B 10(2);
    Mardia, Kent & Bibby 1979, *Multivariate Analysis*, Theorem 3.6.3; Anderson 2003,
    *An Introduction to Multivariate Statistical Analysis*, sec. 5.3.6) gives, when every
    contrast is zero,

    .. math::

        R = \frac{\nu - q_{full} + 1}{q_{full} - q_{sub}}
            \cdot \frac{T^2_{full} - T^2_{sub}}{\nu + T^2_{sub}}
            \sim F_{q_{full} - q_{sub},\; \nu - q_{full} + 1},
        \quad \text{independent of } T^2_{sub}.

    With :math:`m_{sub} = w u`, :math:`m_{full} = (1 - w) u` and :math:`t_{sub}, t_{full}`
    the :math:`T^2` values whose p-values are those, the test's p is

    .. math::

        P = m_{sub} + \int_0^{t_{sub}} f_{T^2_{sub}}(t)\,
            P\!\left(R \ge \frac{\nu - q_{full} + 1}{q_{full} - q_{sub}}
            \cdot \frac{t_{full} - t}{\nu + t}\right) dt

    (the first test rejects with probability :math:`m_{sub}`; otherwise the second does when
    :math:`T^2_{full} \ge t_{full}`), a one-dimensional integral (``scipy.integrate.quad``).
    It lies in :math:`[\max(m_{sub}, m_{full}), u]` (Bonferroni). Below
    :data:`SMALLEST_INTEGRATED_P` the bound ``u`` is returned. Tested against a Monte Carlo
    of the Hotelling model with a random covariance and against the model's own draws
    (``tests/stats/inference/test_nested_wald.py``).

    Parameters
    ----------
    p_sub, p_full : float
        The p-values of the test on the sub-space (``q_sub`` contrasts) and of the full test.
    sub_weight : float
        The share :math:`w` of the level the sub-space test gets, ``0 < w < 1``.
    q_sub, q_full : int
        Their numbers of contrasts, ``1 <= q_sub < q_full``.
    n_clusters : int
        C, the clusters behind the covariance; ``C > q_full`` (else the full test has no df).

    Returns
    -------
    float
        The combined p-value; NaN when either p is not finite or the design has no df.
    """
    if not (1 <= q_sub < q_full):
        raise ValueError(f"need 1 <= q_sub < q_full, got q_sub={q_sub}, q_full={q_full}")
    if not 0.0 < sub_weight < 1.0:
        raise ValueError(f"sub_weight must be in (0, 1), got {sub_weight}")
    if not (math.isfinite(p_sub) and math.isfinite(p_full)) or n_clusters <= q_full:
        return float("nan")
    full_weight = 1.0 - sub_weight
    bound = min(max(p_sub, 0.0) / sub_weight, max(p_full, 0.0) / full_weight)
    m_sub, m_full = sub_weight * bound, full_weight * bound
    if min(m_sub, m_full) < SMALLEST_INTEGRATED_P:
        return min(1.0, bound)
    if max(m_sub, m_full) >= 1.0:
        return 1.0
    integral = _full_rejects_beyond_sub(m_sub, m_full, q_sub, q_full, n_clusters - 1)
    return float(min(1.0, bound, max(m_sub, m_full, m_sub + integral)))
