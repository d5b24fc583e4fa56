"""``llm-council bias-import --from reference``: the reference council's records, migrated."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from generators.independent_council import CouncilSpec, generate_sessions
from llm_council.bias_audit.records.jsonl_store import read_records, store_path
from llm_council.bias_audit.records.reference_import import import_reference_store
from llm_council.bias_audit.report.load.loading import load_store
from llm_council.cli.app import main
from llm_council.errors import InputError, RecordError

FIXTURE = Path(__file__).parents[2] / "data" / "reference_records" / "reference_v1.jsonl"

# line -> the reason it is not converted (see tests/data/reference_records/README.md)
EXPECTED_SKIPS = {
    12: "duplicate (session, reviewer, model) record",
    13: "score_value 11.0 is outside score_scale 1-10",
    15: "reference schema < 1.2.0: 'position' holds the ranking index",
    16: "reference schema < 1.2.0: 'position' holds the ranking index",
    17: "'reviewer_id' missing or not text",
    18: "'position' must be a whole number >= 0, got '2'",
    19: "'response_length_chars' must be a whole number >= 0, got '-5'",
    20: "timestamp 'yesterday' is not ISO 8601",
    21: "score_value 'high' is not a number",
    22: "reference schema_version '2.0.0': only 1.x is known",
    23: "integer schema_version 1: already an llm-council record",
    24: "not valid JSON",
    25: "not a JSON object (list)",
    26: "not valid JSON (torn last line)",
}


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exited:
        main(list(args))
    captured = capsys.readouterr()
    return int(exited.value.code or 0), captured.out, captured.err


def test_fixture_converts_what_it_can_and_names_every_line_it_cannot(tmp_path: Path) -> None:
    target = tmp_path / "store.jsonl"
    summary = import_reference_store(FIXTURE, target)
    assert summary.n_lines == 25  # 26 lines, one blank
    assert summary.n_records_written == 11
    assert summary.n_sessions_written == 2
    assert summary.n_scores_nulled == 1
    assert len(summary.skipped) == len(EXPECTED_SKIPS)
    for (line, reason), (expected_line, expected_reason) in zip(
        summary.skipped, sorted(EXPECTED_SKIPS.items()), strict=True
    ):
        assert line == expected_line and reason.startswith(expected_reason), (line, reason)

    records = list(read_records(target, strict=True))
    assert len(records) == 11
    by_cell = {(r.session_id, r.reviewer_id, r.model_id): r for r in records}
    first = by_cell[("5f1c0e7a-0001", "openai/gpt-4o", "anthropic/claude-3.5-sonnet")]
    assert first.position == 0 and first.score_value == 8.0
    assert first.response_length_chars == 1200
    assert first.response_length_words == 200  # 1200 / 6, estimated
    assert first.n_candidates == 3
    assert first.is_self_review is False
    assert first.score_scale == (1.0, 10.0)
    assert first.rank is None
    assert first.council_config_hash == "reference:0.3.1"
    assert first.timestamp == "2025-12-20T10:00:00.000+00:00"
    assert by_cell[("5f1c0e7a-0001", "openai/gpt-4o", "openai/gpt-4o")].is_self_review
    # gemini left no record for its own answer: n_candidates counts what it has
    assert by_cell[("5f1c0e7a-0001", "google/gemini-1.5-pro", "openai/gpt-4o")].n_candidates == 2

    missing = by_cell[("5f1c0e7a-0002", "openai/gpt-4o", "anthropic/claude-3.5-sonnet")]
    assert missing.score_value is None  # the reference's 0.0 for "no score"
    assert missing.query_hash == "reference-hmac-sha256-16:9b2e61c0d4f7a853"
    assert missing.timestamp == "2025-12-21T08:30:00.000+00:00"
    zero_to_ten = by_cell[("5f1c0e7a-0002", "google/gemini-1.5-pro", "openai/gpt-4o")]
    assert zero_to_ten.score_scale == (0.0, 10.0) and zero_to_ten.score_value == 8.0
    # its line-13 sibling was skipped; position 1 says at least 2 answers were shown
    assert zero_to_ten.n_candidates == 2
    # query_metadata is dropped, so its content never reaches the store
    assert "coding" not in target.read_text()


def test_each_session_is_one_contiguous_write_and_reimport_adds_nothing(tmp_path: Path) -> None:
    target = tmp_path / "store.jsonl"
    import_reference_store(FIXTURE, target)
    sessions = [json.loads(line)["session_id"] for line in target.read_text().splitlines()]
    assert sessions == sorted(sessions, key=sessions.index)  # no interleaving
    assert sessions.count("5f1c0e7a-0001") == 8
    before = target.read_bytes()
    again = import_reference_store(FIXTURE, target)
    assert again.n_records_written == 0 and again.n_sessions_already_present == 2
    assert target.read_bytes() == before


def test_imported_store_loads_in_bias_report(tmp_path: Path) -> None:
    target = tmp_path / "store.jsonl"
    import_reference_store(FIXTURE, target)
    loaded = load_store(target)
    assert (loaded.n_records, loaded.n_sessions, loaded.n_unreadable) == (11, 2, 0)


def test_dry_run_writes_nothing(tmp_path: Path) -> None:
    target = tmp_path / "store.jsonl"
    summary = import_reference_store(FIXTURE, target, dry_run=True)
    assert summary.n_records_written == 11
    assert not target.exists()


def test_source_that_is_the_target_is_refused(tmp_path: Path) -> None:
    target = tmp_path / "store.jsonl"
    target.write_text("")
    with pytest.raises(InputError, match="is the target store itself"):
        import_reference_store(target, target)


def test_unwritable_store_is_one_line_record_error_and_nothing_half_written(
    tmp_path: Path,
) -> None:
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("a file where the store's directory should be")
    with pytest.raises(RecordError) as excinfo:
        import_reference_store(FIXTURE, blocker / "store.jsonl")
    assert "\n" not in str(excinfo.value) and "after 0 imported session" in str(excinfo.value)
    assert blocker.read_text() == "a file where the store's directory should be"


def test_a_store_path_that_is_a_directory_fails_in_one_line(tmp_path: Path) -> None:
    with pytest.raises(RecordError) as excinfo:
        import_reference_store(FIXTURE, tmp_path)
    assert "\n" not in str(excinfo.value)


def test_cli_reports_what_it_could_not_convert(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    target = tmp_path / "store.jsonl"
    code, out, err = run_cli(
        capsys, "bias-import", "--from", "reference", str(FIXTURE), "--store", str(target)
    )
    assert code == 0 and out == ""
    assert "wrote 11 record(s) in 2 session(s)" in err
    assert "not converted: 2 line(s): reference schema < 1.2.0" in err
    assert "(line 15, 16)" in err
    assert "response_length_words: estimated" in err
    code, out, _ = run_cli(capsys, "bias-import", str(FIXTURE), "--json", "--dry-run")
    summary = json.loads(out)
    assert code == 0 and summary["target"] == str(store_path())
    assert summary["dry_run"] is True and summary["records_written"] == 11
    assert {entry["line"] for entry in summary["skipped"]} == set(EXPECTED_SKIPS)


def test_cli_bad_source_is_one_line(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = run_cli(capsys, "bias-import", "--from", "reference", str(tmp_path / "nope"))
    assert code == 2 and err.count("\n") == 1 and "cannot read" in err
    code, _, err = run_cli(capsys, "bias-import", "--from", "elsewhere", str(FIXTURE))
    assert code == 2


def _as_reference_lines(spec: CouncilSpec, n_sessions: int, seed: int) -> list[str]:
    """The independent generator's sessions as reference 1.2.0 lines (characters only)."""
    lines = []
    for session in generate_sessions(spec, n_sessions, seed):
        for record in session.records():
            lines.append(
                json.dumps(
                    {
                        "schema_version": "1.2.0",
                        "session_id": record["session_id"],
                        "timestamp": record["timestamp"],
                        "consent_level": 1,
                        "reviewer_id": record["reviewer_id"],
                        "model_id": record["model_id"],
                        "position": record["position"],
                        "response_length_chars": record["response_length_chars"],
                        "score_value": record["score_value"],
                        "score_scale": "1-10",
                        "council_config_version": "0.4.0",
                        "query_hash": None,
                        "query_metadata": None,
                    }
                )
            )
    return lines


