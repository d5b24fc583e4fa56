"""Calibration of the causal checks (ADR 0024) on the simulated council, end to end.

Each store is ``--sessions`` sessions of a simulated council run with
``bias_check_probability = 1`` through the bias-audit middleware into a JSONL store, then
read back by ``build_report``; the causal-checks section's tests are counted per reviewer.

- null: five ``unbiased`` members (no position, verbosity or any other bias; noise sd 1);
  every rejection of the slot or padding test at 5% is a false positive;
- power: the default council (``primacy`` adds 1 point at slot A; ``verbose`` has
  verbosity 1.5 points per ln(words/200), so doubling an answer adds 1.04 points), with
  ``narcissist`` also given ``self_recognition = 1.5`` (points for an answer signed with
  its own model name).

All four kinds are drawn with equal weight (identity included: it is opt-in in real use).

    .venv/bin/python benchmarks/bias_check_calibration.py [--stores 200] [--sessions 30]
"""

from __future__ import annotations

import argparse
import asyncio
import math
import os
import tempfile
from collections import Counter
from pathlib import Path

from llm_council import run_full_council
from llm_council.bias_audit.middleware import BiasAuditMiddleware
from llm_council.bias_audit.report import build_report
from llm_council.config import CouncilConfig, CouncilMember, load_council_config
from llm_council.infra.log_setup import configure_logging

ALL_KINDS = {"reshuffle": 1.0, "repeat": 1.0, "padding": 1.0, "identity": 1.0}


def null_council() -> CouncilConfig:
    members = tuple(CouncilMember(name=f"unbiased{i}", spec="simulated:unbiased") for i in range(5))
    return CouncilConfig(
        members=members,
        chairman=CouncilMember(name="chair", spec="simulated:unbiased"),
        bias_check_probability=1.0,
        bias_check_kinds=ALL_KINDS,
    )


def biased_council() -> CouncilConfig:
    default = load_council_config()
    members = tuple(
        member.model_copy(update={"options": {"self_recognition": 1.5}})
        if member.name == "narcissist"
        else member
        for member in default.members
    )
    return default.model_copy(
        update={"members": members, "bias_check_probability": 1.0, "bias_check_kinds": ALL_KINDS}
    )


def run_store(config: CouncilConfig, sessions: int, seed: int, path: Path) -> dict[str, object]:
    os.environ["LLM_COUNCIL_BIAS_STORE"] = str(path)

    async def run_all() -> None:
        for index in range(sessions):
            await run_full_council(
                "How do I shard a queue?",
                config=config,
                seed=seed * 100_000 + index,
                middleware=[BiasAuditMiddleware()],
            )

    asyncio.run(run_all())
    report = build_report(path, n_resamples=10)
    assert report.causal_checks is not None
    return {r.reviewer: r for r in report.causal_checks.reviewers}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stores", type=int, default=200)
    parser.add_argument("--sessions", type=int, default=30)
    args = parser.parse_args()
    configure_logging(level="ERROR", standard_logging=False)
    for label, config in (
        ("null (unbiased council)", null_council()),
        ("power (default council, narcissist self_recognition 1.5)", biased_council()),
    ):
        tests: Counter[str] = Counter()
        rejections: Counter[str] = Counter()
        with tempfile.TemporaryDirectory() as scratch:
            for store in range(args.stores):
                reviewers = run_store(
                    config, args.sessions, store, Path(scratch) / f"s{store}.jsonl"
                )
                for name, result in reviewers.items():
                    for kind, estimate in (
                        ("slot", result.slot_effect),  # type: ignore[attr-defined]
                        ("padding", result.padding_effect),  # type: ignore[attr-defined]
                        ("identity", result.identity_effect),  # type: ignore[attr-defined]
                    ):
                        if estimate is not None:
                            tests[f"{name} {kind}"] += 1
                            rejections[f"{name} {kind}"] += int(estimate.detected(0.05))
        print(f"{label}: {args.stores} stores x {args.sessions} sessions, p = 1")
        pooled_tests = sum(tests.values())
        pooled = sum(rejections.values())
        for key in sorted(tests):
            print(f"  {key:<22} rejected {rejections[key]:>4}/{tests[key]:<4} at 5%")
        rate = pooled / pooled_tests if pooled_tests else math.nan
        se = math.sqrt(0.05 * 0.95 / pooled_tests) if pooled_tests else math.nan
        print(f"  pooled: {pooled}/{pooled_tests} = {rate:.4f} (MC se at 5%: {se:.4f})")


if __name__ == "__main__":
    main()
