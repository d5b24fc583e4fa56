"""The audit's thresholds: packaged defaults, overridden by environment variables.

Defaults live in ``config/thresholds.toml`` (shipped in the package as
``llm_council/default_config/thresholds.toml``). Each value can be overridden by the
environment variable named in :data:`ENV_VARIABLES`. Both sources go through one range
check (:func:`checked_threshold`): a value that is not a finite number in range raises
:class:`~llm_council.errors.ConfigError` naming the file and field, or the variable, and
quoting the value.
"""

from __future__ import annotations

import math
import os
import tomllib
from collections.abc import Mapping
from functools import lru_cache
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from llm_council.errors import ConfigError
from llm_council.infra.config_files import default_config_file

#: field name -> environment variable that overrides it
ENV_VARIABLES: dict[str, str] = {
    "length_correlation_threshold": "LLM_COUNCIL_LENGTH_CORRELATION_THRESHOLD",
    "position_variance_threshold": "LLM_COUNCIL_POSITION_VARIANCE_THRESHOLD",
    "significance_level": "LLM_COUNCIL_SIGNIFICANCE_LEVEL",
    "prior_noise_sd": "LLM_COUNCIL_PRIOR_NOISE_SD",
}

#: a reviewer's history counts for at most this many prior df (ADR 0051)
HISTORY_PRIOR_DF_MAX = 10.0
#: the level at which a reviewer's session noise is taken to have left its history (its
#: upper tail since ADR 0059): a screen, whose false positives only send a reviewer to the
#: no-history path
NOISE_DRIFT_LEVEL = 0.2
#: the level of the council-wide noise check (ADR 0059; off by default: after the
#: per-reviewer screen it changed no measured rate)
NOISE_DRIFT_COUNCIL_LEVEL = 0.0
#: which side of the variance ratio the check tests (ADR 0059)
NOISE_DRIFT_ALTERNATIVE: Literal["greater", "two-sided"] = "greater"
#: what a reviewer whose noise left its history is moderated toward (issue 34 item 2)
NoiseDriftReplacement = Literal["default", "session-estimate"]
NOISE_DRIFT_REPLACEMENT: NoiseDriftReplacement = "default"
#: the guards the slot test with history can take against a stale history (ADR 0059)
SlotHistoryGuard = Literal[
    "none",
    "session-floor",
    "smallest-df",
    "larger-p",
    "weighted-randomization",
    "screen-df",
    "prior-cap",
]
#: the default guard, "smallest-df" since the lead's decision at merge (ADR 0059): of the
#: guards measured it cut the false flags under a stale history most while keeping slot
#: power near ADR 0051's
SLOT_HISTORY_GUARD: SlotHistoryGuard = "smallest-df"
#: how the session's risk flags guard against a history written under other noise (ADR
#: 0071): "intersection-union" flags a family only when the session-only path flags it too
HistorySessionCheck = Literal["off", "intersection-union"]
HISTORY_SESSION_CHECK: HistorySessionCheck = "intersection-union"

#: the packaged thresholds file, as errors name it
PACKAGED_FILE = "default_config/thresholds.toml"

#: field name -> (lowest allowed, highest allowed, whether the bounds are open)
_RANGES: dict[str, tuple[float, float, bool]] = {
    "length_correlation_threshold": (0.0, 1.0, False),
    "position_variance_threshold": (0.0, math.inf, False),
    "significance_level": (0.0, 1.0, True),
    # a noise SD of 0 would make every difference significant; above 9 points no 1-10
    # score can move a test
    "prior_noise_sd": (0.0, 9.0, True),
}


