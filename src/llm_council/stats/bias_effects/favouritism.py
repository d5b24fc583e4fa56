"""Reviewer x candidate-model interaction effects (favouritism) with Holm control.

Within one session the scores form a reviewer x model table. Answer quality is a column
effect and a reviewer's leniency (in that session) a row effect; favouritism of reviewer
``r`` toward model ``m`` is what is left in cell ``(r, m)`` after both are removed, i.e.
the interaction of a two-way additive model fitted by least squares to the observed cells.
Optionally length-controlled: each reviewer's ln(words) slope is removed first, so a
reviewer's taste for long answers is not read as favour toward the model that writes them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from llm_council.stats.design.row_patterns import row_patterns
from llm_council.stats.design.session_tables import SessionTables
from llm_council.stats.inference.multiplicity import holm_adjusted
from llm_council.stats.inference.pooling import IntervalEstimate, cluster_mean_interval

_LEVERAGE_FLOOR = 1e-9


def additive_residuals(scores: ArrayLike) -> np.ndarray:
    r"""Residuals of ``y[s, r, m] = a[s, r] + b[s, m] + e`` fitted per session on observed cells.

    ``scores`` has shape (sessions, reviewers, models) with NaN for unobserved cells. The
    least-squares residual of each session's table, :math:`M_O y` with the residual maker
    of its pattern of observed cells
    (:class:`~llm_council.stats.design.session_tables.SessionTables`):
    the limit of sweeping out row and column means in turn (von Neumann 1950; Deming &
    Stephan 1940), computed exactly. On a complete table it is the double-centred residual
    :math:`y_{rm} - \bar y_{r\cdot} - \bar y_{\cdot m} + \bar y_{\cdot\cdot}`.
    Unobserved cells stay NaN.
    """
    values = np.asarray(scores, dtype=float)
    if values.ndim != 3:
        raise ValueError(
            f"scores must have shape (sessions, reviewers, models), got {values.shape}"
        )
    observed = np.isfinite(values)
    residual = SessionTables(observed).project(np.where(observed, values, 0.0))
    return residual if observed.all() else np.where(observed, residual, np.nan)


def cell_leverage_complement(observed: ArrayLike) -> np.ndarray:
    r""":math:`M_{cc}` per observed cell ``c``: the residual at ``c`` of the indicator of ``c``.

    ``observed`` is a boolean (reviewers, models) pattern. If cell ``c`` alone carries an
    extra ``delta``, its residual has expectation :math:`M_{cc}\,\delta`, so
    ``residual / M_cc`` is the unbiased single-cell effect (the coefficient of a dummy for
    that cell in the additive regression, Frisch-Waugh-Lovell). Complete ``k x k`` table:
    :math:`M_{cc} = (1 - 1/k)^2`. NaN where not observed or not identifiable.
    """
    pattern = np.asarray(observed, dtype=bool)
    return session_leverage(pattern[None])[0]


def spillover_weights(observed: ArrayLike) -> np.ndarray:
    r"""``W[c_r, c_m, d_r, d_m]``: what one point in cell ``c`` adds to the estimate of cell ``d``.

    The single-cell estimate of ``d`` is its residual over :math:`M_{dd}`; a true effect in
    another cell ``c`` reaches that residual through the residual maker, so the estimate of
    ``d`` moves by :math:`M_{dc} / M_{dd}` per point in ``c`` (:math:`W_{cc} = 1`). Complete
    ``k x k`` table: :math:`-1/(k-1)` on the row and column of ``c``, :math:`1/(k-1)^2`
    elsewhere. NaN where ``c`` or ``d`` is unobserved.

    Parameters
    ----------
    observed : array_like of bool, shape (R, M)
        The observed cells.

    Returns
    -------
    ndarray, shape (R, M, R, M)
        The weights W.
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
    return additive_residuals(values) / session_leverage(np.isfinite(values))


