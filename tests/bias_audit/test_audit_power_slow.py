"""Issue 24's targets, asserted on the benchmark's own seeded cells (ADR 0045). Slow.

``.venv/bin/python -m pytest tests/bias_audit/test_audit_power_slow.py -m slow`` (about
15 CPU minutes). The cells are those of ``benchmarks/audit_power_history.py`` with its
default seed and 200 sessions, so the numbers are the table's in docs/bias-audit.md.
Targets met are asserted as the issue states them. Targets missed are asserted as the
measured level, rounded down, so a regression shows; each says the target and why it is
out of reach without raising false flags (see the docs table and ADR 0045).
"""

from __future__ import annotations

import pytest

from bias_audit.test_audit_power import load_benchmark

N_SESSIONS = 200
SEED = 1
HISTORY = "after, 30 sessions"
NO_HISTORY = "after, no history"

#: (bias, members, mode, lowest rate asserted, the issue's target or None when met)
POWER_CELLS = [
    # met
    ("judge 2 points harsh", 5, HISTORY, 0.80, None),
    ("self-preference +1.5", 5, HISTORY, 0.80, None),
    ("judge 4 points harsh", 4, NO_HISTORY, 0.90, None),
    # missed: 2 points at 5 members without history (target 40%): 37.5% / 49.5%; the
    # default prior (1.5 points) is the honest upper end of judges' noise
    ("judge 2 points harsh", 5, NO_HISTORY, 0.35, 0.40),
    # missed: 4 points at 3 members without history (target 80%): 40-46%. 1 residual df;
    # the contrast's SE with the prior is about 1.45 points and Holm over 3 judges needs
    # |t| > 2.4 (clipping at 1 also shrinks the effect)
    ("judge 4 points harsh", 3, NO_HISTORY, 0.35, 0.80),
    # missed: 2 points at 4 (target 80%): 58.5% / 63.5% (69.5% / 76% before ADR 0051 capped
    # the history's df at 10 and checks each judge's noise against it); at 3 (target 50%):
    # 17.5-23%. Even with the noise known, the 3-member contrast has SE ~0.97 points
    # (t ~2.1 < 2.4)
    ("judge 2 points harsh", 4, HISTORY, 0.55, 0.80),
    ("judge 2 points harsh", 3, HISTORY, 0.15, 0.50),
    # missed: self-preference +1.5 at 4 (target 80%): 67-69.5% (73.5-75% before ADR 0051;
    # precision-weighted pooled mean, ADR 0047; known Gaussian noise would give ~82%); at 3
    # (target 50%): 39-41% (45-49.5% before ADR 0051)
    ("self-preference +1.5", 4, HISTORY, 0.65, 0.80),
    ("self-preference +1.5", 3, HISTORY, 0.36, 0.50),
    # missed: slot A +2 (target 80% at 4-5): 14.5-17% at 4, 40-40.5% at 5 with the
    # weighted Wald test against history's noise (ADR 0047: 20-24.5% and 59.5-63.5% before
    # ADR 0051, whose df cap and drift check each cost about 20 points at 5 members: the
    # test's F(k, min df) falls to about F(k, 12)); known noise: 46% / 71%
    ("slot A +2", 4, HISTORY, 0.12, 0.80),
    ("slot A +2", 5, HISTORY, 0.38, 0.80),
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
    assert rate > before or rate == 1.0
