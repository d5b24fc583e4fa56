"""Reviewer profiles in a PostgreSQL store (ADR 0048), against a real server.

The JSONL sidecar (ADR 0045, tests/bias_audit/records/test_reviewer_profiles.py) is the reference:
the same sessions appended in the same order give the same sums, to the last bit.
"""

from __future__ import annotations

import asyncio
import importlib.util
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from fakes.postgres_server import PostgresServer
from fakes.postgres_sessions import count as _count
from fakes.postgres_sessions import fresh_profiles as _fresh
from fakes.postgres_sessions import write
from llm_council.bias_audit import run_bias_audit
from llm_council.bias_audit.records.jsonl_store import append_records
from llm_council.bias_audit.records.reviewer_profiles import (
    ReviewerProfile,
    load_profiles,
    merge_profiles,
    records_profiles,
)
from llm_council.bias_audit.records.reviewer_profiles import (
    rebuild_profiles as rebuild_jsonl_profiles,
)
from llm_council.bias_audit.records.schema import ReviewRecord
from llm_council.bias_audit.records.stores import redact_url
from llm_council.bias_audit.session.thresholds import AuditThresholds
from llm_council.errors import RecordError

psycopg = pytest.importorskip("psycopg")
postgres_profiles = pytest.importorskip("llm_council.bias_audit.records.postgres_profiles")
postgres_store = pytest.importorskip("llm_council.bias_audit.records.postgres_store")
postgres_schema = pytest.importorskip("llm_council.bias_audit.records.postgres_schema")
profile_rebuild = pytest.importorskip("llm_council.bias_audit.records.postgres_profile_rebuild")

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from generators.independent_council import CouncilSpec, generate_sessions  # noqa: E402

BENCHMARK = Path(__file__).resolve().parents[3] / "benchmarks" / "postgres_writers.py"


def _session_records(index: int, members: int = 4) -> list[ReviewRecord]:
    """One session of the independent generator (integer scores, missing cells, shuffled
    orders), and every third one a live-check review that the profiles must leave out."""
    spec = CouncilSpec(
        n_members=members, noise_sds=[0.5, 0.8, 1.1, 1.5, 0.7][:members], missing_score_rate=0.1
    )
    session = generate_sessions(spec, 1, 100 + index)[0]
    records = [
        ReviewRecord(**{**record, "session_id": f"s{index:04d}", "schema_version": 2})
        for record in session.records()
    ]
    if index % 3 == 0:
        check = records[1].model_copy(
            update={"check_kind": "second_order", "check_of_position": 0, "score_value": 1.0}
        )
        records.append(check)
    return [r.model_copy(update={"session_n_records": len(records)}) for r in records]


