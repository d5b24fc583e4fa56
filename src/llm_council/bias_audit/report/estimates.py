"""The report's value types: an estimate with its 95% interval, and each core section's result.

They sit below the analyses that fill them and the renderers that read them, so neither
side imports the other (and :mod:`.model`, which holds the whole report, imports them too).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from llm_council.stats.inference.pooling import IntervalEstimate

#: sessions a reviewer needs for each reliability tier (the issue's definition)
RELIABILITY_TIERS = ((50, "high"), (20, "moderate"), (10, "preliminary"), (0, "insufficient"))


def reliability_tier(n_sessions: int) -> str:
    """Tier by sessions: insufficient < 10, preliminary < 20, moderate < 50, else high."""
    for minimum, tier in RELIABILITY_TIERS:
        if n_sessions >= minimum:
            return tier
    return "insufficient"


@dataclass(frozen=True)
class Interval:
    """An estimate with its 95% interval (NaN when the data cannot support one)."""

    estimate: float
    ci_low: float
    ci_high: float
    p_value: float = float("nan")

    @classmethod
    def from_estimate(cls, estimate: IntervalEstimate) -> Interval:
        return cls(estimate.estimate, estimate.ci_low, estimate.ci_high, estimate.p_value)

    def excludes_zero(self) -> bool:
        return bool(self.ci_low > 0.0 or self.ci_high < 0.0)


@dataclass(frozen=True)
class ReviewerProfile:
    """How one reviewer grades compared with the other reviewers of the same answers."""

    reviewer: str
    n_sessions: int
    n_scores: int
    n_missing_scores: int
    mean_score: float
    leniency: Interval  # points above (+) / below (-) the reference reviewers, same answers
    leniency_z: float
    leniency_label: str  # harsh / generous / neutral / unknown
    leniency_p_holm: float  # Holm-adjusted p of the step-down round that decided the label
    in_leniency_reference: bool  # one of the reviewers the others are measured against
    spread: float  # pooled within-session sd of its scores
    spread_ratio: float  # spread / median reviewer spread
    spread_label: str  # discriminating / typical / compressed
    length_correlation: Interval  # its own length-score correlation, pooled over sessions
    reliability: str


@dataclass(frozen=True)
class LengthBias:
    """Pooled within-session correlation of log length with score, sessions as clusters."""

    pooled: Interval
    n_sessions: int
    n_records: int
    record_level_r: float  # one correlation over all records, for comparison only
    record_level_ci: tuple[float, float]  # the record-count interval a naive design reports
    fitted_intercept: float
    fitted_slope: float  # points per unit of ln(words), pooled OLS over records
    sample_words: list[float] = field(default_factory=list)
    sample_scores: list[float] = field(default_factory=list)


@dataclass(frozen=True)
class SlotProfile:
    """Slot effects of one scope (the council, or one reviewer) and the test that they are 0."""

    subject: str  # "council" or the reviewer id
    n_sessions: int
    slot_effect: list[Interval]  # per slot: points vs this scope's average slot (centred score)
    test_statistic: float  # cluster-robust Wald F: all slots equal, or the edges (4+ slots)
    test_df: tuple[int, int]
    test_p_value: float
    adjusted_p_value: float  # Holm over reviewers (the council's is its own p)
    trend: Interval  # points per slot later in the order (<0: primacy)
    direction: str  # primacy / recency / non-monotone / none detected / not identified
    identified: bool  # False when the slot is confounded with the candidate
    flagged: bool  # identified and (adjusted) p < the significance level
    basis: str  # "within answers" (answer fixed effects) / "across sessions" / "none"
    # "wald" (test_statistic is the F); "randomization" where the Wald covariance was
    # singular (a deterministic slot effect): test_statistic is then the between-slot
    # variance of the centred scores (points^2) and test_df (slots - 1, 0); issue 23
    test_method: str = "wald"
    # the all-slots-equal Wald p where the test above is the edge test (4+ slots, ADR 0076):
    # the council's second position hypothesis; NaN where the two tests are one (2-3 slots,
    # a randomization test) or the scope is untested
    all_slots_p_value: float = float("nan")


@dataclass(frozen=True)
class PositionBias:
    """Scores by display slot, council-wide and per reviewer (sessions of the common size)."""

    positions: list[int]
    mean_score: list[Interval]  # raw mean score per display slot (session-clustered)
    n_sessions: list[int]
    test_n_candidates: int  # the session size analysed (the most common one)
    council: SlotProfile
    per_reviewer: list[SlotProfile]
    significance_level: float


@dataclass(frozen=True)
class SelfPreference:
    """A reviewer's bonus to its own answer, net of its general leniency."""

    reviewer: str
    n_sessions: int
    adjusted: Interval  # the joint model's self-review term (leniency, length held fixed)
    raw: Interval  # own score - the others' mean on its answer, t interval over sessions
    detected: bool  # the adjusted interval excludes 0, and the design separates it from slot
    # the reviewer saw its own answer at one display slot in every session (a fixed order):
    # a preference for that slot looks exactly like self-preference, so it is never
    # ``detected``; ``fixed_slot`` is that display_index (issue 23, ADR 0040)
    confounded_with_slot: bool = False
    fixed_slot: int | None = None


@dataclass(frozen=True)
class JointEffect:
    """One term of the joint model with its session-clustered interval."""

    term: str
    group: str  # reviewer_leniency / position / self_review / reviewer_verbosity
    estimate: float
    ci_low: float
    ci_high: float
    standard_error: float
    identified: bool = True  # False: the design cannot separate it (all numbers NaN)


@dataclass(frozen=True)
class JointModel:
    """score ~ answer FE + reviewer + position + self-review + reviewer x log length."""

    effects: list[JointEffect]
    n_records: int
    n_answers: int
    n_sessions: int
    position_wald_f: float
    position_wald_p: float
    residual_sd: float
    position_identified: bool = True  # False: slots confounded with answers, no test run


@dataclass(frozen=True)
class LeaderboardEntry:
    """A model's Bradley-Terry strength from the rankings, and its scores."""

    model: str
    strength: Interval  # centred log strength, session bootstrap
    length_controlled: Interval  # same, with a log-length covariate (clustered sandwich)
    mean_score: float
    adjusted_mean_score: float  # extra view: the joint model's answer effects, averaged
    n_comparisons: int


@dataclass(frozen=True)
class Leaderboard:
    entries: list[LeaderboardEntry]
    n_sessions: int
    n_resamples: int
    length_slope: Interval  # log-odds of winning per unit of ln(words) difference
    n_unconverged_resamples: int = 0  # bootstrap refits left out of the intervals
