"""The calibration gate and checklist as SARIF 2.1.0, for GitHub code scanning and other CI.

One run, tool ``llm-council``; one rule per gate rule (``too-few-judgments``,
``fail-under/<metric>``, ``judge-untrusted``) and per checklist item
(``checklist/<check>``). Every rule that fired for a judge is one result: level ``error``
for the gate's rules (they set the exit status), ``warning`` for a failed checklist item
(advice, no exit status). Each result points at the pairs file the run read (line 1),
since code scanning needs a location; the judge is in the message and in
``properties.judge``.

Reference: OASIS Static Analysis Results Interchange Format (SARIF) Version 2.1.0 (2020),
sections 3.13 (sarifLog), 3.14 (run), 3.19 (toolComponent), 3.27 (result), 3.49
(reportingDescriptor).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from importlib import metadata
from typing import Any

from llm_council.calibration.gate import METRICS, GateDecision
from llm_council.infra.install_hints import DISTRIBUTION_NAME

SARIF_VERSION = "2.1.0"
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
INFORMATION_URI = "https://github.com/karpathy/llm-council"

_GATE_RULES: dict[str, str] = {
    "too-few-judgments": "too few pairs were judged in both orders for the report to mean anything",
    "judge-untrusted": "the judge's agreement with human labels is below the threshold and"
    " below the humans' own agreement",
}


def _rule_id_for_check(check: str) -> str:
    return "checklist/" + re.sub(r"[^a-z0-9]+", "-", check.lower()).strip("-")


def _tool_version() -> str:
    try:
        return metadata.version(DISTRIBUTION_NAME)
    except metadata.PackageNotFoundError:
        return "0"


def _result(
    rule_id: str, level: str, text: str, artifact: str, judge: Any | None
) -> dict[str, Any]:
    return {
        "ruleId": rule_id,
        "level": level,
        "message": {"text": text},
        "locations": [
            {
                "physicalLocation": {
                    "artifactLocation": {"uri": artifact},
                    "region": {"startLine": 1},
                }
            }
        ],
        "properties": {} if judge is None else {"judge": str(judge)},
    }


def calibration_sarif(
    reports: Sequence[Mapping[str, Any]], decision: GateDecision, artifact: str
) -> dict[str, Any]:
    """The SARIF log of one ``calibrate`` or ``probe`` run (module docstring).

    ``artifact``: the pairs file as a relative URI (code scanning resolves it in the repo).
    """
    rules: dict[str, str] = {}
    results: list[dict[str, Any]] = []
    for reason in decision.too_few_judgments:
        rules["too-few-judgments"] = _GATE_RULES["too-few-judgments"]
        results.append(_result("too-few-judgments", "error", reason, artifact, None))
    for failure in decision.failures:
        rule_id = f"fail-under/{failure['metric']}"
        rules[rule_id] = f"{METRICS[failure['metric']][0]} below its --fail-under floor"
        results.append(_result(rule_id, "error", failure["message"], artifact, failure["judge"]))
    for name in decision.untrusted:
        rules["judge-untrusted"] = _GATE_RULES["judge-untrusted"]
        results.append(
            _result(
                "judge-untrusted",
                "error",
                f"human agreement below threshold for {name}: do not trust until recalibrated",
                artifact,
                None,
            )
        )
    for report in reports:
        for item in report.get("checklist", []):
            if not item.get("failed"):
                continue
            rule_id = _rule_id_for_check(item["check"])
            rules[rule_id] = f"{item['check']} ({item['threshold']})"
            text = f"{report['judge']}: {item['check']} {item['value']!r}: {item['advice']}"
            results.append(_result(rule_id, "warning", text, artifact, report["judge"]))
    driver = {
        "name": "llm-council",
        "version": _tool_version(),
        "informationUri": INFORMATION_URI,
        "rules": [
            {"id": rule_id, "shortDescription": {"text": text}}
            for rule_id, text in sorted(rules.items())
        ],
    }
    return {
        "$schema": SARIF_SCHEMA,
        "version": SARIF_VERSION,
        "runs": [{"tool": {"driver": driver}, "results": results}],
    }
