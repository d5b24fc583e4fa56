"""Issue 24's power table: false flags and power of the per-session audit, before and after.

Three audits of the same sessions:

- **before**: session-only per-reviewer noise (ADR 0017; ``moderate_reviewer_noise=False``);
- **after, no history**: each reviewer's session variance moderated toward the default
  prior (ADR 0045);
- **after, 30 sessions**: moderated toward the reviewer's own profile from 30 earlier
  sessions of the same council (drawn fresh for every audited session, summed exactly as
  the store's sidecar sums them: ``reviewer_profiles.session_profiles``).

Two generators: the independent one written for the tests
(``tests/generators/independent_council.py``: integer scores clipped to 1-10, ties,
per-reviewer shuffled orders, 10% missing cells) and the simulator
(``llm_council.simulation.simulated_records.simulate_record_columns``). Honest judges'
noise SDs spread evenly from 0.5 to 1.5 points across the council. Null cells give the
rate at which each flag fires (target: <= 5% + 2 binomial SE); power cells the rate at
which the bias is named: judge 0 harsh by 4 or 2 points (judge 0 named harsh), every
judge +1.5 on its own answer (self-preference flag), every judge +2 on the answer shown
first (position flag). Also the audit's cost per session at 5 members with history;
``--cost-trees`` measures only the cost, source trees side by side in one run
(``benchmarks/audit_cost_trees.py``: 3, 5 and 9 members, seeds 1 and 2, interleaved).

    PYTHONPATH=src .venv/bin/python benchmarks/audit_power_history.py [--sessions 200]
        [--seed 1] [--history 30] [--sizes 3 4 5 7 9]
    PYTHONPATH=src .venv/bin/python benchmarks/audit_power_history.py \
        --cost-trees /tmp/cost-base . [--cost-sizes 3 5 9] [--cost-sessions 1000]
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from generators.independent_council import CouncilSpec, generate_session  # noqa: E402
from llm_council.bias_audit.records.reviewer_profiles import (  # noqa: E402
    Profiles,
    merge_profiles,
    session_profiles,
)
from llm_council.bias_audit.session.audit import audit_score_table  # noqa: E402
from llm_council.bias_audit.session.result import BiasAuditResult  # noqa: E402
from llm_council.bias_audit.session.score_table import (  # noqa: E402
    ScoreTable,
    score_table_from_mappings,
)
from llm_council.bias_audit.session.thresholds import AuditThresholds  # noqa: E402
from llm_council.simulation.profile import SimulatedProfile  # noqa: E402
from llm_council.simulation.simulated_records import simulate_record_columns  # noqa: E402

NULL_SIZES = (3, 4, 5, 7, 9)
POWER_SIZES = (3, 4, 5)
MISSING_SCORE_RATE = 0.0  # --missing sets it
MODES = ("before", "after, no history", "after, 30 sessions")
BEFORE = AuditThresholds(moderate_reviewer_noise=False)
AFTER = AuditThresholds()

#: a function drawing one session's table from a generator state
Draw = Callable[[np.random.Generator], ScoreTable]


def noise_sds(n_members: int) -> list[float]:
    return np.linspace(0.5, 1.5, n_members).tolist()


def independent_draw(n_members: int, **biases: object) -> Draw:
    spec = CouncilSpec(
        n_members=n_members,
        noise_sds=noise_sds(n_members),
        missing_score_rate=MISSING_SCORE_RATE,
        **biases,  # type: ignore[arg-type]
    )

    def draw(rng: np.random.Generator) -> ScoreTable:
        session = generate_session(spec, rng)
        return score_table_from_mappings(
            session.stage1_responses, session.stage2_scores, session.position_mapping
        )

    return draw


def simulator_draw(n_members: int, **biases: object) -> Draw:
    members = [f"sim-{index}" for index in range(n_members)]
    leniency = biases.get("leniency") or [0.0] * n_members
    self_bias = biases.get("self_bias") or [0.0] * n_members
    slots = biases.get("slot_effects") or [()] * n_members
    profiles = [
        SimulatedProfile(
            noise_sd=sd,
            leniency=float(leniency[index]),  # type: ignore[index]
            self_preference=float(self_bias[index]),  # type: ignore[index]
            position_effects=tuple(slots[index]),  # type: ignore[index]
        )
        for index, sd in enumerate(noise_sds(n_members))
    ]

    def draw(rng: np.random.Generator) -> ScoreTable:
        columns = simulate_record_columns(profiles, 1, rng, missing_score_rate=MISSING_SCORE_RATE)
        return table_from_columns(columns, members)

    return draw


def table_from_columns(columns: Any, members: Sequence[str]) -> ScoreTable:
    """One simulated session's record columns as the audit's score table."""
    n_members = len(members)
    shape = (n_members, n_members)
    scores = np.full(shape, np.nan)
    positions = np.full(shape, -1, dtype=np.intp)
    is_self = np.zeros(shape, dtype=bool)
    reviewer, model = columns.reviewer_index, columns.model_index
    scores[reviewer, model] = columns.score
    positions[reviewer, model] = columns.position
    is_self[reviewer, model] = columns.is_self_review
    words = np.zeros(n_members)
    chars = np.zeros(n_members)
    words[model] = columns.length_words
    chars[model] = columns.length_chars
    return ScoreTable(tuple(members), tuple(members), scores, positions, is_self, chars, words)


def table_profiles(table: ScoreTable) -> Profiles:
    """The session's contribution to its reviewers' profiles (the store's own sums)."""
    rows, columns = np.nonzero(~np.isnan(table.scores) & ~table.is_self)
    return session_profiles(
        (
            table.reviewers[r],
            table.candidates[c],
            float(table.scores[r, c]),
            int(table.positions[r, c]) if table.positions[r, c] >= 0 else None,
        )
        for r, c in zip(rows.tolist(), columns.tolist(), strict=True)
    )


def audits(
    draw: Draw, n_sessions: int, n_history: int, seed: int
) -> dict[str, list[BiasAuditResult]]:
    """Every mode's audit of the same ``n_sessions`` sessions."""
    rng = np.random.default_rng(seed)
    results: dict[str, list[BiasAuditResult]] = {mode: [] for mode in MODES}
    for _ in range(n_sessions):
        history: Profiles = {}
        for _ in range(n_history):
            history = merge_profiles(history, table_profiles(draw(rng)))
        table = draw(rng)
        results["before"].append(audit_score_table(table, BEFORE))
        results["after, no history"].append(audit_score_table(table, AFTER))
        results["after, 30 sessions"].append(audit_score_table(table, AFTER, history=history))
    return results


def rate(hits: Sequence[bool]) -> float:
    return sum(hits) / len(hits)


def ceiling(n_sessions: int) -> float:
    return 0.05 + 2.0 * math.sqrt(0.05 * 0.95 / n_sessions)


NULL_FLAGS: dict[str, Callable[[BiasAuditResult], bool]] = {
    "harsh or generous": lambda a: bool(a.harsh_reviewers or a.generous_reviewers),
    "self-pref": lambda a: a.self_preference_detected,
    # None when position was not tested (ADR 0039): not a flag
    "position": lambda a: bool(a.position_bias_detected),
}


def _harsh_named(audit: BiasAuditResult) -> bool:
    return audit.harsh_reviewers[:1] != [] and any(
        name.endswith("-0") for name in audit.harsh_reviewers
    )


#: name -> (biases for the generators, what counts as named)
POWER: dict[str, tuple[Callable[[int], dict[str, object]], Callable[[BiasAuditResult], bool]]] = {
    "judge 4 points harsh": (lambda n: {"leniency": [-4.0] + [0.0] * (n - 1)}, _harsh_named),
    "judge 2 points harsh": (lambda n: {"leniency": [-2.0] + [0.0] * (n - 1)}, _harsh_named),
    "self-preference +1.5": (
        lambda n: {"self_bias": [1.5] * n},
        lambda a: a.self_preference_detected,
    ),
    "slot A +2": (
        lambda n: {"slot_effects": [[2.0]] * n},
        lambda a: bool(a.position_bias_detected),
    ),
}

GENERATORS: dict[str, Callable[..., Draw]] = {
    "independent": independent_draw,
    "simulator": simulator_draw,
}


def null_table(n_sessions: int, n_history: int, seed: int, sizes: Sequence[int]) -> str:
    limit = ceiling(n_sessions)
    lines = [
        f"False flags per flag, honest judges (noise SD 0.5-1.5), {n_sessions} sessions a cell, "
        f"target <= {limit:.1%} (5% + 2 SE; '!' marks a miss)",
        "",
        "| generator | members | flag | " + " | ".join(MODES) + " |",
        "|---|---|---|" + "---|" * len(MODES),
    ]
    for generator, make in GENERATORS.items():
        for n_members in sizes:
            results = audits(make(n_members), n_sessions, n_history, seed + n_members)
            for flag, fired in NULL_FLAGS.items():
                cells = []
                for mode in MODES:
                    value = rate([fired(audit) for audit in results[mode]])
                    cells.append(f"{value:.1%}" + (" !" if value > limit else ""))
                lines.append(f"| {generator} | {n_members} | {flag} | " + " | ".join(cells) + " |")
            print(f"null {generator} {n_members} done", file=sys.stderr)
    return "\n".join(lines)


def power_table(n_sessions: int, n_history: int, seed: int, sizes: Sequence[int]) -> str:
    lines = [
        f"Power: how often the bias is named, {n_sessions} sessions a cell",
        "",
        "| generator | bias | members | " + " | ".join(MODES) + " |",
        "|---|---|---|" + "---|" * len(MODES),
    ]
    for generator, make in GENERATORS.items():
        for bias, (biases, named) in POWER.items():
            for n_members in sizes:
                draw = make(n_members, **biases(n_members))
                results = audits(draw, n_sessions, n_history, seed + 100 + n_members)
                cells = [f"{rate([named(a) for a in results[mode]]):.1%}" for mode in MODES]
                lines.append(f"| {generator} | {bias} | {n_members} | " + " | ".join(cells) + " |")
            print(f"power {generator} {bias} done", file=sys.stderr)
    return "\n".join(lines)


def reference_example() -> str:
    """The reference design's extreme example: both extreme judges should be named."""
    from llm_council.bias_audit.session.audit import run_bias_audit

    texts = {"A": "one", "B": "two", "C": "three"}
    scores = {
        "harsh": {"A": 1, "B": 2, "C": 3},
        "generous": {"A": 9, "B": 10, "C": 10},
        "normal": {"A": 4, "B": 6, "C": 8},
    }
    lines = []
    for mode, thresholds in (("before", BEFORE), ("after", AFTER)):
        audit = run_bias_audit(texts, scores, thresholds=thresholds)
        lines.append(
            f"- {mode}: harsh {audit.harsh_reviewers}, generous {audit.generous_reviewers}, "
            f"risk {audit.overall_bias_risk!r}"
        )
    return "Reference example (harsh 1,2,3; generous 9,10,10; normal 4,6,8):\n" + "\n".join(lines)


def audit_cost(n_history: int, seed: int, repeats: int = 2000) -> str:
    """Median seconds of ``audit_score_table`` at 5 members with a 30-session history."""
    rng = np.random.default_rng(seed)
    draw = independent_draw(5)
    history: Profiles = {}
    for _ in range(n_history):
        history = merge_profiles(history, table_profiles(draw(rng)))
    tables = [draw(rng) for _ in range(repeats)]
    for table in tables[:50]:  # warm the per-pattern caches, as a running council has
        audit_score_table(table, AFTER, history=history)
    timings, cpu_timings = [], []
    for table in tables:
        start, cpu_start = time.perf_counter(), time.thread_time()
        audit_score_table(table, AFTER, history=history)
        cpu_timings.append(time.thread_time() - cpu_start)
        timings.append(time.perf_counter() - start)
    timings.sort()
    cpu_timings.sort()
    median, p95 = timings[len(timings) // 2], timings[int(len(timings) * 0.95)]
    # the thread's CPU seconds: what the audit costs whatever else runs on the machine
    cpu_median = cpu_timings[len(cpu_timings) // 2]
    return (
        f"Audit cost at 5 members with history ({MISSING_SCORE_RATE:.0%} missing cells): median "
        f"{median * 1e3:.2f} ms, 95th percentile {p95 * 1e3:.2f} ms over {repeats} sessions "
        f"(CPU median {cpu_median * 1e3:.2f} ms)"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=200)
    parser.add_argument("--history", type=int, default=30)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--sizes", type=int, nargs="+", default=list(NULL_SIZES))
    parser.add_argument("--missing", type=float, default=0.0, help="missing-cell rate")
    parser.add_argument("--skip-null", action="store_true")
    parser.add_argument("--prior-sd", type=float, default=None, help="prior_noise_sd to use")
    parser.add_argument(
        "--cost-trees",
        type=Path,
        nargs="+",
        default=None,
        help="only the cost, these source trees side by side (benchmarks/audit_cost_trees.py)",
    )
    parser.add_argument("--cost-sizes", type=int, nargs="+", default=[3, 5, 9])
    parser.add_argument("--cost-seeds", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--cost-sessions", type=int, default=1000)
    args = parser.parse_args()
    if args.cost_trees:
        from audit_cost_trees import table as trees_table

        print(trees_table(args.cost_trees, args.cost_sizes, args.cost_seeds, args.cost_sessions))
        return 0
    global MISSING_SCORE_RATE, AFTER
    MISSING_SCORE_RATE = args.missing
    if args.prior_sd is not None:
        AFTER = AuditThresholds(prior_noise_sd=args.prior_sd)
        print(f"prior_noise_sd = {args.prior_sd}")
    print(reference_example())
    print()
    print(audit_cost(args.history, args.seed))
    print()
    print(power_table(args.sessions, args.history, args.seed, [s for s in args.sizes if s <= 5]))
    if not args.skip_null:
        print()
        print(null_table(args.sessions, args.history, args.seed, args.sizes))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