class AuditThresholds(BaseModel):
    """What a flag needs: statistical significance *and* an effect at least this large.

    ``length_correlation_threshold``: minimum |r| for the length flag;
    ``position_variance_threshold``: minimum between-slot variance of residual scores
    (points squared) for the position flag; ``significance_level``: the per-flag
    false-positive budget (multiple reviewers share it by Bonferroni);
    ``reviewer_offset_floor`` / ``self_preference_floor``: minimum effect in points for
    harsh/generous and self-preference flags, so a significant but negligible
    difference is not called a bias.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    length_correlation_threshold: float = Field(0.3, ge=0.0, le=1.0)
    position_variance_threshold: float = Field(0.5, ge=0.0)
    significance_level: float = Field(0.05, gt=0.0, lt=1.0)
    reviewer_offset_floor: float = Field(1.0, ge=0.0)
    self_preference_floor: float = Field(1.0, ge=0.0)
    minimum_length_pairs: int = Field(
        10, ge=3, description="below this many pairs the length result is an indicator only"
    )
    minimum_residual_df: int = Field(
        10, ge=1, description="below this the reviewer tests are indicators only"
    )
    minimum_test_df: int = Field(
        2,
        ge=1,
        description=(
            "below this many residual degrees of freedom the leniency and self-preference "
            "t tests do not run: at 1 df (a complete 3-member council) they keep their level "
            "but cannot detect anything (|t| > 38 needed at 0.05 over 3 reviewers), so an "
            "indicator note says more than a p-value"
        ),
    )
    equal_reviewer_noise: bool = Field(
        False,
        description=(
            "assume every reviewer scores with the same noise: pooled t tests for leniency "
            "and self-preference, more power, but above their level when reviewers differ "
            "(self-preference 8-9%, harsh-or-generous 10% at 7-9 members with noise SDs "
            "0.5-2.0); the default estimates each reviewer's noise"
        ),
    )
    moderate_reviewer_noise: bool = Field(
        True,
        description=(
            "moderate each reviewer's session noise variance toward a prior (its history, "
            "the store's reviewers, or prior_noise_sd; ADR 0045); off: the session-only "
            "per-reviewer variances of ADR 0017, which keep their level but name almost "
            "nobody at 3-5 members"
        ),
    )
    prior_noise_sd: float = Field(
        1.5,
        gt=0.0,
        lt=9.0,
        description=(
            "the default prior noise SD (points) a reviewer's session variance is moderated "
            "toward when the store has no history of it (Smyth 2004; ADR 0045): the upper end "
            "of honest judges' noise on the 1-10 scale (0.5-1.5), so a noisy honest judge is "
            "not mistaken for a biased one"
        ),
    )
    prior_noise_df: float = Field(
        10.0,
        gt=0.0,
        description="the default prior's degrees of freedom d0 (ADR 0045)",
    )
    history_prior_df_max: float = Field(
        HISTORY_PRIOR_DF_MAX,
        gt=0.0,
        description=(
            "the most degrees of freedom a reviewer's history counts for as its noise prior "
            "(ADR 0051): a long history otherwise swamps the session's own noise, and a "
            "judge whose model changed keeps its old noise"
        ),
    )
    noise_drift_level: float = Field(
        NOISE_DRIFT_LEVEL,
        ge=0.0,
        lt=1.0,
        description=(
            "level of the variance-ratio test of each reviewer's session noise against its "
            "history (ADR 0051; upper-tailed since ADR 0059: only a noisier session makes "
            "false flags); a reviewer whose noise moved is moderated toward the default "
            "prior instead. 0 turns the check off"
        ),
    )
    noise_drift_alternative: Literal["greater", "two-sided"] = Field(
        NOISE_DRIFT_ALTERNATIVE,
        description=(
            "which way the noise check looks (ADR 0059): 'greater' marks only a reviewer "
            "noisier than its history (the side on which a stale history makes false "
            "flags; a quieter judge only costs power), 'two-sided' either way (ADR 0051)"
        ),
    )
    noise_drift_council_level: float = Field(
        NOISE_DRIFT_COUNCIL_LEVEL,
        ge=0.0,
        lt=1.0,
        description=(
            "upper-tail level of the test of the reviewers the per-reviewer check kept, "
            "together, against their histories (ADR 0059); below it each is moderated "
            "toward the default prior. 0 (the default) turns it off"
        ),
    )
    noise_drift_replacement: NoiseDriftReplacement = Field(
        NOISE_DRIFT_REPLACEMENT,
        description=(
            "the prior of a reviewer whose session noise left its history: 'default' "
            "(prior_noise_sd with the session's pooled variance, ADR 0051) or "
            "'session-estimate' (its session variance with the others at their histories, "
            "at least its history's, on the screen's session df)"
        ),
    )
    slot_noise_drift_level: float = Field(
        NOISE_DRIFT_LEVEL,
        ge=0.0,
        lt=1.0,
        description=(
            "level of the noise screen the slot test with history runs on its own fit "
            "(ADR 0059's screen, upper tail; a moved reviewer is moderated toward the "
            "default prior there, whatever noise_drift_replacement says: the slot test's "
            "reference is F(k, the smallest reviewer df), and a reviewer on its session's "
            "few df would set it)"
        ),
    )
    history_session_check: HistorySessionCheck = Field(
        HISTORY_SESSION_CHECK,
        description=(
            "how the risk flags guard against a history written under other noise (ADR "
            "0071): 'intersection-union' (the default) gives each risk family the larger of "
            "its p-value with history and without it (the session-only path: the default "
            "prior, the randomization slot test), and names a reviewer only when both name "
            "it, so the session's error rate is the session-only path's whatever the "
            "history holds; 'off': the history's p-values alone (more power when the "
            "history is right, false flags when a judge's noise changed)"
        ),
    )
    history_session_check_level: float | None = Field(
        None,
        gt=0.0,
        lt=1.0,
        description=(
            "with history_session_check 'intersection-union': the session-only path's "
            "level gamma; its p-values enter scaled by significance_level / gamma (never "
            "above 1). None (the default): gamma = significance_level, and the session's "
            "error rate is the session-only path's whatever the history holds; a larger "
            "gamma keeps more power and bounds that rate by gamma only (ADR 0071); the slot "
            "test's leg (the randomization test) stays at significance_level"
        ),
    )
    slot_history_guard: SlotHistoryGuard = Field(
        SLOT_HISTORY_GUARD,
        description=(
            "how the slot test with history (weighted Wald, Satterthwaite df) guards against "
            "a history whose noise is stale (ADR 0059, amendment): 'none'; 'session-floor' "
            "divides the statistic by max(1, the session's weighted residual mean square); "
            "'smallest-df' refers it to F(k, the smallest reviewer df) (ADR 0051's bound); "
            "'larger-p' takes the larger of its p-value and the randomization test's; "
            "'weighted-randomization' re-draws the display orders for the p-value, the "
            "residuals weighted by each reviewer's history variance; 'screen-df': a reviewer "
            "whose noise screen p-value is below slot_history_screen_level counts in the "
            "test's Satterthwaite df with its session df only; 'prior-cap': the slot test's "
            "histories count for at most slot_history_prior_df_max df"
        ),
    )
    slot_history_screen_level: float = Field(
        0.5,
        ge=0.0,
        le=1.0,
        description=(
            "with slot_history_guard 'screen-df': the noise screen's p-value below which a "
            "reviewer's history does not count in the slot test's df (ADR 0059, amendment)"
        ),
    )
    slot_history_prior_df_max: float = Field(
        4.0,
        gt=0.0,
        description=(
            "with slot_history_guard 'prior-cap': the most prior df a reviewer's history "
            "counts for in the slot test (ADR 0059, amendment)"
        ),
    )
    position_permutations: int = Field(
        499, ge=99, description="Monte Carlo re-orderings for the position p-value (Jockel 1986)"
    )


@lru_cache(maxsize=1)
def _packaged_defaults() -> dict[str, float]:
    """The shipped thresholds.toml, read once per process (it cannot change under us)."""
    resource = default_config_file("thresholds.toml")
    try:
        text = resource.read_text(encoding="utf-8")
        parsed = tomllib.loads(text)
    except FileNotFoundError as error:
        raise ConfigError(f"packaged {PACKAGED_FILE} is missing") from error
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"{resource}: {error}") from error
    return {
        field: checked_threshold(
            field, value, f"{resource}{_line_of(text, field)}: {field} = {value!r}"
        )
        for field, value in parsed.items()
        if field in ENV_VARIABLES
    }


def _line_of(text: str, field: str) -> str:
    """``", line N"`` where ``field`` is assigned, or ``""`` when no line assigns it by
    that bare or quoted name."""
    for number, line in enumerate(text.splitlines(), start=1):
        name, equals, _ = line.partition("=")
        if equals and name.strip().strip("\"'") == field:
            return f", line {number}"
    return ""


def checked_threshold(field: str, value: object, where: str) -> float:
    """``value`` as the float ``field`` takes, or a one-line ConfigError starting with
    ``where`` (the file and field, or the variable and its text): the one range check
    of the packaged file and the environment, so neither lets through what the other
    refuses (1e308 as the prior noise SD overflowed the audit: issue 37, A.9)."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ConfigError(f"{where} is not a number")
    try:
        number = float(value.strip() if isinstance(value, str) else value)
    except ValueError:
        raise ConfigError(f"{where} is not a number") from None
    low, high, open_bounds = _RANGES[field]
    outside = not math.isfinite(number) or (
        number <= low or number >= high if open_bounds else number < low or number > high
    )
    if outside:
        bracket = f"({low:g}, {high:g})" if open_bounds else f"[{low:g}, {high:g}]"
        raise ConfigError(f"{where} is out of range: must be in {bracket}")
    return number


def load_thresholds(environ: Mapping[str, str] | None = None) -> AuditThresholds:
    """The packaged defaults, each overridden by its environment variable when set."""
    env = os.environ if environ is None else environ
    values: dict[str, float] = dict(_packaged_defaults())
    for field, variable in ENV_VARIABLES.items():
        raw = env.get(variable)
        if raw is not None and raw.strip() != "":
            values[field] = checked_threshold(field, raw, f"{variable}={raw!r}")
    try:
        return AuditThresholds(**values)
    except ValueError as error:  # pydantic's ValidationError: the packaged file is wrong
        raise ConfigError(f"{PACKAGED_FILE}: {error}") from error
