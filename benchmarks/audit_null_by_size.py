"""False-positive rate and power of every per-session flag at 3, 4, 5, 7 and 9 members.

Two data sources, so the audit is not only checked against the simulator it was built
with:

- the independent generator (``tests/generators/independent_council.py``: integer
  scores clipped to 1-10, ties, missing cells, a missing review, shared or per-reviewer
  display orders, per-reviewer noise);
- the simulated council (``llm_council.simulation`` through ``run_full_council`` and
  the real middleware, see ``audit_calibration.py``).

Null settings on the independent generator (all with missing_score_rate 0.1 and
missing_review_rate 0.3): per-reviewer orders and one shared order, each with noise SD
1.0, SD 0.5, and unequal SDs from 0.5 to 2.0 across reviewers. A flag meets its target
when its firing rate is <= 5% + 2 binomial standard errors at 5%. Power scenarios: one
reviewer at -2 (rate at which *that* reviewer is named harsh), self-preference +1.5 in
every reviewer, slot A +2 in every reviewer.

    .venv/bin/python benchmarks/audit_null_by_size.py [--sessions 600] [--seed 1]
        [--sizes 3 4 5 7 9] [--skip-simulator] [--skip-independent]
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import math
import os
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from generators.independent_council import CouncilSpec, generate_sessions  # noqa: E402
from llm_council.bias_audit.session.audit import run_bias_audit  # noqa: E402
from llm_council.bias_audit.session.result import BiasAuditResult  # noqa: E402
from llm_council.bias_audit.session.thresholds import AuditThresholds, load_thresholds  # noqa: E402
from llm_council.infra.log_setup import configure_logging  # noqa: E402

SIZES = (3, 4, 5, 7, 9)
NOMINAL_RATE = 0.05

#: flag name -> whether it fired in one audit
FLAGS: dict[str, Callable[[BiasAuditResult], bool]] = {
    "length": lambda audit: audit.length_bias_detected,
    "position": lambda audit: bool(audit.position_bias_detected),  # None: not tested
    "harsh": lambda audit: bool(audit.harsh_reviewers),
    "generous": lambda audit: bool(audit.generous_reviewers),
    "harsh or generous": lambda audit: bool(audit.harsh_reviewers or audit.generous_reviewers),
    "self-pref": lambda audit: audit.self_preference_detected,
    "risk > low": lambda audit: audit.overall_bias_risk in ("medium", "high"),
    "risk not tested": lambda audit: audit.overall_bias_risk == "not_tested",
}
#: flags held to the nominal rate under the null ("risk > low" is their union)
CALIBRATED_FLAGS = ("length", "position", "harsh or generous", "self-pref")


def ceiling(n_sessions: int) -> float:
    """5% plus two binomial standard errors at 5%: the null target with Monte Carlo slack."""
    return NOMINAL_RATE + 2.0 * math.sqrt(NOMINAL_RATE * (1 - NOMINAL_RATE) / n_sessions)


@dataclass(frozen=True)
class NullSetting:
    """One null configuration of the independent generator, for any council size."""

    name: str
    shared_order: bool
    noise: str  # "1.0", "0.5" or "0.5-2.0" (unequal across reviewers)

    def spec(self, n_members: int, **biases: Any) -> CouncilSpec:
        noise_sds = None
        noise_sd = float(self.noise) if "-" not in self.noise else 1.0
        if "-" in self.noise:
            low, high = (float(part) for part in self.noise.split("-"))
            noise_sds = [low + (high - low) * i / (n_members - 1) for i in range(n_members)]
        return CouncilSpec(
            n_members=n_members,
            noise_sd=noise_sd,
            noise_sds=noise_sds,
            missing_score_rate=0.1,
            missing_review_rate=0.3,
            shared_order=self.shared_order,
            **biases,
        )


NULL_SETTINGS = tuple(
    NullSetting(f"{order}, noise {noise}", shared_order=order == "shared order", noise=noise)
    for order in ("per-reviewer orders", "shared order")
    for noise in ("1.0", "0.5", "0.5-2.0")
)


@dataclass(frozen=True)
class FlagRates:
    """Firing rate of every flag over ``n_sessions`` sessions, plus scenario extras."""

    n_sessions: int
    rates: Mapping[str, float]
    extras: Mapping[str, float] = field(default_factory=dict)


def independent_rates(
    spec: CouncilSpec,
    n_sessions: int,
    seed: int,
    extras: Mapping[str, Callable[[BiasAuditResult], bool]] | None = None,
    *,
    thresholds: AuditThresholds | None = None,
) -> FlagRates:
    """Run the audit on ``n_sessions`` generated sessions and count each flag."""
    thresholds = thresholds or load_thresholds()
    counts = dict.fromkeys(FLAGS, 0)
    extra_counts = dict.fromkeys(extras or {}, 0)
    for session in generate_sessions(spec, n_sessions, seed):
        audit = run_bias_audit(
            session.stage1_responses,
            session.stage2_scores,
            session.position_mapping,
            thresholds=thresholds,
        )
        for name, fired in FLAGS.items():
            counts[name] += fired(audit)
        for name, fired in (extras or {}).items():
            extra_counts[name] += fired(audit)
    return FlagRates(
        n_sessions,
        {name: count / n_sessions for name, count in counts.items()},
        {name: count / n_sessions for name, count in extra_counts.items()},
    )


def null_failures(rates: FlagRates) -> list[str]:
    """The calibrated flags whose null rate is above :func:`ceiling`."""
    limit = ceiling(rates.n_sessions)
    return [name for name in CALIBRATED_FLAGS if rates.rates[name] > limit]


def _harsh_named(audit: BiasAuditResult) -> bool:
    return "judge-0" in audit.harsh_reviewers


def _neutral_labelled(audit: BiasAuditResult) -> bool:
    return bool((set(audit.harsh_reviewers) | set(audit.generous_reviewers)) - {"judge-0"})


#: power scenario name -> (biases for a council of n members, extra per-audit counters)
POWER_SCENARIOS: dict[str, Callable[[int], dict[str, Any]]] = {
    "harsh -2 (judge-0)": lambda n: {"leniency": [-2.0] + [0.0] * (n - 1)},
    "harsh -1.5 (judge-0)": lambda n: {"leniency": [-1.5] + [0.0] * (n - 1)},
    "self-preference +1.5, all": lambda n: {"self_bias": [1.5] * n},
    "slot A +2, all": lambda n: {"slot_effects": [[2.0]] * n},
}
POWER_EXTRAS: dict[str, Callable[[BiasAuditResult], bool]] = {
    "judge-0 named harsh": _harsh_named,
    "a neutral reviewer labelled": _neutral_labelled,
}


def _rate_cells(rates: FlagRates, names: Sequence[str], limit: float | None) -> str:
    cells = []
    for name in names:
        rate = rates.rates.get(name, rates.extras.get(name, math.nan))
        mark = " **!**" if limit is not None and name in CALIBRATED_FLAGS and rate > limit else ""
        cells.append(f"{rate:.1%}{mark}")
    return " | ".join(cells)


def null_table(title: str, rows: Sequence[tuple[str, FlagRates]]) -> str:
    columns = (
        "length",
        "position",
        "harsh",
        "generous",
        "harsh or generous",
        "self-pref",
        "risk > low",
        "risk not tested",
    )
    n_sessions = rows[0][1].n_sessions if rows else 0
    lines = [
        f"{title}: {n_sessions} sessions per row; target per flag <= "
        f"{ceiling(max(n_sessions, 1)):.1%} (5% + 2 SE); **!** marks a miss",
        "",
        "| setting | " + " | ".join(columns) + " |",
        "|---|" + "---|" * len(columns),
    ]
    for label, rates in rows:
        lines.append(f"| {label} | {_rate_cells(rates, columns, ceiling(rates.n_sessions))} |")
    return "\n".join(lines)


def power_table(title: str, rows: Sequence[tuple[str, FlagRates]], columns: Sequence[str]) -> str:
    n_sessions = rows[0][1].n_sessions if rows else 0
    lines = [
        f"{title}: {n_sessions} sessions per row",
        "",
        "| scenario | " + " | ".join(columns) + " |",
        "|---|" + "---|" * len(columns),
    ]
    for label, rates in rows:
        lines.append(f"| {label} | {_rate_cells(rates, columns, None)} |")
    return "\n".join(lines)


def run_independent(
    sizes: Sequence[int], n_sessions: int, seed: int, thresholds: AuditThresholds
) -> tuple[list[tuple[str, FlagRates]], list[tuple[str, FlagRates]]]:
    null_rows: list[tuple[str, FlagRates]] = []
    power_rows: list[tuple[str, FlagRates]] = []
    per_reviewer = NULL_SETTINGS[0]
    for n_members in sizes:
        for index, setting in enumerate(NULL_SETTINGS):
            rates = independent_rates(
                setting.spec(n_members),
                n_sessions,
                seed * 7919 + 100 * n_members + index,
                thresholds=thresholds,
            )
            null_rows.append((f"{n_members} members, {setting.name}", rates))
        for index, (scenario, biases) in enumerate(POWER_SCENARIOS.items()):
            spec = per_reviewer.spec(n_members, **biases(n_members))
            rates = independent_rates(
                spec,
                n_sessions,
                seed * 104729 + 100 * n_members + index,
                POWER_EXTRAS,
                thresholds=thresholds,
            )
            power_rows.append((f"{n_members} members, {scenario}", rates))
        print(f"independent generator: {n_members} members done", file=sys.stderr)
    return null_rows, power_rows


def _load_calibration() -> ModuleType:
    path = ROOT / "benchmarks" / "audit_calibration.py"
    spec = importlib.util.spec_from_file_location("audit_calibration", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def run_simulator(
    sizes: Sequence[int], n_sessions: int, seed: int
) -> tuple[list[tuple[str, FlagRates]], list[tuple[str, FlagRates]]]:
    calibration = _load_calibration()
    power_names = {"harsh", "position+2", "self-pref all"}
    scenarios = [calibration.NULL_SCENARIO] + [
        s for s in calibration.BIASED_SCENARIOS if s.name in power_names
    ]
    null_rows: list[tuple[str, FlagRates]] = []
    power_rows: list[tuple[str, FlagRates]] = []
    for n_members in sizes:
        for offset, scenario in enumerate(scenarios):
            raw = asyncio.run(
                calibration.run_scenario(
                    scenario, n_sessions, seed * 31 + 10 * n_members + offset, n_members=n_members
                )
            )
            rates = FlagRates(
                n_sessions,
                {
                    "length": raw["length"],
                    "position": raw["position"],
                    "harsh": raw["harsh"],
                    "generous": raw["generous"],
                    "harsh or generous": raw["harsh or generous"],
                    "self-pref": raw["self-pref"],
                    "risk > low": raw["risk > low"],
                    "risk not tested": raw["risk not tested"],
                },
                {"judge-0 named harsh": raw["harsh = m0"]},
            )
            description = (
                "unbiased members (no bias)"
                if scenario is calibration.NULL_SCENARIO
                else scenario.description
            )
            row = (f"{n_members} members, {description}", rates)
            (null_rows if scenario is calibration.NULL_SCENARIO else power_rows).append(row)
        print(f"simulator: {n_members} members done", file=sys.stderr)
    return null_rows, power_rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=600)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES))
    parser.add_argument("--skip-simulator", action="store_true")
    parser.add_argument("--skip-independent", action="store_true")
    parser.add_argument("--simulator-sessions", type=int, default=None)
    parser.add_argument(
        "--equal-reviewer-noise",
        action="store_true",
        help="pooled t tests (AuditThresholds.equal_reviewer_noise) instead of per-reviewer noise",
    )
    args = parser.parse_args()
    configure_logging(level="ERROR")
    started = time.perf_counter()
    thresholds = load_thresholds().model_copy(
        update={"equal_reviewer_noise": args.equal_reviewer_noise}
    )
    print(f"equal_reviewer_noise = {thresholds.equal_reviewer_noise}")
    failures: list[str] = []
    if not args.skip_independent:
        null_rows, power_rows = run_independent(args.sizes, args.sessions, args.seed, thresholds)
        print(null_table("Independent generator, no bias", null_rows))
        print()
        power_columns = (
            "judge-0 named harsh",
            "a neutral reviewer labelled",
            "self-pref",
            "position",
            "risk > low",
        )
        print(power_table("Independent generator, injected bias", power_rows, power_columns))
        failures += [label for label, rates in null_rows if null_failures(rates)]
    if not args.skip_simulator:
        with tempfile.TemporaryDirectory() as scratch:
            os.environ["LLM_COUNCIL_BIAS_STORE"] = os.path.join(scratch, "bias_records.jsonl")
            sim_null, sim_power = run_simulator(
                args.sizes, args.simulator_sessions or args.sessions, args.seed
            )
        print()
        print(null_table("Simulated council, 'unbiased' members", sim_null))
        print()
        columns = ("judge-0 named harsh", "self-pref", "position", "risk > low")
        print(power_table("Simulated council, injected bias (m0 = judge-0)", sim_power, columns))
        failures += [label for label, rates in sim_null if null_failures(rates)]
    print(f"\n{time.perf_counter() - started:.0f} s", file=sys.stderr)
    if failures:
        print("null target missed in: " + "; ".join(failures), file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
