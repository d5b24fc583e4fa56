"""How many human labels reach a target interval width, and which pairs to label first.

``calibrate`` reports the judge's agreement with human labels (accuracy, Wilson interval)
and Cohen's kappa (Fleiss-Cohen-Everitt interval). This module answers the question asked
before buying labels: how many labelled pairs make that interval's half-width at most
``h``, and in which order to label them.

**Agreement** (the judge's consolidated verdict equals the human label). The Wilson
half-width at a proportion ``p`` and ``n`` labels (Wilson 1927; Newcombe 1998) is

.. math::

    w(p, n) = \\frac{z}{1 + z^2/n}\\sqrt{\\frac{p(1-p)}{n} + \\frac{z^2}{4n^2}},

largest at ``p = 1/2``. The plan is the smallest ``n`` with ``w(p^*, n) <= h``, where
``p^*`` is the planning value: ``1/2`` with no labels (the worst case, so the plan can only
be conservative), else the end of the current labels' 90% Wilson interval (a one-sided
95% bound) nearest ``1/2`` (``1/2`` itself when the interval covers it). Planning on a
conservative bound rather than the point estimate is what makes the target reached in
most runs, not half of them (Kupper & Hafner 1989, "How appropriate are popular sample
size formulas?", The American Statistician 43, 101-105).

With ``--order informative`` the existing labels are NOT used for the planning value, for
either metric: the pairs labelled next are the hard ones, whose agreement the earlier
(random) labels do not predict, and in simulation a plan from them fell short (see
docs/calibration.md). The plan is then the worst case, and the labels are used only with
``--order random``.

**Kappa**. The large-sample variance of Cohen's kappa is ``V / n`` with ``V`` given by
Fleiss, Cohen & Everitt (1969)
(:func:`~llm_council.stats.reliability.agreement.cohen_kappa_from_table`),
so ``n = (z sqrt(V) / h)^2`` (the planning approach of Donner & Eliasziw 1992, "A
goodness-of-fit approach to inference procedures for the kappa statistic", Statistics in
Medicine 11, 1511-1519, with the FCE variance in place of their goodness-of-fit one).
With at least :data:`MIN_LABELS_TO_ESTIMATE` labels, ``V`` is the 95th percentile of its
bootstrap distribution over the ``m`` labelled pairs (500 resamples; the uncertainty of
the current estimate) plus ``1.28 sd_boot sqrt(m / n)`` (a one-sided 90% allowance for the
noise of the estimate made once ``n`` pairs are labelled, its SD scaled from the
bootstrap's), solved for ``n`` by fixed-point iteration; otherwise the worst
case over kappa 0 to 0.95 of a table whose two raters both have the judge's verdict shares
(``p_ii = p_i (p_i + kappa (1 - p_i))``, ``p_ij = (1 - kappa) p_i p_j``): an assumption,
stated in the output, that humans use the three verdicts as often as the judge does.

**Order**. Unlabelled pairs are ranked by ``flip share + disagreement``: the share of
judges whose two orders disagree (a position flip) plus ``1 - (largest verdict count / k)``
over the judges' consolidated verdicts; ties are broken by a hash of (seed, pair id). These
are the pairs where a label says most about the judges. Caveat, printed with the plan:
labelling the hard pairs first makes the labelled set harder than the file as a whole, so
the agreement it estimates is for that set; ``--order random`` keeps a random sample.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

from llm_council.calibration.outcomes import PairOutcome
from llm_council.stats.inference.proportions import wilson_interval
from llm_council.stats.reliability.agreement import cohen_kappa_from_table

METRICS = ("agreement", "kappa")
ORDERS = ("informative", "random")
CATEGORIES = ("a", "b", "tie")
#: below this many labels the kappa plan uses the worst case (from 40 labels the
#: bootstrap plan reached the target in 18 of 20 simulated campaigns, from 60 in 20)
MIN_LABELS_TO_ESTIMATE = 50
BOOTSTRAP_RESAMPLES = 500
#: the agreement's planning value is a one-sided bound at this level (0.90 left about one
#: campaign in six short in simulation: the final estimate's own noise adds to the bound's)
PLANNING_ASSURANCE = 0.95
#: the kappa's planning variance is this quantile of its bootstrap distribution (0.90
#: reached the target in 8 of 10 simulated campaigns from 40 labels; see the tests)
KAPPA_VARIANCE_QUANTILE = 0.95
_MAX_N = 10_000_000
_KAPPA_GRID = tuple(k / 20 for k in range(20))  # 0, 0.05, ..., 0.95


@dataclass(frozen=True)
class Plan:
    """How many labels reach the target: in total, and beyond those present."""

    metric: str
    target_halfwidth: float
    confidence: float
    labelled: int
    total_needed: int
    more_needed: int
    planning_value: float  # p* (agreement) or V (kappa)
    basis: str  # how the planning value was chosen, for the output


def _z(confidence: float) -> float:
    return NormalDist().inv_cdf(0.5 + confidence / 2.0)


def wilson_halfwidth(p: float, n: int, confidence: float) -> float:
    """Half the Wilson interval's width at proportion ``p`` with ``n`` observations."""
    z = _z(confidence)
    return (z / (1.0 + z * z / n)) * math.sqrt(p * (1.0 - p) / n + z * z / (4.0 * n * n))


