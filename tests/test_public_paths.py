"""Every documented public name imports from its documented path (issue 22: moves keep them).

The lists are the public facades as they stood before the bias audit was split into layers
(ADR 0038); a name may be added to a facade, never silently dropped. The README's and the
docs' own ``from llm_council... import ...`` lines are imported too, as a reader would.
"""

from __future__ import annotations

import ast
import importlib
import re
from importlib.metadata import entry_points
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

PUBLIC_NAMES = {
    "llm_council": [
        "CandidateScore", "Completion", "CompletionRequest", "ConfigError", "CouncilConfig",
        "CouncilError", "CouncilMember", "CouncilResult", "InputError", "LabelAssignment",
        "MemberAnswer", "Message", "Middleware", "MissingCredentialsError", "ModelStanding",
        "ParsedReview", "Provider", "ProviderError", "RecordError", "RetryPolicy", "Review",
        "SessionCompleted", "SessionStarted", "Stage1Completed", "Stage2Completed", "Synthesis",
        "assign_labels", "create_provider", "derive_position_mapping", "load_council_config",
        "parse_review", "register_provider", "run_full_council",
        "AdjustmentsRequested", "ReviewerAdjustment",  # ADR 0046
    ],
    "llm_council.bias_audit": [
        "AuditThresholds", "BiasAuditResult", "IncompleteSessionWarning",
        "MalformedRecordWarning", "PartialWriteError", "RecordReader", "ReviewRecord",
        "SCHEMA_VERSION", "TornRecordWarning", "append_records", "audit_reviewer_calibration",
        "audit_score_table", "calculate_length_correlation", "calculate_position_bias",
        "derive_position_mapping", "extract_scores_from_stage2", "load_thresholds", "open_store",
        "read_records", "run_bias_audit", "store_path", "store_spec", "upgrade_record",
        "audit_external", "audit_council", "shuffled_display_order", "SessionDisplayOrder",
    ],
    "llm_council.bias_audit.report": [
        "BiasReport", "RENDERERS", "build_report", "reliability_tier", "render_csv",
        "render_html", "render_json", "render_text",
    ],
    # the reference design's paths (ADR 0039), shims over bias_audit/reference/ (ADR 0066)
    "llm_council.bias_persistence": [
        "BIAS_PERSISTENCE_ENABLED", "BiasMetricRecord", "ConsentLevel", "append_bias_records",
        "create_bias_records_from_session", "from_review_record", "get_bias_store_stats",
        "hash_query_if_enabled", "persist_session_bias_data", "read_bias_records",
    ],
    "llm_council.bias_aggregation": [
        "AggregatedBiasAuditResult", "AggregatedBiasResult", "BiasMetricRecord",
        "LengthCorrelationReport", "PositionBiasReport", "ReviewerProfile",
        "StatisticalConfidence", "aggregate_position_bias", "aggregate_reviewer_profiles",
        "detect_anomalies", "detect_temporal_trends", "determine_confidence_level",
        "generate_bias_report_csv", "generate_bias_report_json", "generate_bias_report_text",
        "pooled_correlation_with_ci", "pooled_length_correlation", "run_aggregated_bias_audit",
    ],
    "llm_council.bias_amplification": [
        "SessionAgreement", "SessionDecomposition", "amplification_report",
        "format_amplification_report", "session_agreement_decomposition",
    ],
    "llm_council.tracing": ["use_tracer_provider"],  # old path on purpose (ADR 0066)
}  # fmt: skip


@pytest.mark.parametrize(
    ("path", "name"),
    [(path, name) for path, names in PUBLIC_NAMES.items() for name in names],
)
def test_each_public_name_imports_from_its_path(path: str, name: str) -> None:
    module = importlib.import_module(path)
    assert name in module.__all__
    assert getattr(module, name) is not None


@pytest.mark.parametrize("path", sorted(PUBLIC_NAMES))
def test_no_facade_lists_a_name_it_cannot_give(path: str) -> None:
    module = importlib.import_module(path)
    missing = [name for name in module.__all__ if not hasattr(module, name)]
    assert missing == []


def test_the_middleware_entry_point_loads_the_audit() -> None:
    declared = ROOT.joinpath("pyproject.toml").read_text(encoding="utf-8")
    match = re.search(r'^bias_audit = "([\w.]+):(\w+)"$', declared, re.MULTILINE)
    assert match, "pyproject.toml declares no bias_audit middleware entry point"
    module_path, attribute = match.groups()
    middleware = getattr(importlib.import_module(module_path), attribute)
    assert middleware.__name__ == "BiasAuditMiddleware"
    installed = {entry.name: entry.value for entry in entry_points(group="llm_council.middleware")}
    # the installed metadata may predate an editable checkout; when present it must agree
    if "bias_audit" in installed:
        assert installed["bias_audit"] == f"{module_path}:{attribute}"


def _documented_imports() -> list[tuple[str, str, str]]:
    """(file, module, name) of every ``from llm_council... import`` in the README and docs."""
    found = []
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for block in re.findall(r"```python\n(.*?)```", path.read_text(encoding="utf-8"), re.S):
            try:
                tree = ast.parse(block)
            except SyntaxError:
                continue
            for node in ast.walk(tree):
                if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                    "llm_council"
                ):
                    found.extend((path.name, node.module or "", a.name) for a in node.names)
    return found


def test_the_docs_show_imports_at_all() -> None:
    assert len(_documented_imports()) >= 2


@pytest.mark.parametrize(("document", "path", "name"), _documented_imports())
def test_every_import_the_docs_show_works(document: str, path: str, name: str) -> None:
    assert hasattr(importlib.import_module(path), name), f"{document}: {path}.{name}"
