"""Issue 34 item 2: honest councils whose stored history was written with different noise.

A judge's noise changes when its model is updated; the per-session audit moderates each
reviewer's noise toward its history (ADR 0045), so a history written with other noise
makes an honest council look biased. Four histories, each 30 sessions, against honest
sessions (no bias at all) drawn with:

- **unchanged**: the history's noise (SDs spread 0.5-1.5 across the council);
- **one judge 0.5 -> 2.0**: judge 0's SD was 0.5 in the history and is 2.0 now;
- **all x4/3**: every judge's SD is 4/3 of the history's;
- **reversed**: the SDs reversed (the quietest judge is now the noisiest).

Each cell draws 100 independent histories (``--history-pool``; summed exactly as the
store's sidecar sums them: ``reviewer_profiles.session_profiles``) and session i reads
history i % 100, which keeps 1,000 sessions a cell affordable on a shared machine.
Columns: the share of sessions with any risk flag (today's per-flag rule), each risk
family's false-flag rate (leniency, self-preference, position: the session-level gate
another change adds needs each <= 5% + 2 SE), and how often judge 0 is named (harsh,
generous or self-preferring).
Modes: **before** (ADR 0045/0047: history prior df uncapped, no drift check) and
**after** (the defaults: history prior df capped at ``history_prior_df_max``, ADR 0051;
each reviewer's noise screened against its history, upper tail at ``noise_drift_level``,
then the kept reviewers together at ``noise_drift_council_level``, ADR 0059);
``--variants`` adds the grid ADR 0059's choice rests on, the slot test's guards against a
stale history (``slot_history_guard``, ADR 0059's amendment) and "before ADR 0059" (ADR
0051's check with ``F(k, min df)``); ``--modes`` picks modes by name.
Then the power kept with an unchanged history: judge 0 1.0 point harsh,
self-preference +1.0 on every judge. Two generators: the independent one of the tests
(integer scores clipped to 1-10, per-reviewer shuffled orders) and the simulator.

    PYTHONPATH=src nice .venv/bin/python benchmarks/history_drift.py [--sessions 1000]
        [--seed 1] [--sizes 3 5 7] [--variants]
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from audit_power_history import table_from_columns  # noqa: E402

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

N_HISTORY = 30
#: distinct histories per cell (``--history-pool``; session i reads history i % pool)
HISTORY_POOL = 100
BEFORE = AuditThresholds(
    history_prior_df_max=math.inf,
    noise_drift_level=0.0,
    noise_drift_council_level=0.0,
    history_session_check="off",
)
AFTER = AuditThresholds()
#: ADR 0051's check (two-sided at 0.2, no council-wide test) with today's other code
ADR_0051 = AuditThresholds(
    noise_drift_level=0.2,
    noise_drift_alternative="two-sided",
    noise_drift_council_level=0.0,
    history_session_check="off",
)
MODES: dict[str, AuditThresholds] = {"before": BEFORE, "after": AFTER}
#: (history_prior_df_max, noise_drift_level, noise_drift_alternative,
#: noise_drift_council_level) of ``--variants``: ADR 0059's grid
VARIANTS = [(10.0, 0.2, "two-sided", 0.0), (10.0, 0.2, "greater", 0.0),
            (10.0, 0.3, "greater", 0.0), (10.0, 0.5, "greater", 0.0),
            (10.0, 0.7, "greater", 0.0), (5.0, 0.5, "greater", 0.0),
            (10.0, 0.5, "two-sided", 0.0), (10.0, 0.5, "greater", 0.1),
            (10.0, 0.3, "greater", 0.2)]  # fmt: skip

#: a function drawing one session's table from a generator state
Draw = Callable[[np.random.Generator], ScoreTable]


def history_sds(n_members: int) -> list[float]:
    return np.linspace(0.5, 1.5, n_members).tolist()


#: scenario -> the session's noise SDs from the history's
SCENARIOS: dict[str, Callable[[list[float]], list[float]]] = {
    "unchanged": lambda sds: sds,
    "one judge 0.5 -> 2.0": lambda sds: [2.0] + sds[1:],
    "all x4/3": lambda sds: [sd * 4.0 / 3.0 for sd in sds],
    "reversed": lambda sds: sds[::-1],
}


def independent_draw(sds: Sequence[float], **biases: object) -> Draw:
    spec = CouncilSpec(n_members=len(sds), noise_sds=list(sds), **biases)  # type: ignore[arg-type]

    def draw(rng: np.random.Generator) -> ScoreTable:
        session = generate_session(spec, rng)
        return score_table_from_mappings(
            session.stage1_responses, session.stage2_scores, session.position_mapping
        )

    return draw


def simulator_draw(sds: Sequence[float], **biases: object) -> Draw:
    n_members = len(sds)
    members = [f"sim-{index}" for index in range(n_members)]
    leniency = biases.get("leniency") or [0.0] * n_members
    self_bias = biases.get("self_bias") or [0.0] * n_members
    profiles = [
        SimulatedProfile(
            noise_sd=sd,
            leniency=float(leniency[index]),  # type: ignore[index]
            self_preference=float(self_bias[index]),  # type: ignore[index]
        )
        for index, sd in enumerate(sds)
    ]

    def draw(rng: np.random.Generator) -> ScoreTable:
        columns = simulate_record_columns(profiles, 1, rng, missing_score_rate=0.0)
        return table_from_columns(columns, members)

    return draw


GENERATORS: dict[str, Callable[..., Draw]] = {
    "independent": independent_draw,
    "simulator": simulator_draw,
}


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
    history_draw: Draw,
    session_draw: Draw,
    modes: Mapping[str, AuditThresholds],
    n_sessions: int,
    seed: int,
    n_history: int = N_HISTORY,
    history_pool: int | None = None,
) -> dict[str, list[BiasAuditResult]]:
    """Every mode's audit of the same ``n_sessions`` sessions. Session i reads history
    ``i % history_pool`` of a pool drawn first (default: one fresh history per session);
    a pool keeps the run affordable on a shared machine, each history is still an
    independent draw of ``n_history`` sessions."""
    rng = np.random.default_rng(seed)
    pool_size = n_sessions if history_pool is None else min(history_pool, n_sessions)
    histories: list[Profiles] = []
    for _ in range(pool_size):
        history: Profiles = {}
        for _ in range(n_history):
            history = merge_profiles(history, table_profiles(history_draw(rng)))
        histories.append(history)
    results: dict[str, list[BiasAuditResult]] = {mode: [] for mode in modes}
    for index in range(n_sessions):
        table = session_draw(rng)
        for mode, thresholds in modes.items():
            results[mode].append(
                audit_score_table(table, thresholds, history=histories[index % pool_size])
            )
    return results


#: the three risk families the session gate combines
FAMILIES: dict[str, Callable[[BiasAuditResult], bool]] = {
    "leniency": lambda a: bool(a.harsh_reviewers or a.generous_reviewers),
    "self-pref": lambda a: bool(a.self_preference_detected),
    "position": lambda a: bool(a.position_bias_detected),
}


def _judge_zero_named(audit: BiasAuditResult) -> bool:
    named = audit.harsh_reviewers + audit.generous_reviewers + audit.self_preferring_reviewers
    return any(name.endswith("-0") for name in named)


@dataclass(frozen=True)
class NullRates:
    """One cell's rates over its sessions."""

    any_flag: float
    families: dict[str, float]
    judge_zero_named: float

    @property
    def largest_family(self) -> tuple[str, float]:
        return max(self.families.items(), key=lambda item: item[1])


