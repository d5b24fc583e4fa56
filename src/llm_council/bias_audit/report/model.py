"""The cross-session bias report as plain frozen dataclasses (what every renderer reads).

Every number carries its interval and the count it came from; the renderers only format.
The per-section value types live in :mod:`.estimates` (re-exported here).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

from llm_council.bias_audit.report.analyses.causal_checks import CausalChecks
from llm_council.bias_audit.report.analyses.decisions import DecisionsAffected
from llm_council.bias_audit.report.analyses.families import BiasFamilies
from llm_council.bias_audit.report.analyses.fingerprints import FingerprintHistory
from llm_council.bias_audit.report.analyses.monitor import MonitorSection
from llm_council.bias_audit.report.analyses.reliability import CouncilReliability
from llm_council.bias_audit.report.estimates import (
    RELIABILITY_TIERS,
    Interval,
    JointEffect,
    JointModel,
    Leaderboard,
    LeaderboardEntry,
    LengthBias,
    PositionBias,
    ReviewerProfile,
    SelfPreference,
    SlotProfile,
    reliability_tier,
)
from llm_council.bias_audit.report.finding import Finding

__all__ = [
    "BiasReport",
    "Finding",
    "Interval",
    "JointEffect",
    "JointModel",
    "Leaderboard",
    "LeaderboardEntry",
    "LengthBias",
    "PositionBias",
    "RELIABILITY_TIERS",
    "ReviewerProfile",
    "SelfPreference",
    "SlotProfile",
    "reliability_tier",
]


@dataclass(frozen=True)
class BiasReport:
    """Everything ``llm-council bias-report`` shows."""

    store: str
    generated_at: str
    since: str | None
    n_records: int
    n_sessions: int
    n_reviewers: int
    n_models: int
    warnings: list[str]
    profiles: list[ReviewerProfile]
    length: LengthBias | None
    position: PositionBias | None
    self_preference: list[SelfPreference]
    joint: JointModel | None
    leaderboard: Leaderboard | None
    significance_level: float = 0.05
    # sessions dropped whole because their line count differs from session_n_records
    n_incomplete_sessions: int = 0
    n_incomplete_records: int = 0
    causal_checks: CausalChecks | None = None  # ADR 0024; None when the store has no checks
    until: str | None = None
    families: BiasFamilies | None = (
        None  # anchoring, favouritism, drift (report/analyses/families.py)
    )
    # ADR 0046: how often the debiased winner differs from the raw winner
    decisions: DecisionsAffected | None = None
    # ADR 0054: one multiplicity procedure over every hypothesis the report tests
    error_rate: str = "fwer"  # fwer (family-wise) / fdr (false discovery rate)
    error_rate_method: str = ""  # the procedure, in words (the text header quotes it)
    findings: list[Finding] = field(default_factory=list)  # the tested ones that are findings
    hypotheses: list[Finding] = field(default_factory=list)  # every tested one, in report order
    material_leniency: float = float("nan")  # points: a smaller leniency is never a finding
    # ADR 0062: Krippendorff's alpha and score resolution (descriptive, not findings)
    reliability: CouncilReliability | None = None
    # ADR 0062: each reviewer's history split where its fingerprint changed
    fingerprints: FingerprintHistory | None = None
    # ADR 0053: the anytime monitor over the whole store (its own guarantee, not a finding)
    monitor: MonitorSection | None = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict: NaN and infinities become null (JSON has neither)."""
        return _json_safe(asdict(self))


def _json_safe(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: _json_safe(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_json_safe(item) for item in value]
    return value
