"""Calibration of the bias audit on the simulated council (ground truth known).

Runs full simulated-council sessions (``run_full_council`` with the real
``BiasAuditMiddleware``) and counts how often each flag fires:

1. the null council: 5 members of profile ``unbiased`` (no bias, i.i.d. noise). Target:
   each flag fires in <= 5% of sessions + Monte Carlo error (1.96 standard errors), and
   ``overall_bias_risk`` is "low" or "not_tested" (no risk flag) in >= 85%, and the
   share of "not_tested" sessions (no risk test could run) is printed;
2. injected biases, one scenario each: a harsh reviewer (member m0, leniency -2); a
   primacy effect of +1 / +2 points at slot A in *all* reviewers; verbosity 1.5 points
   per log-length unit in all reviewers; self-preference +1.5 in all reviewers and in
   one (m0). It prints every flag's detection rate.

Both tables are printed as markdown.

    .venv/bin/python benchmarks/audit_calibration.py [--sessions 2000] [--seed 1]
        [--significance 0.0125]
"""

from __future__ import annotations

import argparse
import asyncio
import math
import os
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from llm_council import CouncilConfig, CouncilMember, run_full_council
from llm_council.bias_audit.middleware import BiasAuditMiddleware
from llm_council.infra.log_setup import configure_logging

N_MEMBERS = 5
NOMINAL_RATE = 0.05
MIN_LOW_RISK = 0.85


@dataclass(frozen=True)
class Scenario:
    """A council with known injected biases: member name -> profile option overrides."""

    name: str
    description: str
    options: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)


#: the largest council the by-size benchmark (audit_null_by_size.py) runs
MAX_MEMBERS = 9


def _all_members(**options: Any) -> dict[str, dict[str, Any]]:
    # options for members a smaller council does not have are ignored by council_for
    return {f"m{i}": dict(options) for i in range(MAX_MEMBERS)}


NULL_SCENARIO = Scenario("null", "5 x unbiased (no bias)")
BIASED_SCENARIOS = (
    Scenario("harsh", "m0 leniency -2", {"m0": {"leniency": -2.0}}),
    Scenario("position+1", "slot A +1, all reviewers", _all_members(position_effects=[1.0])),
    Scenario("position+2", "slot A +2, all reviewers", _all_members(position_effects=[2.0])),
    Scenario("verbosity", "verbosity 1.5, all reviewers", _all_members(verbosity=1.5)),
    Scenario("self-pref all", "self-preference +1.5, all", _all_members(self_preference=1.5)),
    Scenario("self-pref one", "self-preference +1.5, m0 only", {"m0": {"self_preference": 1.5}}),
)

#: column name -> what counts as "fired" in one session's audit dict
FLAGS: dict[str, Callable[[Mapping[str, Any]], bool]] = {
    "length": lambda audit: bool(audit["length_bias_detected"]),
    "position": lambda audit: bool(audit["position_bias_detected"]),
    "position p<α": lambda audit: (
        audit["position_score_p_value"] is not None
        and audit["position_score_p_value"] < audit["significance_level"]
    ),
    "harsh": lambda audit: bool(audit["harsh_reviewers"]),
    "generous": lambda audit: bool(audit["generous_reviewers"]),
    "harsh or generous": lambda audit: bool(
        audit["harsh_reviewers"] or audit["generous_reviewers"]
    ),
    "self-pref": lambda audit: bool(audit["self_preference_detected"]),
    "risk > low": lambda audit: audit["overall_bias_risk"] in ("medium", "high"),
    "risk not tested": lambda audit: audit["overall_bias_risk"] == "not_tested",
}
#: flags whose null firing rate must stay within the nominal 5%
CALIBRATED_FLAGS = ("length", "position", "harsh", "generous", "self-pref")


def council_for(scenario: Scenario, n_members: int = N_MEMBERS) -> CouncilConfig:
    members = tuple(
        CouncilMember(
            name=f"m{i}",
            spec="simulated:unbiased",
            options=dict(scenario.options.get(f"m{i}", {})),
        )
        for i in range(n_members)
    )
    return CouncilConfig(
        members=members, chairman=CouncilMember(name="chair", spec="simulated:unbiased")
    )


async def run_scenario(
    scenario: Scenario,
    n_sessions: int,
    seed: int,
    on_session: Callable[[], None] | None = None,
    *,
    n_members: int = N_MEMBERS,
) -> dict[str, float]:
    """Fraction of sessions in which each flag of :data:`FLAGS` fired, plus named-harsh rate.

    Scenario options name members m0, m1, ...; options for members the council of
    ``n_members`` does not have are ignored.
    """
    config = council_for(scenario, n_members)
    middleware = BiasAuditMiddleware()
    counts = dict.fromkeys(FLAGS, 0)
    harsh_named = 0
    errors = 0
    for index in range(n_sessions):
        result = await run_full_council(
            f"calibration question {index}",
            config=config,
            seed=seed * 1_000_003 + index,
            middleware=[middleware],
        )
        audit = result.metadata.get("bias_audit")
        if audit is None:
            errors += 1
            continue
        for name, fired in FLAGS.items():
            counts[name] += fired(audit)
        harsh_named += audit["harsh_reviewers"] == ["m0"]
        if on_session is not None:
            on_session()
    if errors:
        raise RuntimeError(f"{scenario.name}: the audit failed in {errors} sessions")
    rates = {name: count / n_sessions for name, count in counts.items()}
    rates["harsh = m0"] = harsh_named / n_sessions
    return rates


