"""The fingerprint segments' tests as report hypotheses, and their verdicts written back.

Each change between consecutive segments of a reviewer whose difference was tested is one
hypothesis of the report's one multiplicity procedure (ADR 0054), in family "fingerprint
changes"; report/hypotheses.py wraps :func:`fingerprint_findings` and
report/report_verdicts.py calls :func:`fingerprint_verdicts`. Below both (no import of
either), so there is no import circle.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from llm_council.bias_audit.report.analyses.fingerprints import FingerprintHistory
from llm_council.bias_audit.report.finding import Finding

SECTION = "section-fingerprints"
FAMILY = "fingerprint changes"
#: where a change sits: ("fingerprint", reviewer index, change index)
FingerprintLocator = tuple[str, int, int]


def fingerprint_findings(section: FingerprintHistory) -> list[tuple[Finding, FingerprintLocator]]:
    """One untested-yet finding per segment change: "leniency moved when its set-up changed"."""
    found = []
    for i, reviewer in enumerate(section.reviewers):
        for change in reviewer.changes:
            components = ", ".join(c.component for c in change.components) or "first recorded"
            difference = change.difference
            finding = Finding(
                subject=reviewer.reviewer,
                bias=f"leniency moved when its set-up changed ({components})",
                family=FAMILY,
                estimate=float(difference.estimate),
                ci_low=float(difference.ci_low),
                ci_high=float(difference.ci_high),
                unit="points",
                p_value=float(difference.p_value),
                p_adjusted=float("nan"),
                rule="",
                section=SECTION,
            )
            found.append((finding, ("fingerprint", i, change.index)))
    return found


def fingerprint_verdicts(
    section: FingerprintHistory, verdict: Callable[[tuple[str | int, ...]], bool]
) -> FingerprintHistory:
    """``section`` with each change's ``finding`` set from the report-wide procedure."""
    reviewers = [
        dataclasses.replace(
            reviewer,
            changes=[
                dataclasses.replace(change, finding=verdict(("fingerprint", i, change.index)))
                for change in reviewer.changes
            ],
        )
        for i, reviewer in enumerate(section.reviewers)
    ]
    return dataclasses.replace(section, reviewers=reviewers)