def session_leverage(observed: ArrayLike) -> np.ndarray:
    """:math:`M_{cc}` per session and cell (:func:`cell_leverage_complement` of its pattern):
    the diagonal of each session's residual maker, NaN where unobserved or not identifiable.

    ``observed`` is bool (sessions, reviewers, models); each distinct pattern of observed
    cells is solved once per block of sessions.
    """
    pattern = np.asarray(observed, dtype=bool)
    leverage = SessionTables(pattern).leverage()
    return np.where(pattern & (leverage > _LEVERAGE_FLOOR), leverage, np.nan)


@dataclass(frozen=True)
class LengthSlopes:
    """Per-reviewer score slopes on ln(words), fitted jointly with every cell effect."""

    slopes: np.ndarray  # (reviewers,) points per unit ln(words); only differences identified
    #: (sessions, reviewers): each session's influence on the slopes, ``n A^+ X_s' u_s``;
    #: sums to zero, and ``slopes - truth`` is about its session mean
    influence: np.ndarray


def reviewer_length_slopes(scores: ArrayLike, log_words: ArrayLike) -> LengthSlopes:
    r"""Fit :math:`y_{srm} = a_{sr} + b_{sm} + g_{rm} + \beta_r \ln w_{srm} + e_{srm}`.

    With the cell effects :math:`g_{rm}` in the model, :math:`\beta_r` is identified only
    by how a model's answer length varies *from session to session*, never by which model
    writes long answers, so a genuine favour toward a verbose model is not absorbed into
    its reviewer's slope. Frisch-Waugh-Lovell: regress the fixed-effect residuals of the
    scores on those of the covariates :math:`X^{(j)}_{srm} = [r = j] \ln w_{srm}`,
    :math:`\hat\beta = A^{+} \sum_s X_s^\top y_s` with :math:`A = \sum_s X_s^\top X_s`
    (pseudo-inverse: a common slope is absorbed by :math:`b_{sm}`, so only differences
    between reviewers are identified, and only they reach the cell effects).
    """
    values = np.asarray(scores, dtype=float)
    lengths = np.asarray(log_words, dtype=float)
    if lengths.shape != values.shape:
        raise ValueError(f"log_words shape {lengths.shape} differs from scores {values.shape}")
    observed = np.isfinite(values)
    if not np.isfinite(lengths[observed]).all():
        raise ValueError("log_words must be finite wherever a score is observed")
    return _length_slopes(values, observed, lengths)


def _length_slopes(values: np.ndarray, observed: np.ndarray, lengths: np.ndarray) -> LengthSlopes:
    """:func:`reviewer_length_slopes` on checked input."""
    n_sessions, n_reviewers, n_models = values.shape
    # the scores and the covariates (:func:`length_covariates`) side by side on the last
    # axis, 0 on unobserved cells, then their fixed-effect residuals in place
    stacked = np.zeros((n_sessions, n_reviewers, n_models, n_reviewers + 1))
    np.copyto(stacked[..., 0], values, where=observed)
    for reviewer in range(n_reviewers):
        np.copyto(
            stacked[:, reviewer, :, 1 + reviewer],
            lengths[:, reviewer],
            where=observed[:, reviewer],
        )
    three_way_residuals(stacked, SessionTables(observed))
    columns = stacked.reshape(-1, n_reviewers + 1)  # a view: (cells of every session, 1 + j)
    products = columns.T @ columns
    gram = products[1:, 1:]
    inverse = np.linalg.pinv(gram, rcond=1e-10)
    slopes = inverse @ products[1:, 0]
    unexplained = columns @ np.concatenate([[1.0], -slopes])
    per_session = np.einsum(
        "scj,sc->sj",
        stacked.reshape(n_sessions, -1, n_reviewers + 1)[..., 1:],
        unexplained.reshape(n_sessions, -1),
    )
    influence = n_sessions * per_session @ inverse.T
    return LengthSlopes(slopes=slopes, influence=influence.reshape(n_sessions, n_reviewers))


