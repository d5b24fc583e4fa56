"""The session's error rate (ADR 0050): how often an honest council reads above "low".

``overall_bias_risk`` (and the risk flags of ``flags_raised``) hold one error rate for
the session, ``significance_level``: Holm over the position, leniency and self-preference
families (:mod:`llm_council.bias_audit.session.session_risk`). This measures it on honest
councils, and the power the guarantee costs:

- **null**: two generators (the simulator, ``llm_council.simulation.simulated_records``,
  with no planted bias; the independent generator, ``tests/generators/independent_council.py``:
  integer scores clipped to 1-10, ties, per-reviewer shuffled orders), 3/4/5/7/9 members,
  honest judges' noise SDs spread evenly over 0.5-1.5 or 0.5-2.0 points, without history and
  with 30 sessions of history from the same honest generator (summed as the store sums them:
  ``reviewer_profiles.session_profiles``; one history per ``--history-block`` audited
  sessions). Target per cell: share of sessions with risk above "low" <= 5% + 2 SE;
- **power**: 3-5 members, noise SDs 0.5-1.5, with and without history: a judge 1 point
  harsh (named harsh), every judge +1 on its own answer (self-preference flag), one
  primacy judge (+3 points on the answer it sees first: position flag), every judge +0.5
  on slot A (position flag); each also as "risk above low".

Run it once per code version to fill a before/after table (the power table does not
depend on the procedure's fields, so an older checkout runs it too):

    PYTHONPATH=src .venv/bin/python benchmarks/session_error_rate.py [--sessions 1000]
        [--power-sessions 400] [--seed 1] [--sizes 3 4 5 7 9] [--skip-null] [--skip-power]
        [--history-only]
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "tests"))

import audit_power_history as draws  # noqa: E402

from llm_council.bias_audit.records.reviewer_profiles import Profiles, merge_profiles  # noqa: E402
from llm_council.bias_audit.session.audit import audit_score_table  # noqa: E402
from llm_council.bias_audit.session.result import BiasAuditResult  # noqa: E402
from llm_council.bias_audit.session.thresholds import AuditThresholds  # noqa: E402

NULL_SIZES = (3, 4, 5, 7, 9)
POWER_SIZES = (3, 4, 5)
NOISE_RANGES = ((0.5, 1.5), (0.5, 2.0))
HISTORY_MODES = ("no history", "30 sessions")
#: the modes audited (``--history-only`` leaves out "no history", whose path the
#: history changes do not touch; its cells then read "-")
AUDITED_MODES = set(HISTORY_MODES)
THRESHOLDS = AuditThresholds()


def ceiling(n_sessions: int, rate: float = 0.05) -> float:
    """5% plus two binomial standard errors at 5%: the target with Monte Carlo slack."""
    return rate + 2.0 * math.sqrt(rate * (1.0 - rate) / n_sessions)


def above_low(audit: BiasAuditResult) -> bool:
    return audit.overall_bias_risk in ("medium", "high")


def _with_noise(low: float, high: float) -> None:
    draws.noise_sds = lambda n: np.linspace(low, high, n).tolist()  # type: ignore[assignment]


def _history(draw: draws.Draw, rng: np.random.Generator, n_sessions: int) -> Profiles:
    history: Profiles = {}
    for _ in range(n_sessions):
        history = merge_profiles(history, draws.table_profiles(draw(rng)))
    return history


def rates(
    draw: draws.Draw,
    n_sessions: int,
    seed: int,
    counters: dict[str, Callable[[BiasAuditResult], bool]],
    *,
    history_block: int,
) -> dict[str, dict[str, float]]:
    """Each counter's rate per history mode over the same ``n_sessions`` sessions."""
    rng = np.random.default_rng(seed)
    counts = {mode: dict.fromkeys(counters, 0) for mode in HISTORY_MODES}
    history: Profiles = {}
    for index in range(n_sessions):
        if index % history_block == 0:
            history = _history(draw, rng, 30)
        table = draw(rng)
        for mode, profiles in (("no history", None), ("30 sessions", history)):
            if mode not in AUDITED_MODES:
                continue
            audit = audit_score_table(table, THRESHOLDS, permutation_seed=index, history=profiles)
            for name, fired in counters.items():
                counts[mode][name] += fired(audit)
    return {
        mode: {name: count / n_sessions for name, count in counted.items()}
        for mode, counted in counts.items()
    }


