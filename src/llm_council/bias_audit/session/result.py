"""``BiasAuditResult``: the per-session audit users read at ``metadata["bias_audit"]``.

The first ten keys are the seed design's (users' scripts read them; keep the names);
the rest say what the seed design left out: self-preference, sample sizes, the
thresholds and significance level used, and which results rest on too few data to be
more than an indicator.

It is a pydantic *dataclass*, so both integrations work: the reference design's
``metadata["bias_audit"] = dataclasses.asdict(run_bias_audit(...))`` and pydantic's
``result.model_dump(mode="json")`` (ADR 0015). Every value is a JSON type (no NaN).
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import ConfigDict, Field, TypeAdapter
from pydantic.dataclasses import dataclass
from pydantic.fields import FieldInfo

#: ``not_tested``: no risk test could run (too few reviewers or residual df, no known
#: display orders, no parsed reviews), so "no flag" would say nothing; ``low``: at least
#: one risk test ran and none fired; ``medium``: one risk flag; ``high``: two or more.
RiskLevel = Literal["not_tested", "low", "medium", "high"]


_ADAPTERS: dict[type, TypeAdapter[Any]] = {}


def _adapter(cls: type) -> TypeAdapter[Any]:
    """One TypeAdapter per class: building one costs about a millisecond."""
    adapter = _ADAPTERS.get(cls)
    if adapter is None:
        adapter = _ADAPTERS[cls] = TypeAdapter(cls)
    return adapter


class _FieldsOfClass:
    """``cls.model_fields``: the pydantic dataclass's ``{name: FieldInfo}``."""

    def __get__(self, instance: object, owner: type) -> dict[str, FieldInfo]:
        fields: dict[str, FieldInfo] = owner.__pydantic_fields__  # type: ignore[attr-defined]
        return fields


class _ModelMethods:
    """``model_fields`` / ``model_dump`` / ``model_dump_json`` / ``model_validate`` for a
    pydantic dataclass, so code written against the earlier ``BaseModel`` keeps working."""

    model_fields: ClassVar[_FieldsOfClass] = _FieldsOfClass()

    def model_dump(self, **options: Any) -> dict[str, Any]:
        dumped: dict[str, Any] = _adapter(type(self)).dump_python(self, **options)
        return dumped

    def model_dump_json(self, **options: Any) -> str:
        return _adapter(type(self)).dump_json(self, **options).decode("utf-8")

    @classmethod
    def model_validate(cls, values: Any) -> Any:
        return _adapter(cls).validate_python(values)


