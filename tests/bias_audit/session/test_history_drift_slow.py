"""ADR 0051's bounds on a smaller grid than its benchmark's: honest councils whose history
was written with other noise, 5 members, 300 sessions a cell. Slow.

``.venv/bin/python -m pytest tests/bias_audit/session/test_history_drift_slow.py -m slow`` (a few
CPU minutes). The cells are those of ``benchmarks/history_drift.py`` (same generators,
scenarios and modes) with 30 distinct histories a cell. Met targets are asserted as stated
(unchanged history: every family inside 5% + 2 SE). The changed histories' targets
(<= 5% + 2 SE per family) are missed at 5 members (ADR 0051, "Not reachable from one
session"); there the test asserts that the change helps (after below before) and that the
largest family stays within 3 binomial SE (at 300 sessions) of the 1,000-session rate in
docs/bias-audit.md, so a regression shows.
"""

from __future__ import annotations

import math

import pytest

from bias_audit.session.test_history_drift import _benchmark

N_SESSIONS = 300
N_MEMBERS = 5
SEED = 1

#: (generator, scenario) -> the largest single-family rate after ADR 0051 at 5 members,
#: 1,000 sessions (docs/bias-audit.md, "When a judge's noise changes")
MEASURED_LARGEST = {
    ("independent", "one judge 0.5 -> 2.0"): 0.115,
    ("independent", "all x4/3"): 0.088,
    ("independent", "reversed"): 0.099,
    ("simulator", "one judge 0.5 -> 2.0"): 0.111,
    ("simulator", "all x4/3"): 0.097,
    ("simulator", "reversed"): 0.092,
}


def _regression_bound(rate: float) -> float:
    return rate + 3.0 * math.sqrt(rate * (1.0 - rate) / N_SESSIONS)


@pytest.mark.slow
@pytest.mark.parametrize("generator", ["independent", "simulator"])
@pytest.mark.parametrize("scenario", ["unchanged", "one judge 0.5 -> 2.0", "all x4/3", "reversed"])
def test_a_changed_history_flags_less_and_an_unchanged_one_keeps_the_level(
    generator: str, scenario: str
) -> None:
    bench = _benchmark()
    sds = bench.history_sds(N_MEMBERS)
    make = bench.GENERATORS[generator]
    results = bench.audits(
        make(sds),
        make(bench.SCENARIOS[scenario](sds)),
        bench.MODES,
        N_SESSIONS,
        SEED + N_MEMBERS,
        history_pool=30,
    )
    before, after = (bench.null_rates(results[mode]) for mode in ("before", "after"))
    if scenario == "unchanged":
        for family, rate in after.families.items():
            assert rate <= bench.ceiling(N_SESSIONS), (generator, family, rate)
        return
    assert after.any_flag < before.any_flag, (generator, scenario, before, after)
    assert after.judge_zero_named <= before.judge_zero_named
    family, largest = after.largest_family
    bound = _regression_bound(MEASURED_LARGEST[(generator, scenario)])
    assert largest <= bound, (generator, scenario, family, largest, bound)
