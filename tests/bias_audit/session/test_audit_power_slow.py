"""Issue 24's targets, asserted on the benchmark's own seeded cells (ADR 0045). Slow.

``.venv/bin/python -m pytest tests/bias_audit/session/test_audit_power_slow.py -m slow`` (about
15 CPU minutes). The cells are those of ``benchmarks/audit_power_history.py`` with its
default seed and 200 sessions, so the numbers are the table's in docs/bias-audit.md.
Targets met are asserted as the issue states them. Targets missed are asserted as the
measured level, rounded down, so a regression shows; each says the target and why it is
out of reach without raising false flags (see the docs table and ADR 0045); ADR 0050
lowered them all (the session's error rate), and the comments give both.
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
#: p < alpha / k, so every cell fell; each comment gives independent / simulator rates
#: measured with ADR 0050 (before it, in parentheses)
POWER_CELLS = [
    # met
    ("judge 2 points harsh", 5, HISTORY, 0.80, None),
    # ADR 0050 (the session's Holm over risk families) and ADR 0051 (history df capped at
    # 10, each judge's noise checked against its history) each lowered these rates; the
    # comments give each change's own measurement. Measured with both (200 sessions, seed
    # as below): 2 points harsh at 4 members 39.5% (independent); self-preference +1.5 at
    # 4 members 19% (simulator); slot A +2 at 5 members 19% / 19.5%, at 4 members 7% on
    # the simulator, below the session-only path's 10.5% (the Wald test's F(k, min df)
    # fell to about F(k, 12)). ADR 0059 gave the Wald test its own Satterthwaite df and
    # made the noise check upper-tailed: slot A +2 at 5 members 40% / 40%, at 4 members
    # 10.5% / 17% (session-only path: 6% / 10.5%), never below the session-only path.
    ("judge 4 points harsh", 4, NO_HISTORY, 0.80, None),
    # missed since ADR 0050: 53% / 55% (80% / 85.5%), target 80%
    ("self-preference +1.5", 5, HISTORY, 0.45, 0.80),
    # missed: 2 points at 5 members without history (target 40%): 20% / 24% (37.5% /
    # 49.5%); the default prior (1.5 points) is the honest upper end of judges' noise
    ("judge 2 points harsh", 5, NO_HISTORY, 0.18, 0.40),
    # missed: 4 points at 3 members without history (target 80%): 30% / >= 35% (40-46%).
    # 1 residual df; the contrast's SE with the prior is about 1.45 points
    ("judge 4 points harsh", 3, NO_HISTORY, 0.28, 0.80),
    # missed: 2 points at 4 (target 80%): 58% / 64.5% after ADR 0050, 58.5% / 63.5% after
    # ADR 0051 (69.5% / 76% before both); at 3 (target 50%): 14-23%. Even with the noise
    # known, the 3-member contrast has SE ~0.97 points
    ("judge 2 points harsh", 4, HISTORY, 0.35, 0.80),
    ("judge 2 points harsh", 3, HISTORY, 0.10, 0.50),
    # missed: self-preference +1.5 at 4 (target 80%): 36.5% / 26% after ADR 0050 (the
    # slot-effect prediction widens each self-review's prediction), 67-69.5% after ADR
    # 0051 (73.5-75% before both); at 3 (target 50%): 38% / 31% and 39-41% (45-49.5%)
    ("self-preference +1.5", 4, HISTORY, 0.15, 0.80),
    ("self-preference +1.5", 3, HISTORY, 0.24, 0.50),
    # missed: slot A +2 (target 80% at 4-5): 9.5% / 10.5% at 4 and 47% / 45.5% at 5 after
    # ADR 0050; 19-19.5% at 5 with ADR 0051 too; ADR 0059: 10.5% / 17% at 4, 40% / 40% at 5
    # ADR 0050; 14.5-17% and 40-40.5% after ADR 0051 (20-24.5% and 59.5-63.5% before
    # both: the Wald test's F(k, min df) falls to about F(k, 12) with the df cap)
    # ADR 0059's amendment: the default slot_history_guard="smallest-df" (fewer false flags
    # under a stale history, chosen at merge) gives 18.5% / 20% at 5 and 6.5% / 7.5% at 4,
    # below the session-only path at 4 members on the simulator (10.5%); "none" (the
    # Satterthwaite df) gave 40% / 40% and 10.5% / 17%
    ("slot A +2", 4, HISTORY, 0.05, 0.80),
    ("slot A +2", 5, HISTORY, 0.15, 0.80),
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
    # never below the session-only path, except slot A +2 at 4 members, where the default
    # guard against a stale history (ADR 0059's amendment) measured 7.5% against 10.5% on
    # the simulator: a known shortfall, bounded here so that it cannot grow unnoticed
    known_shortfall = (bias, n_members) == ("slot A +2", 4)
    assert rate >= before - (0.05 if known_shortfall else 0.0), (
        generator, bias, n_members, mode, rate, before
    )  # fmt: skip
    assert rate > before or rate == 1.0 or known_shortfall, (
        generator, bias, n_members, mode, rate, before
    )  # fmt: skip
