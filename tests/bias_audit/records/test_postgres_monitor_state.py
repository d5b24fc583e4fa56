"""The monitor's state in PostgreSQL (records/postgres_monitor_state.py, schema 8), attacked
against a real server: every session folded exactly once, in the order the log records,
the same numbers as the JSONL monitor of the sessions in that order; a writer killed before
its commit folds nothing; two writer processes at once; a state row edited, deleted, copied
from another store or holding a NaN is rebuilt (and the log says why); an importer's
session, a read-only role, a store migrated from schema 7."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs

from fakes.postgres_server import PostgresServer
from fakes.postgres_sessions import count, scalar, write
from llm_council.bias_audit.records.jsonl_store import append_records
from llm_council.bias_audit.records.monitor_state import current_monitor, state_body
from llm_council.bias_audit.records.schema import ReviewRecord, upgrade_record
from llm_council.cli.app import main

psycopg = pytest.importorskip("psycopg")
postgres_monitor = pytest.importorskip("llm_council.bias_audit.records.postgres_monitor")
postgres_schema = pytest.importorskip("llm_council.bias_audit.records.postgres_schema")
postgres_store = pytest.importorskip("llm_council.bias_audit.records.postgres_store")

TESTS = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(TESTS))
from generators.independent_council import CouncilSpec, generate_sessions  # noqa: E402

#: the fields of a state body that say where a JSONL file was read to, or list the folded
#: sessions (a JSONL state holds their digests, a PostgreSQL store a table)
_PLACE = ("inode", "offset", "fingerprint", "lines_read", "session_digests_sha256")
SPEC = CouncilSpec(
    n_members=4, noise_sds=[0.5, 0.8, 1.1, 1.5], leniency=[-2.0, 0, 0, 0], missing_score_rate=0.1
)  # the writer processes below build the same one


def sessions(
    n: int, prefix: str, seed: int = 5, spec: CouncilSpec = SPEC
) -> list[list[ReviewRecord]]:
    """``n`` sessions of the independent generator (integer scores, missing cells), with
    ids ``<prefix>000``, ``<prefix>001``, ..."""
    return [
        [
            ReviewRecord.model_validate({**upgrade_record(raw), "session_id": f"{prefix}{i:03d}"})
            for raw in session.records()
        ]
        for i, session in enumerate(generate_sessions(spec, n, seed=seed))
    ]


def fold_order(url: str) -> list[str]:
    with psycopg.connect(url) as connection:
        rows = connection.execute(
            "SELECT session_id, fold_seq FROM bias_monitor_sessions ORDER BY fold_seq"
        ).fetchall()
    assert [seq for _, seq in rows] == list(range(1, len(rows) + 1))  # no gap, no repeat
    return [session_id for session_id, _ in rows]


def jsonl_body(folder: Path, by_id: dict[str, list[ReviewRecord]], order: list[str]) -> Any:
    """The JSONL monitor of the same sessions appended in ``order``: an independent path."""
    store = folder / f"{uuid.uuid4().hex[:8]}.jsonl"
    for session_id in order:
        append_records(store, by_id[session_id])
    return _comparable(current_monitor(store, save=False))


def _comparable(state: Any) -> dict[str, Any]:
    return {key: value for key, value in state_body(state).items() if key not in _PLACE}


def look(url: str, **options: Any) -> tuple[Any, list[dict[str, Any]]]:
    """The monitor as a session's answer reads it (saving a rebuild), and what it logged."""
    with capture_logs() as logs:
        state = postgres_monitor.postgres_monitor(url, save=True, **options)
    return state, [entry for entry in logs if entry["event"] == "bias_monitor_state_rebuilt"]


def saved_body(url: str) -> Any:
    return scalar(url, "SELECT body FROM bias_monitor_state")


# -- the fold ------------------------------------------------------------------------------


def test_each_session_is_folded_once_in_its_transaction_in_write_order(
    store_url: str, tmp_path: Path
) -> None:
    written = sessions(12, "a")
    out_of_scale = [r.model_copy(update={"score_value": 1e6}) for r in sessions(1, "x", 9)[0]]
    assert write(store_url, *written, out_of_scale)[-1] == len(out_of_scale)
    assert write(store_url, written[3]) == [0]  # a retry adds nothing and folds nothing
    assert count(store_url, "SELECT count(*) FROM bias_monitor_marks") == 0
    order = fold_order(store_url)
    assert order == [records[0].session_id for records in written] + ["x000"]
    state, rebuilt = look(store_url)
    assert rebuilt == [] and state.n_sessions == 13  # read from the row, not the records
    by_id = {records[0].session_id: records for records in [*written, out_of_scale]}
    assert _comparable(state) == jsonl_body(tmp_path, by_id, order)


