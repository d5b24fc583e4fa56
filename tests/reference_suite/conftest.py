"""The reference council's own bias tests, run unchanged against our modules (ADR 0039).

The four ``test_*.py`` files run here are amiable-dev/llm-council's tests/test_bias_audit.py,
test_bias_persistence.py, test_bias_aggregation.py and test_bias_amplification.py at commit
4f104ac (after v0.45.1, the newest that can be fetched; 107 tests), MIT-licensed. They are not committed (the project does not vendor other
projects' code; ``.gitignore`` keeps them out): drop them into this folder to run them
(``git show 4f104ac:tests/test_bias_audit.py > tests/reference_suite/test_bias_audit.py``
and so on, in a clone of that repository). Their imports are unchanged: they import
``llm_council.bias_audit``, ``llm_council.bias_persistence``,
``llm_council.bias_aggregation`` and ``llm_council.bias_amplification``, which are ours.

Two of their imports name reference modules that are configuration, not audit:
``llm_council.unified_config`` (for two thresholds) and ``llm_council.model_constants``
(model name strings). This file installs test-only stand-ins for those two (our
thresholds, fixed names); they are not part of our package.

The rows where we differ from the reference on purpose are marked here, each with its
reason, as ``xfail(strict=True)``: a row that starts passing fails the run, so the table
in docs/bias-audit.md ("Where the drop-in differs on purpose") stays true.
"""

from __future__ import annotations

import sys
import types
from pathlib import Path

import pytest

from llm_council.bias_audit.session.thresholds import load_thresholds


def _install_reference_configuration_stand_ins() -> None:
    if "llm_council.unified_config" not in sys.modules:
        unified_config = types.ModuleType("llm_council.unified_config")

        def get_config() -> types.SimpleNamespace:
            thresholds = load_thresholds()
            bias = types.SimpleNamespace(
                length_correlation_threshold=thresholds.length_correlation_threshold,
                position_variance_threshold=thresholds.position_variance_threshold,
            )
            return types.SimpleNamespace(evaluation=types.SimpleNamespace(bias=bias))

        unified_config.get_config = get_config  # type: ignore[attr-defined]
        sys.modules["llm_council.unified_config"] = unified_config
    if "llm_council.model_constants" not in sys.modules:
        constants = types.ModuleType("llm_council.model_constants")
        for name, value in {
            "OPENAI_HIGH": "openai/gpt-5.1",
            "ANTHROPIC_HIGH": "anthropic/claude-opus-4.5",
            "GOOGLE_HIGH": "google/gemini-3-pro-preview",
            "GOOGLE_QUICK": "google/gemini-2.5-flash",
            "ANTHROPIC_OPUS_LATEST": "anthropic/claude-opus-4.5",
        }.items():
            setattr(constants, name, value)
        sys.modules["llm_council.model_constants"] = constants
        import llm_council

        llm_council.model_constants = constants  # type: ignore[attr-defined]


_install_reference_configuration_stand_ins()

#: test id (file::class::name) -> why we differ on purpose; docs/bias-audit.md has the table
_UNDEFINED_R = (
    "an undefined correlation (< 3 answers, or a missing score) is (None, None), not (0.0, 1.0)"
)
_SHARED_ORDER = (
    "one display order shared by every reviewer: slot and answer are confounded, so the slot "
    "effects are not identified and position is not estimated (None)"
)
_NOT_TESTED = "a session where no risk test can run is 'not_tested', never 'low'"
_SHARED_ORDER_P = (
    "amplification_suspect needs the randomization test (p < 0.05); one shared order of "
    "3 answers allows p >= 1/6, so this session cannot be flagged"
)
DELIBERATE_DIFFERENCES: dict[str, str] = {
    "test_bias_audit.py::TestLengthCorrelation::test_insufficient_data": _UNDEFINED_R,
    "test_bias_audit.py::TestLengthCorrelation::test_empty_responses": _UNDEFINED_R,
    "test_bias_audit.py::TestLengthCorrelation::test_missing_scores_for_some_models": (
        _UNDEFINED_R
    ),
    "test_bias_audit.py::TestPositionBias::test_position_bias_detected": _SHARED_ORDER,
    "test_bias_audit.py::TestPositionBias::test_no_position_bias": _SHARED_ORDER,
    "test_bias_audit.py::TestBiasAuditIntegration::test_full_audit_with_position_data": (
        _SHARED_ORDER
    ),
    "test_bias_audit.py::TestBiasAuditIntegration::test_audit_result_serializable": _NOT_TESTED,
    "test_bias_audit.py::TestOverallRiskAssessment::test_medium_risk_some_biases": (
        "length is flagged by the exact t test with n - 2 df (p = 0.14 with 3 answers), "
        "not a normal approximation, and never counts toward overall_bias_risk"
    ),
    "test_bias_audit.py::TestOverallRiskAssessment::test_high_risk_multiple_biases": (
        "leniency is a Holm step-down t test on the same answers (4 residual df: generous "
        "p = 0.064, not flagged), the shared order leaves position untested, and length "
        "never counts toward overall_bias_risk"
    ),
    "test_bias_audit.py::TestExtractScoresFromStage2::test_handle_missing_scores": (
        "a ranking without scores gives rank points (1st of N gets N), not nothing"
    ),
    "test_bias_persistence.py::TestPositionIsDisplayPosition::"
    "test_duplicate_model_keeps_distinct_display_positions": (
        "one answer under two labels in one review is one candidate: the label at the lower "
        "display position is kept and the other dropped and counted (a warning), so one "
        "answer is never scored twice by one reviewer; the reference keeps both"
    ),
    "test_bias_amplification.py::TestDecomposition::test_positional_amplification_flagged": (
        _SHARED_ORDER_P
    ),
    "test_bias_amplification.py::TestReport::test_aggregates": _SHARED_ORDER_P,
    "test_bias_amplification.py::TestDecomposition::test_disagreement_not_flagged": (
        "agreement_index leaves out reviewer pairs with fewer than 3 common answers (r of 2 "
        "points is always +-1): None here"
    ),
}


@pytest.fixture(autouse=True)
def _private_hash_secret_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The per-install query-hash key goes to a temporary file, never the user's home."""
    monkeypatch.setenv("LLM_COUNCIL_HASH_SECRET_FILE", str(tmp_path / "hash_secret"))


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        key = item.nodeid.split("reference_suite/", 1)[-1]
        reason = DELIBERATE_DIFFERENCES.get(key)
        if reason is not None:
            item.add_marker(pytest.mark.xfail(strict=True, reason=reason))
