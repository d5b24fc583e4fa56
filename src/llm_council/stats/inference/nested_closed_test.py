"""The report's weighted closed test when one hypothesis of a family implies another (ADR 0082).

:func:`~llm_council.stats.inference.report_multiplicity.family_holm_adjusted` is the closed
test whose local tests are weighted Bonferroni, each family's share split equally among its
hypotheses in the intersection. When a family holds a pair in which one null hypothesis
(``full``: every slot equal) implies the other (``sub``: the edges equal the others' mean),
an intersection that holds ``full`` is the same null as one that holds both, so the family's
part of its local test may be any valid test of ``full`` at the family's whole share: here
the min-p test of the pair (:func:`~llm_council.stats.inference.nested_wald.nested_wald_min_p`),
not the two halves of Holm. :func:`nested_family_holm_adjusted` computes that closed test's
adjusted p-values exactly.
"""

from __future__ import annotations

import itertools
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from llm_council.stats.inference.report_multiplicity import family_holm_adjusted

#: at most this many nested pairs (the closed test runs 2^pairs shortcuts)
MAX_NESTED_PAIRS = 4


@dataclass(frozen=True)
class NestedPair:
    """Two hypotheses of one family, ``full`` implying ``sub``, and the p of a valid test of
    ``full`` that uses both (``combined_p``: their min-p test)."""

    full: int  # index of the hypothesis whose null implies the other's
    sub: int
    combined_p: float


def nested_family_holm_adjusted(
    p_values: ArrayLike,
    families: Sequence[Hashable],
    family_weights: Mapping[Any, float] | None,
    pairs: Sequence[NestedPair],
) -> np.ndarray:
    r"""Adjusted p-values of the weighted closed test with nested pairs (ADR 0082).

    Each pair's family part of a local test is: ``combined_p`` at the family's share when
    the intersection holds ``full`` (with or without ``sub``: as null hypotheses
    :math:`H_{full} \cap H_{sub} = H_{full}`), and ``sub``'s own p at the whole share when
    it holds ``sub`` only. Every local test is still a weighted Bonferroni test of level
    :math:`\alpha` (each part a valid test of its family's null at its share), so the closed
    test controls the family-wise error strongly (Marcus, Peritz & Gabriel 1976). Its
    intersections split by which form each pair takes in them: "full" (``sub`` dropped,
    ``full``'s p replaced by ``combined_p``) or "sub only" (``full`` dropped). Within one
    choice of forms every family is as in :func:`family_holm_adjusted`, whose shortcut is
    exact there; a hypothesis is rejected when every intersection holding it is, so

    - ``full``'s adjusted p is the largest over the choices in which its pair is "full";
    - ``sub``'s is the largest of that and of its own over the choices in which its pair is
      "sub only";
    - any other hypothesis's is the largest over all choices.

    With no pair this is :func:`family_holm_adjusted`. ``combined_p`` must be a valid
    p-value of ``full``'s null (NaN drops the pair: both then enter as ordinary members).
    """
    values = np.asarray(p_values, dtype=float).ravel()
    usable = [
        pair
        for pair in pairs
        if np.isfinite(pair.combined_p)
        and np.isfinite(values[pair.full])
        and np.isfinite(values[pair.sub])
    ]
    if not usable:
        return family_holm_adjusted(values, families, family_weights)
    if len(usable) > MAX_NESTED_PAIRS:
        raise ValueError(f"{len(usable)} nested pairs; at most {MAX_NESTED_PAIRS} are supported")
    for pair in usable:
        if families[pair.full] != families[pair.sub] or pair.full == pair.sub:
            raise ValueError(f"a nested pair must be two hypotheses of one family: {pair}")
    adjusted = np.full(values.size, -np.inf)
    adjusted[~np.isfinite(values)] = np.nan
    for forms in itertools.product((True, False), repeat=len(usable)):  # True: "full"
        chosen = values.copy()
        for as_full, pair in zip(forms, usable, strict=True):
            if as_full:
                chosen[pair.full], chosen[pair.sub] = pair.combined_p, np.nan
            else:
                chosen[pair.full] = np.nan
        this_choice = family_holm_adjusted(chosen, families, family_weights)
        for as_full, pair in zip(forms, usable, strict=True):
            if as_full:  # the intersections with full hold sub's null too
                this_choice[pair.sub] = this_choice[pair.full]
        finite = np.isfinite(this_choice)
        adjusted[finite] = np.maximum(adjusted[finite], this_choice[finite])
    return adjusted.reshape(np.shape(p_values))