def _jsonl(folder: Path, sessions: list[list[ReviewRecord]]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    store = folder / "records.jsonl"
    for records in sessions:
        append_records(store, records)
    return store


def test_the_sums_equal_the_jsonl_sidecars_to_the_last_bit(store_url: str, tmp_path: Path) -> None:
    sessions = [_session_records(index) for index in range(70)]
    write(store_url, *sessions)
    expected = load_profiles(_jsonl(tmp_path, sessions))  # base + journal, appended in order
    # 70 sessions: the deltas were folded into the base twice (at 32 pending), 6 remain
    assert _count(store_url, "SELECT generation FROM bias_profile_state") == 2
    assert _count(store_url, "SELECT count(*) FROM bias_profile_deltas") == 6
    found = _fresh(store_url)
    assert found == expected  # dataclass equality: every float, every Rao coefficient
    # a judge whose review went missing (missing cells at 10%) has fewer sessions
    assert max(profile.sessions for profile in expected.values()) == 70
    assert all(profile.slot_adjusted is not None for profile in expected.values())

    async def pooled() -> Any:
        return await postgres_store.PostgresWriter.for_url(store_url).reviewer_profiles()

    assert asyncio.run(pooled()) == expected  # the middleware's path, over the pool
    assert profile_rebuild.load_postgres_profiles(store_url) == expected
    # later lookups fetch only the new deltas onto the cached result; across a compaction
    # (at 32 pending) they read the new base: always what a full read gives
    more = [_session_records(index) for index in range(70, 100)]
    for records in more:
        write(store_url, records)
        assert asyncio.run(pooled()) == _fresh(store_url) is not None
    assert _count(store_url, "SELECT generation FROM bias_profile_state") == 3
    assert asyncio.run(pooled()) == load_profiles(_jsonl(tmp_path / "all", sessions + more))


def _writers() -> Any:
    spec = importlib.util.spec_from_file_location("postgres_writers", BENCHMARK)
    assert spec is not None and spec.loader is not None
    writers = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(writers)
    return writers


def _derived(url: str) -> dict[str, ReviewerProfile]:
    """The independent derivation: every stored session's records, folded one by one."""
    with psycopg.connect(url) as connection:
        rows = connection.execute(
            "SELECT session_id, reviewer_id, model_id, score_value, is_self_review, position, "
            "check_kind FROM bias_records ORDER BY session_id, record_index"
        ).fetchall()
    by_session: dict[str, list[dict[str, Any]]] = {}
    keys = ("reviewer_id", "model_id", "score_value", "is_self_review", "position", "check_kind")
    for session, *values in rows:
        by_session.setdefault(session, []).append(dict(zip(keys, values, strict=True)))
    expected: dict[str, ReviewerProfile] = {}
    for records in by_session.values():
        expected = merge_profiles(expected, records_profiles(records))
    return expected


def _assert_same_sums(found: dict[str, ReviewerProfile], expected: dict[str, Any]) -> None:
    assert found.keys() == expected.keys()
    for name, profile in expected.items():
        assert found[name].sessions == profile.sessions  # a lost update loses a session
        assert found[name].residual_sum_of_squares == pytest.approx(
            profile.residual_sum_of_squares, rel=1e-12
        )
        assert found[name].residual_df == pytest.approx(profile.residual_df, rel=1e-12)
        assert dict(found[name].expectation) == pytest.approx(dict(profile.expectation))


def test_concurrent_replicas_lose_no_update(store_url: str) -> None:
    write(store_url, _session_records(0))  # schema in place before the writers start
    # 4 processes x 50 sessions, 8 in flight in each, every 10th written twice (a retry)
    _writers().run(store_url, 4, 50, members=4)
    found = _fresh(store_url)
    assert found is not None, "a concurrent fold left the profiles stale"
    _assert_same_sums(found, _derived(store_url))
    assert found["r0"].sessions == 200  # the 4 x 50 writer sessions (the first is judge-*)


def test_rebuilds_during_concurrent_appends_lose_no_session(store_url: str) -> None:
    write(store_url, _session_records(0))
    writers = threading.Thread(target=_writers().run, args=(store_url, 3, 60, 4), daemon=True)
    writers.start()
    rebuilds = 0
    while writers.is_alive() or rebuilds == 0:
        with psycopg.connect(store_url) as connection:  # a statement on the records: stale
            connection.execute("UPDATE bias_sessions SET n_records = n_records WHERE false")
        assert _fresh(store_url) is None
        profile_rebuild.rebuild_profiles(store_url)
        rebuilds += 1
    writers.join()
    found = _fresh(store_url)  # folds after the last rebuild landed on its sums
    assert found is not None
    _assert_same_sums(found, _derived(store_url))
    assert found["r0"].sessions == 180 and rebuilds >= 2


def _insert_behind_the_back(url: str, records: list[ReviewRecord]) -> None:
    """Another program's rows: plain SQL, no fold."""
    with psycopg.connect(url) as connection:
        connection.execute(
            "INSERT INTO bias_sessions (session_id, n_records) VALUES (%s, %s)",
            (records[0].session_id, len(records)),
        )
        for index, record in enumerate(records):
            connection.execute(
                """INSERT INTO bias_records (session_id, record_index, schema_version,
                       "timestamp", reviewer_id, model_id, position, n_candidates,
                       response_length_chars, response_length_words, score_value,
                       score_scale, rank, is_self_review, council_config_hash,
                       session_n_records, check_kind)
                   VALUES (%s, %s, 2, %s, %s, %s, %s, %s, 1, 1, %s, %s, NULL, %s, 'x', %s, %s)""",
                (
                    record.session_id,
                    index,
                    record.timestamp,
                    record.reviewer_id,
                    record.model_id,
                    record.position,
                    record.n_candidates,
                    record.score_value,
                    list(record.score_scale),
                    record.is_self_review,
                    len(records),
                    record.check_kind,
                ),
            )


def test_rows_written_behind_the_profiles_back_are_detected_and_rebuilt(
    store_url: str, tmp_path: Path
) -> None:
    sessions = [_session_records(index) for index in range(6)]
    write(store_url, *sessions[:5])
    assert _fresh(store_url) is not None
    _insert_behind_the_back(store_url, sessions[5])
    assert _fresh(store_url) is None  # the trigger's marker: stale
    rebuilt = profile_rebuild.load_postgres_profiles(store_url)
    # the JSONL store's own rebuild of the same six sessions, in the same order
    assert rebuilt == rebuild_jsonl_profiles(_jsonl(tmp_path, sessions))
    assert rebuilt["judge-0"].sessions == 6
    assert _fresh(store_url) == rebuilt  # saved: the next lookup is the fast one
    # a compaction (rows deleted) is detected too, and the rebuild forgets the session
    with psycopg.connect(store_url) as connection:
        connection.execute("DELETE FROM bias_sessions WHERE session_id = 's0005'")
    assert _fresh(store_url) is None
    assert profile_rebuild.load_postgres_profiles(store_url) == rebuild_jsonl_profiles(
        _jsonl(tmp_path / "five", sessions[:5])
    )
    # a session appended by the writer after the rebuild folds on top
    write(store_url, _session_records(6))
    found = _fresh(store_url)
    assert found is not None and found["judge-0"].sessions == 6


def test_a_store_from_schema_4_is_rebuilt_after_its_migration(
    empty_database_url: str, tmp_path: Path
) -> None:
    store_url = empty_database_url
    with psycopg.connect(store_url) as connection:  # an llm-council that knew schema 4
        for statement in postgres_schema._LOCK_AND_VERSION:
            connection.execute(statement)
        for statement in postgres_schema.migration_statements(0, target=4):
            connection.execute(statement)
    sessions = [_session_records(index) for index in range(3)]
    for records in sessions[:2]:
        _insert_behind_the_back(store_url, records)
    expected = rebuild_jsonl_profiles(_jsonl(tmp_path, sessions[:2]))
    # read from the records, without saving (no profile tables before the migration)
    assert profile_rebuild.load_postgres_profiles(store_url) == expected
    postgres_schema.migrate_store(store_url)  # to 8: the summary starts "never built"
    write(store_url, sessions[2])
    assert _count(store_url, "SELECT max(version) FROM llm_council_schema") == 8
    assert _fresh(store_url) is None
    rebuilt = profile_rebuild.load_postgres_profiles(store_url)
    assert rebuilt == rebuild_jsonl_profiles(_jsonl(tmp_path / "all", sessions))
    assert rebuilt["judge-1"].sessions == 3


def test_a_failed_fold_keeps_the_records_and_marks_the_profiles_stale(
    store_url: str, tmp_path: Path
) -> None:
    sessions = [_session_records(index) for index in range(3)]
    write(store_url, sessions[0])
    with psycopg.connect(store_url) as connection:  # every delta insert now fails
        connection.execute(
            "ALTER TABLE bias_profile_deltas ADD CONSTRAINT no_deltas "
            "CHECK (profiles IS NULL) NOT VALID"
        )
    assert write(store_url, sessions[1]) == [len(sessions[1])]
    assert _count(store_url, "SELECT count(*) FROM bias_records WHERE session_id = 's0001'") == (
        len(sessions[1])
    )
    assert _fresh(store_url) is None  # the marker survived the rolled-back savepoint
    with psycopg.connect(store_url) as connection:
        connection.execute("ALTER TABLE bias_profile_deltas DROP CONSTRAINT no_deltas")
    write(store_url, sessions[2])
    assert _fresh(store_url) is None  # still stale: session 1 was never folded
    rebuilt = profile_rebuild.load_postgres_profiles(store_url)
    assert rebuilt == rebuild_jsonl_profiles(_jsonl(tmp_path, sessions))
    assert max(profile.sessions for profile in rebuilt.values()) == 3


def _role(store_url: str, name: str, grants: list[str]) -> str:
    with psycopg.connect(store_url, autocommit=True) as connection:
        connection.execute(f"CREATE ROLE {name} LOGIN PASSWORD 'role-pw-{name}'")
        database = store_url.rsplit("/", 1)[1]
        connection.execute(f'GRANT CONNECT ON DATABASE "{database}" TO {name}')
        for grant in grants:
            connection.execute(grant.format(role=name))
    prefix, rest = store_url.split("://", 1)
    return f"{prefix}://{name}:role-pw-{name}@{rest.split('@', 1)[1]}"


def test_privileges_an_importer_and_a_reader_need(store_url: str, tmp_path: Path) -> None:
    sessions = [_session_records(index) for index in range(3)]
    write(store_url, *sessions[:2])
    # an importer that may only write records still marks the sums stale (SECURITY DEFINER)
    importer = _role(
        store_url, "importer", ["GRANT INSERT ON bias_sessions, bias_records TO {role}"]
    )
    _insert_behind_the_back(importer, sessions[2])
    assert _fresh(store_url) is None
    # a reader (SELECT only) gets the sums computed from the records, not saved
    reader = _role(store_url, "reader", ["GRANT SELECT ON ALL TABLES IN SCHEMA public TO {role}"])
    expected = rebuild_jsonl_profiles(_jsonl(tmp_path, sessions))
    assert profile_rebuild.load_postgres_profiles(reader) == expected
    assert _fresh(store_url) is None
    assert profile_rebuild.load_postgres_profiles(store_url) == expected  # saved now
    assert profile_rebuild.load_postgres_profiles(reader) == expected  # the fresh path
    assert _fresh(store_url) == expected


def test_a_retried_write_leaves_the_profiles_fresh(store_url: str) -> None:
    records = _session_records(1)
    assert write(store_url, records, records) == [len(records), 0]
    found = _fresh(store_url)
    assert found is not None and found["judge-0"].sessions == 1


def _scores(harsh: str) -> tuple[dict[str, str], dict[str, dict[str, float]]]:
    names = [f"judge-{i}" for i in range(4)]
    texts = {name: "w " * 50 for name in names}
    scores = {
        reviewer: {
            candidate: float(5 + c - 3 * (reviewer == harsh)) + 0.3 * ((r + c) % 2)
            for c, candidate in enumerate(names)
        }
        for r, reviewer in enumerate(names)
    }
    return texts, scores


def test_the_audit_with_postgres_history_equals_the_jsonl_one(
    store_url: str, tmp_path: Path
) -> None:
    sessions = [_session_records(index) for index in range(30)]
    write(store_url, *sessions)
    jsonl = _jsonl(tmp_path, sessions)
    texts, scores = _scores("judge-0")
    from_postgres = run_bias_audit(texts, scores, history=store_url)
    from_jsonl = run_bias_audit(texts, scores, history=jsonl)
    assert from_postgres.model_dump() == from_jsonl.model_dump()
    # these hand-written scores are far quieter than the history, so the drift check
    # (ADR 0051) gives judges the default prior; off, every judge reads its history
    kept = AuditThresholds(noise_drift_level=0.0)
    from_postgres = run_bias_audit(texts, scores, history=store_url, thresholds=kept)
    assert (
        from_postgres.model_dump()
        == run_bias_audit(texts, scores, history=jsonl, thresholds=kept).model_dump()
    )
    assert "4 from history" in from_postgres.indicator_only["reviewers"]
    assert from_postgres.harsh_reviewers == ["judge-0"]
    without = run_bias_audit(texts, scores)
    assert "4 from default" in without.indicator_only["reviewers"]


def test_the_middleware_reads_history_from_the_configured_postgres_store(
    store_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from llm_council import run_full_council
    from llm_council.config import CouncilConfig, CouncilMember

    config = CouncilConfig(
        members=tuple(CouncilMember(name=f"m{i}", spec="simulated:unbiased") for i in range(4)),
        chairman=CouncilMember(name="chair", spec="simulated:unbiased"),
    )
    monkeypatch.setenv("LLM_COUNCIL_BIAS_AUDIT", "true")
    audits: dict[str, list[dict[str, Any]]] = {}
    for name, store in (("postgres", store_url), ("jsonl", str(tmp_path / "records.jsonl"))):
        monkeypatch.setenv("LLM_COUNCIL_BIAS_STORE", store)
        audits[name] = [
            asyncio.run(run_full_council("q?", config=config, seed=seed)).metadata["bias_audit"]
            for seed in range(4)
        ]
    ignored = {"record_store", "records_written"}
    for from_postgres, from_jsonl in zip(audits["postgres"], audits["jsonl"], strict=True):
        assert from_postgres["records_written"] == from_jsonl["records_written"] > 0
        assert {k: v for k, v in from_postgres.items() if k not in ignored} == {
            k: v for k, v in from_jsonl.items() if k not in ignored
        }
    assert "from default" in audits["postgres"][0]["indicator_only"]["reviewers"]
    # three sessions of history; a judge whose noise this session does not match its
    # history's gets the default prior (ADR 0051), the others read their history
    assert "from history" in audits["postgres"][-1]["indicator_only"]["reviewers"]


@pytest.mark.parametrize(
    ("make_url", "expected"),
    [
        (lambda s: s.url.replace(s.password, "Wr0ng-Pa55word"), "password authentication failed"),
        (
            lambda s: s.url.replace(s.password, "Wr0ng-Pa55word") + "?bogus=1",
            "not a valid PostgreSQL URL",
        ),
        (
            lambda s: s.url.replace(s.password, "Wr0ng-Pa55word").replace(str(s.port), "1"),
            "cannot read the reviewer profiles",
        ),
    ],
)
def test_a_bad_history_url_is_one_line_without_the_password(
    postgres_server: PostgresServer, make_url: Any, expected: str
) -> None:
    url = make_url(postgres_server)
    texts, scores = _scores("judge-0")
    with pytest.raises(RecordError) as raised:
        run_bias_audit(texts, scores, history=url)
    message = str(raised.value)
    assert expected in message and "\n" not in message
    assert "Wr0ng-Pa55word" not in message and postgres_server.password not in message
    assert message.startswith(redact_url(url) + ": ")


def test_a_database_without_the_store_has_no_history(empty_database_url: str) -> None:
    assert profile_rebuild.load_postgres_profiles(empty_database_url) == {}


def test_a_large_stale_store_is_rebuilt_in_the_background(
    store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from llm_council.bias_audit.session import postgres_history

    sessions = [_session_records(index) for index in range(3)]
    write(store_url, *sessions[:2])
    _insert_behind_the_back(store_url, sessions[2])
    monkeypatch.setattr(postgres_history, "REBUILD_IN_SESSION_MAX_SESSIONS", 2)
    # this session runs without history; a background thread rebuilds the summary
    assert asyncio.run(postgres_history.postgres_history(store_url)) == {}
    for thread in threading.enumerate():
        if thread.name == "reviewer-profiles":
            thread.join(timeout=60)
    found = asyncio.run(postgres_history.postgres_history(store_url))
    assert found == _fresh(store_url) is not None
    assert found["judge-0"].sessions == 3
    monkeypatch.setattr(postgres_history, "REBUILD_IN_SESSION_MAX_SESSIONS", 2_000)
    _insert_behind_the_back(store_url, _session_records(3))  # small: rebuilt in the session
    assert asyncio.run(postgres_history.postgres_history(store_url))["judge-0"].sessions == 4


def test_a_stored_session_is_left_out_of_its_postgres_history(
    store_url: str, tmp_path: Path
) -> None:
    """ADR 0051: ``session_id=`` subtracts the session's own rows from the PostgreSQL sums,
    as it does from a JSONL store's; both equal the history of a store without it."""
    from llm_council.bias_audit.session.history_exclusion import history_without_session
    from llm_council.bias_audit.session.postgres_history import postgres_session_profiles

    sessions = [_session_records(index) for index in range(8)]
    write(store_url, *sessions)
    without = _jsonl(tmp_path, [s for i, s in enumerate(sessions) if i != 5])
    assert postgres_session_profiles(store_url, "nope") == {}
    left = history_without_session(store_url, sessions[5][0].session_id)
    reference = load_profiles(without)
    assert left.keys() == reference.keys()
    for name, profile in left.items():
        assert profile.sessions == reference[name].sessions
        assert profile.residual_sum_of_squares == pytest.approx(
            reference[name].residual_sum_of_squares, rel=1e-9
        )
        assert profile.residual_df == pytest.approx(reference[name].residual_df, rel=1e-9)
