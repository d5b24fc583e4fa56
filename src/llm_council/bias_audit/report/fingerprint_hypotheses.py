"""The fingerprint segments' tests as report hypotheses, and their verdicts written back.

Each change between consecutive segments of a reviewer whose difference was tested is one
hypothesis of the report's one multiplicity procedure (ADR 0054), in family "fingerprint
changes"; report/hypotheses.py and report/report_verdicts.py call these two functions.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from llm_council.bias_audit.report.analyses.fingerprints import FingerprintHistory
from llm_council.bias_audit.report.hypotheses import Hypothesis, Locator, _tested

SECTION = "section-fingerprints"
FAMILY = "fingerprint changes"


def fingerprint_hypotheses(section: FingerprintHistory) -> list[Hypothesis]:
    """One hypothesis per tested segment change: "leniency moved when the set-up changed"."""
    found = []
    for i, reviewer in enumerate(section.reviewers):
        for change in reviewer.changes:
            found.append(
                Hypothesis(
                    _tested(
                        reviewer.reviewer,
                        "leniency moved when its set-up changed ("
                        + (", ".join(c.component for c in change.components) or "first recorded")
                        + ")",
                        FAMILY,
                        change.difference,
                        "points",
                        SECTION,
                    ),
                    ("fingerprint", i, change.index),
                )
            )
    return found


def fingerprint_verdicts(
    section: FingerprintHistory, verdict: Callable[[Locator], bool]
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
