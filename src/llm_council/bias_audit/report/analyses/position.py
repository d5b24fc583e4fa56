"""Position bias across sessions: council-wide and per reviewer, with a rank check first.

The estimate is the **within-reviewer centred score**: each score minus the same reviewer's
mean score in that session (which removes its leniency and the session's overall level),
averaged by display slot. Its slot means are the slot effects, in points relative to that
reviewer's (or the council's) average slot; they sum to zero over complete slot sets.

Why not the paired deviation (score minus the *other* reviewers' mean on the same answer)?
It removes answer quality, but it also removes whatever the other reviewers did at the
*same* slot. When reviewers each see their own shuffle, that is a constant and the two
agree. When every reviewer of a session saw one shared order (the reference design, and
the PRD Vicuna80 data), the deviation measures a reviewer's slot effect *minus the others'*
and the council-wide average is zero by construction: on PRD it printed slot A at -0.01
while a direct recount gives +0.028, and bard (+0.30) and claude (-0.13) cancel. The
centred score needs only that the slot an answer lands in is random or counterbalanced
(each reviewer's own shuffle, or every pair shown in both orders), which is the design.
Self-reviews are included: the own answer lands at a random slot too, so a self bonus adds
noise but no slot bias, and dropping it would leave holes in every self-reviewer's slots
(with two candidates, a session with nothing left to compare).

Identification is checked before anything is estimated: within each reviewer's session
the slot columns must not lie in the span of the candidate columns (a fixed order, where
one model always sits at slot A, cannot tell slot from model). Tests: a cluster-robust
Wald test (sessions as clusters, Hotelling-type small-sample F, see
:func:`llm_council.stats.design.joint_model.wald_test`), per scope: with 4 or more slots,
that the first and the last slot each equal the mean of the others (primacy and recency,
:mod:`llm_council.stats.slots.edge_slots`, ADR 0072); with 2 or 3 slots, that every slot
equals the last (the same test there). The report-wide procedure decides the findings;
the Holm values across reviewers are kept for reference. The direction comes from the
within-session slope of the centred score on the slot index.

Where the Wald covariance is singular, the Wald p-value is replaced by a randomization
test over the display orders (:mod:`llm_council.stats.slots.slot_randomization`): a judge that
always ranks Response A first gives slot A the same rank points every session, its
slot-A variance is zero and a pseudo-inverse would drop exactly that direction (issue 23:
"none detected, Holm p=0.24" for the most blatant judge). ``test_method`` says which test
a profile carries.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import duckdb
import numpy as np

from llm_council.bias_audit.report.estimates import Interval, PositionBias, SlotProfile
from llm_council.bias_audit.report.load.tables import dense_codes
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


def _interval(mean: float | None, sd: float | None, n: int) -> Interval:
    nan = float("nan")
    return Interval.from_estimate(
        mean_interval_from_moments(nan if mean is None else mean, nan if sd is None else sd, n)
    )


#: (session, reviewer-session group, model, slot, centred score) of one scope's cells
RandomizationCells = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]


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


#: from this many slots on, a scope's test is the edge test (ADR 0072); with 3 it is the same
#: test as the omnibus one, with 2 there is one contrast
EDGE_TEST_FROM_SLOTS = 4


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


def _slot_records(
    connection: duckdb.DuckDBPyConnection, n_slots: int, *, with_centred: bool
) -> dict[str, np.ndarray]:
    """The scored records of ``n_slots``-answer sessions at a valid slot, as typed arrays;
    ``centred`` (the score minus its reviewer's mean in the session) only when asked.

    Rows are ordered by answer (session, then model; stable), so every block of answers or
    sessions the within-answer fit sums over is one slice of rows
    (:mod:`llm_council.stats.design.design_products`), not a scan of all rows per block.
    """
    centred = (
        ", score - avg(score) OVER (PARTITION BY session, reviewer_index) AS centred"
        if with_centred
        else ""
    )
    columns = connection.execute(
        f"""SELECT session, reviewer_index, model_index, position, is_self, score{centred}
           FROM scored
           WHERE n_candidates = ? AND position >= 0 AND position < n_candidates""",
        [n_slots],
    ).fetchnumpy()
    # small codes as int32: a third of these arrays' memory, held through the fit
    kinds = {
        "is_self": bool,
        "score": float,
        "centred": float,
        "reviewer_index": np.int32,
        "model_index": np.int32,
        "position": np.int32,
    }
    session, model = np.asarray(columns["session"]), np.asarray(columns["model_index"])
    answer = session.astype(np.int64) * (int(model.max(initial=0)) + 1) + model
    by_answer = np.argsort(answer, kind="stable")
    del answer, session, model
    # each column reordered as it is converted, so one fetched column extra is held
    return {
        name: np.asarray(columns.pop(name))[by_answer].astype(kinds.get(name, np.int64), copy=False)
        for name in list(columns)
    }


def _modal_n_slots(connection: duckdb.DuckDBPyConnection) -> int | None:
    """The most common session size (by sessions; ties to the larger), None below 2."""
    row = connection.execute(
        """SELECT n_candidates FROM scored GROUP BY n_candidates
           ORDER BY count(DISTINCT session) DESC, n_candidates DESC LIMIT 1"""
    ).fetchone()
    if row is None or row[0] is None or int(row[0]) < 2:
        return None
    return int(row[0])


def _slot_mean_rows(
    connection: duckdb.DuckDBPyConnection, n_slots: int
) -> list[tuple[int, int, float | None, float | None]]:
    """(slot, sessions, mean, SD) of the per-session slot means: the descriptive table."""
    rows = connection.execute(
        """WITH slot_means AS (
               SELECT session, position, avg(score) AS mean_score
               FROM scored
               WHERE n_candidates = ? AND position >= 0 AND position < n_candidates
               GROUP BY session, position)
           SELECT position, count(*), avg(mean_score), stddev_samp(mean_score)
           FROM slot_means GROUP BY position ORDER BY position""",
        [n_slots],
    ).fetchall()
    return [(int(row[0]), int(row[1]), row[2], row[3]) for row in rows]


class _SlotScopes:
    """One slot-count's records, and the profile of each scope (council or one reviewer).

    Within answers first (answer fixed effects: quality removed, most power); where the
    design does not identify that (one shared order per session), across sessions, whose
    reviewer-centred scores are queried only then (the window computing them is most of
    that query's cost).
    """

    def __init__(self, connection: duckdb.DuckDBPyConnection, n_slots: int) -> None:
        columns = _slot_records(connection, n_slots, with_centred=False)
        self._connection = connection
        self.n_slots = n_slots
        self.session = columns["session"]
        self.reviewer = columns["reviewer_index"]
        self.model = columns["model_index"]
        self.slot = columns["position"]
        self.score = columns["score"]
        self.is_self = columns["is_self"]
        self.n_reviewers = int(self.reviewer.max(initial=-1)) + 1
        self.present = np.flatnonzero(np.bincount(self.reviewer, minlength=self.n_reviewers))
        self._within_fit: ClusteredOlsFit | None = None
        self._centred: dict[str, np.ndarray] = {}

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

    def _within_cells(self, mine: np.ndarray | None) -> Callable[[], RandomizationCells]:
        """The randomization test's cells (all, or ``mine``): the score minus its
        reviewer's mean in the session, computed only when a test needs it."""

        def cells() -> RandomizationCells:
            group = self.session.astype(np.int64) * self.n_reviewers + self.reviewer
            _, dense_group = dense_codes(group)
            centred = demean_within_groups(self.score, dense_group)
            chosen = slice(None) if mine is None else mine
            return (
                self.session[chosen],
                dense_group[chosen],
                self.model[chosen],
                self.slot[chosen],
                centred[chosen],
            )

        return cells

    def _centred_columns(self) -> dict[str, np.ndarray]:
        if not self._centred:
            self._centred.update(_slot_records(self._connection, self.n_slots, with_centred=True))
            # ids need not be dense (group sums and cluster counts skip empty ids)
            self._centred["group"] = (
                self._centred["session"] * (int(self._centred["reviewer_index"].max()) + 1)
                + self._centred["reviewer_index"]
            )
        return self._centred

    def council(self) -> SlotProfile:
        # rows are in answer order (_slot_records), so sessions are sorted: distinct by a diff
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
        every = self._centred_columns()
        return _across_sessions_profile(
            "council",
            every["session"],
            every["group"],
            every["model_index"],
            every["position"],
            every["centred"],
            self.n_slots,
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
        every = self._centred_columns()
        theirs = every["reviewer_index"] == index
        _, reviewer_group = dense_codes(every["group"][theirs])
        return _across_sessions_profile(
            name,
            every["session"][theirs],
            reviewer_group,
            every["model_index"][theirs],
            every["position"][theirs],
            every["centred"][theirs],
            self.n_slots,
        )


def position_bias(
    connection: duckdb.DuckDBPyConnection, significance_level: float = 0.05
) -> PositionBias | None:
    """Council-wide and per-reviewer slot effects on the most common session size;
    per-reviewer tests Holm-adjusted."""
    n_slots = _modal_n_slots(connection)
    if n_slots is None:
        return None
    scopes = _SlotScopes(connection, n_slots)
    if scopes.session.size == 0:
        return None
    names = dict(connection.execute("SELECT reviewer_index, reviewer FROM reviewers").fetchall())
    per_slot = _slot_mean_rows(connection, n_slots)
    council = scopes.council()
    council = _with(council, council.test_p_value, significance_level)
    reviewers = [scopes.reviewer_profile(int(index), names[int(index)]) for index in scopes.present]
    adjusted = holm_adjusted([profile.test_p_value for profile in reviewers])
    return PositionBias(
        positions=[slot for slot, _, _, _ in per_slot],
        mean_score=[_interval(mean, sd, n) for _, n, mean, sd in per_slot],
        n_sessions=[n for _, n, _, _ in per_slot],
        test_n_candidates=n_slots,
        council=council,
        per_reviewer=[
            _with(profile, float(p), significance_level)
            for profile, p in zip(reviewers, adjusted, strict=True)
        ],
        significance_level=significance_level,
    )
