"""``install_bias_audit``: a karpathy-shaped FastAPI app audited on both endpoints, end to end.

The app under test (``karpathy_app/backend``) is written here with the real app's module
shapes and function names; its judges are offline fakes with known biases
(``openrouter.JUDGES``: gpt-5.1 ranks in the order shown, claude-sonnet-4.5 puts its own
answer first, the others rank by a hidden quality).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from integrations.karpathy_app.backend import council, main, openrouter, storage
from llm_council.bias_audit import read_records
from llm_council.cli.app import main as cli_main
from llm_council.errors import ConfigError
from llm_council.integrations.karpathy import Installation, install_bias_audit
from llm_council.integrations.karpathy_stage2 import relabel_text

MODELS = council.COUNCIL_MODELS
SLOT_JUDGE, SELF_JUDGE = "openai/gpt-5.1", "anthropic/claude-sonnet-4.5"
SWITCHES = ("LLM_COUNCIL_BIAS_AUDIT", "BIAS_AUDIT_ENABLED", "BIAS_PERSISTENCE_ENABLED")


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for variable in (*SWITCHES, "LLM_COUNCIL_QUERY_HASH", "LLM_COUNCIL_SIMILARITY"):
        monkeypatch.delenv(variable, raising=False)
    path = tmp_path / "records.jsonl"
    monkeypatch.setenv("LLM_COUNCIL_BIAS_STORE", str(path))
    monkeypatch.setattr(storage, "DATA_DIR", str(tmp_path / "conversations"))
    openrouter.FAILING.clear()
    openrouter.CALLS.clear()
    return path


@pytest.fixture
def installed(store: Path) -> Iterator[Installation]:
    installation = install_bias_audit(main.__name__, seed=20261127)
    yield installation
    installation.uninstall()


@pytest.fixture
def client(installed: Installation) -> TestClient:
    return TestClient(main.app)


def _conversation(client: TestClient) -> str:
    conversation_id: str = client.post("/api/conversations").json()["id"]
    return conversation_id


def _stream_events(client: TestClient, conversation_id: str, text: str) -> list[dict[str, Any]]:
    response = client.post(
        f"/api/conversations/{conversation_id}/message/stream", json={"content": text}
    )
    assert response.status_code == 200
    return [
        json.loads(line.removeprefix("data: "))
        for line in response.text.splitlines()
        if line.startswith("data: ")
    ]


def _saved_audits(client: TestClient, conversation_id: str) -> list[dict[str, Any]]:
    conversation = client.get(f"/api/conversations/{conversation_id}").json()
    return [m["bias_audit"] for m in conversation["messages"] if m["role"] == "assistant"]


def test_both_endpoints_write_records_and_the_conversation_keeps_the_audit(
    client: TestClient, store: Path
) -> None:
    conversation_id = _conversation(client)
    blocking = client.post(
        f"/api/conversations/{conversation_id}/message", json={"content": "why blue?"}
    ).json()
    assert blocking["metadata"]["bias_audit"]["records_written"] == 16  # 4 reviewers x 4
    events = _stream_events(client, conversation_id, "why red?")
    assert [event["type"] for event in events][-1] == "complete"
    saved = _saved_audits(client, conversation_id)
    assert [audit["records_written"] for audit in saved] == [16, 16]
    assert saved[0]["session_id"] == blocking["metadata"]["bias_audit"]["session_id"]
    records = list(read_records(store, strict=True))
    assert len(records) == 32
    assert {r.session_id for r in records} == {audit["session_id"] for audit in saved}


def test_each_session_tests_position_and_self_preference(client: TestClient) -> None:
    conversation_id = _conversation(client)
    for index in range(3):
        _stream_events(client, conversation_id, f"question {index}")
        client.post(
            f"/api/conversations/{conversation_id}/message", json={"content": f"other {index}"}
        )
    for audit in _saved_audits(client, conversation_id):
        # rank points cannot show leniency (they sum to a constant); the other two run
        assert audit["overall_bias_risk"] != "not_tested"
        assert "self_preference" in audit["risk_tests_run"]
        assert audit["self_preference"][SELF_JUDGE] > 0  # its own answer always first
        assert all(audit["self_preference"][m] is not None for m in MODELS)


def test_each_reviewer_saw_its_own_seeded_order_and_the_records_say_which(
    client: TestClient, store: Path
) -> None:
    conversation_id = _conversation(client)
    _stream_events(client, conversation_id, "one")
    (audit,) = _saved_audits(client, conversation_id)
    orders = audit["display_orders"]
    assert set(orders) == set(MODELS) and all(sorted(o) == sorted(MODELS) for o in orders.values())
    assert len({tuple(o) for o in orders.values()}) > 1  # not one shared order
    assert isinstance(audit["display_order_seed"], int)
    for record in read_records(store, strict=True):
        assert record.position == orders[record.reviewer_id].index(record.model_id)
    # the slot judge ranks in the order it was shown: its rank 1 is its slot 0
    firsts = {
        r.model_id for r in read_records(store) if r.reviewer_id == SLOT_JUDGE and r.rank == 1
    }
    assert firsts == {orders[SLOT_JUDGE][0]}


def test_the_app_reads_one_consistent_label_map_and_makes_no_extra_calls(
    client: TestClient,
) -> None:
    conversation_id = _conversation(client)
    events = _stream_events(client, conversation_id, "consistent?")
    stage2 = next(e for e in events if e["type"] == "stage2_complete")
    label_to_model = stage2["metadata"]["label_to_model"]
    stage1 = next(e for e in events if e["type"] == "stage1_complete")["data"]
    # the app's usual labels: label i is stage-1 entry i
    assert label_to_model == {f"Response {chr(65 + i)}": e["model"] for i, e in enumerate(stage1)}
    (audit,) = _saved_audits(client, conversation_id)
    slot_review = next(e for e in stage2["data"] if e["model"] == SLOT_JUDGE)
    # relabelled: the slot judge's ranking, read through the app's map, is its display order
    assert [label_to_model[label] for label in slot_review["parsed_ranking"]] == audit[
        "display_orders"
    ][SLOT_JUDGE]
    # the reply text names the same labels as parsed_ranking, in the same order
    assert council.parse_ranking_from_text(slot_review["ranking"]) == slot_review["parsed_ranking"]
    aggregate = stage2["metadata"]["aggregate_rankings"]
    assert sum(row["rankings_count"] for row in aggregate) == 16
    ranking_calls = [call for call in openrouter.CALLS if call[1].startswith("Question:")]
    assert len(ranking_calls) == 4 and {m for m, _ in ranking_calls} == set(MODELS)


def test_concurrent_sessions_each_ask_every_reviewer_once(installed: Installation) -> None:
    async def two() -> list[Any]:
        return await asyncio.gather(main.run_full_council("first"), main.run_full_council("second"))

    outcomes = asyncio.run(two())
    assert [o[3]["bias_audit"]["records_written"] for o in outcomes] == [16, 16]
    ranking_calls = [m for m, prompt in openrouter.CALLS if prompt.startswith("Question:")]
    assert sorted(ranking_calls) == sorted(MODELS * 2)


def test_a_failing_reviewer_is_recorded_missing_and_the_answer_still_goes_out(
    client: TestClient, store: Path
) -> None:
    conversation_id = _conversation(client)
    _stream_events(client, conversation_id, "warm up")  # stage 1 from all four
    openrouter.FAILING.add("x-ai/grok-4")
    reply = client.post(
        f"/api/conversations/{conversation_id}/message", json={"content": "grok is down"}
    ).json()
    assert reply["stage3"]["response"]
    audit = reply["metadata"]["bias_audit"]
    # 3 answers (grok gave none) x 4 reviewers: grok's 3 are recorded as missing, not dropped
    assert audit["records_written"] == 12
    session = [r for r in read_records(store) if r.session_id == audit["session_id"]]
    assert {r.review_status for r in session if r.reviewer_id == "x-ai/grok-4"} == {"missing"}
    assert {r.review_status for r in session if r.reviewer_id != "x-ai/grok-4"} == {"final_ranking"}


@pytest.mark.parametrize("n_members", [3, 5, 9])
def test_councils_of_three_to_nine_members(
    installed: Installation, store: Path, monkeypatch: pytest.MonkeyPatch, n_members: int
) -> None:
    members = [*MODELS, *(f"extra/m{i}" for i in range(5))][:n_members]
    monkeypatch.setattr(council, "COUNCIL_MODELS", members)
    outcome = asyncio.run(main.run_full_council("sized"))
    audit = outcome[3]["bias_audit"]
    assert audit["records_written"] == n_members**2
    assert sorted(audit["display_orders"]) == sorted(members)
    assert "self_preference" in audit["risk_tests_run"]
    if n_members >= 4:  # at 3 the slots are not identified without self cells (ADR 0047)
        assert "position" in audit["risk_tests_run"]
    records = list(read_records(store, strict=True))
    assert {r.position for r in records} == set(range(n_members))


def test_a_degenerate_and_a_garbled_judge(
    installed: Installation, store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # gpt-5.1 ranks in the order shown (always "A" first); grok gives no ranking at all
    monkeypatch.setitem(openrouter.JUDGES, "x-ai/grok-4", "garbled")
    outcome = asyncio.run(main.run_full_council("degenerate"))
    audit = outcome[3]["bias_audit"]
    session = [r for r in read_records(store) if r.session_id == audit["session_id"]]
    assert {r.review_status for r in session if r.reviewer_id == "x-ai/grok-4"} == {"unparseable"}
    assert all(r.score_value is None for r in session if r.reviewer_id == "x-ai/grok-4")
    slot_judge = sorted((r.position, r.rank) for r in session if r.reviewer_id == SLOT_JUDGE)
    assert slot_judge == [(0, 1), (1, 2), (2, 3), (3, 4)]
    assert audit["overall_bias_risk"] != "not_tested"


def test_a_stage_one_that_cannot_be_shuffled_keeps_the_apps_order_and_says_why(
    installed: Installation, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a council listing one model twice: the app answers; the audit reports, never breaks it
    monkeypatch.setattr(council, "COUNCIL_MODELS", [*MODELS, MODELS[0]])

    async def twice(user_query: str) -> list[dict[str, Any]]:
        return [
            {"model": m, "response": f"[[author:{m}]] quality=50"} for m in [*MODELS, MODELS[0]]
        ]

    monkeypatch.setattr(council, "stage1_collect_responses", twice)
    stage1, stage2, stage3, metadata = asyncio.run(main.run_full_council("twice"))
    assert stage3["response"] and len(stage2) == 4  # the app asks each distinct model once
    audit = metadata["bias_audit"]
    assert "appears twice" in audit["display_order_error"]
    assert audit["display_order_seed"] is None
    assert "error" in audit and audit["records_written"] == 0


def test_hostile_reply_text_is_relabelled_only_where_it_names_a_shown_label() -> None:
    swap = {"Response A": "Response B", "Response B": "Response A"}
    text = "Response A\x1b[31m > Response Z; ResponseA; Response A's; \u202eResponse B"
    assert relabel_text(text, swap) == (
        "Response B\x1b[31m > Response Z; ResponseA; Response B's; \u202eResponse A"
    )


def test_without_shuffle_the_fixed_order_leaves_position_untested(store: Path) -> None:
    installation = install_bias_audit(main, shuffle=False)
    try:
        outcome = asyncio.run(main.run_full_council("fixed"))
    finally:
        installation.uninstall()
    audit = outcome[3]["bias_audit"]
    assert audit["records_written"] == 16 and audit["display_order_seed"] is None
    assert "position" not in audit["risk_tests_run"]
    slot = {model: index for index, model in enumerate(MODELS)}
    assert all(r.position == slot[r.model_id] for r in read_records(store))


def test_switched_off_the_app_runs_and_nothing_is_written(
    client: TestClient, store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LLM_COUNCIL_BIAS_AUDIT", "false")
    conversation_id = _conversation(client)
    events = _stream_events(client, conversation_id, "off")
    assert events[-1]["type"] == "complete"
    (audit,) = _saved_audits(client, conversation_id)
    assert audit["enabled"] is False and audit["records_written"] == 0
    assert not store.exists()


def test_a_store_that_cannot_be_written_is_reported_not_raised(
    client: TestClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("LLM_COUNCIL_BIAS_STORE", str(blocker / "records.jsonl"))
    conversation_id = _conversation(client)
    reply = client.post(f"/api/conversations/{conversation_id}/message", json={"content": "q"})
    assert reply.status_code == 200
    audit = reply.json()["metadata"]["bias_audit"]
    assert audit["records_written"] == 0
    assert "record_store_error" in audit or "error" in audit


def test_install_is_idempotent_reversible_and_refuses_other_apps(store: Path) -> None:
    original = main.stage2_collect_rankings
    first = install_bias_audit(main.__name__)
    second = install_bias_audit(main)
    assert second.replaced == []  # already installed: nothing replaced twice
    assert council.stage2_collect_rankings is main.stage2_collect_rankings is not original
    first.uninstall()
    assert main.stage2_collect_rankings is original
    assert council.stage2_collect_rankings is original
    with pytest.raises(ConfigError, match="no imported module named 'no.such.app'"):
        install_bias_audit("no.such.app")
    with pytest.raises(ConfigError, match="'stage2_collect_rankings'"):
        install_bias_audit(json)


def test_an_earlier_audit_council_wrap_is_replaced_not_doubled(
    store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from llm_council.bias_audit import audit_council

    wrapped = audit_council(council.run_full_council)
    monkeypatch.setattr(main, "run_full_council", wrapped)
    installation = install_bias_audit(main)
    try:
        outcome = asyncio.run(main.run_full_council("once"))
    finally:
        installation.uninstall()
    assert outcome[3]["bias_audit"]["records_written"] == 16
    assert len(list(read_records(store))) == 16  # one audit, not two
    assert main.run_full_council is wrapped  # restored as it was


def test_relabelling_maps_every_label_at_once() -> None:
    swap = {"Response A": "Response C", "Response C": "Response A"}
    text = "Response A beats Response C; Response B ties. Responses AB stay."
    assert (
        relabel_text(text, swap)
        == "Response C beats Response A; Response B ties. Responses AB stay."
    )


def test_bias_report_reads_the_apps_sessions_and_finds_the_slot_judge_across_them(
    client: TestClient, store: Path, tmp_path: Path
) -> None:
    conversation_id = _conversation(client)
    for index in range(30):
        _stream_events(client, conversation_id, f"pooled {index}")
    out = tmp_path / "report.json"
    with pytest.raises(SystemExit) as exit_info:
        cli_main(["bias-report", "--store", str(store), "--format", "json", "--out", str(out)])
    assert exit_info.value.code == 0
    report = json.loads(out.read_text())
    assert report["n_sessions"] == 30
    council_position = report["position"]["council"]
    assert council_position["identified"] is True and council_position["flagged"] is True
    assert council_position["direction"] == "primacy"  # the slot judge favours slot 0
    self_judge = next(r for r in report["self_preference"] if r["reviewer"] == SELF_JUDGE)
    assert self_judge["detected"] is True and self_judge["confounded_with_slot"] is False