WRITER = """
import asyncio, sys
sys.path.insert(0, {tests!r})
from generators.independent_council import CouncilSpec, generate_sessions
from llm_council.bias_audit.records.postgres_store import PostgresWriter
from llm_council.bias_audit.records.schema import ReviewRecord, upgrade_record

SPEC = CouncilSpec(**{spec!r})

async def main():
    store = PostgresWriter.for_url({url!r})
    for i, session in enumerate(generate_sessions(SPEC, {n}, seed={seed})):
        await store.write_session([
            ReviewRecord.model_validate({{**upgrade_record(raw), "session_id": f"{prefix}{{i:03d}}"}})
            for raw in session.records()
        ])

asyncio.run(main())
"""
_SPEC_FIELDS = {
    "n_members": 4,
    "noise_sds": [0.5, 0.8, 1.1, 1.5],
    "leniency": [-2.0, 0, 0, 0],
    "missing_score_rate": 0.1,
}


def _writer(url: str, n: int, prefix: str, seed: int) -> subprocess.Popen[bytes]:
    code = WRITER.format(
        tests=str(TESTS), spec=_SPEC_FIELDS, url=url, n=n, prefix=prefix, seed=seed
    )
    return subprocess.Popen([sys.executable, "-c", code])


def test_two_writer_processes_at_once_fold_every_session_once(
    store_url: str, tmp_path: Path
) -> None:
    processes = [_writer(store_url, 15, "p", 11), _writer(store_url, 15, "q", 12)]
    for process in processes:
        assert process.wait(timeout=300) == 0
    by_id = {r[0].session_id: r for r in [*sessions(15, "p", 11), *sessions(15, "q", 12)]}
    order = fold_order(store_url)
    assert sorted(order) == sorted(by_id)  # 30 sessions, each once, seqs 1..30
    assert count(store_url, "SELECT count(*) FROM bias_monitor_marks") == 0
    state, rebuilt = look(store_url)
    assert rebuilt == [] and state.n_sessions == 30
    assert _comparable(state) == jsonl_body(tmp_path, by_id, order)


def _waiting_for_a_lock(url: str, application: str) -> bool:
    return bool(
        scalar(
            url,
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s "
            "AND wait_event_type = 'Lock'",
            (application,),
        )
    )


def test_a_writer_killed_between_its_insert_and_commit_folds_nothing(
    store_url: str, tmp_path: Path
) -> None:
    first = sessions(3, "k")
    write(store_url, *first)
    before = saved_body(store_url)
    application = f"killed{uuid.uuid4().hex[:6]}"
    blocker = psycopg.connect(store_url)
    try:  # hold the state row: the writer inserts its records, then waits for the lock
        blocker.execute("SELECT 1 FROM bias_monitor_state FOR UPDATE")
        process = _writer(f"{store_url}?application_name={application}", 1, "dead", 3)
        try:
            deadline = time.monotonic() + 120
            while not _waiting_for_a_lock(store_url, application):
                assert time.monotonic() < deadline, "the writer never reached the state's lock"
                assert process.poll() is None
                time.sleep(0.01)
            assert count(store_url, "SELECT count(*) FROM bias_sessions") == 3  # not committed
        finally:
            process.send_signal(signal.SIGKILL)
            process.wait()
    finally:
        blocker.rollback()
        blocker.close()
    deadline = time.monotonic() + 60
    while scalar(
        store_url,
        "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s",
        (application,),
    ):
        assert time.monotonic() < deadline
        time.sleep(0.01)
    assert count(store_url, "SELECT count(*) FROM bias_sessions WHERE session_id LIKE 'dead%'") == 0
    assert count(store_url, "SELECT count(*) FROM bias_monitor_marks") == 0
    assert saved_body(store_url) == before
    state, rebuilt = look(store_url)
    assert rebuilt == [] and state.n_sessions == 3
    more = sessions(2, "m", seed=8)
    write(store_url, *more)
    assert fold_order(store_url) == ["k000", "k001", "k002", "m000", "m001"]
    by_id = {r[0].session_id: r for r in [*first, *more]}
    assert _comparable(look(store_url)[0]) == jsonl_body(tmp_path, by_id, fold_order(store_url))


# -- a state that does not check -----------------------------------------------------------


