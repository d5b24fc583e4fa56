"""The position section from its records' arrays: slot profiles, tests, labels (ADR 0088).

:func:`position_from_records` is everything :func:`~.position.position_bias` does after its
queries; the full run (SQL, :mod:`.position`) and the incremental run (codes kept per
review, :mod:`.position_summary`) build the same
:class:`~.position_records.SlotRecords` and call it, so both give the same numbers bit for
bit. The statistics themselves are in :mod:`llm_council.stats.slots`; the meaning of each
test is in :mod:`.position`'s docstring.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from llm_council.bias_audit.report.analyses.position_records import SlotRecords, slot_mean_rows
from llm_council.bias_audit.report.estimates import Interval, PositionBias, SlotProfile
from llm_council.stats.design.dense_ids import dense_codes
from llm_council.stats.design.joint_model import ClusteredOlsFit, demean_within_groups
from llm_council.stats.inference.multiplicity import holm_adjusted
from llm_council.stats.inference.pooling import mean_interval_from_moments
from llm_council.stats.slots.edge_slots import centred_slot_means, edge_slot_wald
from llm_council.stats.slots.slot_across_sessions import fit_centred_slots, slots_identified
from llm_council.stats.slots.slot_profiles import (
    SlotEffects,
    fit_reviewer_slots,
    scope_contrasts,
    slot_effects,
)
from llm_council.stats.slots.slot_randomization import randomization_units, slot_randomization_test

#: the direction of a scope whose slot effects the design cannot identify
NOT_IDENTIFIED = "not identified"

#: from this many slots on, a scope's test is the edge test (ADR 0072); with 3 it is the same
#: test as the omnibus one, with 2 there is one contrast
EDGE_TEST_FROM_SLOTS = 4

#: (session, reviewer-session group, model, slot, centred score) of one scope's cells
RandomizationCells = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]


def _interval(mean: float | None, sd: float | None, n: int) -> Interval:
    nan = float("nan")
    return Interval.from_estimate(
        mean_interval_from_moments(nan if mean is None else mean, nan if sd is None else sd, n)
    )


def _randomized(profile: SlotProfile, cells: RandomizationCells, n_slots: int) -> SlotProfile:
    """``profile`` with its singular Wald test replaced by the slot randomization test."""
    test = slot_randomization_test(*randomization_units(*cells))
    if test is None:
        return profile
    return SlotProfile(
        **{
            **profile.__dict__,
            "test_statistic": float(test.between_position_variance),
            "test_df": (n_slots - 1, 0),
            "test_p_value": float(test.p_value),
            "adjusted_p_value": float(test.p_value),
            "test_method": "randomization",
        }
    )


def _edge_tested(
    profile: SlotProfile, effects: np.ndarray, covariance: np.ndarray, n_clusters: int
) -> SlotProfile:
    """``profile`` with its omnibus Wald test replaced by the edge test (first and last slot
    against the others, :mod:`llm_council.stats.slots.edge_slots`; ADR 0072)."""
    if effects.size < EDGE_TEST_FROM_SLOTS:
        return profile
    test = edge_slot_wald(effects, covariance, n_clusters)
    return SlotProfile(
        **{
            **profile.__dict__,
            "test_statistic": test.f_statistic,
            "test_df": (test.df_numerator, test.df_denominator),
            "test_p_value": test.p_value,
            "adjusted_p_value": test.p_value,
            "all_slots_p_value": profile.test_p_value,  # the omnibus Wald p (ADR 0076)
        }
    )


def _profile(subject: str, n_sessions: int, effects: SlotEffects, basis: str) -> SlotProfile:
    """Package one scope's fitted slot effects (no verdict yet: ``_with`` adds it)."""
    return SlotProfile(
        subject=subject,
        n_sessions=n_sessions,
        slot_effect=[
            Interval(float(b), float(low), float(high), float(p))
            for b, low, high, p in zip(
                effects.estimates, effects.ci_low, effects.ci_high, effects.p_values, strict=True
            )
        ],
        test_statistic=effects.wald_f,
        test_df=effects.wald_df,
        test_p_value=effects.wald_p,
        adjusted_p_value=effects.wald_p,
        trend=Interval(effects.trend, *effects.trend_ci, effects.trend_p),
        direction="",
        identified=True,
        flagged=False,
        basis=basis,
    )


