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


@dataclass(frozen=True)
class Finding:
    """One hypothesis the report tested: who, which bias, how big, and the one verdict.

    ``p_value`` is the test's own (unadjusted) p; ``p_adjusted`` is the report-wide adjusted
    p over every hypothesis of the report (:mod:`llm_council.stats.report_multiplicity`);
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