def test_estimated_words_keep_the_log_length_statistics(tmp_path: Path) -> None:
    # ln(round(chars / 6)) = ln(chars) - ln 6 + rounding: the per-answer log lengths
    # correlate with the true ln(words) as the real ones do (the generator's words are
    # 5-letter tokens plus a space, so chars / words is ~6 here; the claim is about the
    # constant, which any text has)
    source = tmp_path / "reference.jsonl"
    spec = CouncilSpec(n_members=4, verbosity=[0.8, 0.8, 0.8, 0.8], missing_score_rate=0.1)
    source.write_text("\n".join(_as_reference_lines(spec, 30, seed=2)) + "\n")
    target = tmp_path / "store.jsonl"
    summary = import_reference_store(source, target)
    assert summary.skipped == () and summary.n_sessions_written == 30
    truth = {
        (s.session_id, name): words
        for s in generate_sessions(spec, 30, seed=2)
        for name, words in s.words.items()
    }
    pairs = np.array(
        [
            (math.log(truth[(r.session_id, r.model_id)]), math.log(r.response_length_words))
            for r in read_records(target)
        ]
    )
    assert np.corrcoef(pairs.T)[0, 1] > 0.999


reference_values = (
    st.none()
    | st.booleans()
    | st.integers(-2, 12)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.sampled_from(["1.2.0", "1.1.0", "1-10", "0-5", "2025-12-20T10:00:00Z", "", "s1", "\n"])
    | st.text(max_size=8)
    | st.lists(st.integers(0, 10), max_size=2)
)
reference_lines = st.one_of(
    st.fixed_dictionaries(
        {
            "schema_version": st.sampled_from(["1.2.0", "1.3", 1, None, "x"]),
            "session_id": st.sampled_from(["s1", "s2", "sé\u2028", ""]),
            "timestamp": st.sampled_from(["2025-12-20T10:00:00Z", "2025-12-20", "nope"]),
            "reviewer_id": st.sampled_from(["a", "b", 'q"uote', None]),
            "model_id": st.sampled_from(["a", "b", "c\nd"]),
            "position": st.integers(-1, 4) | reference_values,
            "response_length_chars": st.integers(-1, 5000) | reference_values,
            "score_value": st.floats(0, 12) | reference_values,
            "score_scale": st.sampled_from(["1-10", "0-1", "10-1", [1, 10], "x"]),
        },
        optional={"query_hash": reference_values, "query_metadata": reference_values},
    ).map(json.dumps),
    st.text(max_size=30),
)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(lines=st.lists(reference_lines, max_size=12))
def test_random_lines_are_converted_or_reported_never_raised(
    tmp_path_factory: pytest.TempPathFactory, lines: list[str]
) -> None:
    folder = tmp_path_factory.mktemp("fuzz")
    source = folder / "reference.jsonl"
    source.write_text("\n".join(line.replace("\n", " ") for line in lines) + "\n")
    target = folder / "store.jsonl"
    summary = import_reference_store(source, target)
    # every non-blank line is either written or reported with its line number
    assert summary.n_records_written + len(summary.skipped) == summary.n_lines
    assert len(list(read_records(target, strict=True))) == summary.n_records_written


