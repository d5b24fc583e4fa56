"""One multiplicity procedure over every hypothesis a report tests, grouped into families.

Two error rates, both valid under any dependence between the tests (the report's tests
share data: a reviewer's leniency, slot and favouritism estimates come from the same
scores, and the cells of a favouritism table are negatively correlated by construction):

- **family-wise** (:func:`family_holm_adjusted`): a weighted-Bonferroni closed test whose
  shortcut is Holm across families (weighted by fixed family weights) and Holm within each
  family;
- **false discovery rate** (:func:`benjamini_yekutieli_adjusted`): Benjamini-Yekutieli
  (2001), the Benjamini-Hochberg step-up with its ``sum 1/k`` factor, which needs no
  positive-dependence condition.

Both leave NaN p-values (hypotheses that could not be tested) out and return NaN there.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike


def family_holm_adjusted(
    p_values: ArrayLike,
    families: Sequence[Hashable],
    family_weights: Mapping[Any, float] | None = None,
) -> np.ndarray:
    r"""Adjusted p-values of the closed test with Bonferroni local tests weighted by family.

    Each family :math:`f` has a fixed, positive prior weight :math:`v_f` (``family_weights``;
    a family not named there, and every family when it is None, weighs 1). Let :math:`I` be a
    set of hypotheses, :math:`F_I` the families it touches and :math:`I_f = I \cap f`. The
    local test of :math:`\bigcap_{i \in I} H_i` rejects at level :math:`\alpha` when some
    :math:`p_i \le \alpha\, w_i(I)` with

    .. math:: w_i(I) = \frac{v_f}{\sum_{g \in F_I} v_g} \cdot \frac{1}{|I_f|},
              \quad i \in f,

    each touched family a share of :math:`\alpha` in proportion to its weight, split equally
    among its hypotheses in :math:`I`. The weights sum to 1 (a valid Bonferroni test under
    any dependence) and only grow as :math:`I` shrinks, so by the closure principle (Marcus,
    Peritz & Gabriel 1976) and the sequential rejection principle (Goeman & Solari 2010) the
    closed test is the sequentially rejective shortcut of Bretz, Maurer, Brannath & Posch
    (2009, "A graphical approach to sequentially rejective multiple test procedures",
    Stat. Med. 28(4)): reject the hypothesis with the smallest :math:`p_i / w_i(R)` among
    those still untested :math:`R`, remove it, repeat. A rejected hypothesis's weight passes
    to the rest of its family (Holm within the family); an exhausted family's share passes to
    the other families in proportion to their weights (weighted Holm across families, Holm
    1979, section 5; the graph whose edges from :math:`f` go to each other family :math:`g`
    with weight :math:`v_g / \sum_{h \ne f} v_h`), the hierarchical scheme of Meinshausen
    (2008) and Goeman & Finos (2012). A family absent from the report (nothing tested)
    takes no share. The adjusted p-value of the hypothesis removed at step :math:`k` is
    :math:`\max_{j \le k} \min(1, p_{(j)} / w_{(j)}(R_j))`; rejecting where it is
    :math:`\le \alpha` controls the family-wise error over *all* hypotheses at
    :math:`\alpha`, provided the weights are fixed before the data are seen. Equal weights
    and one family give Holm (1979); families of one hypothesis and equal weights give Holm
    over all.

    Parameters
    ----------
    p_values : array_like, shape (m,)
        Raw p-values; NaN marks a test not run.
    families : sequence of hashable, length m
        The family of each hypothesis.
    family_weights : mapping of family to float, optional
        Prior weight of each family (default 1 each).

    Returns
    -------
    ndarray, shape (m,)
        Adjusted p-values in the input order; NaN where the input is NaN.
    """
    values = np.asarray(p_values, dtype=float).ravel()
    if len(families) != values.size:
        raise ValueError(f"{values.size} p-values but {len(families)} family labels")
    weights = dict(family_weights or {})
    for family, weight in weights.items():
        if not (math.isfinite(weight) and weight > 0):
            raise ValueError(f"family weight of {family!r} is {weight!r}; it must be > 0")
    adjusted = np.full(values.size, np.nan)
    # each family's finite p-values, ascending; the procedure only ever takes a family's
    # smallest remaining one (the other members of a family share its weight)
    queues: dict[Hashable, list[int]] = {}
    for finite_index in np.flatnonzero(np.isfinite(values)).tolist():
        queues.setdefault(families[finite_index], []).append(finite_index)
    for members in queues.values():
        members.sort(key=lambda i: (values[i], i))
    weight_of = {family: float(weights.get(family, 1.0)) for family in queues}
    heads = dict.fromkeys(queues, 0)
    running = 0.0
    while heads:
        total_weight = sum(weight_of[family] for family in heads)
        # each family's smallest remaining p over that hypothesis's current weight
        # w = (v_f / total) / remaining, i.e. p * remaining * total / v_f
        divided = {
            family: float(
                values[queues[family][heads[family]]]
                * (len(queues[family]) - heads[family])
                * total_weight
                / weight_of[family]
            )
            for family in heads
        }
        best_family = min(
            heads, key=lambda family: (divided[family], queues[family][heads[family]])
        )
        position = heads[best_family]
        index = queues[best_family][position]
        running = max(running, min(1.0, divided[best_family]))
        adjusted[index] = running
        if len(queues[best_family]) - position == 1:
            del heads[best_family]
        else:
            heads[best_family] = position + 1
    return adjusted.reshape(np.shape(p_values))


def benjamini_yekutieli_adjusted(p_values: ArrayLike) -> np.ndarray:
    r"""Benjamini-Yekutieli (2001) adjusted p-values; NaN entries are left out.

    With the ``m`` finite p-values ascending and :math:`c(m) = \sum_{k=1}^m 1/k`,
    :math:`\tilde p_{(i)} = \min_{j \ge i} \min(1, c(m)\, m\, p_{(j)} / j)`. Rejecting where
    :math:`\tilde p \le q` keeps the expected share of false findings among the findings at
    or below :math:`q` under *any* dependence (Benjamini & Yekutieli 2001, "The control of
    the false discovery rate in multiple testing under dependency", Ann. Statist. 29(4),
    Theorem 1.3); Benjamini-Hochberg alone needs positive regression dependence, which the
    negatively correlated cells of a favouritism table do not have.

    Parameters
    ----------
    p_values : array_like, shape (m,)
        Raw p-values; NaN marks a test not run.

    Returns
    -------
    ndarray, shape (m,)
        Adjusted p-values in the input order; NaN where the input is NaN.
    """
    values = np.asarray(p_values, dtype=float)
    adjusted = np.full(values.shape, np.nan)
    flat_values = values.ravel()
    finite = np.flatnonzero(np.isfinite(flat_values))
    if finite.size == 0:
        return adjusted
    family = flat_values[finite]
    m = family.size
    harmonic = float(np.sum(1.0 / np.arange(1, m + 1)))
    order = np.argsort(family, kind="stable")
    stepped = harmonic * m * family[order] / np.arange(1, m + 1)
    stepped = np.minimum(1.0, np.minimum.accumulate(stepped[::-1])[::-1])
    flat = adjusted.ravel()
    flat[finite[order]] = stepped
    return flat.reshape(values.shape)
