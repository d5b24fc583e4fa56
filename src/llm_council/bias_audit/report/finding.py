"""A tested hypothesis of the report, and whether the report-wide procedure made it a finding.

Below the model and the renderers (both read it) and above nothing but the standard library.
"""

from __future__ import annotations

from dataclasses import dataclass

#: the report's error rates: ``fwer`` (family-wise, the default) and ``fdr`` (false discovery)
ERROR_RATES = ("fwer", "fdr")

#: the bias families, in the order the report lists them; each holds one kind of hypothesis
FAMILIES = (
    "leniency",
    "council position",
    "position",
    "length",
    "self-preference",
    "anchoring",
    "favouritism",
    "amplification",
    "style mimicry",
    "reasoning",
    "drift",
    "causal checks",
    "fingerprint changes",  # ADR 0062
)


#: the primary families: the biases users act on (a judge's level, its slots, its own
#: answer, answer length), a judge's level or slots moving over the weeks, and the live
#: checks that test position, length and self-recognition by intervention; and a judge
#: whose set-up changed (ADR 0062)
PRIMARY_FAMILIES = (
    "drift",
    "leniency",
    "council position",
    "position",
    "length",
    "self-preference",
    "causal checks",
    "fingerprint changes",
)


#: each family's fixed prior weight in the family-wise procedure (ADR 0060): a family's share
#: of the level is its weight over the summed weights of the families the report tested.
#: Fixed before any report's data are seen, which the procedure's guarantee requires; the
#: values were chosen once on the planted-bias benchmark (benchmarks/report_error_rate.py).
#: Three tiers: the primary families whose effects are hardest to see, each one council-wide
#: test or one own answer a session per reviewer (council position, length,
#: self-preference), 7; the primary per-reviewer families whose planted effects reach
#: p ~ 1e-9 (leniency, per-reviewer position), their drift over the weeks and the live
#: causal checks, 1; the exploratory families, 1/4.
FAMILY_WEIGHTS: dict[str, float] = {
    "leniency": 1.0,
    "council position": 7.0,
    "position": 1.0,
    "length": 7.0,
    "self-preference": 7.0,
    "causal checks": 1.0,
    "anchoring": 0.25,
    "favouritism": 0.25,
    "amplification": 0.25,
    "style mimicry": 0.25,
    "reasoning": 0.25,
    "drift": 1.0,
    "fingerprint changes": 1.0,  # ADR 0062: a reviewer's set-up changed (as drift: over time)
}


@dataclass(frozen=True)
class Finding:
    """One hypothesis the report tested: who, which bias, how big, and the one verdict.

    ``p_value`` is the test's own (unadjusted) p; ``p_adjusted`` is the report-wide adjusted
    p over every hypothesis of the report (:mod:`llm_council.stats.inference.report_multiplicity`);
    ``finding`` is True when ``p_adjusted`` is below the report's level *and* the section's
    own rule allows it (``rule`` says which rule decided, in words).
    """

    subject: str  # a reviewer id, "council", or "reviewer -> model" for a favouritism cell
    bias: str
    family: str  # one of :data:`FAMILIES`
    estimate: float
    ci_low: float  # NaN where the estimator gives no interval (a count, a CUSUM change)
    ci_high: float
    unit: str  # what ``estimate`` measures ("points", "r", "points per slot later", ...)
    p_value: float
    p_adjusted: float
    rule: str
    section: str  # id of the section holding the details (the dashboard's anchors)
    finding: bool = False
