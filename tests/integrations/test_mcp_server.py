"""``llm-council mcp`` driven by the MCP SDK's own client over stdio (offline: simulated council)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

mcp = pytest.importorskip("mcp", reason="the mcp extra (pip install -e '.[mcp]')")

from mcp import Client, StdioServerParameters  # noqa: E402

from llm_council.bias_audit import read_records  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
PAIRS = REPO / "tests" / "data" / "prd_vicuna80" / "replay_gpt4_claude_q1-8.jsonl"
TOOLS = {"consult_council", "bias_report", "calibrate_judge", "audit_session"}


def _server(store: Path) -> StdioServerParameters:
    # only these variables reach the server (the SDK passes HOME/PATH/...): no API key, so
    # the default council is the offline simulated one
    return StdioServerParameters(
        command=sys.executable,
        args=["-c", "from llm_council.cli.app import main; main()", "mcp"],
        env={
            "PYTHONPATH": str(REPO / "src"),
            "LLM_COUNCIL_BIAS_STORE": str(store),
            "LLM_COUNCIL_CONFIG": str(REPO / "config" / "council.toml"),
        },
        cwd=str(store.parent),
    )


async def _call(client: Any, name: str, **arguments: Any) -> Any:
    result = await client.call_tool(name, arguments)
    assert not result.is_error, result.content
    if result.structured_content is not None:
        return result.structured_content.get("result", result.structured_content)
    return json.loads(result.content[0].text)


def _cli_gate_verdict(tmp_path: Path) -> str:
    """What `llm-council calibrate PAIRS --output FILE` decides for the same file."""
    from llm_council.cli.app import main

    output = tmp_path / "calibration.json"
    with pytest.raises(SystemExit):
        main(["calibrate", str(PAIRS), "--output", str(output)])
    verdict: str = json.loads(output.read_text())["gate"]["verdict"]
    return verdict


def test_the_four_tools_over_stdio(tmp_path: Path) -> None:
    store = tmp_path / "records.jsonl"

    async def session() -> dict[str, Any]:
        out: dict[str, Any] = {}
        async with Client(_server(store), raise_exceptions=False) as client:
            listed = await client.list_tools()
            out["tools"] = {tool.name for tool in listed.tools}
            out["consult"] = [
                await _call(client, "consult_council", question=f"Why {n}?", seed=n)
                for n in range(3)
            ]
            out["report"] = await _call(client, "bias_report", store=str(store))
            out["calibrate"] = await _call(client, "calibrate_judge", pairs_path=str(PAIRS))
            out["audit"] = await _call(
                client,
                "audit_session",
                stage1=[{"model": m, "response": "x " * (3 + i)} for i, m in enumerate("abc")],
                stage2=[
                    {"model": m, "parsed_ranking": ["Response A", "Response B", "Response C"]}
                    for m in "abc"
                ],
                label_to_model={"Response A": "a", "Response B": "b", "Response C": "c"},
            )
            bad = await client.call_tool("calibrate_judge", {"pairs_path": str(tmp_path / "no")})
            out["bad"] = (bad.is_error, bad.content[0].text)
        return out

    out = anyio.run(session)
    assert out["tools"] >= TOOLS
    first = out["consult"][0]
    assert first["synthesis"]["text"] and first["ranking"]
    audit = first["bias_audit"]
    assert audit["records_written"] > 0 and audit["record_store"] == str(store)
    assert audit["overall_bias_risk"] in {"not_tested", "low", "medium", "high"}
    written = list(read_records(store, strict=True))
    assert len({r.session_id for r in written}) == 3
    assert sum(c["bias_audit"]["records_written"] for c in out["consult"]) == len(written)
    assert out["report"]["n_sessions"] == 3 and out["report"]["n_records"] == len(written)
    calibration = out["calibrate"]
    # the same replay as `llm-council calibrate PAIRS` (80 pairs, two recorded judges)
    assert calibration["mode"] == "replay"
    assert {r["judge"] for r in calibration["reports"]} == {"claude", "gpt4"}
    assert {r["pairs_evaluated"] for r in calibration["reports"]} == {80}
    assert calibration["gate"]["verdict"] == _cli_gate_verdict(tmp_path)
    assert out["audit"]["records_written"] == 0 and out["audit"]["record_store"] is None
    assert out["audit"]["audit"]["overall_bias_risk"] in {"not_tested", "low", "medium", "high"}
    is_error, message = out["bad"]
    assert is_error and "does not exist" in message and "\n" not in message.strip()
