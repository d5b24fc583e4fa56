"""The slot test with history under each stale-history guard: power and the session-only path.

ADR 0059's amendment: the slow power test's "slot A +2" cells
(``tests/bias_audit/session/test_audit_power_slow.py``, ``audit_power_history``'s generators and
seeds, 30 sessions of history) audited once per ``slot_history_guard``, against the
session-only randomization test of the same sessions (``before``: no moderation, ADR 0017),
which history must not fall below. Also "judge 2 points harsh" (the guards must not move it).

    PYTHONPATH=src nice .venv/bin/python benchmarks/slot_guard_power.py [--sessions 200]
        [--sizes 4 5] [--biases "slot A +2"]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from audit_power_history import (  # noqa: E402
    BEFORE,
    GENERATORS,
    POWER,
    rate,
    table_profiles,
)

from llm_council.bias_audit.records.reviewer_profiles import Profiles, merge_profiles  # noqa: E402
from llm_council.bias_audit.session.audit import audit_score_table  # noqa: E402
from llm_council.bias_audit.session.thresholds import AuditThresholds  # noqa: E402

GUARDS = [
    "none",
    "session-floor",
    "smallest-df",
    "larger-p",
    "weighted-randomization",
    "screen-df",
    "screen-df 0.35",
    "screen-df 0.8",
    "prior-cap 2",
    "prior-cap 4",
    "prior-cap 6",
]
SEED = 1  # the slow test's: seed + 100 + members
N_HISTORY = 30


#: issue 34 item 2's follow-up: a moved reviewer moderated toward its own session
#: estimate (``noise_drift_replacement``) at a higher screen level, with the default guard
#: (ADR 0070, without ADR 0071's check), and ADR 0071's defaults
REPLACEMENT_MODES: dict[str, AuditThresholds] = {
    f"session-estimate {level:g}": AuditThresholds(
        noise_drift_level=level,
        noise_drift_replacement="session-estimate",
        history_session_check="off",
    )
    for level in (0.2, 0.35, 0.5)
} | {
    "default 0.5": AuditThresholds(noise_drift_level=0.5, history_session_check="off"),
    "session-estimate 0.5, slot 0.5": AuditThresholds(
        noise_drift_level=0.5,
        noise_drift_replacement="session-estimate",
        slot_noise_drift_level=0.5,
        history_session_check="off",
    ),
    # ADR 0071: today's defaults (the session-only check) and a looser session-only leg
    "defaults": AuditThresholds(),
    "check 0.2": AuditThresholds(history_session_check_level=0.2),
}
#: a judge 1 point harsh (the issue's "harsh -1.0"), beside the slow test's cells
POWER = POWER | {
    "judge 1 point harsh": (
        lambda n: {"leniency": [-1.0] + [0.0] * (n - 1)},
        POWER["judge 2 points harsh"][1],
    )
}


def _thresholds(mode: str) -> AuditThresholds:
    """A guard by name ("screen-df 0.35", "prior-cap 4"), without ADR 0071's session-only
    check (which would make every guard "larger-p"), or a replacement mode."""
    if mode in REPLACEMENT_MODES:
        return REPLACEMENT_MODES[mode]
    return AuditThresholds(
        history_session_check="off",
        slot_history_guard=mode.split()[0],  # type: ignore[arg-type]
        slot_history_screen_level=float(mode.split()[1]) if mode.startswith("screen-df ") else 0.5,
        slot_history_prior_df_max=float(mode.split()[1]) if mode.startswith("prior-cap ") else 4.0,
    )


def power_row(generator: str, bias: str, n_members: int, n_sessions: int) -> list[float]:
    """The share of sessions naming ``bias``: session-only, then each guard with history."""
    biases, named = POWER[bias]
    draw = GENERATORS[generator](n_members, **biases(n_members))
    modes = {mode: _thresholds(mode) for mode in GUARDS}
    rng = np.random.default_rng(SEED + 100 + n_members)
    hits: dict[str, list[bool]] = {"session-only": [], **{guard: [] for guard in GUARDS}}
    for _ in range(n_sessions):
        history: Profiles = {}
        for _ in range(N_HISTORY):
            history = merge_profiles(history, table_profiles(draw(rng)))
        table = draw(rng)
        hits["session-only"].append(named(audit_score_table(table, BEFORE)))
        for guard, thresholds in modes.items():
            hits[guard].append(named(audit_score_table(table, thresholds, history=history)))
    return [rate(values) for values in hits.values()]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=200)
    parser.add_argument("--sizes", type=int, nargs="+", default=[4, 5])
    parser.add_argument("--biases", nargs="+", default=["slot A +2"], choices=sorted(POWER))
    parser.add_argument(
        "--guards",
        nargs="+",
        default=list(GUARDS),
        choices=GUARDS + list(REPLACEMENT_MODES),
        help="guards, or replacement modes (a moved reviewer's prior, issue 34 item 2)",
    )
    args = parser.parse_args()
    GUARDS[:] = args.guards
    print(f"How often the bias is named, {args.sessions} sessions a cell, 30 sessions of history")
    print()
    print("| generator | bias | members | session-only | " + " | ".join(GUARDS) + " |")
    print("|---|---|---|---|" + "---|" * len(GUARDS))
    for bias in args.biases:
        for n_members in args.sizes:
            for generator in GENERATORS:
                cells = power_row(generator, bias, n_members, args.sessions)
                print(
                    f"| {generator} | {bias} | {n_members} | "
                    + " | ".join(f"{value:.1%}" for value in cells)
                    + " |",
                    flush=True,
                )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
