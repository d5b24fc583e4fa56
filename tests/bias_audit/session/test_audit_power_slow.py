"""Issue 24's targets, asserted on the benchmark's own seeded cells (ADR 0045). Slow.

``.venv/bin/python -m pytest tests/bias_audit/session/test_audit_power_slow.py -m slow`` (about
15 CPU minutes). The cells are those of ``benchmarks/audit_power_history.py`` with its
default seed and 200 sessions, so the numbers are the table's in docs/bias-audit.md.
Targets met are asserted as the issue states them. Targets missed are asserted as the
measured level, rounded down, so a regression shows; each says the target and why it is
out of reach without raising false flags (see the docs table and ADR 0045); ADR 0050
lowered them all (the session's error rate), ADR 0071 the cells with history (the
session's error rate whatever the history holds), and the comments give each.
"""

from __future__ import annotations

import pytest

from bias_audit.session.test_audit_power import load_benchmark

N_SESSIONS = 200
SEED = 1
HISTORY = "after, 30 sessions"
NO_HISTORY = "after, no history"

#: (bias, members, mode, lowest rate asserted, the issue's target or None when met).
#: Since ADR 0050 the risk families share the session's 5% (Holm over the 2-3 families
#: tested) and self-preference is predicted with slot effects: a lone bias needs
#: p < alpha / k. Since ADR 0071 a flag with history also needs the session-only path's
#: evidence (the larger of the two p-values, an intersection-union test that keeps the
#: session's 5% whatever the history holds), so the cells with history read about what
#: the session-only path does; each floor is a few points under the rate measured then
#: (independent / simulator, 200 sessions, these seeds), with the rate before ADR 0071
#: (ADR 0070's code) in the comment. The issue allows per-session power to fall for the
#: session's error rate; detection across sessions is the monitor's and the report's.
POWER_CELLS = [
    # 2 points harsh at 5 with history: 20.0% / 24.0% (80-82% before ADR 0071; the
    # target, 80%, was met then)
    ("judge 2 points harsh", 5, HISTORY, 0.16, 0.80),
    # the session-only path (no history) is not touched by ADR 0071: 81% / 92.5%
    ("judge 4 points harsh", 4, NO_HISTORY, 0.80, None),
    # self-preference +1.5 at 5 with history: 25.5% / 27.5% (53% / 55% since ADR 0050,
    # 80-85.5% before it), target 80%
    ("self-preference +1.5", 5, HISTORY, 0.21, 0.80),
    # missed: 2 points at 5 members without history (target 40%): 20% / 24% (37.5% /
    # 49.5% before ADR 0050); the default prior (1.5 points) is the honest upper end of
    # judges' noise
    ("judge 2 points harsh", 5, NO_HISTORY, 0.18, 0.40),
    # missed: 4 points at 3 members without history (target 80%): 30% / 36% (40-46%
    # before ADR 0050). 1 residual df; the contrast's SE with the prior is about 1.45 points
    ("judge 4 points harsh", 3, NO_HISTORY, 0.28, 0.80),
    # missed: 2 points at 4 with history (target 80%): 6.0% / 9.5% (39.5% before ADR 0071,
    # 69.5% / 76% before ADR 0050/0051); at 3 (target 50%): 0.5% / 2.5% (14-23% before
    # ADR 0071): the session-only path has 1-3 residual df there
    ("judge 2 points harsh", 4, HISTORY, 0.03, 0.80),
    ("judge 2 points harsh", 3, HISTORY, 0.0, 0.50),
    # missed: self-preference +1.5 at 4 (target 80%): 12.0% / 5.5% (36.5% / 26% before
    # ADR 0071); at 3 (target 50%): 8.5% / 7.0% (38% / 31% before ADR 0071)
    ("self-preference +1.5", 4, HISTORY, 0.03, 0.80),
    ("self-preference +1.5", 3, HISTORY, 0.05, 0.50),
    # missed: slot A +2 (target 80% at 4-5): with history the slot test takes the larger of
    # its p-value and the session-only randomization test's (ADR 0071), so it cannot beat
    # the session-only path: 2.5% / 2.0% at 4 members and 8.5% / 13.0% at 5 (6.5% / 7.5% and 18.5% /
    # 20% before ADR 0071, with ADR 0059's "smallest-df" guard; 40% / 40% at 5 with
    # Satterthwaite's df alone)
    ("slot A +2", 4, HISTORY, 0.01, 0.80),
    ("slot A +2", 5, HISTORY, 0.06, 0.80),
]


@pytest.mark.slow
@pytest.mark.parametrize("generator", ["independent", "simulator"])
@pytest.mark.parametrize("n_members", [3, 4, 5, 7, 9])
def test_no_flag_fires_above_its_level(generator: str, n_members: int) -> None:
    bench = load_benchmark()
    draw = bench.GENERATORS[generator](n_members)
    results = bench.audits(draw, N_SESSIONS, 30, SEED + n_members)
    for mode in (NO_HISTORY, HISTORY):
        for flag, fired in bench.NULL_FLAGS.items():
            rate = bench.rate([fired(audit) for audit in results[mode]])
            assert rate <= bench.ceiling(N_SESSIONS), (generator, n_members, mode, flag, rate)


@pytest.mark.slow
@pytest.mark.parametrize("generator", ["independent", "simulator"])
@pytest.mark.parametrize(("bias", "n_members", "mode", "lowest", "target"), POWER_CELLS)
def test_power_cells(
    generator: str, bias: str, n_members: int, mode: str, lowest: float, target: float | None
) -> None:
    bench = load_benchmark()
    biases, named = bench.POWER[bias]
    draw = bench.GENERATORS[generator](n_members, **biases(n_members))
    results = bench.audits(draw, N_SESSIONS, 30, SEED + 100 + n_members)
    rate = bench.rate([named(audit) for audit in results[mode]])
    assert rate >= lowest, (generator, bias, n_members, mode, rate, target)
    before = bench.rate([named(audit) for audit in results["before"]])
    # the session-only path without moderation ("before"): history must not fall below it,
    # except the slot test, which with history takes the larger of its p-value and the
    # randomization test's (the session-only test "before" runs) since ADR 0071, and so
    # cannot exceed it by construction; its floor above bounds it
    if bias == "slot A +2":
        return
    assert rate >= before, (generator, bias, n_members, mode, rate, before)
    assert rate > before or rate == 1.0, (generator, bias, n_members, mode, rate, before)
