"""Seeded sessions whose full audit results were saved before the audit was sped up.

``tests/data/audit_golden/results.json`` holds ``audit_score_table``'s result for each
case below, as computed by the code before the per-design caches and batched tests
(ADR 0029). ``test_audit_golden.py`` recomputes them and requires every number to agree
to 1e-12 and every flag, note and name to be equal. Regenerate only when a statistic is
*meant* to change: ``.venv/bin/python tests/bias_audit/session/audit_golden_cases.py``. The
``moderated-*`` cases (ADR 0045) were appended later, in the saved vocabulary of
``test_audit_golden._as_saved``, leaving the earlier entries byte for byte as they were.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

GOLDEN_PATH = Path(__file__).resolve().parents[2] / "data" / "audit_golden" / "results.json"

#: (name, CouncilSpec keyword arguments, sessions, seed, equal_reviewer_noise)
CASES: tuple[tuple[str, dict[str, Any], int, int, bool], ...] = (
    ("null-3", {"n_members": 3}, 8, 11, False),
    ("null-4", {"n_members": 4}, 8, 12, False),
    ("null-5", {"n_members": 5}, 25, 13, False),
    ("null-5-equal-noise", {"n_members": 5}, 10, 14, True),
    ("null-7", {"n_members": 7}, 8, 15, False),
    ("missing-5", {"n_members": 5, "missing_score_rate": 0.15}, 15, 16, False),
    ("missing-review-6", {"n_members": 6, "missing_review_rate": 0.5}, 10, 17, False),
    ("shared-order-5", {"n_members": 5, "shared_order": True}, 8, 18, False),
    ("no-self-review-5", {"n_members": 5, "self_review": False}, 8, 19, False),
    (
        "biased-5",
        {
            "n_members": 5,
            "leniency": [-2.5, 0.0, 0.0, 0.0, 1.5],
            "self_bias": [2.0, 0.0, 2.0, 0.0, 0.0],
            "slot_effects": [[1.5, 0.0, 0.0, 0.0, -1.5]] * 5,
            "noise_sds": [0.5, 1.0, 1.5, 0.7, 1.2],
            "quality_length_correlation": 0.6,
        },
        20,
        20,
        False,
    ),
    ("biased-6-harsh", {"n_members": 6, "leniency": [-3.0, -2.5, 0, 0, 0, 0]}, 10, 21, False),
    # the default since ADR 0045: each reviewer's noise moderated toward the default prior
    ("moderated-3", {"n_members": 3, "leniency": [-4.0, 0.0, 0.0]}, 12, 31, False),
    ("moderated-4-missing", {"n_members": 4, "missing_score_rate": 0.15}, 10, 32, False),
    (
        "moderated-5-biased",
        {
            "n_members": 5,
            "leniency": [-2.5, 0.0, 0.0, 0.0, 1.5],
            "self_bias": [1.5] * 5,
            "noise_sds": [0.5, 0.75, 1.0, 1.25, 1.5],
        },
        12,
        33,
        False,
    ),
    # ADR 0050: two harsh judges the step-down names one after the other at the level the
    # session's procedure gives the leniency family
    ("moderated-6-two-harsh", {"n_members": 6, "leniency": [-3.0, -2.5, 0, 0, 0, 0]}, 6, 34, False),
)

#: cases audited with moderated noise (ADR 0045); the others pin the session-only path
#: (``moderate_reviewer_noise=False``) they were saved with before it
MODERATED_PREFIX = "moderated-"


def audit_cases() -> Iterator[tuple[str, int, dict[str, Any]]]:
    """``(case name, session index, audit result as JSON)`` for every case and session."""
    from generators.independent_council import CouncilSpec, generate_sessions
    from llm_council.bias_audit.session.audit import audit_score_table
    from llm_council.bias_audit.session.score_table import score_table_from_mappings
    from llm_council.bias_audit.session.thresholds import AuditThresholds

    for name, spec, n_sessions, seed, equal_noise in CASES:
        thresholds = AuditThresholds(
            equal_reviewer_noise=equal_noise,
            moderate_reviewer_noise=name.startswith(MODERATED_PREFIX),
        )
        for index, session in enumerate(generate_sessions(CouncilSpec(**spec), n_sessions, seed)):
            table = score_table_from_mappings(
                session.stage1_responses, session.stage2_scores, session.position_mapping
            )
            result = audit_score_table(table, thresholds, permutation_seed=index)
            dumped = result.model_dump(mode="json")
            dumped.pop("methods")  # constant text (audit_methods.METHODS), not a result
            yield name, index, dumped


def main() -> None:
    results = [
        {"case": name, "index": index, "result": result} for name, index, result in audit_cases()
    ]
    GOLDEN_PATH.write_text(json.dumps(results, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {len(results)} audit results to {GOLDEN_PATH}")


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    main()
