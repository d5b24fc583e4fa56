"""Reviewer x candidate-model interaction effects (favouritism) with Holm control.

Within one session the scores form a reviewer x model table. Answer quality is a column
effect and a reviewer's leniency (in that session) a row effect; favouritism of reviewer
``r`` toward model ``m`` is what is left in cell ``(r, m)`` after both are removed, i.e.
the interaction of a two-way additive model fitted by least squares to the observed cells.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from llm_council.stats.multiplicity import holm_adjusted
from llm_council.stats.pooling import IntervalEstimate, cluster_mean_interval

_LEVERAGE_FLOOR = 1e-9


def additive_residuals(
    scores: ArrayLike, *, max_iterations: int = 500, tolerance: float = 1e-12
) -> np.ndarray:
    r"""Residuals of ``y[s, r, m] = a[s, r] + b[s, m] + e`` fitted per session on observed cells.

    ``scores`` has shape (sessions, reviewers, models) with NaN for unobserved cells.
    Least squares by alternating projections (sweep out row means, then column means,
    until both are zero): the iterates converge to the projection onto the orthogonal
    complement of the row + column space (von Neumann 1950; Deming & Stephan 1940 for
    the sweep on two-way tables). On a complete table one sweep gives the double-centred
    residual :math:`y_{rm} - \bar y_{r\cdot} - \bar y_{\cdot m} + \bar y_{\cdot\cdot}`.
    Unobserved cells stay NaN.
    """
    values = np.asarray(scores, dtype=float)
    if values.ndim != 3:
        raise ValueError(
            f"scores must have shape (sessions, reviewers, models), got {values.shape}"
        )
    observed = np.isfinite(values)
    weight = observed.astype(float)
    residual = np.where(observed, values, 0.0)
    row_count = np.maximum(weight.sum(axis=2), 1.0)
    column_count = np.maximum(weight.sum(axis=1), 1.0)
    for _ in range(max_iterations):
        row_mean = residual.sum(axis=2) / row_count
        residual -= row_mean[:, :, None] * weight
        column_mean = residual.sum(axis=1) / column_count
        residual -= column_mean[:, None, :] * weight
        if (
            max(
                float(np.abs(row_mean).max(initial=0.0)),
                float(np.abs(column_mean).max(initial=0.0)),
            )
            < tolerance
        ):
            break
    return np.where(observed, residual, np.nan)


def cell_leverage_complement(observed: ArrayLike) -> np.ndarray:
    r""":math:`M_{cc}` per observed cell ``c``: the residual at ``c`` of the indicator of ``c``.

    ``observed`` is a boolean (reviewers, models) pattern. If cell ``c`` alone carries an
    extra ``delta``, its residual has expectation :math:`M_{cc}\,\delta`, so
    ``residual / M_cc`` is the unbiased single-cell effect (the coefficient of a dummy for
    that cell in the additive regression, Frisch-Waugh-Lovell). Complete ``k x k`` table:
    :math:`M_{cc} = (1 - 1/k)^2`. NaN where not observed or not identifiable.
    """
    pattern = np.asarray(observed, dtype=bool)
    cells = np.argwhere(pattern)
    indicators = np.full((len(cells), *pattern.shape), np.nan)
    indicators[:, pattern] = 0.0
    indicators[np.arange(len(cells)), cells[:, 0], cells[:, 1]] = 1.0
    residual = additive_residuals(indicators)
    leverage = np.full(pattern.shape, np.nan)
    leverage[cells[:, 0], cells[:, 1]] = residual[np.arange(len(cells)), cells[:, 0], cells[:, 1]]
    return np.where(leverage > _LEVERAGE_FLOOR, leverage, np.nan)


def spillover_weights(observed: ArrayLike) -> np.ndarray:
    r"""``W[c_r, c_m, d_r, d_m]``: what one point in cell ``c`` adds to the estimate of cell ``d``.

    The single-cell estimate of ``d`` is its residual over :math:`M_{dd}`; a true effect in
    another cell ``c`` reaches that residual through the residual maker, so the estimate of
    ``d`` moves by :math:`M_{dc} / M_{dd}` per point in ``c`` (:math:`W_{cc} = 1`). Complete
    ``k x k`` table: :math:`-1/(k-1)` on the row and column of ``c``, :math:`1/(k-1)^2`
    elsewhere. NaN where ``c`` or ``d`` is unobserved.
    """
    pattern = np.asarray(observed, dtype=bool)
    cells = np.argwhere(pattern)
    indicators = np.full((len(cells), *pattern.shape), np.nan)
    indicators[:, pattern] = 0.0
    indicators[np.arange(len(cells)), cells[:, 0], cells[:, 1]] = 1.0
    residual = additive_residuals(indicators)
    leverage = cell_leverage_complement(pattern)
    weights = np.full((*pattern.shape, *pattern.shape), np.nan)
    weights[cells[:, 0], cells[:, 1]] = residual / leverage[None, :, :]
    return weights


def session_cell_effects(scores: ArrayLike) -> np.ndarray:
    """Per session and cell, the single-cell interaction effect ``residual / M_cc`` in points.

    Each distinct pattern of observed cells gets its own :func:`cell_leverage_complement`.
    """
    values = np.asarray(scores, dtype=float)
    residual = additive_residuals(values)
    observed = np.isfinite(values)
    flat = observed.reshape(observed.shape[0], -1)
    patterns, pattern_index = np.unique(flat, axis=0, return_inverse=True)
    leverage = np.stack(
        [cell_leverage_complement(p.reshape(observed.shape[1:])) for p in patterns]
    )[np.asarray(pattern_index).reshape(-1)]
    return residual / leverage


@dataclass(frozen=True)
class FavouritismMatrix:
    """Per (reviewer, model): the session-mean effect, its interval, raw and Holm p-values."""

    effects: list[list[IntervalEstimate]]  # [reviewer][model]
    holm_p: np.ndarray  # (reviewers, models), NaN where untested
    flagged: np.ndarray  # bool (reviewers, models): Holm p < alpha
    significance_level: float
    #: bool (reviewers, models): a flagged cell whose interval holds the spill-over that the
    #: larger flagged cells predict for it (see :func:`explain_spillover`)
    spillover: np.ndarray | None = None


def favouritism_matrix(scores: ArrayLike, significance_level: float = 0.05) -> FavouritismMatrix:
    """Session-clustered t intervals of each cell's effect, flagged after Holm's correction.

    Sessions are the independent units (ADR 0009): each cell's per-session effects are
    averaged with :func:`~llm_council.stats.pooling.cluster_mean_interval`. Holm, not
    Benjamini-Hochberg: the cells of one table are negatively dependent (each row and
    column of residuals sums to zero), which BH's positive-dependence condition does not
    cover, and a flag here names a judge, so the family-wise rate is the promise we want.
    """
    per_session = session_cell_effects(scores)
    _, n_reviewers, n_models = per_session.shape
    effects = [
        [cluster_mean_interval(per_session[:, r, m]) for m in range(n_models)]
        for r in range(n_reviewers)
    ]
    raw_p = np.array([[cell.p_value for cell in row] for row in effects], dtype=float)
    holm_p = holm_adjusted(raw_p)
    flagged = np.where(np.isfinite(holm_p), holm_p < significance_level, False).astype(bool)
    observed = np.isfinite(np.asarray(scores, dtype=float))
    # the most common pattern of observed cells stands for the design in the spill-over model
    patterns, counts = np.unique(
        observed.reshape(observed.shape[0], -1), axis=0, return_counts=True
    )
    modal = patterns[int(np.argmax(counts))].reshape(n_reviewers, n_models)

    def grid(name: str) -> np.ndarray:
        return np.array([[getattr(cell, name) for cell in row] for row in effects], dtype=float)

    spillover = explain_spillover(
        grid("estimate"), grid("ci_low"), grid("ci_high"), flagged, spillover_weights(modal)
    )
    return FavouritismMatrix(effects, holm_p, flagged, significance_level, spillover)


def explain_spillover(
    estimates: ArrayLike,
    ci_low: ArrayLike,
    ci_high: ArrayLike,
    flagged: ArrayLike,
    weights: ArrayLike,
) -> np.ndarray:
    """Which flagged cells are explained by spill-over from larger flagged cells.

    Greedy, largest |estimate| first: a flagged cell is a *source* unless its interval
    contains the non-zero sum, over the sources found so far, of source estimate x
    :func:`spillover_weights`; then it is marked as spill-over. Flags are unchanged (their
    false-alarm rate is Holm's); this only says which of them the others account for.
    """
    effect = np.asarray(estimates, dtype=float)
    low, high = np.asarray(ci_low, dtype=float), np.asarray(ci_high, dtype=float)
    flags = np.asarray(flagged, dtype=bool)
    spill = np.asarray(weights, dtype=float)
    explained = np.zeros(flags.shape, dtype=bool)
    predicted = np.zeros(flags.shape)
    cells = [tuple(int(v) for v in c) for c in np.argwhere(flags)]
    for cell in sorted(cells, key=lambda c: -abs(effect[c])):
        guess = predicted[cell]
        if guess != 0.0 and low[cell] <= guess <= high[cell]:
            explained[cell] = True
            continue
        predicted += effect[cell] * np.nan_to_num(spill[cell])
    return explained


def mutual_blocs(favoured: ArrayLike, reviewer_models: list[int | None]) -> list[list[int]]:
    """Groups of reviewers joined by mutual favour (each flagged as favouring the other's model).

    ``favoured[r, m]`` is True where reviewer ``r`` significantly favours model ``m``;
    ``reviewer_models[r]`` is the model index of reviewer ``r``'s own answers (None if it
    does not answer). Returns the connected components (size >= 2) of the mutual-favour graph,
    as sorted reviewer indices.
    """
    flags = np.asarray(favoured, dtype=bool)
    n = len(reviewer_models)
    parent = list(range(n))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for a in range(n):
        for b in range(a + 1, n):
            model_a, model_b = reviewer_models[a], reviewer_models[b]
            if model_a is None or model_b is None:
                continue
            if flags[a, model_b] and flags[b, model_a]:
                parent[root(a)] = root(b)
    groups: dict[int, list[int]] = {}
    for i in range(n):
        groups.setdefault(root(i), []).append(i)
    return sorted(sorted(g) for g in groups.values() if len(g) >= 2)
