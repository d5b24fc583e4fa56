"""Majority voting, written once: repetitions of one order, annotators of one pair.

The rule everywhere in calibration is the STRICT PLURALITY: the value given most often,
and no value when the top counts tie (``[a, b]``, ``[a, b, tie]``, ``[]``). Callers decide
what "no majority" means: one order's repetitions become a ``tie`` verdict
(:func:`llm_council.calibration.outcomes.order_verdict`), a pair's annotators leave it
unlabelled (``human_label`` stays None). Hand check: ``[b, a, a]`` -> ``a`` (2 of 3),
``[a, b]`` -> None (1 vs 1), ``[a, a, b, b, tie]`` -> None (2 vs 2).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Iterable
from typing import TypeVar

Vote = TypeVar("Vote", bound=Hashable)


def strict_plurality(votes: Iterable[Vote]) -> Vote | None:
    """The value given most often; ``None`` when ``votes`` is empty or the top counts tie."""
    ranked = Counter(votes).most_common(2)
    if not ranked or (len(ranked) > 1 and ranked[0][1] == ranked[1][1]):
        return None
    return ranked[0][0]


def modal_share(votes: Iterable[Hashable]) -> float:
    """Share of ``votes`` that gave the most frequent value (``[a, a, b]`` -> 2/3).

    Defined whether or not the mode is strict (``[a, b]`` -> 1/2): the repetition-stability
    literature's "majority share" (Shi et al. 2024). ``ValueError`` on no votes.
    """
    counts = Counter(votes)
    if not counts:
        raise ValueError("modal_share of no votes")
    return counts.most_common(1)[0][1] / counts.total()
