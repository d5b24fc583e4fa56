"""False-flag rate and power of the audit on the karpathy-shaped app (slow; ADR 0058's table).

Run: ``pytest -m slow tests/integrations/test_karpathy_adapter_rates.py -s`` (prints the
rows). 60 sessions per council through ``main.run_full_council`` with the adapter
installed (seed 1), then ``bias-report`` over them.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from integrations.karpathy_app.backend import council, main, openrouter
from llm_council.cli.app import main as cli_main
from llm_council.integrations.karpathy import install_bias_audit

N_SESSIONS = 60
BIASED = {"openai/gpt-5.1": "slot", "anthropic/claude-sonnet-4.5": "self"}
SELF_JUDGE = "anthropic/claude-sonnet-4.5"


def _run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, judges: dict[str, str], n_members: int
) -> dict[str, Any]:
    store = tmp_path / f"{n_members}-{len(judges)}.jsonl"
    monkeypatch.setenv("LLM_COUNCIL_BIAS_STORE", str(store))
    monkeypatch.setattr(openrouter, "JUDGES", dict(judges))
    members = [*council.COUNCIL_MODELS, *(f"extra/m{i}" for i in range(5))][:n_members]
    monkeypatch.setattr(council, "COUNCIL_MODELS", members)
    installation = install_bias_audit(main, seed=1)
    counts = {"position_tested": 0, "position_flag": 0, "self_tested": 0, "self_flag": 0}
    try:
        for index in range(N_SESSIONS):
            audit = asyncio.run(main.run_full_council(f"q1-{index}"))[3]["bias_audit"]
            counts["position_tested"] += "position" in audit["risk_tests_run"]
            counts["self_tested"] += "self_preference" in audit["risk_tests_run"]
            counts["position_flag"] += bool(audit.get("position_bias_detected"))
            counts["self_flag"] += bool(audit.get("self_preferring_reviewers"))
    finally:
        installation.uninstall()
    out = tmp_path / "report.json"
    with pytest.raises(SystemExit):
        cli_main(["bias-report", "--store", str(store), "--format", "json", "--out", str(out)])
    report = json.loads(out.read_text())
    rates = {key: value / N_SESSIONS for key, value in counts.items()}
    rates["pooled_position_flagged"] = report["position"]["council"]["flagged"]
    rates["pooled_position_p"] = report["position"]["council"]["test_p_value"]
    rates["pooled_self_detected"] = sorted(
        row["reviewer"] for row in report["self_preference"] if row["detected"]
    )
    print(f"\n{n_members} members, judges {judges or 'all fair'}: {rates}")
    return rates


@pytest.mark.slow
@pytest.mark.parametrize("n_members", [3, 4, 9])
def test_fair_judges_are_rarely_flagged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, n_members: int
) -> None:
    rates = _run(tmp_path, monkeypatch, {}, n_members)
    # a 5% test: 60 sessions give 3 flags on average; 9 (15%) would be far past chance
    assert rates["position_flag"] <= 0.15 and rates["self_flag"] <= 0.15
    assert rates["pooled_self_detected"] == []


@pytest.mark.slow
@pytest.mark.parametrize("n_members", [3, 4, 9])
def test_a_slot_judge_and_a_self_judge_are_found_across_sessions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, n_members: int
) -> None:
    rates = _run(tmp_path, monkeypatch, BIASED, n_members)
    assert rates["self_tested"] >= 0.9
    assert rates["pooled_position_flagged"] is True
    assert SELF_JUDGE in rates["pooled_self_detected"]