def monte_carlo_margin(rate: float, n_sessions: int) -> float:
    """1.96 binomial standard errors at ``rate``: the allowance for simulation noise."""
    return 1.96 * math.sqrt(rate * (1 - rate) / n_sessions)


def null_checks(rates: Mapping[str, float], n_sessions: int) -> dict[str, bool]:
    """Which calibration targets hold for the null council."""
    ceiling = NOMINAL_RATE + monte_carlo_margin(NOMINAL_RATE, n_sessions)
    checks = {name: rates[name] <= ceiling for name in CALIBRATED_FLAGS}
    low_floor = MIN_LOW_RISK - monte_carlo_margin(MIN_LOW_RISK, n_sessions)
    checks["risk low"] = 1 - rates["risk > low"] >= low_floor
    return checks


def null_table(rates: Mapping[str, float], n_sessions: int) -> str:
    ceiling = NOMINAL_RATE + monte_carlo_margin(NOMINAL_RATE, n_sessions)
    checks = null_checks(rates, n_sessions)
    lines = [
        f"Null council ({NULL_SCENARIO.description}), {n_sessions} sessions; target per flag "
        f"<= {ceiling:.1%} (5% + 1.96 SE), no risk flag (low or not_tested) >= 85%",
        "",
        "| flag | firing rate | ± 1.96 SE | target met |",
        "|---|---|---|---|",
    ]
    for name in (*CALIBRATED_FLAGS, "position p<α"):
        rate = rates[name]
        met = "yes" if checks.get(name, True) else "NO"
        if name not in checks:
            met = "(info: no variance floor)"
        lines.append(
            f"| {name} | {rate:.1%} | {monte_carlo_margin(rate, n_sessions):.1%} | {met} |"
        )
    low = 1 - rates["risk > low"]
    lines.append(
        f"| overall_bias_risk = low or not_tested | {low:.1%} | "
        f"{monte_carlo_margin(low, n_sessions):.1%} | {'yes' if checks['risk low'] else 'NO'} |"
    )
    untested = rates["risk not tested"]
    lines.append(
        f"| overall_bias_risk = not_tested | {untested:.1%} | "
        f"{monte_carlo_margin(untested, n_sessions):.1%} | (info) |"
    )
    return "\n".join(lines)


def detection_table(results: list[tuple[Scenario, dict[str, float]]], n_sessions: int) -> str:
    columns = (
        "length",
        "position",
        "position p<α",
        "harsh",
        "harsh = m0",
        "generous",
        "self-pref",
        "risk > low",
    )
    lines = [
        f"Detection rates with injected biases, {n_sessions} sessions per scenario "
        "(5 x unbiased members plus the bias named)",
        "",
        "| scenario | " + " | ".join(columns) + " |",
        "|---|" + "---|" * len(columns),
    ]
    for scenario, rates in results:
        cells = " | ".join(f"{rates[column]:.1%}" for column in columns)
        lines.append(f"| {scenario.description} | {cells} |")
    return "\n".join(lines)


async def run_all(
    n_sessions: int, seed: int
) -> tuple[dict[str, float], list[tuple[Scenario, dict[str, float]]]]:
    started = time.perf_counter()
    null_rates = await run_scenario(NULL_SCENARIO, n_sessions, seed)
    null_elapsed = time.perf_counter() - started
    print(
        f"null council: {n_sessions} sessions in {null_elapsed:.1f} s "
        f"({null_elapsed / n_sessions * 1000:.1f} ms per audited session)",
        file=sys.stderr,
    )
    biased: list[tuple[Scenario, dict[str, float]]] = []
    for offset, scenario in enumerate(BIASED_SCENARIOS, start=1):
        biased.append((scenario, await run_scenario(scenario, n_sessions, seed + offset)))
        print(f"{scenario.name}: done", file=sys.stderr)
    return null_rates, biased


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--significance",
        type=float,
        default=None,
        help="override LLM_COUNCIL_SIGNIFICANCE_LEVEL (the flags' alpha) for this run",
    )
    args = parser.parse_args()
    configure_logging(level="ERROR")
    if args.significance is not None:
        os.environ["LLM_COUNCIL_SIGNIFICANCE_LEVEL"] = str(args.significance)
    with tempfile.TemporaryDirectory() as scratch:
        # the audit appends its records to a scratch store, not the user's
        os.environ["LLM_COUNCIL_BIAS_STORE"] = os.path.join(scratch, "bias_records.jsonl")
        null_rates, biased = asyncio.run(run_all(args.sessions, args.seed))
    alpha = os.environ.get("LLM_COUNCIL_SIGNIFICANCE_LEVEL", "default (0.05)")
    print(f"significance level: {alpha}")
    print(null_table(null_rates, args.sessions))
    print()
    print(detection_table(biased, args.sessions))
    return 0 if all(null_checks(null_rates, args.sessions).values()) else 1


if __name__ == "__main__":
    sys.exit(main())