@dataclass(frozen=True, kw_only=True, config=ConfigDict(extra="forbid"))
class BiasAuditResult(_ModelMethods):
    """Per-session bias statistics of the stage-2 reviewers (see docs/bias-audit.md)."""

    # --- the seed design's keys ---
    length_score_correlation: float | None = Field(
        description=(
            "Pearson r of log word count vs mean score from the other members, per answer: "
            "whether longer answers got higher consensus scores. It cannot separate judges "
            "rewarding length from longer answers being better (see the padding probe and "
            "bias-report's reviewer x length term)"
        )
    )
    length_score_p_value: float | None = Field(description="exact two-sided t test, n-2 df")
    length_bias_detected: bool = Field(
        description=(
            "length_score_correlation is significant and at least the threshold; an "
            "indicator about the answers and judges together, never counted in "
            "overall_bias_risk"
        )
    )
    position_score_variance: float | None = Field(
        description=(
            "variance over display slots of slot effects fitted jointly with reviewer and "
            "answer effects (points^2); None when the slot effects are not identified "
            "(e.g. every reviewer saw the same order; see indicator_only['position'])"
        )
    )
    position_bias_detected: bool | None = Field(
        description=(
            "the slot effects were tested and flagged; None when position was not tested "
            "(the reference design's convention; see indicator_only['position'])"
        )
    )
    reviewer_mean_scores: dict[str, float | None] = Field(
        description="mean score each reviewer gave to others' answers"
    )
    reviewer_score_variance: dict[str, float | None] = Field(
        description="sample variance (ddof=1) of the scores each reviewer gave to others' answers"
    )
    harsh_reviewers: list[str]
    generous_reviewers: list[str]
    overall_bias_risk: RiskLevel
    # --- what the seed design left out ---
    # Defaults below let the reference design's ten-field construction work (ADR 0039): a
    # result built that way says "not computed" (None / empty), never a made-up number.
    flags_raised: list[str] = Field(
        default_factory=list, description="names of the flags that fired"
    )
    length_score_pairs: int = 0
    position_score_p_value: float | None = Field(
        default=None, description="randomization test re-drawing each reviewer's own display order"
    )
    position_slot_means: dict[str, float] = Field(
        default_factory=dict,
        description="fitted effect of each display label in points (weighted mean 0)",
    )
    reviewer_offsets: dict[str, float | None] = Field(
        default_factory=dict,
        description=(
            "points above the reference reviewers on the same answers (additive model); the "
            "reference is the other reviewers minus those flagged harsh/generous, so one "
            "outlier does not shift the rest"
        ),
    )
    reviewer_offset_p_values: dict[str, float | None] = Field(
        default_factory=dict,
        description=(
            "two-sided, Holm-adjusted, from the step-down procedure; None where not tested "
            "(see indicator_only['reviewers'])"
        ),
    )
    self_preference: dict[str, float | None] = Field(
        default_factory=dict,
        description="score given to its own answer minus the mean the others gave that answer",
    )
    self_preference_adjusted: dict[str, float | None] = Field(
        default_factory=dict,
        description="score given to its own answer minus the additive model's prediction",
    )
    self_preference_p_values: dict[str, float | None] = Field(
        default_factory=dict, description="one-sided, Bonferroni-adjusted over self-reviews"
    )
    self_preferring_reviewers: list[str] = Field(default_factory=list)
    self_preference_detected: bool = False
    pooled_self_preference: float | None = Field(
        default=None,
        description=(
            "mean adjusted self-preference over the session's self-reviews; with moderated "
            "noise (the default) each weighted by its precision (inverse variance)"
        ),
    )
    pooled_self_preference_p_value: float | None = Field(
        default=None,
        description=(
            "one-sided test of pooled_self_preference over all self-reviews (no Bonferroni, "
            "no points floor): information about the council as a whole, never a flag; "
            "indicator_only['pooled_self_preference'] says so when it is small and no "
            "reviewer is flagged"
        ),
    )
    sample_sizes: dict[str, int] = Field(default_factory=dict)
    thresholds: dict[str, float] = Field(default_factory=dict)
    significance_level: float | None = Field(
        default=None,
        description=(
            "the level the session's risk flags share (session_error_rate; each family's "
            "own tests run at the share Holm gives it); None when no test was run here"
        ),
    )
    indicator_only: dict[str, str] = Field(
        default_factory=dict,
        description=(
            "what was not tested or rests on too few data for a statistical claim, with why; "
            "'length' is always present and says what the length number can and cannot mean; "
            "'pooled_self_preference' when that p-value is below the level and no reviewer is "
            "flagged (why it is information, not a flag); 'self_preference' when the "
            "self-reviews were predicted with display-slot effects"
        ),
    )
    methods: dict[str, str] = Field(default_factory=dict)
    risk_flags: list[str] = Field(
        default_factory=list,
        description=(
            "the flags of flags_raised that count toward overall_bias_risk (all but "
            "length_bias_detected)"
        ),
    )
    reviewer_offsets_vs_median: dict[str, float | None] = Field(
        default_factory=dict,
        description=(
            "points above the median reviewer on the same answers (additive model): a "
            "reference no single outlier can move; an estimate, the flags come from the "
            "step-down test behind reviewer_offsets"
        ),
    )
    risk_tests_run: list[str] = Field(
        default_factory=list,
        description=(
            "the risk tests that ran in this session (position, leniency, self_preference); "
            "empty means overall_bias_risk is 'not_tested', and 'low' rests only on these"
        ),
    )
    risk_p_values: dict[str, float] = Field(
        default_factory=dict,
        description=(
            "each tested risk family's gate p-value (position, leniency, self_preference): "
            "the smallest of its own family-adjusted p-values among the tests whose effect "
            "reaches its floor, 1.0 when none does; before the session's adjustment"
        ),
    )
    risk_p_values_adjusted: dict[str, float] = Field(
        default_factory=dict,
        description=(
            "risk_p_values Holm-adjusted over the tested risk families (ADR 0050): a family "
            "is flagged exactly when its value is below session_error_rate, so an honest "
            "council reads overall_bias_risk above 'low' in at most that share of sessions"
        ),
    )
    session_error_rate: float | None = Field(
        default=None,
        description=(
            "the family-wise error rate the risk flags hold for the session as a whole "
            "(= significance_level); None when no test was run here"
        ),
    )