def null_rates(results: Sequence[BiasAuditResult]) -> NullRates:
    count = len(results)
    return NullRates(
        sum(bool(a.risk_flags) for a in results) / count,
        {name: sum(fired(a) for a in results) / count for name, fired in FAMILIES.items()},
        sum(_judge_zero_named(a) for a in results) / count,
    )


def ceiling(n_sessions: int) -> float:
    return 0.05 + 2.0 * math.sqrt(0.05 * 0.95 / n_sessions)


def drift_table(
    n_sessions: int, seed: int, sizes: Sequence[int], modes: Mapping[str, AuditThresholds]
) -> str:
    limit = ceiling(n_sessions)
    lines = [
        f"Honest councils, 30 sessions of history, {n_sessions} sessions a cell; any flag: "
        f"share of sessions with a risk flag; largest family: the highest of leniency / "
        f"self-preference / position (target <= {limit:.1%} = 5% + 2 SE, '!' marks a miss); "
        "judge 0 named: harsh, generous or self-preferring",
        "",
        "| generator | history -> session | members | mode | any flag | largest family "
        "| leniency / self-pref / position | judge 0 named |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for generator, make in GENERATORS.items():
        for scenario, change in SCENARIOS.items():
            for n_members in sizes:
                sds = history_sds(n_members)
                results = audits(
                    make(sds),
                    make(change(sds)),
                    modes,
                    n_sessions,
                    seed + n_members,
                    history_pool=HISTORY_POOL,
                )
                for mode in modes:
                    rates = null_rates(results[mode])
                    family, largest = rates.largest_family
                    mark = " !" if largest > limit else ""
                    split = " / ".join(f"{value:.1%}" for value in rates.families.values())
                    lines.append(
                        f"| {generator} | {scenario} | {n_members} | {mode} | "
                        f"{rates.any_flag:.1%} | {largest:.1%} ({family}){mark} | {split} | "
                        f"{rates.judge_zero_named:.1%} |"
                    )
                print(f"drift {generator} {scenario} {n_members} done", file=sys.stderr)
                print(lines[-len(modes) :], file=sys.stderr)  # a long run shows its cells
    return "\n".join(lines)


@dataclass
class FlagBreakdown:
    """Why honest sessions of one cell read above "low": counts over its sessions."""

    sessions: int = 0
    any_flag: int = 0
    leniency_judge_zero: int = 0
    leniency_others_only: int = 0
    self_preference: int = 0
    position: int = 0
    #: judge 0 kept by the main fit's screen (history used), and among those, flagged
    judge_zero_kept: int = 0
    judge_zero_kept_flagged: int = 0
    #: judge 0 moved by the screen, and among those, flagged
    judge_zero_moved_flagged: int = 0
    #: the position test ran with history (the Wald path) and judge 0 was kept there
    slot_judge_zero_kept: int = 0
    screen_dfs: list[float] | None = None

    def row(self, label: str) -> str:
        n = self.sessions
        moved = n - self.judge_zero_kept
        dfs = np.array(self.screen_dfs or [np.nan])
        return (
            f"| {label} | {self.any_flag / n:.1%} | {self.leniency_judge_zero / n:.1%} | "
            f"{self.leniency_others_only / n:.1%} | {self.self_preference / n:.1%} | "
            f"{self.position / n:.1%} | {self.judge_zero_kept / n:.1%} | "
            f"{self.judge_zero_kept_flagged / max(1, self.judge_zero_kept):.1%} | "
            f"{self.judge_zero_moved_flagged / max(1, moved):.1%} | "
            f"{self.slot_judge_zero_kept / n:.1%} | "
            f"{np.nanmedian(dfs):.2f} ({np.nanmin(dfs):.2f}-{np.nanmax(dfs):.2f}) |"
        )


def _judge_zero_screen(
    table: ScoreTable, thresholds: AuditThresholds, history: Profiles
) -> tuple[bool | None, float, bool | None]:
    """Judge 0's fate in the noise screens: kept by the main fit's screen (None: it has
    no history there), its session df there, kept by the slot test's screen (None: the
    slot test ran without history)."""
    from llm_council.bias_audit.session.moderated_noise import (
        moderated_noise,
        slot_moderated_noise,
    )
    from llm_council.bias_audit.session.session_model import fit_session

    model = fit_session(table, thresholds)
    if model.fit is None:
        return None, math.nan, None
    names = [table.reviewers[row] for row in model.active_rows.tolist()]
    zero = next(index for index, name in enumerate(names) if name.endswith("-0"))
    noise = moderated_noise(model.fit, names, thresholds, history)
    kept = None if noise is None else noise.sources[zero] == "history"
    df = math.nan if noise is None or noise.screen_dfs is None else noise.screen_dfs[zero]
    fit = model.fit
    slots = table.positions[model.active_rows[fit.rows], model.active_columns[fit.columns]]
    slot_noise = slot_moderated_noise(fit, slots, names, thresholds, history)
    slot_kept = None if slot_noise is None else slot_noise.sources[zero] == "history"
    return kept, float(df), slot_kept


def breakdown_table(
    n_sessions: int,
    seed: int,
    sizes: Sequence[int],
    modes: Mapping[str, AuditThresholds],
) -> str:
    """Per cell and mode: which flag fires, on whom, and what judge 0's screen did."""
    lines = [
        f"Why honest sessions read above 'low' under a changed history, {n_sessions} "
        "sessions a cell. Leniency: judge 0 named / only others named; kept: judge 0's "
        "history kept by the screen (the main fit), then the any-flag rate among sessions "
        "where it was kept / moved; slot kept: the slot test ran with judge 0's history; "
        "screen df: judge 0's session df in the screen, median (range)",
        "",
        "| cell | any flag | leniency judge 0 | leniency others only | self-pref | position "
        "| judge 0 kept | any flag if kept | any flag if moved | slot kept | screen df |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for generator, make in GENERATORS.items():
        for scenario, change in SCENARIOS.items():
            for n_members in sizes:
                sds = history_sds(n_members)
                rng = np.random.default_rng(seed + n_members)
                pool = []
                for _ in range(min(HISTORY_POOL, n_sessions)):
                    history: Profiles = {}
                    for _ in range(N_HISTORY):
                        history = merge_profiles(history, table_profiles(make(sds)(rng)))
                    pool.append(history)
                draw = make(change(sds))
                counts = {mode: FlagBreakdown(screen_dfs=[]) for mode in modes}
                for index in range(n_sessions):
                    table = draw(rng)
                    history = pool[index % len(pool)]
                    for mode, thresholds in modes.items():
                        audit = audit_score_table(table, thresholds, history=history)
                        kept, df, slot_kept = _judge_zero_screen(table, thresholds, history)
                        cell = counts[mode]
                        flagged = bool(audit.risk_flags)
                        named = audit.harsh_reviewers + audit.generous_reviewers
                        zero = any(name.endswith("-0") for name in named)
                        cell.sessions += 1
                        cell.any_flag += flagged
                        cell.leniency_judge_zero += zero
                        cell.leniency_others_only += bool(named) and not zero
                        cell.self_preference += bool(audit.self_preference_detected)
                        cell.position += bool(audit.position_bias_detected)
                        cell.judge_zero_kept += bool(kept)
                        cell.judge_zero_kept_flagged += bool(kept) and flagged
                        cell.judge_zero_moved_flagged += (not kept) and flagged
                        cell.slot_judge_zero_kept += bool(slot_kept)
                        assert cell.screen_dfs is not None
                        cell.screen_dfs.append(df)
                for mode in modes:
                    label = f"{generator}, {scenario}, {n_members}, {mode}"
                    lines.append(counts[mode].row(label))
                    print(lines[-1], file=sys.stderr)
    return "\n".join(lines)


POWER: dict[str, tuple[Callable[[int], dict[str, object]], Callable[[BiasAuditResult], bool]]] = {
    "judge 1.0 harsh": (
        lambda n: {"leniency": [-1.0] + [0.0] * (n - 1)},
        lambda a: any(name.endswith("-0") for name in a.harsh_reviewers),
    ),
    "judge 2.0 harsh": (
        lambda n: {"leniency": [-2.0] + [0.0] * (n - 1)},
        lambda a: any(name.endswith("-0") for name in a.harsh_reviewers),
    ),
    "self-preference +1.0": (
        lambda n: {"self_bias": [1.0] * n},
        lambda a: bool(a.self_preference_detected),
    ),
}


def power_table(
    n_sessions: int, seed: int, sizes: Sequence[int], modes: Mapping[str, AuditThresholds]
) -> str:
    lines = [
        f"Power kept with an unchanged history (30 sessions), {n_sessions} sessions a cell",
        "",
        "| generator | bias | members | " + " | ".join(modes) + " |",
        "|---|---|---|" + "---|" * len(modes),
    ]
    for generator, make in GENERATORS.items():
        for bias, (biases, named) in POWER.items():
            for n_members in sizes:
                sds = history_sds(n_members)
                results = audits(
                    make(sds, **biases(n_members)),
                    make(sds, **biases(n_members)),
                    modes,
                    n_sessions,
                    seed + 100 + n_members,
                    history_pool=HISTORY_POOL,
                )
                cells = [
                    f"{sum(named(a) for a in results[mode]) / n_sessions:.1%}" for mode in modes
                ]
                lines.append(f"| {generator} | {bias} | {n_members} | " + " | ".join(cells) + " |")
            print(f"power {generator} {bias} done", file=sys.stderr)
    return "\n".join(lines)


def _median_audit_ms(mode: str, seed: int, repeats: int) -> float:
    """Median ms of ``audit_score_table`` in ``mode`` at 5 members with history."""
    rng = np.random.default_rng(seed)
    draw = independent_draw(history_sds(5))
    history: Profiles = {}
    for _ in range(N_HISTORY):
        history = merge_profiles(history, table_profiles(draw(rng)))
    tables = [draw(rng) for _ in range(repeats)]
    thresholds = MODES[mode]
    for table in tables[:50]:  # warm the per-pattern caches, as a running council has
        audit_score_table(table, thresholds, history=history)
    timings = []
    for table in tables:
        start = time.perf_counter()
        audit_score_table(table, thresholds, history=history)
        timings.append(time.perf_counter() - start)
    timings.sort()
    return timings[len(timings) // 2] * 1e3


def audit_cost(seed: int, repeats: int = 1000) -> str:
    """Median ms of ``audit_score_table`` at 5 members with history, before and after,
    each mode in a fresh process (a council runs one mode; alternating modes in one
    process measured up to 3 times more for both, from the shared per-pattern caches)."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    parts = []
    for mode in MODES:
        with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
            median = pool.submit(_median_audit_ms, mode, seed, repeats).result()
        parts.append(f"{mode} {median:.2f} ms")
    return f"Audit cost at 5 members with history, median over {repeats} sessions: " + ", ".join(
        parts
    )


#: the slot test's guards against a stale history (ADR 0059, amendment), and the code
#: before ADR 0059 (ADR 0051's two-sided check, the smallest reviewer df); like every
#: variant of earlier rounds, without ADR 0071's session-only check
GUARD_MODES: dict[str, AuditThresholds] = {
    "before ADR 0059": ADR_0051.model_copy(update={"slot_history_guard": "smallest-df"}),
    **{
        f"guard {guard}": AuditThresholds(slot_history_guard=guard, history_session_check="off")
        for guard in (
            "session-floor",
            "smallest-df",
            "larger-p",
            "weighted-randomization",
            "screen-df",
        )
    },
    **{
        f"guard screen-df {level:g}": AuditThresholds(
            slot_history_guard="screen-df",
            slot_history_screen_level=level,
            history_session_check="off",
        )
        for level in (0.35, 0.8)
    },
    **{
        f"guard prior-cap {cap:g}": AuditThresholds(
            slot_history_guard="prior-cap",
            slot_history_prior_df_max=cap,
            history_session_check="off",
        )
        for cap in (2.0, 4.0, 6.0)
    },
}


#: issue 34 item 2's follow-up: a moved reviewer's prior from its own session estimate
#: (``noise_drift_replacement``), at several screen levels, with the council-wide screen
REPLACEMENT_MODES: dict[str, AuditThresholds] = {
    f"{replacement} {level:g}, council {council:g}": AuditThresholds(
        noise_drift_level=level,
        noise_drift_replacement=replacement,  # type: ignore[arg-type]
        noise_drift_council_level=council,
        history_session_check="off",
    )
    for replacement in ("default", "session-estimate")
    for level in (0.2, 0.35, 0.5)
    for council in (0.0, 0.1)
}


#: ADR 0071: the session-only check of the history's flags ("after" is the default, the
#: intersection-union test at the session's level), off (ADR 0070's default), and looser
#: session-only legs at level gamma
CHECK_MODES: dict[str, AuditThresholds] = {
    "check off": AuditThresholds(history_session_check="off"),
    **{
        f"check {gamma:g}": AuditThresholds(history_session_check_level=gamma)
        for gamma in (0.1, 0.2, 0.5)
    },
    "check off, session-estimate 0.5": AuditThresholds(
        history_session_check="off",
        noise_drift_level=0.5,
        noise_drift_replacement="session-estimate",
    ),
}


def variant_modes() -> dict[str, AuditThresholds]:
    modes = dict(MODES) | CHECK_MODES | GUARD_MODES | REPLACEMENT_MODES
    for cap, level, alternative, council in VARIANTS:
        modes[f"cap {cap:g}, {alternative} {level:g}, council {council:g}"] = AuditThresholds(
            history_prior_df_max=cap,
            noise_drift_level=level,
            noise_drift_alternative=alternative,  # type: ignore[arg-type]
            noise_drift_council_level=council,
            history_session_check="off",
        )
    return modes


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--sizes", type=int, nargs="+", default=[3, 5, 7])
    parser.add_argument("--power-sizes", type=int, nargs="+", default=[3, 4, 5])
    parser.add_argument("--variants", action="store_true", help="the cap/level grid too")
    parser.add_argument("--skip-power", action="store_true")
    parser.add_argument("--skip-drift", action="store_true")
    parser.add_argument("--history-pool", type=int, default=HISTORY_POOL)
    parser.add_argument("--power-sessions", type=int, default=None, help="default: --sessions")
    parser.add_argument(
        "--generators", nargs="+", choices=sorted(GENERATORS), default=sorted(GENERATORS)
    )
    parser.add_argument("--skip-cost", action="store_true")
    parser.add_argument(
        "--breakdown", action="store_true", help="which flag fires, on whom, and the screen"
    )
    parser.add_argument(
        "--modes", nargs="+", default=None, help="only these modes (default: every one)"
    )
    parser.add_argument("--power-biases", nargs="+", default=None, help="default: all")
    parser.add_argument(
        "--scenarios", nargs="+", choices=sorted(SCENARIOS), default=list(SCENARIOS)
    )
    args = parser.parse_args()
    for name in set(SCENARIOS) - set(args.scenarios):
        del SCENARIOS[name]
    for name in set(POWER) - set(args.power_biases or POWER):
        del POWER[name]
    globals()["HISTORY_POOL"] = args.history_pool
    for name in set(GENERATORS) - set(args.generators):
        del GENERATORS[name]
    modes = variant_modes() if args.variants else MODES
    if args.modes:
        modes = {name: modes[name] for name in args.modes}
    if args.breakdown:
        print(breakdown_table(args.sessions, args.seed, args.sizes, modes))
        return 0
    if not args.skip_cost:
        print(audit_cost(args.seed))
    if not args.skip_drift:
        print()
        print(drift_table(args.sessions, args.seed, args.sizes, modes))
    if not args.skip_power:
        print()
        print(power_table(args.power_sessions or args.sessions, args.seed, args.power_sizes, modes))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