def three_way_residuals(stacked: np.ndarray, tables: SessionTables) -> np.ndarray:
    r"""Residuals of ``y[s, r, m] = a[s, r] + b[s, m] + g[r, m] + e``, written into ``stacked``.

    ``stacked`` is (sessions, reviewers, models, k): k arrays with the observed cells of
    ``tables``, 0 elsewhere. Frisch-Waugh-Lovell with the session effects first: with
    :math:`P` the per-session two-way projection (:meth:`SessionTables.project`) and ``G``
    the cell dummies, the residual is :math:`u - P G \hat g` with :math:`u = P y` and
    :math:`\hat g = (G^\top P G)^{+} G^\top u`, where :math:`G^\top P G = \sum_s M_{O_s}`
    and :math:`G^\top u` is the sum of ``u`` over sessions (Lovell 1963, JASA 58: 993-1010).
    Exact, where alternating projections onto the three spaces (Gaure 2013, *Comput.
    Stat. Data Anal.* 66: 8-18) need thousands of sweeps once cells are missing.
    """
    n_sessions, n_reviewers, n_models, n_arrays = stacked.shape
    tables.project(stacked)
    totals = stacked.reshape(n_sessions, -1, n_arrays).sum(axis=0)
    # a cell effect that is a row plus a column effect is absorbed in every session: the
    # null space of the sum of makers, which the pseudo-inverse leaves out
    shared = np.linalg.pinv(tables.maker_sum(), rcond=1e-10, hermitian=True) @ totals
    return tables.subtract_projected(stacked, shared)


def length_covariates(log_words: ArrayLike, observed: ArrayLike) -> np.ndarray:
    """``X[j, s, r, m] = [r == j] * log_words[s, r, m]`` on observed cells, NaN elsewhere."""
    lengths = np.asarray(log_words, dtype=float)
    pattern = np.asarray(observed, dtype=bool)
    n_reviewers = lengths.shape[1]
    own_row = np.eye(n_reviewers, dtype=bool)[:, None, :, None]
    covariates = np.where(own_row, np.nan_to_num(lengths)[None], 0.0)
    return np.where(pattern[None], covariates, np.nan)


def _covariate_residual(
    lengths: np.ndarray, observed: np.ndarray, tables: SessionTables, reviewer: int
) -> np.ndarray:
    """:func:`additive_residuals` of ``X[reviewer]`` of :func:`length_covariates` (0 instead
    of NaN on unobserved cells); one reviewer at a time, so the reviewers x sessions x
    reviewers x models stack is never held."""
    covariate = np.zeros(observed.shape)
    np.copyto(covariate[:, reviewer], lengths[:, reviewer], where=observed[:, reviewer])
    return tables.project(covariate)


def length_controlled_cell_effects(
    scores: ArrayLike, log_words: ArrayLike
) -> tuple[np.ndarray, np.ndarray]:
    r"""Per-session cell effects of the length-adjusted scores, and their linearisation.

    Returns ``(effects, linearised)``, both (sessions, reviewers, models). ``effects`` is
    :func:`session_cell_effects` of :math:`y_{srm} - \hat\beta_r \ln w_{srm}`. The cell
    estimate (session mean) depends on :math:`\hat\beta`, which is fitted on all sessions;
    ``linearised`` subtracts each session's share of that error (delta method,
    :math:`\psi_{sc} = e_{sc} - D_c^\top \mathrm{IF}_s` with
    :math:`D_{cj} = \overline{E^{(j)}_{\cdot c}}` the mean effect of covariate ``j`` on cell
    ``c``), so it has the same mean and a session-clustered interval on it carries the
    slopes' uncertainty too (Stefanski & Boos 2002, "The calculus of M-estimation").
    """
    values = np.asarray(scores, dtype=float)
    lengths = np.asarray(log_words, dtype=float)
    fit = reviewer_length_slopes(values, lengths)  # validates the input
    observed = np.isfinite(values)
    # sum_j beta_j X[j] has one non-zero term per cell: beta_r ln w on observed cells
    adjusted = values - np.where(observed, fit.slopes[None, :, None] * lengths, 0.0)
    # covariates and adjusted scores are observed where the scores are: one leverage for all
    # (NaN where a cell is unobserved, so the effects are NaN there as before)
    tables = SessionTables(observed)
    leverage = np.where(observed, tables.leverage(), np.nan)
    leverage[leverage <= _LEVERAGE_FLOOR] = np.nan
    residual = tables.project(np.where(observed, adjusted, 0.0))
    effects = np.where(observed, residual, np.nan) / leverage
    # (reviewers_j, reviewers, models); a cell never observed gets 0 (its effect stays NaN)
    sensitivity = np.stack(
        [
            _observed_mean(_covariate_residual(lengths, observed, tables, reviewer) / leverage, 0)
            for reviewer in range(values.shape[1])
        ]
    )
    slope_error = np.einsum("sj,jrm->srm", fit.influence, sensitivity)
    slope_error = np.where(np.isfinite(effects), slope_error, np.nan)
    # centred within each cell's own sessions, so the cell mean is unchanged when some
    # sessions lack the cell (the influences sum to zero over all sessions only)
    slope_error -= _observed_mean(slope_error, axis=0)[None]
    return effects, effects - slope_error


