"""The joint bias model's pieces: its block design, centred block effects, answer effects.

    score[s, r, m] = alpha[s, m] + leniency[r] + position[slot] + self[r] * is_self
                     + verbosity[r] * centred ln(words[s, m]) + error

The report's joint model (``bias_audit/report/analyses/joint.py``) chooses the blocks and
names them; the fit itself is
:func:`~llm_council.stats.design.joint_model.ols_absorbed_cluster_robust`
(answer fixed effects absorbed, CR1 with sessions as clusters). Each block is coded
against a reference level (reviewer 0, slot A); :func:`centred_block_effects` maps a
reviewer block to effects centred on the mean of a reference set, with intervals from the
transformed covariance :math:`T V T^\\top` and :math:`t_{0.975,\\,G-1}` (G sessions).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import sparse

from llm_council.stats.design.joint_model import ClusteredOlsFit
from llm_council.stats.numerics.distribution_functions import t_ppf

__all__ = [
    "BLOCK_KINDS",
    "BlockEffects",
    "adjusted_means_by_model",
    "block_design",
    "centred_block_effects",
    "centring_transform",
    "coded_block_effects",
]

#: what each block codes: a reviewer's level, a reviewer's log-words slope, a slot after
#: slot A, a self-reviewer's bonus on its own answer
BLOCK_KINDS = ("reviewer_leniency", "reviewer_verbosity", "position", "self_review")


def centring_transform(n_levels: int, reference: np.ndarray | None = None) -> np.ndarray:
    """Map ``n_levels - 1`` coefficients against level 0 to effects centred on a reference.

    With ``reference`` (a boolean mask over levels) the effects are relative to the mean of
    the reference levels, otherwise to the mean of all levels:
    :math:`T = (I - \\mathbf{1} w^\\top) E` with :math:`w` the reference weights and
    :math:`E` the embedding of the coded levels (level 0 is 0).
    """
    to_full = np.zeros((n_levels, n_levels - 1))
    to_full[1:, :] = np.eye(n_levels - 1)
    mask = np.ones(n_levels, dtype=bool) if reference is None else np.asarray(reference, bool)
    if mask.shape != (n_levels,) or not mask.any():
        raise ValueError(f"the reference must mark at least one of {n_levels} levels")
    weights = mask / mask.sum()
    return (np.eye(n_levels) - np.outer(np.ones(n_levels), weights)) @ to_full


def block_design(
    blocks: Sequence[tuple[str, int]],
    reviewer: np.ndarray,
    position: np.ndarray,
    is_self: np.ndarray,
    log_words: np.ndarray,
    self_reviewers: np.ndarray,
    n_reviewers: int,
) -> sparse.csr_matrix:
    """The CSR design of ``blocks`` (``(kind, width)`` in column order), one entry a block.

    Every row has one stored entry per block (an explicit 0 at the block's first column for
    the reference level), so the CSR arrays are built directly from the codes and no dense
    million-row matrix is allocated; filled one block column at a time, so the only
    per-record temporaries are one block's level and value (at 10M records, stacked
    per-block copies cost gigabytes).

    Parameters
    ----------
    blocks : sequence of (str, int)
        Each block's kind and width, in column order.
    reviewer, position : ndarray of int, shape (n,)
        Each record's reviewer and display slot.
    is_self : ndarray of bool, shape (n,)
        Self-reviews.
    log_words : ndarray, shape (n,)
        ln of each reviewed answer's word count.
    self_reviewers : ndarray of int
        The reviewers with a self-preference column.
    n_reviewers : int
        R.

    Returns
    -------
    scipy.sparse.csr_matrix, shape (n, sum of the widths)
        The design.
    """
    n_rows, n_blocks = reviewer.size, len(blocks)
    design_values = np.empty((n_rows, n_blocks))
    design_columns = np.empty((n_rows, n_blocks), dtype=np.int32)
    offset = 0
    for block, (kind, width) in enumerate(blocks):
        if kind in ("reviewer_leniency", "reviewer_verbosity"):
            level, present = reviewer - 1, reviewer > 0  # reviewer 0 is the reference
            design_values[:, block] = present * (1.0 if kind == "reviewer_leniency" else log_words)
        elif kind == "position":
            level, present = position - 1, position > 0  # slot A is the reference
            design_values[:, block] = present
        elif kind == "self_review":
            column_of = np.zeros(n_reviewers, dtype=np.int32)
            column_of[self_reviewers] = np.arange(self_reviewers.size)
            level, present = column_of[reviewer], is_self > 0
            design_values[:, block] = present
        else:
            raise ValueError(f"unknown block kind {kind!r} (expected one of {BLOCK_KINDS})")
        design_columns[:, block] = offset + np.where(present, level, 0)
        offset += width
    # int32 row pointers like the column indices when they fit: scipy would otherwise copy
    # the int64 ones down to int32 (a second (n,) array)
    index_type = np.int32 if n_blocks * n_rows < np.iinfo(np.int32).max else np.int64
    return sparse.csr_matrix(
        (
            design_values.reshape(-1),
            design_columns.reshape(-1),
            np.arange(0, n_blocks * n_rows + 1, n_blocks, dtype=index_type),
        ),
        shape=(n_rows, offset),
    )


@dataclass(frozen=True)
class BlockEffects:
    """One block's effects with 95% intervals; ``identified`` from the rank check."""

    estimates: np.ndarray
    ci_low: np.ndarray
    ci_high: np.ndarray
    standard_errors: np.ndarray
    identified: np.ndarray


