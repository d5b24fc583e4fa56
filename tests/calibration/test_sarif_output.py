"""calibrate/probe --sarif: SARIF 2.1.0 that code scanning accepts.

No package on the index ships the OASIS schema file, so the log is checked twice: against
sarif-pydantic's 2.1.0 object model (MIT), and against the properties the specification
makes required (sections 3.13.2 version, 3.13.4 runs, 3.14.6 tool, 3.19.8 driver name,
3.27.11 message; GitHub code scanning also needs a location and a known ruleId), written
below as a JSON schema."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from llm_council.cli.app import _run, app

VOTES = Path(__file__).parents[1] / "data" / "prd_vicuna80" / "replay_votes_5_judges.jsonl"

REQUIRED = {
    "type": "object",
    "required": ["version", "runs"],
    "properties": {
        "version": {"const": "2.1.0"},
        "runs": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "required": ["tool", "results"],
                "properties": {
                    "tool": {
                        "type": "object",
                        "required": ["driver"],
                        "properties": {
                            "driver": {
                                "type": "object",
                                "required": ["name", "rules"],
                                "properties": {
                                    "rules": {
                                        "type": "array",
                                        "items": {"type": "object", "required": ["id"]},
                                    }
                                },
                            }
                        },
                    },
                    "results": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "required": ["ruleId", "level", "message", "locations"],
                            "properties": {
                                "level": {"enum": ["none", "note", "warning", "error"]},
                                "message": {"type": "object", "required": ["text"]},
                                "locations": {"type": "array", "minItems": 1},
                            },
                        },
                    },
                },
            },
        },
    },
}


def _validate(document: dict) -> None:
    sarif_pydantic = pytest.importorskip("sarif_pydantic")
    jsonschema.validate(document, REQUIRED)
    sarif_pydantic.Sarif.model_validate(document)
    run = document["runs"][0]
    rule_ids = {rule["id"] for rule in run["tool"]["driver"]["rules"]}
    assert {result["ruleId"] for result in run["results"]} <= rule_ids


def test_an_untrusted_judge_is_one_error_result(tmp_path, monkeypatch):
    monkeypatch.chdir(VOTES.parents[2])
    sarif = tmp_path / "gate.sarif"
    code = _run(
        ["calibrate", str(VOTES), "--judge", "bard", "--sarif", str(sarif)], "llm-council", app
    )
    document = json.loads(sarif.read_text())
    _validate(document)
    results = document["runs"][0]["results"]
    errors = [r for r in results if r["level"] == "error"]
    assert code == 3
    assert [r["ruleId"] for r in errors] == ["judge-untrusted"]
    assert "bard" in errors[0]["message"]["text"]
    # the location is the pairs file, relative to the working directory
    uri = errors[0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
    assert uri == "data/prd_vicuna80/replay_votes_5_judges.jsonl"
    # checklist advice is a warning, not an error
    assert any(r["level"] == "warning" and r["ruleId"].startswith("checklist/") for r in results)


def test_a_passing_judge_has_no_error_and_fail_under_names_its_metric(tmp_path):
    sarif = tmp_path / "gate.sarif"
    code = _run(
        ["calibrate", str(VOTES), "--judge", "gpt4", "--sarif", str(sarif)], "llm-council", app
    )
    document = json.loads(sarif.read_text())
    _validate(document)
    assert code == 0
    assert not [r for r in document["runs"][0]["results"] if r["level"] == "error"]
    code = _run(
        [
            "calibrate", str(VOTES), "--judge", "gpt4", "--fail-under", "order_kappa=0.99",
            "--sarif", str(sarif),
        ],
        "llm-council", app,
    )  # fmt: skip
    document = json.loads(sarif.read_text())
    _validate(document)
    assert code == 4
    assert [r["ruleId"] for r in document["runs"][0]["results"] if r["level"] == "error"] == [
        "fail-under/order_kappa"
    ]


def test_sarif_to_stdout_keeps_stdout_json(capsys):
    code = _run(["calibrate", str(VOTES), "--judge", "gpt4", "--sarif", "-"], "llm-council", app)
    captured = capsys.readouterr()
    assert code == 0
    _validate(json.loads(captured.out))
    assert "Judge calibration: gpt4" in captured.err
