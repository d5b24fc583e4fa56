r"""How many score levels a judge really uses: the perplexity of its score distribution.

A judge that gives only 7s and 8s on a 1-10 scale cannot rank answers however fair it is.
With :math:`p_s` the share of its scores equal to level :math:`s`, the effective number of
levels is the perplexity

.. math::

    L_{\mathrm{eff}} = 2^{H},\qquad H = -\sum_s p_s \log_2 p_s,

which is 1 for a judge that always says the same score, :math:`k` for one that spreads its
scores evenly over :math:`k` levels, and in between otherwise (Hill 1973's diversity of
order 1; Shannon 1948 for the entropy). ``unused_levels`` are the whole levels of the scale
the judge never gave (only for integer scales; fractional scores count by value).

:func:`score_resolution_from_counts` computes the same from (level, count) pairs, so a caller
holding counts (the report's per-(reviewer, score) tallies) need not expand them back into
one float per score.

References
----------
Shannon, C. E. (1948). A mathematical theory of communication. Bell System Technical
Journal 27, 379-423. Hill, M. O. (1973). Diversity and evenness: a unifying notation and
its consequences. Ecology 54, 427-432.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class ScoreResolution:
    """A judge's effective levels, the distinct levels it gave, and the scale's unused ones."""

    effective_levels: float
    distinct_levels: int
    unused_levels: tuple[int, ...]
    n_scores: int


def score_resolution(
    scores: Iterable[float], scale: tuple[float, float] | None = None
) -> ScoreResolution | None:
    """The resolution of one judge's scores (module docstring); ``None`` for no finite score.

    ``scale`` (low, high): with whole-number ends, the whole levels in it that the judge
    never gave are listed.

    Parameters
    ----------
    scores : iterable of float
        One judge's scores; non-finite ones are ignored.
    scale : tuple of float, optional
        ``(low, high)`` of the score scale.

    Returns
    -------
    ScoreResolution or None
        ``effective_levels`` (the perplexity), ``distinct_levels``, ``unused_levels`` and
        ``n_scores``; None when no score is finite.
    """
    finite = Counter(float(score) for score in scores if math.isfinite(score))
    return score_resolution_from_counts(finite.items(), scale)  # first-appearance order


def _unused_levels(
    counts: Mapping[float, int], scale: tuple[float, float] | None
) -> tuple[int, ...]:
    """The whole levels of an integer ``scale`` (at most 1001 of them) absent from ``counts``."""
    if scale is None or not all(float(end).is_integer() for end in scale):
        return ()
    low, high = int(scale[0]), int(scale[1])
    if high - low > 1000:
        return ()
    return tuple(level for level in range(low, high + 1) if float(level) not in counts)


def score_resolution_from_counts(
    levels: Iterable[tuple[float, int]], scale: tuple[float, float] | None = None
) -> ScoreResolution | None:
    r""":func:`score_resolution` of the scores that ``levels`` tallies, without expanding them.

    Same formula (module docstring): with :math:`n_s` the count of level :math:`s` and
    :math:`N = \sum_s n_s`, :math:`H = -\sum_s (n_s/N) \log_2 (n_s/N)` and
    :math:`L_{\mathrm{eff}} = 2^H` (Shannon 1948; Hill 1973). A level listed twice counts
    once with the summed count; levels with a non-finite score or a count of zero or less are
    ignored. The terms are summed in the order levels first appear (as :func:`score_resolution`
    sums them in the order scores first appear), so the two agree bit for bit when ``levels``
    lists each score in its first-appearance order.

    Parameters
    ----------
    levels : iterable of (float, int)
        ``(score, count)`` pairs.
    scale : tuple of float, optional
        ``(low, high)`` of the score scale.

    Returns
    -------
    ScoreResolution or None
        As :func:`score_resolution`; None when no finite score has a positive count.
    """
    counts: dict[float, int] = {}
    for score, count in levels:
        level, n = float(score), int(count)
        if n <= 0 or not math.isfinite(level):
            continue
        counts[level] = counts.get(level, 0) + n
    if not counts:
        return None
    total = sum(counts.values())
    entropy = -sum((count / total) * math.log2(count / total) for count in counts.values())
    return ScoreResolution(
        effective_levels=2.0**entropy,
        distinct_levels=len(counts),
        unused_levels=_unused_levels(counts, scale),
        n_scores=total,
    )