def _identified(fit: ClusteredOlsFit, block: slice, transform: np.ndarray) -> np.ndarray:
    """An effect the design cannot identify is reported as such, not as a pseudo-inverse's
    arbitrary value with a near-zero standard error."""
    contrasts = np.zeros((transform.shape[0], fit.coefficients.size))
    contrasts[:, block] = transform
    return fit.estimable(contrasts)


def centred_block_effects(
    fit: ClusteredOlsFit, block: slice, reference: np.ndarray | None = None
) -> BlockEffects:
    """A reviewer block's effects centred on the ``reference`` levels (all when None).

    Parameters
    ----------
    fit : ClusteredOlsFit
        The joint model's fit.
    block : slice
        The block's k - 1 coded columns (k levels).
    reference : ndarray of bool, shape (k,), optional
        The reference levels.

    Returns
    -------
    BlockEffects
        ``estimates``, ``ci_low``, ``ci_high``, ``standard_errors`` and ``identified``, each
        shape (k,).
    """
    n_levels = block.stop - block.start + 1
    transform = centring_transform(n_levels, reference)
    estimates = transform @ fit.coefficients[block]
    covariance = fit.covariance[block, block]
    standard_errors = np.sqrt(np.clip(np.diag(transform @ covariance @ transform.T), 0, None))
    t_crit = float(t_ppf(0.975, max(fit.n_clusters - 1, 1)))
    return BlockEffects(
        estimates=estimates,
        ci_low=estimates - t_crit * standard_errors,
        ci_high=estimates + t_crit * standard_errors,
        standard_errors=standard_errors,
        identified=_identified(fit, block, transform),
    )


def coded_block_effects(fit: ClusteredOlsFit, block: slice, intervals: np.ndarray) -> BlockEffects:
    """A block's coefficients as they are (against its reference level); ``intervals`` is
    ``fit.confidence_intervals()``, computed once for every block.

    Parameters
    ----------
    fit : ClusteredOlsFit
        The joint model's fit.
    block : slice
        The block's columns, k of them.
    intervals : ndarray, shape (n_columns, 2)
        ``fit.confidence_intervals()``.

    Returns
    -------
    BlockEffects
        ``estimates``, ``ci_low``, ``ci_high``, ``standard_errors`` and ``identified``, each
        shape (k,).
    """
    width = block.stop - block.start
    return BlockEffects(
        estimates=fit.coefficients[block],
        ci_low=intervals[block, 0],
        ci_high=intervals[block, 1],
        standard_errors=fit.standard_errors[block],
        identified=_identified(fit, block, np.eye(width)),
    )


def adjusted_means_by_model(
    score: np.ndarray,
    design: sparse.csr_matrix,
    coefficients: np.ndarray,
    answer: np.ndarray,
    n_models: int,
) -> tuple[np.ndarray, np.ndarray, int]:
    """Per model: the sum and count of its answer effects, and the number of answers.

    An answer effect is the within-answer mean of ``score - X beta`` (answers coded
    ``session * n_models + model``), shifted back to the score scale so that the mean over
    records equals the mean score; a model's adjusted mean is its answers' average.

    Parameters
    ----------
    score : ndarray, shape (n,)
        The scores.
    design : scipy.sparse.csr_matrix, shape (n, k)
        The joint model's X.
    coefficients : ndarray, shape (k,)
        Its fitted beta.
    answer : ndarray of int, shape (n,)
        Each record's answer code, ``session * n_models + model``.
    n_models : int
        M.

    Returns
    -------
    sums : ndarray, shape (M,)
        Sum of each model's answer effects.
    counts : ndarray of int, shape (M,)
        Its answers.
    n_answers : int
        Answers in all.
    """
    answer_effect_of_row = score - design @ coefficients
    n_groups = int(answer.max()) + 1
    answer_sizes = np.bincount(answer, minlength=n_groups)
    present = answer_sizes > 0
    with np.errstate(invalid="ignore", divide="ignore"):
        alpha = np.bincount(answer, weights=answer_effect_of_row, minlength=n_groups) / answer_sizes
    alpha = alpha + (score.mean() - alpha[answer].mean())  # back on the score scale
    answer_model = np.arange(n_groups) % n_models
    per_model_sum = np.bincount(answer_model[present], weights=alpha[present], minlength=n_models)
    per_model_count = np.bincount(answer_model[present], minlength=n_models)
    return per_model_sum, per_model_count, int(present.sum())