def _across_sessions_profile(
    subject: str,
    session: np.ndarray,
    group: np.ndarray,
    model: np.ndarray,
    slot: np.ndarray,
    centred: np.ndarray,
    n_slots: int,
) -> SlotProfile:
    """Slot effects, Wald test and trend of ``centred`` scores for one scope, across sessions."""
    nan = float("nan")
    nan_interval = Interval(nan, nan, nan)
    _, cluster = dense_codes(session)
    n_sessions = int(cluster.max()) + 1 if cluster.size else 0
    if n_sessions < 2 or not slots_identified(group, model, slot, n_slots):
        return SlotProfile(
            subject=subject,
            n_sessions=n_sessions,
            slot_effect=[nan_interval] * n_slots,
            test_statistic=nan,
            test_df=(n_slots - 1, 0),
            test_p_value=nan,
            adjusted_p_value=nan,
            trend=nan_interval,
            direction=NOT_IDENTIFIED if n_sessions >= 2 else "too few sessions",
            identified=False,
            flagged=False,
            basis="none",
        )
    effects = fit_centred_slots(cluster, group, slot, centred, n_slots)
    profile = _profile(subject, n_sessions, effects, "across sessions")
    if effects.wald_singular:
        return _randomized(profile, (session, group, model, slot, centred), n_slots)
    if n_slots < EDGE_TEST_FROM_SLOTS:
        return profile
    return _edge_tested(profile, *centred_slot_means(cluster, slot, centred, n_slots))


def _within_profile(
    subject: str,
    fit: ClusteredOlsFit,
    reviewers: Sequence[int] | np.ndarray,
    n_reviewers: int,
    n_slots: int,
    n_sessions: int,
    cells: Callable[[], RandomizationCells],
) -> SlotProfile | None:
    """The scope's within-answer slot profile, or None when the design cannot identify it.

    ``cells`` gives the scope's cells for the randomization test, asked for only when the
    Wald covariance is singular."""
    contrasts = scope_contrasts(reviewers, n_reviewers, n_slots)
    effects = slot_effects(fit, contrasts)
    if effects is None:
        return None
    profile = _profile(subject, n_sessions, effects, "within answers")
    if effects.wald_singular:
        return _randomized(profile, cells(), n_slots)
    centred_covariance = contrasts @ fit.covariance @ contrasts.T
    return _edge_tested(profile, effects.estimates, centred_covariance, fit.n_clusters)


def _n_distinct_sorted(values: np.ndarray) -> int:
    """How many distinct values a non-decreasing array holds."""
    return int(np.count_nonzero(values[1:] != values[:-1])) + 1 if values.size else 0


def _direction(profile: SlotProfile, rejected: bool) -> str:
    if not profile.identified:
        return profile.direction
    if not rejected:
        return "none detected"
    if profile.trend.ci_high < 0:
        return "primacy"
    if profile.trend.ci_low > 0:
        return "recency"
    return "non-monotone"


def direction_if_rejected(profile: SlotProfile) -> str:
    """The direction ``profile`` is reported with when its test is a finding."""
    return _direction(profile, rejected=True)


def with_verdict(profile: SlotProfile, finding: bool) -> SlotProfile:
    """``profile`` with ``flagged`` and ``direction`` set by the report-wide verdict."""
    return SlotProfile(
        **{
            **profile.__dict__,
            "direction": _direction(profile, finding),
            "flagged": profile.identified and finding,
        }
    )


def _with(profile: SlotProfile, adjusted_p: float, significance_level: float) -> SlotProfile:
    rejected = bool(np.isfinite(adjusted_p) and adjusted_p < significance_level)
    return SlotProfile(
        **{
            **profile.__dict__,
            "adjusted_p_value": float(adjusted_p),
            "direction": _direction(profile, rejected),
            "flagged": profile.identified and rejected,
        }
    )