def _garbage(url: str) -> None:
    with psycopg.connect(url) as connection:
        connection.execute("UPDATE bias_monitor_state SET body = '{\"monitor\": [1, 2'")


def _nan(url: str) -> None:
    body = json.loads(saved_body(url))
    body["monitor"]["settings"]["delta0"] = float("nan")  # json writes NaN
    with psycopg.connect(url) as connection:
        connection.execute("UPDATE bias_monitor_state SET body = %s", (json.dumps(body),))


def _deleted(url: str) -> None:
    with psycopg.connect(url) as connection:
        connection.execute("DELETE FROM bias_monitor_state")


def _last_log_row_deleted(url: str) -> None:
    with psycopg.connect(url) as connection:
        connection.execute(
            "DELETE FROM bias_monitor_sessions WHERE fold_seq = "
            "(SELECT max(fold_seq) FROM bias_monitor_sessions)"
        )


def _edited_sums(url: str) -> None:
    body = json.loads(saved_body(url))
    body["monitor"]["n_sessions"] = 9
    with psycopg.connect(url) as connection:
        connection.execute("UPDATE bias_monitor_state SET body = %s", (json.dumps(body),))


@pytest.mark.parametrize(
    ("damage", "reason", "keyed"),
    [
        (_garbage, "damaged", False),
        (_nan, "damaged", False),
        (_deleted, "absent", False),
        (_last_log_row_deleted, "behind its log", False),
        (_edited_sums, "unsealed", True),  # with the shared key, any edit of the body
    ],
)
def test_a_damaged_state_is_rebuilt_saved_and_logged(
    store_url: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    damage: Any,
    reason: str,
    keyed: bool,
) -> None:
    if keyed:
        monkeypatch.setenv("LLM_COUNCIL_SUMMARY_KEY", "monitor-test-key")
    written = sessions(8, "d")
    write(store_url, *written)
    order = fold_order(store_url)
    damage(store_url)
    write(store_url, sessions(1, "e", seed=6)[0])  # a writer finds the state unusable
    assert count(store_url, "SELECT count(*) FROM bias_monitor_marks") == 1
    state, rebuilt = look(store_url)
    assert [(entry["reason"], entry["saved"]) for entry in rebuilt] == [(reason, True)]
    assert state.n_sessions == 9
    assert "secret" not in json.dumps(rebuilt, default=str)
    new_order = fold_order(store_url)
    # the log's order is kept; a session it lost is put back after those it kept
    assert new_order[: len(order) - 1] == order[: len(order) - 1]
    by_id = {r[0].session_id: r for r in [*written, sessions(1, "e", seed=6)[0]]}
    assert _comparable(state) == jsonl_body(tmp_path, by_id, new_order)
    assert count(store_url, "SELECT count(*) FROM bias_monitor_marks") == 0
    assert look(store_url)[1] == []  # the rebuilt state checks: the next look reads it
    write(store_url, sessions(1, "f", seed=7)[0])
    assert count(store_url, "SELECT count(*) FROM bias_monitor_marks") == 0  # folded again


