"""What the ``llm-council mcp`` server's tools do, as plain functions returning JSON objects.

Kept apart from the MCP wiring (:mod:`llm_council.cli.mcp_server`) so each tool is one
tested function over our public calls:

- :func:`consult_council`: one council session (the configured council, else the
  simulated one), its synthesis, aggregate ranking, audit summary and where the records
  went;
- :func:`bias_report`: a record store's pooled findings (``bias-report --format json``);
- :func:`calibrate_judge`: the position-swap replay of a pairs file with recorded
  verdicts, and its gate (``calibrate PAIRS``);
- :func:`audit_session`: the per-session audit of stage 1 / stage 2 JSON from any
  council (karpathy's shapes or the reference's), records written only when asked.

Every error is one line naming what was wrong (our :class:`~llm_council.errors.CouncilError`
messages); the server returns it as the tool's error.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from llm_council.errors import InputError

#: the audit fields a session summary carries (the full audit is in bias_report's records)
AUDIT_SUMMARY_FIELDS = (
    "overall_bias_risk",
    "risk_tests_run",
    "flags_raised",
    "position_bias_detected",
    "self_preferring_reviewers",
    "harsh_reviewers",
    "generous_reviewers",
    "indicator_only",
    "records_written",
    "record_store",
    "record_store_error",
)


def _audit_summary(audit: Any) -> dict[str, Any] | None:
    if not isinstance(audit, dict):
        return None
    return {key: audit[key] for key in AUDIT_SUMMARY_FIELDS if key in audit}


async def consult_council(
    question: str,
    config_path: str | None = None,
    seed: int | None = None,
    bias_audit: bool = True,
) -> dict[str, Any]:
    """One session: the synthesis, the aggregate ranking, the audit summary, the store."""
    from llm_council.bias_audit.middleware import BiasAuditMiddleware
    from llm_council.config import load_council_config
    from llm_council.council import run_full_council

    config = load_council_config(Path(config_path) if config_path else None)
    middleware = [BiasAuditMiddleware()] if bias_audit else []
    result = await run_full_council(question, config=config, seed=seed, middleware=middleware)
    synthesis = result.stage3
    return {
        "session_id": result.metadata.get("session_id"),
        "synthesis": {
            "chairman": synthesis.chairman,
            "text": synthesis.text,
            "is_fallback": synthesis.is_fallback,
        },
        "ranking": result.metadata.get("aggregate_rankings", []),
        "members": [
            {"member": answer.member, "answered": answer.ok, "error": answer.error}
            for answer in result.stage1
        ],
        "degraded": result.metadata.get("degraded", []),
        "cost_usd": result.metadata.get("cost_usd"),
        "bias_audit": _audit_summary(result.metadata.get("bias_audit")),
    }


def bias_report(
    store: str | None = None, since: str | None = None, until: str | None = None
) -> dict[str, Any]:
    """The pooled report of ``store`` (default: the configured store) as a JSON object."""
    from llm_council.bias_audit.report import build_report
    from llm_council.bias_audit.report.load.record_sources import default_store_location
    from llm_council.integrations.reference_cli import reference_report_input

    path = store if store else default_store_location()
    with reference_report_input(path, since, None, None) as chosen:
        report = build_report(chosen.store, since=chosen.since, until=until)
    document = report.to_dict()
    document["notes"] = chosen.notes
    return document


def calibrate_judge(
    pairs_path: str, judge: str | None = None, fail_under: str | None = None
) -> dict[str, Any]:
    """Replay a pairs file's recorded verdicts: per-judge reports and the gate's verdict."""
    from llm_council.calibration.gate import GateThresholds, decide_gate, parse_fail_under
    from llm_council.calibration.importers import load_pairs_any
    from llm_council.calibration.session import replay_study

    path = Path(pairs_path)
    if not path.is_file():
        raise InputError(f"pairs file {pairs_path!r} does not exist or is not a file")
    pairs = load_pairs_any(path, "ours", (), None, live=False)
    reports, comparison = replay_study(pairs, path=str(path), only_judge=judge)
    decision = decide_gate(reports, GateThresholds(fail_under=parse_fail_under(fail_under)))
    return {
        "mode": "replay",
        "reports": reports,
        "judge_comparison": comparison,
        "gate": decision.as_json(),
    }


async def audit_session(
    stage1: list[Any],
    stage2: list[Any],
    label_to_model: dict[str, Any],
    score_scale: list[float] | None = None,
    store: str | None = None,
    write_records: bool = False,
) -> dict[str, Any]:
    """The per-session audit of an outside council's stages; records only when asked."""
    from llm_council.bias_audit.plugin.external_session import external_event
    from llm_council.bias_audit.session.session_audit import audit_session_result

    event = external_event(stage1, stage2, label_to_model, score_scale=score_scale)
    result, audit = await audit_session_result(event, store=store, write=write_records)
    return {
        "session_id": event.session_id,
        "council_config_hash": event.council_config_hash,
        "audit": result.model_dump(mode="json"),
        "records_written": audit.get("records_written", 0),
        "record_store": audit.get("record_store") if write_records else None,
        "record_store_error": audit.get("record_store_error"),
    }