def _check(halfwidth: float, confidence: float) -> None:
    if not (math.isfinite(halfwidth) and 0.0 < halfwidth < 0.5):
        raise ValueError(f"target half-width must be in (0, 0.5), got {halfwidth}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")


def plan_agreement(
    halfwidth: float, confidence: float, labelled: int, correct: int, *, use_labels: bool = True
) -> Plan:
    """Labels for the agreement interval to reach ``halfwidth`` (see the module docstring);
    ``use_labels=False`` plans on the worst case whatever labels there are."""
    _check(halfwidth, confidence)
    if labelled and use_labels:
        low, high = wilson_interval(correct, labelled, 2 * PLANNING_ASSURANCE - 1)
        p_star = min(max(0.5, low), high)
        basis = (
            f"agreement {correct}/{labelled}; planning p = {p_star:.3f}, the one-sided "
            f"{PLANNING_ASSURANCE:.0%} Wilson bound nearest 0.5"
        )
    else:
        p_star = 0.5
        basis = "worst case p = 0.5" + ("" if use_labels else " (informative order)")
    low_n, high_n = 1, _MAX_N
    while low_n < high_n:  # the half-width falls with n: bisect for the first n that fits
        mid = (low_n + high_n) // 2
        if wilson_halfwidth(p_star, mid, confidence) <= halfwidth:
            high_n = mid
        else:
            low_n = mid + 1
    return Plan(
        "agreement", halfwidth, confidence, labelled, low_n, max(0, low_n - labelled), p_star, basis
    )


def kappa_unit_variance(proportions: np.ndarray) -> float:
    """``n * Var(kappa)`` (FCE 1969) of a table of cell proportions; nan if undefined."""
    scale = 1_000_000
    result = cohen_kappa_from_table(np.asarray(proportions, dtype=float) * scale)
    return float(result.standard_error**2 * scale)


def worst_case_kappa_variance(shares: Sequence[float]) -> float:
    """Largest ``n * Var(kappa)`` over kappa 0..0.95 when both raters have ``shares``."""
    p = np.asarray(shares, dtype=float)
    p = p / p.sum()
    variances = []
    for kappa in _KAPPA_GRID:
        table = (1.0 - kappa) * np.outer(p, p)
        table[np.diag_indices_from(table)] = p * (p + kappa * (1.0 - p))
        variance = kappa_unit_variance(table)
        if math.isfinite(variance):
            variances.append(variance)
    return max(variances) if variances else math.nan


