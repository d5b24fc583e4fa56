"""Benchmark: our per-session audit beside the reference council's, same sessions, one run.

The reference is :mod:`reference_audit_port` (a labelled port of the upstream audit, for
timing only). Sessions come from the offline simulated council (``--members`` members,
self-reviews on, per-reviewer display orders); each is turned into the reference's
inputs once, outside the timed region, because the reference council already holds
those dicts when it audits. Then, interleaved per session so machine load hits both
alike, ``--repeats`` timings of:

1. statistics: ours = ``score_table_from_session`` + ``audit_score_table`` (which also runs
   a 499-draw randomization test, the joint slot effects, per-reviewer noise, Holm
   step-down and self-preference tests the reference does not have); reference =
   ``run_bias_audit``;
2. the whole hook: ours = ``BiasAuditMiddleware.on_session_end`` (statistics, the result
   as JSON, records validated by pydantic, a locked append in a worker thread);
   reference = ``run_bias_audit`` + ``asdict`` of the result + its records + its
   append (no lock, no thread).

Medians over all (session, repeat) timings, and the ratio ours / reference.

    .venv/bin/python benchmarks/audit_vs_reference.py [--sessions 50] [--repeats 20]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import reference_audit_port as reference  # noqa: E402  (a sibling module, not a package)

from llm_council import CouncilConfig, CouncilMember, run_full_council  # noqa: E402
from llm_council.bias_audit.middleware import BiasAuditMiddleware  # noqa: E402
from llm_council.bias_audit.session.audit import audit_score_table  # noqa: E402
from llm_council.bias_audit.session.score_table import score_table_from_session  # noqa: E402
from llm_council.bias_audit.session.thresholds import AuditThresholds, load_thresholds  # noqa: E402
from llm_council.infra.log_setup import configure_logging  # noqa: E402
from llm_council.middleware import Middleware, SessionCompleted  # noqa: E402

QUERY = "How do I reduce tail latency?"


class EventCapture(Middleware):
    """Keeps every SessionCompleted event so the audits can be timed on them."""

    name = "event_capture"

    def __init__(self) -> None:
        self.events: list[SessionCompleted] = []

    async def on_session_end(self, event: SessionCompleted) -> None:
        self.events.append(event)
        return None


def council(members: int) -> CouncilConfig:
    return CouncilConfig(
        members=tuple(
            CouncilMember(name=f"m{i}", spec="simulated:unbiased") for i in range(members)
        ),
        chairman=CouncilMember(name="chair", spec="simulated:unbiased"),
    )


async def capture_sessions(config: CouncilConfig, sessions: int) -> list[SessionCompleted]:
    capture = EventCapture()
    for seed in range(sessions):
        await run_full_council(QUERY, config=config, seed=seed, middleware=[capture])
    return capture.events


def reference_inputs(event: SessionCompleted) -> dict[str, Any]:
    """The session as the reference council holds it when it audits."""
    responses = [
        {"model": answer.member, "response": answer.text or ""}
        for answer in event.answers
        if answer.ok
    ]
    reviews = [review for review in event.reviews if review.check_kind is None]
    scores = {
        review.reviewer: {
            entry.candidate: entry.score for entry in review.candidates if entry.score is not None
        }
        for review in reviews
    }
    orders = {
        review.reviewer: {entry.candidate: entry.display_index for entry in review.candidates}
        for review in reviews
    }
    # the reference has one shared order: the first reviewer's stands for all
    shared_order = next(iter(orders.values()), {})
    return {
        "responses": responses,
        "scores": scores,
        "shared_order": shared_order,
        "reviews": [(name, scores[name], orders[name]) for name in scores],
        "session_id": event.session_id,
    }


def reference_statistics(inputs: dict[str, Any], thresholds: AuditThresholds) -> Any:
    return reference.run_reference_audit(
        inputs["responses"],
        inputs["scores"],
        inputs["shared_order"],
        length_threshold=thresholds.length_correlation_threshold,
        variance_threshold=thresholds.position_variance_threshold,
    )


def reference_hook(inputs: dict[str, Any], thresholds: AuditThresholds, store: Path) -> int:
    metadata = asdict(reference_statistics(inputs, thresholds))
    records = reference.reference_records(
        inputs["session_id"], inputs["responses"], inputs["reviews"], QUERY
    )
    return len(metadata) + reference.append_reference_records(records, store)


async def time_side_by_side(
    events: list[SessionCompleted], repeats: int, scratch: Path
) -> dict[str, dict[str, list[float]]]:
    """Wall and CPU seconds of each (session, repeat), ours and the reference's.

    CPU time (``time.process_time``, all threads, nanosecond clock on Linux) is the fair
    figure on a loaded machine: wall time also counts the time slices other processes
    held the CPU, which hits the longer-running side more often.
    """
    thresholds = load_thresholds()
    audit = BiasAuditMiddleware()
    inputs = [reference_inputs(event) for event in events]
    reference_store = scratch / "reference_bias_metrics.jsonl"
    times: dict[str, dict[str, list[float]]] = {
        key: {"wall": [], "cpu": []} for key in ("ours_stats", "ref_stats", "ours_hook", "ref_hook")
    }
    wall, cpu = time.perf_counter, time.process_time

    def record(key: str, wall_start: float, cpu_start: float) -> None:
        times[key]["cpu"].append(cpu() - cpu_start)
        times[key]["wall"].append(wall() - wall_start)

    for _ in range(repeats):
        for event, session in zip(events, inputs, strict=True):
            wall_start, cpu_start = wall(), cpu()
            audit_score_table(score_table_from_session(event.answers, event.reviews), thresholds)
            record("ours_stats", wall_start, cpu_start)
            wall_start, cpu_start = wall(), cpu()
            reference_statistics(session, thresholds)
            record("ref_stats", wall_start, cpu_start)
            wall_start, cpu_start = wall(), cpu()
            await audit.on_session_end(event)
            record("ours_hook", wall_start, cpu_start)
            wall_start, cpu_start = wall(), cpu()
            reference_hook(session, thresholds, reference_store)
            record("ref_hook", wall_start, cpu_start)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=50)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--members", type=int, default=5)
    args = parser.parse_args()
    configure_logging(level="ERROR")
    with tempfile.TemporaryDirectory() as scratch:
        os.environ["LLM_COUNCIL_BIAS_STORE"] = os.path.join(scratch, "bias_records.jsonl")
        events = asyncio.run(capture_sessions(council(args.members), args.sessions))
        times = asyncio.run(time_side_by_side(events, args.repeats, Path(scratch)))
    print(
        f"members={args.members} sessions={args.sessions} repeats={args.repeats} "
        f"(interleaved); load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs"
    )
    for part, label in (("stats", "statistics"), ("hook", "whole hook (stats + records + append)")):
        for clock in ("cpu", "wall"):
            ours = statistics.median(times[f"ours_{part}"][clock]) * 1000
            ref = statistics.median(times[f"ref_{part}"][clock]) * 1000
            verdict = "met" if ours <= ref else "NOT met"
            print(
                f"{label}, {clock} time: ours median {ours:.3f} ms, reference {ref:.3f} ms, "
                f"ratio {ours / ref:.2f} (target ours <= reference: {verdict})"
            )


if __name__ == "__main__":
    main()
