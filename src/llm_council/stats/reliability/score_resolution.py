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

References
----------
Shannon, C. E. (1948). A mathematical theory of communication. Bell System Technical
Journal 27, 379-423. Hill, M. O. (1973). Diversity and evenness: a unifying notation and
its consequences. Ecology 54, 427-432.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable
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
    finite = [float(score) for score in scores if math.isfinite(score)]
    if not finite:
        return None
    counts = Counter(finite)
    total = len(finite)
    entropy = -sum((count / total) * math.log2(count / total) for count in counts.values())
    unused: tuple[int, ...] = ()
    if scale is not None and all(float(end).is_integer() for end in scale):
        low, high = int(scale[0]), int(scale[1])
        if high - low <= 1000:
            unused = tuple(level for level in range(low, high + 1) if float(level) not in counts)
    return ScoreResolution(
        effective_levels=2.0**entropy,
        distinct_levels=len(counts),
        unused_levels=unused,
        n_scores=total,
    )