def plan_kappa(
    halfwidth: float,
    confidence: float,
    judge_verdicts: Sequence[str],
    human_labels: Sequence[str],
    judge_shares: Sequence[float],
    seed: int = 0,
    *,
    use_labels: bool = True,
) -> Plan:
    """Labels for the kappa interval (judge vs humans) to reach ``halfwidth``;
    ``use_labels=False`` plans on the worst case whatever labels there are."""
    _check(halfwidth, confidence)
    labelled = len(human_labels)
    index = {category: i for i, category in enumerate(CATEGORIES)}
    if use_labels and labelled >= MIN_LABELS_TO_ESTIMATE:
        codes = np.array(
            [index[j] * 3 + index[h] for j, h in zip(judge_verdicts, human_labels, strict=True)]
        )
        rng = np.random.default_rng(seed)
        draws = rng.integers(labelled, size=(BOOTSTRAP_RESAMPLES, labelled))
        variances = []
        for draw in draws:
            table = np.bincount(codes[draw], minlength=9).reshape(3, 3) / labelled
            variance = kappa_unit_variance(table)
            if math.isfinite(variance):
                variances.append(variance)
        if variances:
            quantile = float(np.quantile(variances, KAPPA_VARIANCE_QUANTILE))
            spread = float(np.std(variances))
            unit_variance = quantile
            for _ in range(50):  # fixed point of V = q + z_0.9 * sd * sqrt(m / n(V))
                needed = max(labelled, _z(confidence) ** 2 * unit_variance / halfwidth**2)
                unit_variance = quantile + _z(0.8) * spread * math.sqrt(labelled / needed)
            basis = (
                f"FCE variance from {labelled} labels: {KAPPA_VARIANCE_QUANTILE:.0%} bootstrap "
                f"quantile ({BOOTSTRAP_RESAMPLES} resamples) plus the final estimate's "
                "one-sided 90% noise"
            )
        else:
            unit_variance, basis = math.nan, ""
    else:
        unit_variance = math.nan
    if not math.isfinite(unit_variance):
        shares = judge_shares if sum(judge_shares) > 0 else (0.5, 0.5, 0.0)
        unit_variance = worst_case_kappa_variance(shares)
        why = (
            f"fewer than {MIN_LABELS_TO_ESTIMATE} usable labels"
            if use_labels
            else "informative order"
        )
        basis = (
            f"{why}: worst case over kappa 0-0.95 "
            f"with humans assumed to use a/b/tie as the judge does "
            f"({', '.join(f'{s:.2f}' for s in np.asarray(shares) / sum(shares))})"
        )
    total = max(1, math.ceil((_z(confidence) ** 2) * unit_variance / halfwidth**2))
    return Plan(
        "kappa",
        halfwidth,
        confidence,
        labelled,
        total,
        max(0, total - labelled),
        unit_variance,
        basis,
    )


@dataclass(frozen=True)
class PairPriority:
    pair_id: str
    score: float
    flip_share: float
    disagreement: float
    judges: int


def _tiebreak(pair_id: str, seed: int) -> bytes:
    return hashlib.sha256(f"{seed}\x00{pair_id}".encode()).digest()


def pair_priority(pair_id: str, outcomes: Sequence[PairOutcome]) -> PairPriority:
    """Flip share + disagreement over the judges' evaluated outcomes of one pair."""
    evaluated = [o for o in outcomes if o.evaluated]
    if not evaluated:
        return PairPriority(pair_id, 0.0, 0.0, 0.0, 0)
    flips = sum(o.verdict_ab != o.verdict_ba for o in evaluated) / len(evaluated)
    verdicts = [o.consolidated for o in evaluated]
    top = max(verdicts.count(v) for v in set(verdicts))
    disagreement = 1.0 - top / len(verdicts)
    return PairPriority(pair_id, flips + disagreement, flips, disagreement, len(evaluated))


def order_pairs(
    priorities: Sequence[PairPriority], order: str = "informative", seed: int = 0
) -> list[PairPriority]:
    """Most informative first (ties in hash order), or all in hash order (``random``)."""
    if order not in ORDERS:
        raise ValueError(f"order must be one of {', '.join(ORDERS)}, got {order!r}")
    if order == "random":
        return sorted(priorities, key=lambda p: _tiebreak(p.pair_id, seed))
    return sorted(priorities, key=lambda p: (-p.score, _tiebreak(p.pair_id, seed)))
