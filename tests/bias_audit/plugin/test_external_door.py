"""Issue 37 A.6-A.8, C.3: what ``audit_external`` / ``audit_council`` refuse at the door,
what they now read, and that a crashing audit never costs the council its answer."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
import structlog

from bias_audit.plugin import karpathy_standin as backend
from llm_council.bias_audit import audit_council, audit_external, read_records
from llm_council.bias_audit.plugin import external_session
from llm_council.bias_audit.records.schema import ReviewRecord
from llm_council.errors import InputError

MEMBERS = ["m1", "m2", "m3", "m4"]
LABELS = {f"Response {letter}": model for letter, model in zip("ABCD", MEMBERS, strict=True)}
SWITCHES = ("LLM_COUNCIL_BIAS_AUDIT", "BIAS_AUDIT_ENABLED", "BIAS_PERSISTENCE_ENABLED")


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for variable in (*SWITCHES, "LLM_COUNCIL_QUERY_HASH", "LLM_COUNCIL_SIMILARITY"):
        monkeypatch.delenv(variable, raising=False)
    path = tmp_path / "records.jsonl"
    monkeypatch.setenv("LLM_COUNCIL_BIAS_STORE", str(path))
    return path


def _stage1(members: list[str] = MEMBERS) -> list[dict[str, str]]:
    return [{"model": m, "response": f"answer of {m} " * (i + 1)} for i, m in enumerate(members)]


def _stage2(parsed: Any, reviewers: list[str] = MEMBERS) -> list[dict[str, Any]]:
    return [{"model": r, "ranking": "", "parsed_ranking": parsed} for r in reviewers]


RANKED = ["Response A", "Response B", "Response C", "Response D"]


def _one_line(error: pytest.ExceptionInfo[InputError]) -> str:
    text = str(error.value)
    assert "\n" not in text
    return text


def test_a_scale_beyond_the_reports_bound_is_refused_and_nothing_is_written(store: Path) -> None:
    from llm_council.bias_audit.report.load.raw_records import MAX_ABS_SCORE

    assert external_session.MAX_SCALE_MAGNITUDE == MAX_ABS_SCORE  # one bound, two places
    stage2 = _stage2({"scores": {"Response A": 1e300, "Response B": -1e300}})
    with pytest.raises(InputError, match=r"score_scale must lie within \+/-1e\+06") as raised:
        audit_external(_stage1(), stage2, LABELS, score_scale=(-1e308, 1e308))
    _one_line(raised)
    assert not store.exists()
    # the bound itself is accepted
    assert audit_external(_stage1(), stage2, LABELS, score_scale=(-1e6, 1e6)) is not None


def test_a_reviewer_listed_twice_is_refused(store: Path) -> None:
    with pytest.raises(InputError, match=r"stage2\[4\]: reviewer 'm1' reviews twice") as raised:
        audit_external(_stage1(), _stage2(RANKED, [*MEMBERS, "m1"]), LABELS)
    _one_line(raised)
    assert not store.exists()


@pytest.mark.parametrize(
    "parsed",
    [[["Response A"]], {"ranking": [["Response A"]], "scores": {"Response A": 3}}, [1, 2]],
)
def test_a_nested_or_non_text_ranking_is_unparseable_not_a_traceback(
    store: Path, parsed: Any
) -> None:
    audit_external(_stage1(), _stage2(parsed), LABELS, session_id="nested")
    records = list(read_records(store, strict=True))
    assert len(records) == 16 and {r.review_status for r in records} == {"unparseable"}
    assert {r.score_value for r in records} == {None}


@pytest.mark.parametrize("shift", [1, 10**9, 10**30])
def test_a_display_index_outside_the_shown_slots_is_refused_on_write(
    store: Path, shift: int
) -> None:
    labels = {
        label: {"model": model, "display_index": index + shift}
        for index, (label, model) in enumerate(LABELS.items())
    }
    with pytest.raises(InputError, match=r"display_index must be in 0\.\.3") as raised:
        audit_external(_stage1(), _stage2(RANKED), labels)
    _one_line(raised)
    assert not store.exists()


def test_the_record_model_refuses_a_position_past_the_shown_answers() -> None:
    fields = {
        "session_id": "s",
        "timestamp": "2026-01-01T00:00:00+00:00",
        "reviewer_id": "r",
        "model_id": "m",
        "n_candidates": 4,
        "response_length_chars": 1,
        "response_length_words": 1,
        "score_value": None,
        "is_self_review": False,
        "council_config_hash": "c",
    }
    assert ReviewRecord(**fields, position=3).position == 3
    with pytest.raises(ValueError, match="position 4 is not a slot of the 4 answers shown"):
        ReviewRecord(**fields, position=4)


@pytest.mark.parametrize("bad", [123, "", " ", "x" * 257, ["s"]])
def test_a_session_id_that_is_not_short_text_is_one_line(store: Path, bad: Any) -> None:
    with pytest.raises(InputError, match="session_id must be a non-empty text") as raised:
        audit_external(_stage1(), _stage2(RANKED), LABELS, session_id=bad)
    _one_line(raised)


def test_a_session_id_with_a_lone_surrogate_is_one_line_and_nothing_is_written(
    store: Path,
) -> None:
    """Before: accepted here, then the record writer failed on it (``surrogates not
    allowed``, naming no field)."""
    with pytest.raises(InputError, match="^session_id holds a lone UTF-16 surrogate") as raised:
        audit_external(_stage1(), _stage2(RANKED), LABELS, session_id="web-\ud800-1")
    _one_line(raised)
    assert not store.exists() or store.read_bytes() == b""


def test_a_reused_session_id_is_refused_and_the_first_session_stays_usable(
    store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from llm_council.cli.app import main

    audit_external(_stage1(), _stage2(RANKED), LABELS, session_id="same")
    for _ in range(2):
        with pytest.raises(InputError, match="session_id 'same' is already in the record store"):
            audit_external(_stage1(), _stage2(RANKED), LABELS, session_id="same")
    audit_external(_stage1(), _stage2(RANKED), LABELS, session_id="other")
    # a line written by another process since the last scan is seen too
    with store.open("a", encoding="utf-8") as handle:
        record = json.loads(store.read_text(encoding="utf-8").splitlines()[0])
        handle.write(json.dumps({**record, "session_id": "from \u00e9lsewhere\n"}) + "\n")
    with pytest.raises(InputError, match="already in the record store"):
        audit_external(_stage1(), _stage2(RANKED), LABELS, session_id="from \u00e9lsewhere\n")
    lines = [json.loads(line) for line in store.read_text(encoding="utf-8").splitlines()]
    assert sum(1 for line in lines if line["session_id"] == "same") == 16
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_info:
        main(["bias-report", "--store", str(store), "--format", "json"])
    assert exit_info.value.code == 0
    assert json.loads(capsys.readouterr().out)["n_sessions"] >= 2  # "same" and "other"


def test_a_reused_id_is_fine_when_nothing_is_written(
    store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    audit_external(_stage1(), _stage2(RANKED), LABELS, session_id="same")
    monkeypatch.setenv("BIAS_PERSISTENCE_ENABLED", "false")
    assert audit_external(_stage1(), _stage2(RANKED), LABELS, session_id="same") is not None


def test_more_members_than_a_council_may_have_are_refused(store: Path) -> None:
    from llm_council.config import MAX_COUNCIL_MEMBERS

    members = [f"m{i}" for i in range(MAX_COUNCIL_MEMBERS + 1)]
    with pytest.raises(InputError, match=f"at most {MAX_COUNCIL_MEMBERS} members") as raised:
        audit_external(_stage1(members), [], {})
    _one_line(raised)
    judges = [f"judge{i}" for i in range(MAX_COUNCIL_MEMBERS + 1)]  # reviewers who never answered
    with pytest.raises(InputError, match=f"at most {MAX_COUNCIL_MEMBERS} reviewers") as raised:
        audit_external(_stage1(), _stage2(RANKED, judges), LABELS)
    _one_line(raised)


def test_bare_letters_are_read_as_the_labels_they_name(store: Path) -> None:
    # issue 37 C.3: ["A", "B", "C"] against "Response A" keys was every review unparseable
    audit_external(_stage1(), _stage2(["A", "b", "C", "D"]), LABELS, session_id="letters")
    audit_external(
        _stage1(), _stage2({"scores": {"A": 9, "d": 2}}), LABELS, session_id="letter-scores"
    )
    records = list(read_records(store, strict=True))
    letters = [r for r in records if r.session_id == "letters"]
    assert {r.review_status for r in letters} == {"final_ranking"}
    assert {r.model_id: r.score_value for r in letters if r.reviewer_id == "m2"} == {
        "m1": 4.0,
        "m2": 3.0,
        "m3": 2.0,
        "m4": 1.0,
    }
    scored = {r.model_id: r.score_value for r in records if r.session_id == "letter-scores"}
    assert scored["m1"] == 9 and scored["m4"] == 2 and scored["m2"] is None


def test_a_bare_letter_is_not_read_when_the_labels_are_letters_themselves(store: Path) -> None:
    labels = {"A": {"model": "m1", "display_index": 1}, "Response A": "m2"}
    event = external_session.external_event(
        _stage1(["m1", "m2"]), _stage2(["A", "Response A"], ["m1"]), labels
    )
    (review,) = event.reviews
    assert review.ranking == ("m1", "m2")  # "A" is the label "A", not "Response A"


def test_a_session_with_no_readable_review_is_warned_about(store: Path) -> None:
    with structlog.testing.capture_logs() as logs:
        audit_external(_stage1(), _stage2(["first", "second"]), LABELS, session_id="junk")
    warnings = [e for e in logs if e["event"] == "bias_audit_no_review_read"]
    assert len(warnings) == 1 and "4 reviews: unparseable" in warnings[0]["reason"]

    async def council(query: str) -> Any:
        stage1, stage2, stage3, metadata = await backend.run_full_council(query)
        for review in stage2:
            review["parsed_ranking"] = ["1st", "2nd"]
        return stage1, stage2, stage3, metadata

    outcome = asyncio.run(audit_council(council)("q"))
    assert "no review of this session could be read" in outcome[3]["bias_audit"]["warning"]
    assert outcome[3]["bias_audit"]["records_written"] == 16


class _BrokenLabelMap(dict[str, str]):
    """An app's label map whose reading fails with a plain exception (a bug in the app or
    in the audit alike): what the wrapper must survive."""

    def values(self) -> Any:
        raise ZeroDivisionError("a bug deep in the audit")


def test_an_audit_that_crashes_still_returns_the_councils_answer(store: Path) -> None:
    async def council(query: str) -> Any:
        stage1, stage2, stage3, metadata = await backend.run_full_council(query)
        metadata["label_to_model"] = _BrokenLabelMap(metadata["label_to_model"])
        return stage1, stage2, stage3, metadata

    with structlog.testing.capture_logs() as logs:
        outcome = asyncio.run(audit_council(council)("q"))
    assert outcome[2]["model"] == backend.CHAIRMAN_MODEL and outcome[2]["response"]
    assert outcome[3]["bias_audit"] == {
        "records_written": 0,
        "error": "the audit failed (ZeroDivisionError); the log has the traceback",
    }
    assert [e["event"] for e in logs if e["log_level"] == "error"] == ["bias_audit_crashed"]
    assert not store.exists()


@pytest.mark.parametrize("kind", ["directory", "fifo"])
def test_a_store_that_is_not_a_file_is_refused_before_anything_reads_it(
    store: Path, kind: str, tmp_path: Path
) -> None:
    """A FIFO named as the store hung the session's history read."""
    import os

    from llm_council.errors import RecordError

    bad = tmp_path / "bad-store"
    bad.mkdir() if kind == "directory" else os.mkfifo(bad)
    with pytest.raises(RecordError, match="the record store must be a regular file") as raised:
        audit_external(_stage1(), _stage2(RANKED), LABELS, store=bad, session_id="s")
    assert "\n" not in str(raised.value)

    async def council(query: str) -> Any:
        return await backend.run_full_council(query)

    outcome = asyncio.run(audit_council(store=bad)(council)("q"))
    assert outcome[2]["response"]  # the answer comes back, the reason beside it
    assert "must be a regular file" in outcome[3]["bias_audit"]["error"]
