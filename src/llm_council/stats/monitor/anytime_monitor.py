r"""An anytime-valid monitor of a reviewer's bias over a stream of sessions.

Each session gives an estimate :math:`x_t` of a reviewer's effect (leniency, first-slot
preference, self-preference: :mod:`llm_council.stats.monitor.monitor_session_effects`) with a
design variance :math:`k_t` (its variance per unit of score noise). The monitor asks
whether the effect lies outside a *practical* null :math:`|\mu| \le \delta_0`, and may be
looked at after every session without spending its level again.

**The e-process.** With precision weights :math:`w_t` fixed before :math:`x_t` is seen
(predictable), :math:`S_t = \sum_{s \le t} w_s (x_s - \delta_0)` and
:math:`V_t = \sum_{s \le t} w_s`, the one-sided normal mixture over :math:`\theta \ge 0`
(prior :math:`2\,N(0, \rho)` on the half line) is

.. math::

    E^+_t = \int_0^\infty e^{\theta S_t - \theta^2 V_t / 2}\, 2\varphi_\rho(\theta)\,d\theta
          = \frac{2}{\sqrt{1 + \rho V_t}}
            \exp\!\Big(\frac{\rho S_t^2}{2(1 + \rho V_t)}\Big)\,
            \Phi\!\Big(S_t \sqrt{\frac{\rho}{1 + \rho V_t}}\Big)

(complete the square: with :math:`a = V_t + 1/\rho`, the integral is
:math:`2(2\pi\rho)^{-1/2}\sqrt{2\pi/a}\,e^{S^2/2a}\,\Phi(S/\sqrt a)`). That is the
prior centred on no excess; the monitor's prior is :math:`N(m, \rho)` cut to
:math:`\theta \ge 0` and renormalised, centred on the excess of the bias that matters
(:math:`m = 0.5`: a 1-point bias at :math:`\delta_0 = 0.5`; Howard et al. 2021, sec. 3.5,
tune the mixture to the effects that matter). With :math:`a = 1 + \rho V_t` and
:math:`b = S_t + m/\rho`, completing the square the same way gives

.. math::

    E^+_t = a^{-1/2}\exp\!\Big(\frac{\rho b^2}{2a} - \frac{m^2}{2\rho}\Big)
            \frac{\Phi(b\sqrt{\rho/a})}{\Phi(m/\sqrt\rho)},

the formula above at :math:`m = 0`. Any prior on :math:`\theta \ge 0` keeps what
follows. If
:math:`x_s \sim N(\mu, 1/w_s)` given the past, then for every :math:`\theta \ge 0` and
every :math:`\mu \le \delta_0`,
:math:`E[e^{\theta w (x - \delta_0) - \theta^2 w/2}] = e^{\theta w (\mu - \delta_0)} \le 1`,
so each integrand, and hence :math:`E^+_t`, is a nonnegative supermartingale under the
whole composite null :math:`\mu \le \delta_0`, not only at its boundary (the half-line
prior is what makes this hold: a two-sided mixture at :math:`\delta_0` is not valid for
:math:`\mu` far below it). :math:`E^-_t` mirrors it at :math:`-\delta_0` over
:math:`\theta \le 0`. Under :math:`|\mu| \le \delta_0` both are supermartingales, so their
mean :math:`E_t = (E^+_t + E^-_t)/2` is one too, and at least as powerful as two one-sided
tests at :math:`\alpha/2` (:math:`\max(E^+, E^-) \ge 2/\alpha` implies
:math:`E \ge 1/\alpha`). Ville's inequality gives
:math:`P(\exists t: E_t \ge 1/\alpha) \le \alpha`, however often one looks. Every
(reviewer, bias) is tested at :math:`\alpha / (R B)` (Bonferroni over :math:`R` reviewers
and :math:`B` biases). References: Robbins (1970),
"Statistical methods related to the law of the iterated logarithm", Ann. Math. Statist.
41; Howard, Ramdas, McAuliffe & Sekhon (2021), "Time-uniform, nonparametric,
nonasymptotic confidence sequences", Ann. Statist. 49, sec. 3.5 (normal mixture);
Ramdas, Ruf, Larsson & Koolen (2022), "Admissible anytime-valid sequential inference must
rely on nonnegative martingales" (e-processes for composite nulls).

**The confidence sequence.** :math:`E^\pm` depend on the data through :math:`S` only and
grow with :math:`|S|`; with :math:`S^*` the root of :math:`\log E^+(S) = \log(1/\alpha')`,
:math:`\hat\mu_t \pm S^*/V_t` (:math:`\hat\mu_t = \sum w_s x_s / V_t`) covers a constant
:math:`\mu` at every :math:`t` simultaneously with probability :math:`\ge 1 - 2\alpha'`,
and :math:`E^+_t \ge 1/\alpha'` exactly when its lower bound exceeds :math:`\delta_0`.

**The noise (an assumption, checked by simulation).** :math:`1/w_t = k_t \tilde\tau^2_{t-1}`,
where :math:`\tilde\tau^2` is the scale of this reviewer's estimates learnt from its
*earlier* sessions only (so the weight stays predictable). Per (reviewer, bias):
:math:`RSS = \sum (x_s - \bar x)^2 / k_s` (:math:`\bar x` weighted by :math:`1/k_s`;
:math:`\tau^2 \chi^2_{n-1}` for normal estimates) on :math:`\nu = n - 1` df. The
reviewer's biases are pooled into :math:`\pi^2 = (d_1\tau_0^2 + \sum_b RSS_b)/(d_1 +
\sum_b \nu_b)`, each bias is moderated toward it, :math:`(d_0\pi^2 + RSS)/(d_0 + \nu)`
(Smyth 2004's moderated variance, applied twice), and inflated by
:math:`\nu'/(\nu' - 1)`, :math:`\nu' = d_0 + \nu`, for the plug-in's own uncertainty. The
scale is learnt from the estimates themselves, not from a session's residuals: at 3
members a session has one residual degree of freedom, and a t ratio on one df has Cauchy
tails. The mixture is exact for normal estimates with known variance; here the variance
is estimated and the scores are clipped integers, so the level is shown by simulation
(``benchmarks/monitor_calibration.py``, ADR 0053), not proved.

Functions over arrays of any leading shape; no I/O.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np
from numpy.typing import ArrayLike, NDArray

from llm_council.stats.monitor.learnt_noise_rows import learnt_noise_rows
from llm_council.stats.numerics.special_functions import log_ndtr

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]

#: the two sides of :func:`log_e_values`: index 0 tests mu > delta0, 1 tests mu < -delta0
SIDES = ("above", "below")
#: the floor of the learnt noise scale (points squared): a judge whose estimates never
#: vary would otherwise get an infinite weight
MIN_NOISE_VARIANCE = 1e-4


@dataclass(frozen=True)
class MonitorSettings:
    """The monitor's parameters (points on the score scale).

    ``delta0``: the practical null :math:`|\\mu| \\le \\delta_0`; ``alpha``: the chance that
    any (reviewer, bias) is ever confirmed while inside it; ``prior_scale`` and
    ``prior_mean``: :math:`\\rho` and :math:`m` of the mixture's prior on the excess
    :math:`\\theta`, :math:`N(m, \\rho)` cut to :math:`\\theta \\ge 0` (centred on a 1-point
    bias's excess, SD 0.17: tuned to the effects that matter, Howard et al. 2021 sec. 3.5;
    ADR 0053 amendment); ``prior_noise_sd``
    and ``prior_noise_df``: :math:`\\tau_0` and :math:`d_1` of the learnt noise scale
    (1.5 points, the upper end of honest noise the audit is calibrated for, ADR 0045);
    ``pooled_prior_df``: :math:`d_0`, the weight of the reviewer's pooled scale in each
    bias's scale (module docstring; 12 df, 8 before the centred prior: ADR 0053 amendment).
    """

    delta0: float = 0.5
    alpha: float = 0.05
    prior_scale: float = 0.03
    prior_mean: float = 0.5
    prior_noise_sd: float = 1.5
    prior_noise_df: float = 2.0
    pooled_prior_df: float = 12.0

    def __post_init__(self) -> None:
        checks = {
            "delta0": (math.isfinite(self.delta0) and self.delta0 >= 0.0, ">= 0"),
            "alpha": (math.isfinite(self.alpha) and 0.0 < self.alpha < 1.0, "in (0, 1)"),
            "prior_scale": (math.isfinite(self.prior_scale) and self.prior_scale > 0.0, "> 0"),
            "prior_mean": (math.isfinite(self.prior_mean) and self.prior_mean >= 0.0, ">= 0"),
            "prior_noise_sd": (
                math.isfinite(self.prior_noise_sd) and self.prior_noise_sd > 0.0,
                "> 0",
            ),
            "prior_noise_df": (
                math.isfinite(self.prior_noise_df) and self.prior_noise_df >= 0.0,
                ">= 0",
            ),
            "pooled_prior_df": (
                math.isfinite(self.pooled_prior_df) and self.pooled_prior_df >= 0.0,
                ">= 0",
            ),
        }
        for name, (ok, allowed) in checks.items():
            if not ok:
                value = getattr(self, name)
                raise ValueError(
                    f"monitor setting {name} = {value!r}: must be finite and {allowed}"
                )


def log_threshold(alpha: float, n_reviewers: int, n_biases: int) -> float:
    """:math:`\\log(R B / \\alpha)`: each (reviewer, bias) at :math:`\\alpha / (RB)`
    (Bonferroni), so P(any false confirmation ever) <= alpha for a fixed set of reviewers."""
    return math.log(max(n_reviewers, 1) * max(n_biases, 1) / alpha)


def cells_estimated(n: ArrayLike) -> IntArray:
    """The number of (reviewer, bias) cells that have had an estimate (``n > 0``), over the
    last two axes (reviewers, biases), at least 1: the Bonferroni count of the monitor
    (a bias the sessions never estimate for a reviewer spends none of the level).

    Parameters
    ----------
    n : array_like of int, shape (..., R, B)
        Sessions folded into each (reviewer, bias) cell.

    Returns
    -------
    ndarray of int, shape (...)
        The count of cells with ``n > 0``, at least 1.
    """
    counts = np.asarray(np.asarray(n) > 0).sum(axis=(-2, -1))
    return np.asarray(np.maximum(counts, 1), dtype=np.int64)


def cells_log_threshold(alpha: float, n: ArrayLike) -> FloatArray:
    """:math:`\\log(K/\\alpha)`, :math:`K` = :func:`cells_estimated`, shaped to broadcast
    against the cells (two trailing axes of length 1)."""
    return np.asarray(np.log(cells_estimated(n) / alpha))[..., None, None]


def _prior_log_constant(prior_scale: float, prior_mean: float) -> float:
    """:math:`-m^2/2\\rho - \\log\\Phi(m/\\sqrt\\rho)` (:math:`m \\ge 0`, so
    :math:`\\Phi \\ge 1/2` and ``erfc`` loses nothing)."""
    z = prior_mean / math.sqrt(prior_scale)
    return -prior_mean * prior_mean / (2.0 * prior_scale) - math.log(
        0.5 * math.erfc(-z / math.sqrt(2.0))
    )


def _log_e_above_parts(
    s: FloatArray, log_a: FloatArray, rho_over_2a: FloatArray, c: FloatArray, shift: float, k: float
) -> FloatArray:
    b = s + shift
    return np.asarray(-0.5 * log_a + rho_over_2a * b * b + log_ndtr(b * c) + k)


def log_e_above(
    excess_sum: ArrayLike, precision: ArrayLike, prior_scale: float, prior_mean: float = 0.0
) -> FloatArray:
    """:math:`\\log E^+` of the module docstring for :math:`S` = ``excess_sum`` and
    :math:`V` = ``precision`` (0 where nothing was folded in), the prior
    :math:`N(m, \\rho)` cut to :math:`\\theta \\ge 0` (``prior_mean`` :math:`m`)."""
    s = np.asarray(excess_sum, dtype=float)
    v = np.asarray(precision, dtype=float)
    a = 1.0 + prior_scale * v
    return _log_e_above_parts(
        s,
        np.log(a),
        prior_scale / (2.0 * a),
        np.sqrt(prior_scale / a),
        prior_mean / prior_scale,
        _prior_log_constant(prior_scale, prior_mean),
    )


def log_e_values(
    weighted_sum: ArrayLike,
    precision: ArrayLike,
    delta0: float,
    prior_scale: float,
    prior_mean: float = 0.0,
) -> FloatArray:
    """Both sides' :math:`\\log E` for :math:`Q = \\sum w x` and :math:`V = \\sum w`; the last
    axis is :data:`SIDES` (the ``below`` side is ``above`` for the mirrored data). The terms
    in :math:`V` alone are computed once for both sides."""
    q = np.asarray(weighted_sum, dtype=float)
    v = np.asarray(precision, dtype=float)
    a = (1.0 + prior_scale * v)[..., None]
    # both sides in one call: elementwise, so the same numbers as two calls, with one
    # log_ndtr call fewer per session; filled in place (``np.stack`` cost as much as the
    # two subtractions, ADR 0053, fourth amendment)
    margin = delta0 * v
    excess = np.empty((*np.broadcast_shapes(q.shape, v.shape), 2))
    np.subtract(q, margin, out=excess[..., 0])
    np.subtract(-q, margin, out=excess[..., 1])
    return _log_e_above_parts(
        excess,
        np.log(a),
        prior_scale / (2.0 * a),
        np.sqrt(prior_scale / a),
        prior_mean / prior_scale,
        _prior_log_constant(prior_scale, prior_mean),
    )


def combined_log_e(side_log_e: ArrayLike) -> FloatArray:
    r""":math:`\log((E^+ + E^-)/2)` from both sides' :math:`\log E` (last axis).

    Under :math:`|\mu| \le \delta_0` both sides are nonnegative supermartingales, so
    their mean is one too: the composite null is tested at the full
    :math:`\alpha` of the (reviewer, bias), with no halving for two sides.
    """
    both = np.asarray(side_log_e, dtype=float)
    return np.asarray(np.logaddexp(both[..., 0], both[..., 1]) - math.log(2.0))


def boundary_excess(
    precision: ArrayLike, prior_scale: float, log_thresh: float, prior_mean: float = 0.0
) -> FloatArray:
    """:math:`S^*`: the excess sum at which :math:`\\log E^+` reaches ``log_thresh``.

    :math:`\\log E^+` increases with :math:`S` (every integrand does, :math:`\\theta \\ge 0`)
    and :math:`\\log E^+(0) \\le 0` (the integrand is at most 1 there), so the root is
    bracketed by :math:`[0, S_2]` once :math:`\\log E^+(S_2) \\ge` the threshold. :math:`S_2`
    starts at the two-sided centred mixture's boundary
    :math:`\\sqrt{(1+\\rho V)(2\\log(1/\\alpha') + \\log(1+\\rho V))/\\rho}` (enough for
    :math:`m = 0`, since :math:`\\Phi \\ge 1/2` for :math:`S \\ge 0`) and is doubled while it
    is short. Then Newton's method kept inside the shrinking bracket (a bisection step
    whenever Newton would leave it). The slope is :math:`\\rho b/a + c\\,\\varphi(cb)/\\Phi(cb)`,
    :math:`a = 1 + \\rho V`, :math:`b = S + m/\\rho`, :math:`c = \\sqrt{\\rho/a}`.
    """
    v = np.asarray(precision, dtype=float)
    a = 1.0 + prior_scale * v
    c = np.sqrt(prior_scale / a)
    low = np.zeros_like(a)
    high = np.sqrt(a * (2.0 * log_thresh + np.log(a)) / prior_scale)
    for _ in range(64):
        short = log_e_above(high, v, prior_scale, prior_mean) < log_thresh
        if not np.any(short):
            break
        high = np.where(short, 2.0 * high, high)
    x = high.copy()
    shift = prior_mean / prior_scale
    for _ in range(60):
        gap = log_e_above(x, v, prior_scale, prior_mean) - log_thresh
        if np.all(np.abs(gap) <= 1e-12 * max(1.0, log_thresh)):
            break
        high = np.where(gap >= 0, x, high)
        low = np.where(gap < 0, x, low)
        z = c * (x + shift)
        slope = prior_scale * (x + shift) / a + c * np.exp(
            -0.5 * z * z - _LOG_SQRT_2PI - log_ndtr(z)
        )
        with np.errstate(divide="ignore", invalid="ignore"):
            newton = x - gap / slope
        inside = np.isfinite(newton) & (newton > low) & (newton < high)
        x = np.where(inside, newton, 0.5 * (low + high))
    return np.asarray(x)


_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)


def confidence_sequence(
    weighted_sum: ArrayLike,
    precision: ArrayLike,
    prior_scale: float,
    log_thresh: float,
    prior_mean: float = 0.0,
) -> tuple[FloatArray, FloatArray]:
    """The effect's bounds :math:`\\hat\\mu \\pm S^*/V` (infinite where ``precision`` is 0),
    valid at every session at once with probability >= 1 - 2 exp(-``log_thresh``).

    Parameters
    ----------
    weighted_sum : array_like, any shape
        Sum of the precision-weighted estimates of each cell.
    precision : array_like, same shape
        Their summed precision V.
    prior_scale : float
        Scale of the mixing prior.
    log_thresh : float
        The log of the confirmation threshold.
    prior_mean : float
        Mean of the mixing prior.

    Returns
    -------
    low, high : ndarray, same shape as ``weighted_sum``
        The bounds.
    """
    q = np.asarray(weighted_sum, dtype=float)
    v = np.asarray(precision, dtype=float)
    width = boundary_excess(v, prior_scale, log_thresh, prior_mean)
    with np.errstate(divide="ignore", invalid="ignore"):
        centre = np.where(v > 0, q / np.where(v > 0, v, 1.0), 0.0)
        half = np.where(v > 0, width / np.where(v > 0, v, 1.0), np.inf)
    return centre - half, centre + half


@dataclass(frozen=True)
class MonitorSums:
    """The monitor's running state for an array of (reviewer, bias) cells.

    All arrays share one shape (the cells). ``n``: sessions folded in;
    ``inv_k_sum``, ``x_over_k_sum``, ``x2_over_k_sum``: :math:`\\sum 1/k`, :math:`\\sum x/k`,
    :math:`\\sum x^2/k` (the learnt noise scale); ``precision``, ``weighted_sum``:
    :math:`V = \\sum w` and :math:`Q = \\sum w x`; ``peak_log_e``: the largest
    :math:`\\log E = \\log((E^+ + E^-)/2)` so far; ``confirmed_at``: the ``n`` at which
    :math:`\\log E` first reached the threshold in force then (0: never).
    """

    n: IntArray
    inv_k_sum: FloatArray
    x_over_k_sum: FloatArray
    x2_over_k_sum: FloatArray
    precision: FloatArray
    weighted_sum: FloatArray
    peak_log_e: FloatArray
    confirmed_at: IntArray

    @classmethod
    def empty(cls, shape: tuple[int, ...]) -> MonitorSums:
        zeros = np.zeros(shape)
        return cls(
            n=np.zeros(shape, dtype=np.int64),
            inv_k_sum=zeros.copy(),
            x_over_k_sum=zeros.copy(),
            x2_over_k_sum=zeros.copy(),
            precision=zeros.copy(),
            weighted_sum=zeros.copy(),
            peak_log_e=np.full(shape, -np.inf),
            confirmed_at=np.zeros(shape, dtype=np.int64),
        )


def learnt_noise_variance(sums: MonitorSums, settings: MonitorSettings) -> FloatArray:
    """:math:`\\tilde\\tau^2` from the sessions folded in so far (module docstring).

    The cells' last axis is the biases of one reviewer: their residual sums are pooled
    into the reviewer's scale :math:`\\pi^2 = (d_1\\tau_0^2 + \\sum_b RSS_b)/(d_1 + \\sum_b
    \\nu_b)`, and each cell is moderated toward it,
    :math:`\\tilde\\tau^2 = (d_0\\pi^2 + RSS)/(d_0 + \\nu)`, with :math:`RSS = (n-1)\\hat\\tau^2`
    and :math:`\\nu = n - 1` (Smyth 2004's moderation, applied twice). One session's table
    (two axes) goes through :func:`.learnt_noise_rows`, the same numbers in Python floats.
    """
    if sums.n.ndim == 2 and sums.n.shape[-1] > 0:
        return np.array(
            learnt_noise_rows(
                sums.n.tolist(),
                sums.inv_k_sum.tolist(),
                sums.x_over_k_sum.tolist(),
                sums.x2_over_k_sum.tolist(),
                prior_df=settings.prior_noise_df,
                prior_variance=settings.prior_noise_sd**2,
                pooled_prior_df=settings.pooled_prior_df,
                floor=MIN_NOISE_VARIANCE,
            ),
            dtype=float,
        ).reshape(sums.n.shape)
    # masked divisions (``where=``) instead of ``np.where`` around ``np.errstate``: the same
    # quotients where they are taken, half the array calls (ADR 0053, fourth amendment)
    has = sums.inv_k_sum > 0
    mean_term = np.divide(
        sums.x_over_k_sum**2, sums.inv_k_sum, out=np.zeros_like(sums.inv_k_sum), where=has
    )
    df = np.maximum(sums.n.astype(float) - 1.0, 0.0)
    residual = np.where(df > 0, np.maximum(sums.x2_over_k_sum - mean_term, 0.0), 0.0)
    prior_variance = settings.prior_noise_sd**2
    pool_numerator = settings.prior_noise_df * prior_variance + residual.sum(axis=-1, keepdims=True)
    pool_denominator = settings.prior_noise_df + df.sum(axis=-1, keepdims=True)
    pooled = np.divide(
        pool_numerator,
        pool_denominator,
        out=np.full(pool_denominator.shape, prior_variance),
        where=pool_denominator > 0,
    )
    # nu, the moderated estimate's df, is also the moderation's denominator
    nu = settings.pooled_prior_df + df
    moderated = np.divide(
        settings.pooled_prior_df * pooled + residual,
        nu,
        out=np.broadcast_to(pooled, nu.shape).copy(),
        where=nu > 0,
    )
    # the plug-in is itself uncertain: a small-sample inflation nu / (nu - 1), nu the
    # moderated estimate's df (2 below nu = 2), chosen by simulation (ADR 0053)
    inflation = np.where(nu > 2.0, nu / np.maximum(nu - 1.0, 1.0), 2.0)
    return np.maximum(moderated * inflation, MIN_NOISE_VARIANCE)


def fold_session(
    sums: MonitorSums,
    estimates: ArrayLike,
    unit_variances: ArrayLike,
    settings: MonitorSettings,
    log_thresh: float | ArrayLike | None = None,
) -> MonitorSums:
    """``sums`` after one more session; a cell whose estimate or variance is NaN (or the
    variance not positive) is left as it was. ``log_thresh``: the confirmation threshold
    now; by default :func:`cells_log_threshold` over the cells (last two axes: reviewers,
    biases) estimated so far, this session's included.

    Parameters
    ----------
    sums : MonitorSums
        The running sums, arrays of shape (..., R, B).
    estimates : array_like, shape (..., R, B)
        This session's estimates.
    unit_variances : array_like, shape (..., R, B)
        Their variances per unit of noise.
    settings : MonitorSettings
        Prior and level of the monitor.
    log_thresh : float or array_like, optional
        The confirmation threshold now.

    Returns
    -------
    MonitorSums
        New sums, same shapes; ``sums`` is not modified.
    """
    x = np.asarray(estimates, dtype=float)
    k = np.asarray(unit_variances, dtype=float)
    present = np.isfinite(x) & np.isfinite(k) & (k > 0)
    noise = learnt_noise_variance(sums, settings)
    if present.all():  # the same numbers as the masked branch, four array calls fewer
        x0 = x
        weight = 1.0 / (k * noise)
        inv_k = 1.0 / k
    else:
        x0 = np.where(present, x, 0.0)
        k1 = np.where(present, k, 1.0)
        weight = np.where(present, 1.0 / (k1 * noise), 0.0)
        inv_k = np.where(present, 1.0 / k1, 0.0)
    n = sums.n + present
    precision = sums.precision + weight
    weighted_sum = sums.weighted_sum + weight * x0
    log_e = combined_log_e(
        log_e_values(
            weighted_sum, precision, settings.delta0, settings.prior_scale, settings.prior_mean
        )
    )
    log_e = np.where(present, log_e, sums.peak_log_e)
    peak = np.maximum(sums.peak_log_e, log_e)
    if log_thresh is None:
        log_thresh = cells_log_threshold(settings.alpha, n)
    crossed = (sums.confirmed_at == 0) & present & (log_e >= np.asarray(log_thresh))
    confirmed_at = np.where(crossed, n, sums.confirmed_at)
    return replace(
        sums,
        n=n,
        inv_k_sum=sums.inv_k_sum + inv_k,
        x_over_k_sum=sums.x_over_k_sum + inv_k * x0,
        x2_over_k_sum=sums.x2_over_k_sum + inv_k * x0 * x0,
        precision=precision,
        weighted_sum=weighted_sum,
        peak_log_e=peak,
        confirmed_at=confirmed_at,
    )
