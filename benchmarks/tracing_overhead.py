"""Benchmark: what tracing costs a session, off (the default) and on.

Off means what a user without an OpenTelemetry SDK gets: the ``opentelemetry-api``
package may be installed (the SDKs pull it in) but only its proxy provider is present,
so :mod:`llm_council.infra.tracing` hands out a shared no-op recorder. The script measures

1. the cost of one span helper call when off (a session makes 15: 1 session, 3 stages,
   11 model calls for the default 5-member council), in microseconds;
2. sessions per second of the default simulated council (no latency) with tracing off,
   and on with the SDK and an in-memory exporter, over ``--sessions`` sessions.

    .venv/bin/python benchmarks/tracing_overhead.py [--sessions 200]
"""

from __future__ import annotations

import argparse
import asyncio
import time
import timeit

from llm_council import run_full_council
from llm_council.infra import tracing
from llm_council.infra.log_setup import configure_logging
from llm_council.providers.base import CompletionRequest

SPANS_PER_SESSION = 15


def _helper_cost_us(repeats: int = 200_000) -> float:
    request = CompletionRequest.from_prompt("q")

    def one() -> None:
        with tracing.chat_span("openai", "m", request, {}) as span:
            span.set({})

    return timeit.timeit(one, number=repeats) / repeats * 1e6


def _sessions_per_s(sessions: int) -> float:
    async def run_all() -> None:
        for seed in range(sessions):
            await run_full_council("How do I shard a queue?", seed=seed, middleware=[])

    started = time.perf_counter()
    asyncio.run(run_all())
    return sessions / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=200)
    args = parser.parse_args()
    configure_logging(level="ERROR", standard_logging=False)
    assert tracing._tracer() is None, "run without an SDK tracer provider installed"
    _sessions_per_s(5)  # warm-up
    helper_us = _helper_cost_us()
    off = _sessions_per_s(args.sessions)
    session_us = 1e6 / off
    per_session_us = helper_us * SPANS_PER_SESSION
    print(f"span helper, tracing off: {helper_us:.2f} us per call")
    print(
        f"tracing off: {off:7.1f} sessions/s ({session_us:7.0f} us/session); "
        f"span helpers: {per_session_us:.1f} us/session = "
        f"{per_session_us / session_us:.3%} of a session"
    )

    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracing.use_tracer_provider(provider)
    on = _sessions_per_s(args.sessions)
    spans = len(exporter.get_finished_spans())
    print(
        f"tracing on (SDK, in-memory exporter): {on:7.1f} sessions/s "
        f"({1e6 / on:7.0f} us/session, {spans / args.sessions:.0f} spans/session)"
    )


if __name__ == "__main__":
    main()
