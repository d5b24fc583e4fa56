"""``audit_external`` / ``audit_council``: an outside council's sessions audited and recorded."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bias_audit.plugin import karpathy_standin as backend
from llm_council.bias_audit import (
    BiasAuditResult,
    audit_council,
    audit_external,
    read_records,
    shuffled_display_order,
)
from llm_council.cli.app import main
from llm_council.errors import ConfigError, CouncilError, InputError

SWITCHES = ("LLM_COUNCIL_BIAS_AUDIT", "BIAS_AUDIT_ENABLED", "BIAS_PERSISTENCE_ENABLED")


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for variable in (*SWITCHES, "LLM_COUNCIL_QUERY_HASH", "LLM_COUNCIL_SIMILARITY"):
        monkeypatch.delenv(variable, raising=False)
    path = tmp_path / "records.jsonl"
    monkeypatch.setenv("LLM_COUNCIL_BIAS_STORE", str(path))
    return path


def _report_json(store: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_info:
        main(["bias-report", "--store", str(store), "--format", "json"])
    assert exit_info.value.code == 0
    report: dict[str, Any] = json.loads(capsys.readouterr().out)
    return report


def test_a_karpathy_style_app_changes_one_line_and_bias_report_reads_its_records(
    store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # --- the glue: at most 3 lines in the app ---
    from llm_council.bias_audit import audit_council

    run_full_council = audit_council(backend.run_full_council)
    # --- end of glue ---
    n_sessions = 12
    for index in range(n_sessions):
        stage1, stage2, stage3, metadata = asyncio.run(run_full_council(f"question {index}"))
        audit = metadata["bias_audit"]
        assert audit["records_written"] == 16  # 4 reviewers x 4 answers
        assert audit["record_store"] == str(store)
        assert metadata["label_to_model"]["Response A"] == backend.COUNCIL_MODELS[0]
        assert stage3["model"] == backend.CHAIRMAN_MODEL  # the app's own result, untouched
    records = list(read_records(store, strict=True))
    assert len(records) == 16 * n_sessions
    assert len({r.session_id for r in records}) == n_sessions
    # rank points on (1, N) and ranks, decided here: 1st of 4 gets 4 points and rank 1
    first = [r for r in records if r.rank == 1]
    assert len(first) == 4 * n_sessions
    assert {r.score_value for r in first} == {4.0} and {r.score_scale for r in first} == {(1, 4)}
    assert {r.score_value for r in records if r.rank == 4} == {1.0}
    assert {r.review_status for r in records} == {"final_ranking"}
    assert {r.council_config_hash for r in records} == {records[0].council_config_hash}
    assert records[0].council_config_hash.startswith("external:")
    # one fixed order: every answer in the same slot as its stage-1 index, for every reviewer
    slot = {model: index for index, model in enumerate(backend.COUNCIL_MODELS)}
    assert all(r.position == slot[r.model_id] for r in records)
    # the real CLI path reads them
    report = _report_json(store, capsys)
    assert report["n_sessions"] == n_sessions
    assert report["n_records"] == 16 * n_sessions


def test_the_wrapper_keeps_the_sync_functions_result_and_the_store_argument(
    store: Path, tmp_path: Path
) -> None:
    elsewhere = tmp_path / "other.jsonl"

    def sync_council(query: str) -> Any:
        return asyncio.run(backend.run_full_council(query))

    outcome = audit_council(store=elsewhere)(sync_council)("q")
    assert outcome[3]["bias_audit"]["records_written"] == 16
    assert outcome[3]["bias_audit"]["record_store"] == str(elsewhere)
    assert elsewhere.exists() and not store.exists()


def test_reference_shapes_scores_and_a_per_reviewer_map(store: Path) -> None:
    stage1 = [{"model": m, "response": "x " * (5 + i)} for i, m in enumerate("abc")]
    per_reviewer = {
        "a": {"Response A": {"model": "b", "display_index": 0}, "Response B": "c"},
        "b": {"Response A": "c", "Response B": "a"},
    }
    stage2 = [
        {"model": "a", "parsed_ranking": {"ranking": ["Response B"], "scores": {"Response A": 7}}},
        {"model": "b", "parsed_ranking": {"scores": {"Response A": 3, "Response B": 11}}},
        {"model": "c", "parsed_ranking": {"abstained": True}},
    ]
    label_to_model = {**per_reviewer, "c": {"Response A": "a"}}
    result = audit_external(stage1, stage2, label_to_model, session_id="s1", council_id="mine")
    assert isinstance(result, BiasAuditResult)
    records = {(r.reviewer_id, r.model_id): r for r in read_records(store, strict=True)}
    assert len(records) == 5 and {r.session_id for r in records.values()} == {"s1"}
    assert records["a", "b"].score_value == 7 and records["a", "b"].rank is None
    assert records["a", "c"].score_value is None and records["a", "c"].rank == 1
    assert records["b", "a"].score_value is None  # 11 is off the 1-10 scale: dropped
    assert records["c", "a"].review_status == "refused" and records["c", "a"].score_value is None
    assert {r.council_config_hash for r in records.values()} == {"mine"}


@pytest.mark.parametrize(
    ("environment", "written"),
    [
        ({"LLM_COUNCIL_BIAS_AUDIT": "false"}, None),
        ({"BIAS_AUDIT_ENABLED": "false"}, None),
        ({"LLM_COUNCIL_BIAS_AUDIT": "true", "BIAS_AUDIT_ENABLED": "false"}, 16),  # ours wins
        ({"BIAS_PERSISTENCE_ENABLED": "false"}, 0),
        ({}, 16),
    ],
)
def test_the_switches(
    store: Path, monkeypatch: pytest.MonkeyPatch, environment: dict[str, str], written: Any
) -> None:
    for variable, value in environment.items():
        monkeypatch.setenv(variable, value)
    stage1, stage2, _, metadata = asyncio.run(backend.run_full_council("q"))
    result = audit_external(stage1, stage2, metadata["label_to_model"])
    outcome = asyncio.run(audit_council(backend.run_full_council)("q"))
    audit = outcome[3]["bias_audit"]
    if written is None:
        assert result is None and audit["enabled"] is False and audit["records_written"] == 0
        assert audit["disabled_by"] in {f"{k}={v}" for k, v in environment.items()}
        assert not store.exists()
    else:
        assert isinstance(result, BiasAuditResult)
        assert audit["records_written"] == written
        assert store.exists() is bool(written)


def test_a_bad_switch_is_a_config_error_and_the_wrapper_keeps_the_answer(
    store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BIAS_AUDIT_ENABLED", "ture")
    stage1, stage2, _, metadata = asyncio.run(backend.run_full_council("q"))
    with pytest.raises(ConfigError, match="BIAS_AUDIT_ENABLED='ture'"):
        audit_external(stage1, stage2, metadata["label_to_model"])
    outcome = asyncio.run(audit_council(backend.run_full_council)("q"))
    assert outcome[2]["response"] and "ture" in outcome[3]["bias_audit"]["error"]


@pytest.mark.parametrize(
    ("stage1", "stage2", "label_to_model", "message"),
    [
        ("text", [], {}, "stage1 must be a list"),
        ([{"response": "x"}], [], {}, r"stage1\[0\]"),
        ([], [{"ranking": "x"}], {}, r"stage2\[0\]"),
        ([], [{"model": "r"}], {"r1": {"Response A": "a"}}, "no label map for reviewer 'r'"),
        ([], [{"model": "r"}], {"Response A": "a", "Response B": "a"}, "two labels"),
        ([], [], {}, "score_scale"),
    ],
)
def test_bad_shapes_are_one_line_input_errors(
    store: Path, stage1: Any, stage2: Any, label_to_model: Any, message: str
) -> None:
    scale = (5, 1) if message == "score_scale" else None
    with pytest.raises(InputError, match=message) as excinfo:
        audit_external(stage1, stage2, label_to_model, score_scale=scale)
    assert "\n" not in str(excinfo.value)
    assert not store.exists()


def test_called_synchronously_inside_a_running_loop(store: Path) -> None:
    async def handler() -> BiasAuditResult | None:
        stage1, stage2, _, metadata = await backend.run_full_council("q")
        return audit_external(stage1, stage2, metadata["label_to_model"])  # a sync call

    assert isinstance(asyncio.run(handler()), BiasAuditResult)
    assert len(list(read_records(store))) == 16


def test_the_shuffled_order_is_seeded_a_bijection_and_used_by_the_audit(store: Path) -> None:
    stage1 = [{"model": m, "response": m} for m in backend.COUNCIL_MODELS]
    order = shuffled_display_order(stage1, seed=7)
    assert order == shuffled_display_order(stage1, seed=7)
    assert list(order.label_to_model) == ["Response A", "Response B", "Response C", "Response D"]
    assert sorted(order.label_to_model.values()) == sorted(backend.COUNCIL_MODELS)
    assert [entry["model"] for entry in order.shown] == list(order.label_to_model.values())
    orders = {
        tuple(shuffled_display_order(stage1, seed=s).label_to_model.values()) for s in range(40)
    }
    assert len(orders) > 10  # the order varies between sessions
    assert shuffled_display_order(stage1).seed >= 0  # a fresh seed, returned to be saved
    with pytest.raises(InputError, match="appears twice"):
        shuffled_display_order([*stage1, stage1[0]])


def test_a_label_for_a_model_without_an_answer_and_a_twice_answering_model_are_refused(
    store: Path,
) -> None:
    stage1 = [{"model": "a", "response": "x"}, {"model": "b", "response": "y"}]
    stage2 = [{"model": "a", "parsed_ranking": ["Response A"]}]
    with pytest.raises(InputError, match=r"'Response B' = 'ghost', which has no stage-1 entry"):
        audit_external(stage1, stage2, {"Response A": "a", "Response B": "ghost"})
    with pytest.raises(InputError, match=r"stage1\[2\]: model 'a' answers twice"):
        audit_external([*stage1, stage1[0]], stage2, {"Response A": "a"})
    assert not store.exists()


def test_a_postgres_store_is_named_without_its_password(store_url: str) -> None:
    stage1, stage2, _, metadata = asyncio.run(backend.run_full_council("q"))
    outcome = asyncio.run(audit_council(store=store_url)(backend.run_full_council)("q"))
    audit = outcome[3]["bias_audit"]
    assert audit["records_written"] == 16
    assert store_url not in json.dumps(audit) and "***" in audit["record_store"]


@settings(max_examples=200, deadline=None)
@given(
    rankings=st.lists(
        st.lists(st.sampled_from(["Response A", "Response B", "Response C", "x", "response z"])),
        min_size=1,
        max_size=3,
    )
)
def test_rank_points_are_the_top_of_n_down_and_every_shown_answer_has_a_record(
    rankings: list[list[str]],
) -> None:
    """Whatever a ranking lists (junk, repeats, partial), the reviewer's records cover the 3
    answers it was shown; a ranking of distinct shown labels scores N, N-1, ...; one with a
    repeated or unknown label is unparseable (dropping it would move later labels up)."""
    from llm_council.bias_audit.plugin.external_session import external_event
    from llm_council.bias_audit.session.session_records import records_from_session

    stage1 = [{"model": m, "response": m} for m in ("a", "b", "c")]
    stage2 = [{"model": f"r{i}", "parsed_ranking": r} for i, r in enumerate(rankings)]
    event = external_event(
        stage1, stage2, {"Response A": "a", "Response B": "b", "Response C": "c"}
    )
    records = records_from_session(event, timestamp="2026-01-01T00:00:00+00:00", query_hash=None)
    assert len(records) == 3 * len(rankings)
    for index, ranking in enumerate(rankings):
        clean = (
            bool(ranking)
            and len(set(ranking)) == len(ranking)
            and all(label.startswith("Response") for label in ranking)
        )
        mine = [r for r in records if r.reviewer_id == f"r{index}"]
        scores = sorted((r.score_value for r in mine if r.score_value is not None), reverse=True)
        assert scores == ([3.0, 2.0, 1.0][: len(ranking)] if clean else [])
        assert {r.review_status for r in mine} == {"final_ranking" if clean else "unparseable"}


def test_a_council_without_a_label_map_gets_its_answer_and_the_reason(store: Path) -> None:
    async def council(query: str) -> Any:
        stage1, stage2, stage3, _ = await backend.run_full_council(query)
        return stage1, stage2, stage3, {}

    outcome = asyncio.run(audit_council(council)("q"))
    assert outcome[2]["response"]
    assert outcome[3]["bias_audit"]["records_written"] == 0
    assert "metadata has no 'label_to_model'" in outcome[3]["bias_audit"]["error"]
    with pytest.raises(CouncilError, match=r"must return \(stage1, stage2, stage3, metadata\)"):
        asyncio.run(audit_council(backend.stage1_collect_responses)("q"))


@pytest.mark.parametrize(
    "ranking",
    [
        ["Response A", "Response A", "Response C"],  # a label twice (small judges do this)
        ["Response Z", "Response B", "Response C"],  # a label nobody was shown
        [["Response A"], "Response B"],  # not a label at all
    ],
)
def test_a_ranking_with_a_repeated_or_unknown_label_is_unparseable_not_reordered(
    store: Path, ranking: list[object]
) -> None:
    from llm_council.bias_audit.plugin.external_session import external_review

    labels = {"Response A": "a/x", "Response B": "b/y", "Response C": "c/z"}
    review = external_review(
        0, {"model": "a/x", "ranking": "...", "parsed_ranking": ranking}, labels, (1.0, 10.0)
    )
    assert review.parse_status == "unparseable"
    assert review.candidates == () and review.ranking == ()
    truncated = external_review(
        0, {"model": "a/x", "parsed_ranking": ["Response B", "Response C"]}, labels, (1.0, 10.0)
    )
    assert truncated.parse_status == "final_ranking"
    assert [c.rank for c in truncated.candidates] == [None, 1, 2]