def null_table(n_sessions: int, seed: int, sizes: Sequence[int], history_block: int) -> str:
    limit = ceiling(n_sessions)
    lines = [
        f"Honest councils: share of sessions with overall_bias_risk above 'low' "
        f"({n_sessions} sessions a cell; target <= {limit:.1%} = 5% + 2 SE; '!' marks a miss)",
        "",
        "| generator | noise SDs | members | no history | 30 sessions of history |",
        "|---|---|---|---|---|",
    ]
    misses = 0
    for generator, make in draws.GENERATORS.items():
        for low, high in NOISE_RANGES:
            _with_noise(low, high)
            for n_members in sizes:
                found = rates(
                    make(n_members),
                    n_sessions,
                    seed + 100 * n_members + int(10 * high),
                    {"above low": above_low},
                    history_block=history_block,
                )
                cells = []
                for mode in HISTORY_MODES:
                    if mode not in AUDITED_MODES:
                        cells.append("-")
                        continue
                    value = found[mode]["above low"]
                    misses += value > limit
                    cells.append(f"{value:.1%}" + (" !" if value > limit else ""))
                lines.append(
                    f"| {generator} | {low}-{high} | {n_members} | " + " | ".join(cells) + " |"
                )
                print(f"null {generator} {low}-{high} {n_members} done", file=sys.stderr)
    lines.append("")
    lines.append(f"cells above the target: {misses}")
    return "\n".join(lines)


def _named_harsh(audit: BiasAuditResult) -> bool:
    return any(name.endswith("-0") for name in audit.harsh_reviewers)


#: name -> (biases for the generators, what counts as found)
POWER: dict[str, tuple[Callable[[int], dict[str, object]], Callable[[BiasAuditResult], bool]]] = {
    "judge 1 point harsh (named)": (
        lambda n: {"leniency": [-1.0] + [0.0] * (n - 1)},
        _named_harsh,
    ),
    "self-preference +1, every judge": (
        lambda n: {"self_bias": [1.0] * n},
        lambda a: a.self_preference_detected,
    ),
    "primacy judge (+3 on its first answer)": (
        lambda n: {"slot_effects": [[3.0]] + [[0.0]] * (n - 1)},
        lambda a: bool(a.position_bias_detected),
    ),
    "council slot A +0.5": (
        lambda n: {"slot_effects": [[0.5]] * n},
        lambda a: bool(a.position_bias_detected),
    ),
}


def power_table(n_sessions: int, seed: int, sizes: Sequence[int], history_block: int) -> str:
    _with_noise(0.5, 1.5)
    lines = [
        f"Power (noise SDs 0.5-1.5, {n_sessions} sessions a cell): share of sessions in which "
        "the planted bias is found / in which risk is above 'low'",
        "",
        "| generator | bias | members | no history | 30 sessions of history |",
        "|---|---|---|---|---|",
    ]
    for generator, make in draws.GENERATORS.items():
        for bias, (biases, found) in POWER.items():
            for n_members in sizes:
                measured = rates(
                    make(n_members, **biases(n_members)),
                    n_sessions,
                    seed + 1000 + n_members,
                    {"found": found, "above low": above_low},
                    history_block=history_block,
                )
                cells = [
                    f"{measured[mode]['found']:.1%} / {measured[mode]['above low']:.1%}"
                    if mode in AUDITED_MODES
                    else "-"
                    for mode in HISTORY_MODES
                ]
                lines.append(f"| {generator} | {bias} | {n_members} | " + " | ".join(cells) + " |")
            print(f"power {generator} {bias} done", file=sys.stderr)
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--power-sessions", type=int, default=400)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--sizes", type=int, nargs="+", default=list(NULL_SIZES))
    parser.add_argument(
        "--history-block",
        type=int,
        default=10,
        help="audited sessions sharing one freshly drawn 30-session history",
    )
    parser.add_argument("--skip-null", action="store_true")
    parser.add_argument("--skip-power", action="store_true")
    parser.add_argument(
        "--history-only", action="store_true", help="audit only the cells with history"
    )
    args = parser.parse_args()
    if args.history_only:
        AUDITED_MODES.discard("no history")
    started = time.perf_counter()
    if not args.skip_power:
        sizes = [size for size in args.sizes if size in POWER_SIZES] or list(POWER_SIZES)
        print(power_table(args.power_sessions, args.seed, sizes, args.history_block))
        print(flush=True)
    if not args.skip_null:
        print(null_table(args.sessions, args.seed, args.sizes, args.history_block), flush=True)
    print(f"{time.perf_counter() - started:.0f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
