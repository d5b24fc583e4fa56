"""The additive model with display-slot effects added, for noise estimates free of position.

A reviewer's noise variance is estimated from the residuals of score = mean + reviewer +
answer. A judge that favours a display slot leaves that slot effect in the residuals, so
its history would say it is noisier than it is, and a slot test against that history
would lose the power the history was meant to give (with +2 points on slot A at 5 members
the residual variance grows by about 0.64 points squared). When the session's display
orders identify slot effects, the residuals here come from

.. math:: y = \\mu + \\alpha_r + \\beta_c + \\gamma_s + \\varepsilon

instead (Searle 1987, *Linear Models for Unbalanced Data*, ch. 6); when they do not (one
shared order, too few reviewers), the two-way fit is returned unchanged. Pure function.
"""

from __future__ import annotations

import dataclasses

import numpy as np
from numpy.typing import ArrayLike

from llm_council.stats.design.additive_model import AdditiveFit
from llm_council.stats.numerics.identity_memo import IdentityMemo
from llm_council.stats.slots.position_tests import joint_slot_effects

#: a session asks for its slot fit three times (the slot test's noise, and the
#: self-preference prediction on the history and session-only paths, ADR 0075)
_SLOT_FITS: IdentityMemo[AdditiveFit] = IdentityMemo(4)


def with_slot_effects(fit: AdditiveFit, display_indexes: ArrayLike) -> AdditiveFit:
    """``fit`` refitted with slot indicators (first present slot as base) when every cell's
    slot is known (non-negative) and the slots are identified; else ``fit`` itself.

    The returned fit's ``design`` has the slot columns appended, so its
    ``covariance_unscaled``, ``residuals`` and ``residual_df`` are the augmented model's;
    its reviewer and candidate columns keep their places.

    Parameters
    ----------
    fit : AdditiveFit
        The two-way fit, n cells.
    display_indexes : array_like of int, shape (n,)
        Each fitted cell's display slot, negative for unknown.

    Returns
    -------
    AdditiveFit
        The fit with slot columns appended (its new arrays read-only: the same object is
        returned to every caller that asks with the same ``fit`` and slots), or ``fit``
        itself.
    """
    slots = np.asarray(display_indexes, dtype=np.intp)
    # the fit's observed scores and residuals in the key too: an array changed in place
    # after a first call cannot return the old slot fit
    key = (slots.shape, slots.tobytes(), fit.observed.tobytes(), fit.residuals.tobytes())
    return _SLOT_FITS.get((fit,), key, lambda: _refit(fit, slots))


def _refit(fit: AdditiveFit, slots: np.ndarray) -> AdditiveFit:
    """:func:`with_slot_effects` computed (``slots``: an intp array)."""
    if slots.shape != fit.observed.shape or slots.size == 0 or int(slots.min()) < 0:
        return fit
    if joint_slot_effects(fit.design, fit.residuals, slots, fit.covariance_unscaled) is None:
        return fit  # not identified (or a single slot): nothing to separate
    slot_values, slot_codes = np.unique(slots, return_inverse=True)
    indicators = (slot_codes[:, None] == np.arange(1, slot_values.size)[None, :]).astype(float)
    residual_df = fit.residual_df - indicators.shape[1]
    if residual_df <= 0:
        return fit  # the slots would absorb every residual: no noise left to estimate
    design = np.hstack([fit.design, indicators])
    covariance_unscaled = np.linalg.inv(design.T @ design)
    coefficients = covariance_unscaled @ (design.T @ fit.observed)
    residuals = fit.observed - design @ coefficients
    for array in (design, covariance_unscaled, coefficients, residuals):
        array.flags.writeable = False
    return dataclasses.replace(
        fit,
        design=design,
        coefficients=coefficients,
        covariance_unscaled=covariance_unscaled,
        residuals=residuals,
        residual_df=residual_df,
        residual_variance=float(residuals @ residuals) / residual_df,
    )