def _observed_mean(values: np.ndarray, axis: int) -> np.ndarray:
    """Mean over the finite entries along ``axis``; 0 where there are none."""
    finite = np.isfinite(values)
    total = np.where(finite, values, 0.0).sum(axis=axis)
    return total / np.maximum(finite.sum(axis=axis), 1)


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
    #: True when the cells are net of each reviewer's ln(words) slope
    length_controlled: bool = False


def favouritism_matrix(
    scores: ArrayLike, significance_level: float = 0.05, log_words: ArrayLike | None = None
) -> FavouritismMatrix:
    """Session-clustered t intervals of each cell's effect, flagged after Holm's correction.

    With ``log_words`` (ln of each reviewed answer's word count, same shape as ``scores``)
    the cells are length-controlled: a reviewer that likes long answers gives extra points
    to whichever model writes long ones, which the two-way fit leaves in that reviewer's
    row x that model's column and would read as favouritism (or, on its own model, as
    self-preference). :func:`length_controlled_cell_effects` removes each reviewer's
    ln(words) slope, fitted with every cell effect in the model, before the cells are read.

    Sessions are the independent units (ADR 0009): each cell's per-session effects are
    averaged with :func:`~llm_council.stats.inference.pooling.cluster_mean_interval`. Holm, not
    Benjamini-Hochberg: the cells of one table are negatively dependent (each row and
    column of residuals sums to zero), which BH's positive-dependence condition does not
    cover, and a flag here names a judge, so the family-wise rate is the promise we want.

    Parameters
    ----------
    scores : array_like, shape (S, R, M)
        Each session's reviewer x model scores, NaN for none.
    significance_level : float
        Family-wise level of Holm's correction.
    log_words : array_like, shape (S, R, M), optional
        ln of each reviewed answer's word count.

    Returns
    -------
    FavouritismMatrix
        ``effects`` [reviewer][model] (IntervalEstimate), ``holm_p`` and ``flagged``, each
        (R, M), and whether the cells were length-controlled.
    """
    if log_words is None:
        per_session = session_cell_effects(scores)
    else:
        per_session = length_controlled_cell_effects(scores, log_words)[1]
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
    grouped = row_patterns(observed.reshape(observed.shape[0], -1))
    modal = grouped.patterns[int(np.argmax(grouped.counts))].reshape(n_reviewers, n_models)

    def grid(name: str) -> np.ndarray:
        return np.array([[getattr(cell, name) for cell in row] for row in effects], dtype=float)

    spillover = explain_spillover(
        grid("estimate"), grid("ci_low"), grid("ci_high"), flagged, spillover_weights(modal)
    )
    return FavouritismMatrix(
        effects, holm_p, flagged, significance_level, spillover, log_words is not None
    )


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

    Parameters
    ----------
    estimates, ci_low, ci_high : array_like, shape (R, M)
        Each cell's effect and interval.
    flagged : array_like of bool, shape (R, M)
        The Holm flags.
    weights : array_like, shape (R, M, R, M)
        From :func:`spillover_weights`.

    Returns
    -------
    ndarray of bool, shape (R, M)
        True where a flagged cell is spill-over.
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

    Parameters
    ----------
    favoured : array_like of bool, shape (R, M)
        Flagged favour of each reviewer for each model.
    reviewer_models : list of int or None, length R
        Each reviewer's own model index.

    Returns
    -------
    list of list of int
        The blocs, each sorted.
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
