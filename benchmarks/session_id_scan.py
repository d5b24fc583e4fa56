"""Benchmark: the first ``audit_external`` with a ``session_id`` scans the JSONL store once.

``bias_audit/plugin/session_ids.py`` builds the set of session ids already in the store by
one byte-pattern scan, then reads only what was appended since. This writes a synthetic
store of ``--mb`` megabytes of real-shaped records (pydantic's compact JSON, 16 records
per session) and times the first lookup (the full scan, wall and CPU: on a shared machine
the CPU time is the figure that carries over), a second one (nothing new) and one after
appending a session (the tail only), with the peak RSS.

    nice .venv/bin/python benchmarks/session_id_scan.py [--mb 100]
"""

from __future__ import annotations

import argparse
import resource
import tempfile
import time
from pathlib import Path

from llm_council.bias_audit.plugin.session_ids import store_has_session
from llm_council.bias_audit.records.schema import ReviewRecord


def _line(session: int, reviewer: int, candidate: int) -> str:
    return (
        ReviewRecord(
            session_id=f"{session:032x}",
            timestamp="2026-11-27T00:00:00+00:00",
            reviewer_id=f"reviewer-{reviewer}",
            model_id=f"member-{candidate}",
            position=candidate,
            n_candidates=4,
            response_length_chars=1200,
            response_length_words=200,
            score_value=7.0,
            is_self_review=reviewer == candidate,
            council_config_hash="external:0123456789abcdef",
            session_n_records=16,
        ).model_dump_json()
        + "\n"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=100.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        store = Path(directory) / "records.jsonl"
        template = "".join(_line(0, r, c) for r in range(4) for c in range(4))
        sessions = int(args.mb * 1e6 / len(template))
        with store.open("w", encoding="utf-8") as handle:
            for session in range(sessions):
                handle.write(template.replace("0" * 32, f"{session:032x}"))
        size_mb = store.stat().st_size / 1e6
        started, cpu_started = time.perf_counter(), time.process_time()
        assert store_has_session(store, f"{sessions - 1:032x}")
        first = time.perf_counter() - started
        first_cpu = time.process_time() - cpu_started
        started = time.perf_counter()
        assert not store_has_session(store, "new")
        again = time.perf_counter() - started
        with store.open("a", encoding="utf-8") as handle:
            handle.write(template.replace("0" * 32, "f" * 32))
        started = time.perf_counter()
        assert store_has_session(store, "f" * 32)
        tail = time.perf_counter() - started
        peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"store {size_mb:.0f} MB, {sessions} sessions")
        print(
            f"first lookup (full scan): {first:.2f} s wall, {first_cpu:.2f} s CPU "
            f"({size_mb / first_cpu:.0f} MB per CPU second)"
        )
        print(f"second lookup (nothing new): {again * 1e3:.2f} ms")
        print(f"after one appended session (tail only): {tail * 1e3:.2f} ms")
        print(f"peak RSS: {peak_mb:.0f} MB")


if __name__ == "__main__":
    main()
