"""Each reviewer's noise prior for one session: its own history, the store's, or the default.

The moderated tests (:mod:`llm_council.stats.sessions.moderated_session_tests`) need one prior
:math:`(s_{0r}^2, d_{0r})` per reviewer. In order of preference:

1. the reviewer's own past sessions in the store (``history``): :math:`\\sum RSS_r /
   \\sum d_r` with :math:`\\min(\\sum d_r, d_{max})` df
   (:mod:`~llm_council.bias_audit.records.reviewer_profiles`; the cap
   ``history_prior_df_max``, ADR 0051, keeps a long history from swamping the session);
2. for a reviewer new to a store with at least 3 profiled reviewers: Smyth's
   method-of-moments prior over their variances
   (:func:`~llm_council.stats.reviewers.moderated_variance.fit_variance_prior`);
3. otherwise the documented default (``prior_noise_sd``, ``prior_noise_df``), updated by
   the session's pooled residual variance
   (:func:`~llm_council.stats.sessions.moderated_session_tests.session_prior`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from llm_council.bias_audit.records.reviewer_profiles import ReviewerProfile, load_profiles
from llm_council.bias_audit.records.store_urls import is_postgres_url
from llm_council.bias_audit.records.summary_files import SCORE_BOUND
from llm_council.bias_audit.session.thresholds import AuditThresholds
from llm_council.errors import InputError, MissingDependencyError
from llm_council.infra.install_hints import extra_install_hint
from llm_council.stats.design.additive_model import AdditiveFit
from llm_council.stats.reviewers.moderated_variance import VariancePrior, fit_variance_prior
from llm_council.stats.sessions.moderated_session_tests import session_prior

#: a reviewer's own history counts once it holds at least this many residual df
MINIMUM_HISTORY_DF = 2.0
#: the largest noise variance scores within SCORE_BOUND allow, (2B)^2: a larger history
#: was not summed from real sessions (the upper-tailed noise check would keep it: ADR 0059)
LARGEST_HISTORY_VARIANCE = (2.0 * SCORE_BOUND) ** 2

History = Mapping[str, ReviewerProfile]


def slot_adjusted_history(history: History) -> History:
    """Each profiled reviewer's sums from the model with slot effects, where it has any."""
    return {
        name: profile.slot_adjusted
        for name, profile in history.items()
        if profile.slot_adjusted is not None
    }


def history_profiles(history: str | Path | Mapping[str, ReviewerProfile] | None) -> History:
    """Profiles from a JSONL store path (sidecar, rebuilt when stale), a PostgreSQL store
    URL (its profile tables, rebuilt when stale: ADR 0048) or given directly."""
    if history is None:
        return {}
    if isinstance(history, Mapping):
        return history
    if is_postgres_url(str(history)):
        try:
            from llm_council.bias_audit.records.postgres_profile_rebuild import (
                load_postgres_profiles,
            )
        except ImportError as error:
            raise MissingDependencyError(
                f"history from a PostgreSQL store needs the 'postgres' extra ({error.name} "
                "is missing): " + extra_install_hint("postgres")
            ) from None
        return load_postgres_profiles(str(history))
    path = Path(history).expanduser()
    if path.exists() and not path.is_file():
        raise InputError(f"history {str(path)!r} is not a regular file (a JSONL record store)")
    return load_profiles(path)


def history_variances(history: History) -> dict[str, tuple[float, float]]:
    r"""Each profiled reviewer's noise variance and df from the summed sessions.

    Solves :math:`\hat A \hat\sigma^2 = \widehat{RSS}` over every profiled reviewer
    (:math:`\hat A`, :math:`\widehat{RSS}`: the profiles' sums; Rao 1970's MINQUE summed
    over sessions), unbiased when each reviewer has its own noise. Where the sums do not
    separate the reviewers (:math:`\hat A` singular: only 3-member sessions), or an
    estimate is not positive, the reviewer keeps :math:`\sum RSS_r / \sum d_r`. The df
    are :math:`\sum d_r`, the reviewer's share of the residual df (the MINQUE's own df are
    somewhat lower; with 30 sessions both exceed 30 and the t quantile moves by < 2%).
    """
    names = [
        name
        for name, profile in history.items()
        if profile.variance is not None
        and math.isfinite(profile.variance)
        and 0.0 < profile.variance <= LARGEST_HISTORY_VARIANCE  # no noise to scale by, or
        # more than scores within SCORE_BOUND can have (profiles passed in by hand)
        and math.isfinite(profile.residual_df)
        and profile.residual_df >= MINIMUM_HISTORY_DF
    ]
    solved: dict[str, float] = {}
    if names:
        index = {name: position for position, name in enumerate(names)}
        expectation = np.zeros((len(names), len(names)))
        sums = np.array([history[name].residual_sum_of_squares for name in names])
        complete = True
        for row, name in enumerate(names):
            for other, value in history[name].expectation.items():
                if other in index:
                    expectation[row, index[other]] = value
                else:
                    complete = False  # a reviewer too little profiled to solve for
        singular_values = np.linalg.svd(expectation, compute_uv=False)
        # a rank-deficient sum (3-member sessions: rank 1) has rounding-level singular
        # values, far below 1e-6 of the largest; a separable one has them of order 1
        if complete and singular_values.min() > 1e-6 * singular_values.max():
            estimates = np.linalg.solve(expectation, sums)
            solved = {
                name: float(value)
                for name, value in zip(names, estimates.tolist(), strict=True)
                if math.isfinite(value) and 0.0 < value <= LARGEST_HISTORY_VARIANCE
            }
    return {
        name: (solved.get(name, history[name].variance or 0.0), history[name].residual_df)
        for name in names
    }


def store_prior(history: History) -> VariancePrior | None:
    """Smyth's prior over the profiled reviewers' variances (None with fewer than 3)."""
    usable = list(history_variances(history).values())
    if len(usable) < 3:
        return None
    variances, dfs = zip(*usable, strict=True)
    return fit_variance_prior(np.array(variances), np.array(dfs))


def reviewer_priors(
    fit: AdditiveFit,
    reviewers: Sequence[str],
    thresholds: AuditThresholds,
    history: History,
) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Prior variances and df for ``reviewers`` (the fit's rows), and each one's source.

    A reviewer's own history counts for at most ``history_prior_df_max`` df (ADR 0051):
    its variance is the history's, its weight against the session's own noise is capped,
    so a judge whose noise changed is not held to its past by hundreds of old df."""
    default = session_prior(fit, thresholds.prior_noise_sd**2, thresholds.prior_noise_df)
    profiled = history_variances(history) if history else {}
    # the store-wide prior only for a reviewer the store has not profiled
    unprofiled = any(name not in profiled for name in reviewers)
    fallback = store_prior(history) if history and unprofiled else None
    variances, dfs, sources = [], [], []
    for name in reviewers:
        if name in profiled:
            variances.append(profiled[name][0])
            dfs.append(min(profiled[name][1], thresholds.history_prior_df_max))
            sources.append("history")
        elif fallback is not None and math.isfinite(fallback.variance) and fallback.variance > 0:
            variances.append(fallback.variance)
            dfs.append(fallback.df)
            sources.append("store")
        else:
            variances.append(default[0])
            dfs.append(default[1])
            sources.append("default")
    return np.array(variances), np.array(dfs), sources