class _SlotScopes:
    """One slot-count's records, and the profile of each scope (council or one reviewer).

    Within answers first (answer fixed effects: quality removed, most power); where the
    design does not identify that (one shared order per session), across sessions, on the
    scores centred within each reviewer's session (computed once, when first needed).
    """

    def __init__(self, records: SlotRecords) -> None:
        self.n_slots = records.n_slots
        self.session = records.session
        self.reviewer = records.reviewer
        self.model = records.model
        self.slot = records.slot
        self.score = records.score
        self.is_self = records.is_self
        self.n_reviewers = int(self.reviewer.max(initial=-1)) + 1
        self.present = np.flatnonzero(np.bincount(self.reviewer, minlength=self.n_reviewers))
        self._within_fit: ClusteredOlsFit | None = None
        self._centred: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None

    def within_fit(self) -> ClusteredOlsFit:
        if self._within_fit is None:
            self._within_fit = fit_reviewer_slots(
                self.session * (int(self.model.max()) + 1) + self.model,
                self.session,
                self.reviewer,
                self.slot,
                self.is_self,
                self.score,
                self.n_reviewers,
                self.n_slots,
            )
        return self._within_fit

    def _centred_scores(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(reviewer-session group id, its dense code, the score minus its group's mean)."""
        if self._centred is None:
            group = self.session.astype(np.int64) * self.n_reviewers + self.reviewer
            _, dense_group = dense_codes(group)
            self._centred = group, dense_group, demean_within_groups(self.score, dense_group)
        return self._centred

    def _within_cells(self, mine: np.ndarray | None) -> Callable[[], RandomizationCells]:
        """The randomization test's cells (all, or ``mine``), computed only when asked."""

        def cells() -> RandomizationCells:
            _, dense_group, centred = self._centred_scores()
            chosen = slice(None) if mine is None else mine
            return (
                self.session[chosen],
                dense_group[chosen],
                self.model[chosen],
                self.slot[chosen],
                centred[chosen],
            )

        return cells

    def council(self) -> SlotProfile:
        # rows are in session order (SlotRecords), so distinct sessions are counted by a diff
        within = _within_profile(
            "council",
            self.within_fit(),
            self.present,
            self.n_reviewers,
            self.n_slots,
            _n_distinct_sorted(self.session),
            self._within_cells(None),
        )
        if within is not None:
            return within
        group, _, centred = self._centred_scores()
        # group ids need not be dense (group sums and cluster counts skip empty ids)
        return _across_sessions_profile(
            "council", self.session, group, self.model, self.slot, centred, self.n_slots
        )

    def reviewer_profile(self, index: int, name: str) -> SlotProfile:
        mine = self.reviewer == index
        within = _within_profile(
            name,
            self.within_fit(),
            [index],
            self.n_reviewers,
            self.n_slots,
            _n_distinct_sorted(self.session[mine]),
            self._within_cells(mine),
        )
        if within is not None:
            return within
        group, _, centred = self._centred_scores()
        _, reviewer_group = dense_codes(group[mine])
        return _across_sessions_profile(
            name,
            self.session[mine],
            reviewer_group,
            self.model[mine],
            self.slot[mine],
            centred[mine],
            self.n_slots,
        )


def position_from_records(
    records: SlotRecords, reviewer_names: Sequence[str], significance_level: float
) -> PositionBias:
    """Council-wide and per-reviewer slot effects of ``records`` (not empty); per-reviewer
    tests Holm-adjusted. ``reviewer_names[i]`` names reviewer index ``i``."""
    scopes = _SlotScopes(records)
    per_slot = slot_mean_rows(records)
    council = scopes.council()
    council = _with(council, council.test_p_value, significance_level)
    reviewers = [
        scopes.reviewer_profile(int(index), str(reviewer_names[int(index)]))
        for index in scopes.present
    ]
    adjusted = holm_adjusted([profile.test_p_value for profile in reviewers])
    return PositionBias(
        positions=[slot for slot, _, _, _ in per_slot],
        mean_score=[_interval(mean, sd, n) for _, n, mean, sd in per_slot],
        n_sessions=[n for _, n, _, _ in per_slot],
        test_n_candidates=records.n_slots,
        council=council,
        per_reviewer=[
            _with(profile, float(p), significance_level)
            for profile, p in zip(reviewers, adjusted, strict=True)
        ],
        significance_level=significance_level,
    )