@pytest.mark.parametrize("via", ["environment", "option"])
def test_a_postgres_store_is_refused_without_echoing_its_password(
    via: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Review finding: the URL was taken as a file path: a local file named after it was
    written and the password printed in the summary."""
    from llm_council.cli.app import _run, app

    url = "postgresql://u:sekret-pw@localhost:1/db"
    monkeypatch.chdir(tmp_path)
    args = ["bias-import", "--from", "reference", str(FIXTURE)]
    if via == "environment":
        monkeypatch.setenv("LLM_COUNCIL_BIAS_STORE", url)
    else:
        args += ["--store", url]
    assert _run(args, "llm-council", app) == 1
    captured = capsys.readouterr()
    assert "PostgreSQL URL" in captured.err and "sekret-pw" not in captured.err + captured.out
    assert "llm-council store-copy --from FILE --store URL" in captured.err
    assert list(tmp_path.iterdir()) == []


def test_a_session_gets_one_timestamp_and_a_wild_position_is_skipped(tmp_path: Path) -> None:
    """Review findings: a session stamped 23:59:59 and 00:00:01 was split across two day
    partitions (and lost to --since); a position of 5e9 made the report drop the session."""
    base = json.loads(FIXTURE.read_text().splitlines()[0])
    rows = []
    for index, (model, stamp) in enumerate(
        [("m1", "2025-01-01T23:59:59+00:00"), ("m2", "2025-01-02T00:00:01+00:00")]
    ):
        for reviewer in ("r1", "r2"):
            rows.append(
                {
                    **base,
                    "session_id": "s-midnight",
                    "timestamp": stamp,
                    "reviewer_id": reviewer,
                    "model_id": model,
                    "position": index,
                }  # fmt: skip
            )
    rows.append({**rows[0], "model_id": "m3", "position": 5_000_000_000})
    source = tmp_path / "reference.jsonl"
    source.write_text("".join(json.dumps(row) + "\n" for row in rows))
    summary = import_reference_store(source, tmp_path / "store.jsonl")
    assert summary.n_records_written == 4
    assert any("position 5000000000" in reason for _, reason in summary.skipped)
    records = list(read_records(tmp_path / "store.jsonl"))
    from datetime import datetime

    instants = {datetime.fromisoformat(record.timestamp) for record in records}
    assert instants == {datetime.fromisoformat("2025-01-02T00:00:01+00:00")}