def test_a_state_copied_from_another_store_is_not_used(
    postgres_server: PostgresServer, store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same sessions written to two stores: a state is bound to its store's id, so the
    other store's row (sealed with the same key) does not verify here."""
    monkeypatch.setenv("LLM_COUNCIL_SUMMARY_KEY", "monitor-test-key")
    other = postgres_server.create_database(f"t_{uuid.uuid4().hex[:12]}")
    postgres_schema.migrate_store(other)
    written = sessions(5, "c")
    write(store_url, *written[:4])
    write(other, *written)
    body, seal = (
        scalar(other, f"SELECT {column} FROM bias_monitor_state") for column in ("body", "seal")
    )
    with psycopg.connect(store_url) as connection:
        connection.execute("UPDATE bias_monitor_state SET body = %s, seal = %s", (body, seal))
    with psycopg.connect(store_url) as connection:  # its log too, so only the seal can tell
        connection.execute("DELETE FROM bias_monitor_sessions")
        connection.execute(
            "INSERT INTO bias_sessions (session_id, n_records) VALUES ('c004', 1)"
        )  # a stand-in row for the log's foreign key (it makes a mark: removed below)
        connection.execute(
            "INSERT INTO bias_monitor_sessions SELECT session_id, row_number() OVER "
            "(ORDER BY session_id) FROM bias_sessions"
        )
        connection.execute("DELETE FROM bias_monitor_marks")
    state, rebuilt = look(store_url)
    assert [entry["reason"] for entry in rebuilt] == ["unsealed"]
    assert state.n_sessions == 4  # c004 here has 1 of its records: incomplete, left out


def test_an_importers_session_is_folded_after_the_others_by_the_next_look(
    store_url: str, tmp_path: Path
) -> None:
    written = sessions(4, "i")
    write(store_url, *written[:3])
    imported = written[3]
    with psycopg.connect(store_url) as connection:  # another program: plain SQL, no fold
        connection.execute(
            "INSERT INTO bias_sessions (session_id, n_records, written_at) "
            "VALUES (%s, %s, now() - interval '1 day')",
            (imported[0].session_id, len(imported)),
        )
        columns = ", ".join(f'"{name}"' for name in postgres_store._WRITTEN_COLUMNS)
        with connection.cursor().copy(f"COPY bias_records ({columns}) FROM STDIN") as copy:
            for index, record in enumerate(imported):
                copy.write_row(postgres_store._row(index, record, len(imported)))
    state, rebuilt = look(store_url)
    assert [entry["reason"] for entry in rebuilt] == ["stale"]
    # written a day "earlier", but folded after the sessions the state already held
    assert fold_order(store_url) == ["i000", "i001", "i002", "i003"]
    by_id = {r[0].session_id: r for r in written}
    assert _comparable(state) == jsonl_body(tmp_path, by_id, fold_order(store_url))


# -- readers, settings, an old store --------------------------------------------------------


def _reader(store_url: str) -> str:
    name = f"reader_{uuid.uuid4().hex[:8]}"
    database = store_url.rsplit("/", 1)[1]
    with psycopg.connect(store_url, autocommit=True) as connection:
        connection.execute(f"CREATE ROLE {name} LOGIN PASSWORD 'pw-{name}'")
        connection.execute(f'GRANT CONNECT ON DATABASE "{database}" TO {name}')
        connection.execute(
            "GRANT SELECT ON llm_council_schema, llm_council_store, bias_sessions, "
            "bias_records, bias_monitor_state, bias_monitor_sessions, bias_monitor_marks "
            f"TO {name}"
        )
    prefix, rest = store_url.split("://", 1)
    return f"{prefix}://{name}:pw-{name}@{rest.split('@', 1)[1]}"


def test_a_read_only_role_reads_the_state_and_rebuilds_without_saving(
    store_url: str,
) -> None:
    write(store_url, *sessions(5, "r"))
    reader = _reader(store_url)
    state, rebuilt = look(reader)
    assert rebuilt == [] and state.n_sessions == 5
    _garbage(store_url)
    damaged = saved_body(store_url)
    state, rebuilt = look(reader)
    assert [(entry["reason"], entry["saved"]) for entry in rebuilt] == [("damaged", False)]
    assert state.n_sessions == 5 and saved_body(store_url) == damaged


def test_other_settings_are_computed_and_never_replace_the_state(
    store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    write(store_url, *sessions(30, "w"))
    body = saved_body(store_url)
    with pytest.raises(SystemExit) as caught:
        main(["bias-watch", "--store", store_url, "--delta0", "3", "--json"])
    assert caught.value.code == 0  # a 2-point harsh judge is inside a 3-point null
    answer = json.loads(capsys.readouterr().out)  # stdout holds the JSON alone
    assert answer["delta0"] == 3 and answer["sessions"] == 30
    assert saved_body(store_url) == body
    with pytest.raises(SystemExit) as caught:
        main(["bias-watch", "--store", store_url, "--json"])
    assert caught.value.code == 1
    assert json.loads(capsys.readouterr().out)["confirmed"] == ["judge-0"]


def test_a_store_migrated_from_schema_7_is_rebuilt_in_written_order(
    empty_database_url: str, tmp_path: Path
) -> None:
    async def to_seven() -> None:
        async with await psycopg.AsyncConnection.connect(empty_database_url) as connection:
            await postgres_schema.migrate(connection, target=7)

    asyncio.run(to_seven())
    written = sessions(6, "o")
    columns = ", ".join(f'"{name}"' for name in postgres_store._WRITTEN_COLUMNS)
    with psycopg.connect(empty_database_url) as connection:
        for minute, records in enumerate(reversed(written)):  # written_at: newest first
            connection.execute(
                "INSERT INTO bias_sessions (session_id, n_records, written_at) "
                "VALUES (%s, %s, '2026-11-27T10:00:00Z'::timestamptz + %s * interval '1 minute')",
                (records[0].session_id, len(records), minute),
            )
            with connection.cursor().copy(f"COPY bias_records ({columns}) FROM STDIN") as copy:
                for index, record in enumerate(records):
                    copy.write_row(postgres_store._row(index, record, len(records)))
    before, rebuilt = look(empty_database_url)
    assert [(entry["reason"], entry["saved"]) for entry in rebuilt] == [("before schema 8", False)]
    postgres_schema.migrate_store(empty_database_url)
    state, rebuilt = look(empty_database_url)
    assert [(entry["reason"], entry["saved"]) for entry in rebuilt] == [("absent", True)]
    expected = [records[0].session_id for records in reversed(written)]
    assert fold_order(empty_database_url) == expected
    by_id = {r[0].session_id: r for r in written}
    assert _comparable(state) == _comparable(before) == jsonl_body(tmp_path, by_id, expected)


def test_a_look_keeps_its_connection_and_survives_the_server_closing_it(store_url: str) -> None:
    write(store_url, *sessions(3, "n"))
    assert look(store_url)[0].n_sessions == 3
    with psycopg.connect(store_url) as connection:
        ended = connection.execute(
            "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid() "
            "AND backend_type = 'client backend'"
        ).fetchone()
    assert ended is not None and ended[0] >= 1  # the look's kept connection among them
    state, rebuilt = look(store_url)  # the broken connection is replaced, once
    assert rebuilt == [] and state.n_sessions == 3


def test_a_look_without_save_writes_nothing_and_a_sessions_answer_saves(
    store_url: str,
) -> None:
    from llm_council.bias_audit.records.monitor_update import monitor_after_session

    write(store_url, *sessions(4, "s"))
    _garbage(store_url)
    damaged = saved_body(store_url)
    # as the report's section reads it: rebuilt in memory, the row left as it was
    assert postgres_monitor.postgres_monitor(store_url).n_sessions == 4
    assert saved_body(store_url) == damaged
    answer = monitor_after_session(store_url)  # a session's answer rebuilds and saves
    assert answer["status"] == "ok" and answer["sessions"] == 4
    assert saved_body(store_url) != damaged and look(store_url)[1] == []


def test_hostile_session_ids_are_folded_and_logged_as_written(
    store_url: str, tmp_path: Path
) -> None:
    ids = ["x'); DROP TABLE bias_monitor_state; --", "tab\there\nnewline", "\u202eevil", "é" * 300]
    written = [
        [record.model_copy(update={"session_id": session_id}) for record in records]
        for session_id, records in zip(ids, sessions(len(ids), "h"), strict=True)
    ]
    write(store_url, *written)
    assert fold_order(store_url) == ids
    state, rebuilt = look(store_url)
    assert rebuilt == []
    assert _comparable(state) == jsonl_body(tmp_path, {r[0].session_id: r for r in written}, ids)


def test_rebuilds_racing_two_writer_processes_lose_and_double_nothing(
    store_url: str, tmp_path: Path
) -> None:
    processes = [_writer(store_url, 12, "u", 21), _writer(store_url, 12, "v", 22)]
    rebuilds = 0
    while any(process.poll() is None for process in processes):
        _garbage(store_url)  # a damaged row: the next look rebuilds it under the row's lock
        postgres_monitor.postgres_monitor(store_url, save=True)
        rebuilds += 1
    assert [process.wait(timeout=300) for process in processes] == [0, 0]
    assert rebuilds >= 1
    look(store_url)  # writers that met a damaged row left marks: one more rebuild
    state, rebuilt = look(store_url)
    assert rebuilt == [] and state.n_sessions == 24
    by_id = {r[0].session_id: r for r in [*sessions(12, "u", 21), *sessions(12, "v", 22)]}
    order = fold_order(store_url)
    assert sorted(order) == sorted(by_id)
    assert _comparable(state) == jsonl_body(tmp_path, by_id, order)


def _packed_state(members: int = 3) -> Any:
    """A state after a few sessions, folded by the JSONL path's fold (no server)."""
    from llm_council.bias_audit.records.monitor_fold import MonitorState, fold_session_records
    from llm_council.stats.monitor.anytime_monitor import MonitorSettings

    state = MonitorState(settings=MonitorSettings())
    for records in sessions(4, "z", spec=CouncilSpec(n_members=members)):
        state = fold_session_records(state, records)
    return state


@pytest.mark.parametrize("value", [float("inf"), float("-inf"), float("nan")])
def test_a_non_finite_sum_is_never_written_nor_read_back(value: float) -> None:
    import base64

    import numpy as np

    from llm_council.bias_audit.records import postgres_monitor_state as rows
    from llm_council.stats.monitor.anytime_monitor import MonitorSettings

    state = _packed_state()
    body_text, seal = rows.encoded_row(state, 4, "z003", "store")
    assert seal is None  # no shared key in the tests' environment: nothing sealed
    checked = rows.checked_state((body_text, seal), False, 4, "z003", "store", MonitorSettings())
    assert isinstance(checked, rows.CheckedState) and checked.state.n_sessions == 4
    body = json.loads(body_text)
    column = np.frombuffer(base64.b64decode(body["monitor"]["cells"]["precision"]), "<f8").copy()
    column[0] = value
    body["monitor"]["cells"]["precision"] = base64.b64encode(column.tobytes()).decode()
    edited = (json.dumps(body), None)
    assert rows.checked_state(edited, False, 4, "z003", "store", MonitorSettings()) == "damaged"
    sums = state.sums
    broken = type(state)(**{**state.__dict__, "sums": type(sums)(**{**sums.__dict__})})
    broken.sums.precision[0, 0] = value
    with pytest.raises(ValueError, match="not finite"):
        rows.encoded_row(broken, 4, "z003", "store")


def test_store_rebuild_rebuilds_the_monitor_after_an_import(
    store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    write(store_url, *sessions(3, "t"))
    with psycopg.connect(store_url) as connection:  # an importer's statement: stale
        connection.execute("UPDATE bias_sessions SET n_records = n_records WHERE false")
    assert count(store_url, "SELECT count(*) FROM bias_monitor_marks") == 1
    with pytest.raises(SystemExit) as caught:
        main(["store-rebuild", "--store", store_url])
    assert caught.value.code in (0, None)
    err = capsys.readouterr().err
    assert "the bias monitor from 3 session(s), saved" in err and ":***@" in err
    assert count(store_url, "SELECT count(*) FROM bias_monitor_marks") == 0
    state, rebuilt = look(store_url)
    assert rebuilt == [] and state.n_sessions == 3


def test_a_reader_with_the_grants_of_schema_7_is_told_what_to_grant(
    store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    write(store_url, *sessions(2, "g"))
    name = f"old_reader_{uuid.uuid4().hex[:8]}"
    database = store_url.rsplit("/", 1)[1]
    with psycopg.connect(store_url, autocommit=True) as connection:
        connection.execute(f"CREATE ROLE {name} LOGIN PASSWORD 'pw-{name}'")
        connection.execute(f'GRANT CONNECT ON DATABASE "{database}" TO {name}')
        connection.execute(
            "GRANT SELECT ON llm_council_schema, llm_council_store, bias_sessions, "
            f"bias_records TO {name}"
        )
    prefix, rest = store_url.split("://", 1)
    reader = f"{prefix}://{name}:pw-{name}@{rest.split('@', 1)[1]}"
    with pytest.raises(SystemExit) as caught:
        main(["bias-watch", "--store", reader])
    assert caught.value.code == 2
    err = capsys.readouterr().err
    assert "GRANT SELECT ON bias_monitor_state" in err and f"pw-{name}" not in err
    assert err.strip().count("\n") == 0


def test_audited_councils_answer_from_the_state_their_writers_folded(
    store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The whole path: the middleware writes each session (folding it in the transaction)
    and answers from the saved state; no look has to rebuild."""
    from llm_council import run_full_council
    from llm_council.config import CouncilConfig, CouncilMember

    monkeypatch.setenv("LLM_COUNCIL_BIAS_AUDIT", "true")
    monkeypatch.setenv("LLM_COUNCIL_BIAS_STORE", store_url)
    config = CouncilConfig(
        members=tuple(CouncilMember(name=f"m{i}", spec="simulated:unbiased") for i in range(3)),
        chairman=CouncilMember(name="chair", spec="simulated:unbiased"),
    )
    answers = []
    with capture_logs() as logs:
        for seed in (1, 2, 3):
            result = asyncio.run(run_full_council("q?", config=config, seed=seed))
            answers.append(result.metadata["bias_audit"]["monitor"])
    assert [answer["sessions"] for answer in answers] == [1, 2, 3]
    assert all(answer["status"] == "ok" for answer in answers)
    events = {entry["event"] for entry in logs}
    assert "bias_monitor_state_rebuilt" not in events and "bias_monitor_not_folded" not in events
    assert len(fold_order(store_url)) == 3
    assert count(store_url, "SELECT count(*) FROM bias_monitor_marks") == 0
