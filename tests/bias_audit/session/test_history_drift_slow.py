"""Honest councils whose history was written with other noise, 5 members, 300 sessions a
cell, on a smaller grid than the benchmark's. Slow.

``.venv/bin/python -m pytest tests/bias_audit/session/test_history_drift_slow.py -m slow`` (a few
CPU minutes). The cells are those of ``benchmarks/history_drift.py`` (same generators,
scenarios and modes) with 30 distinct histories a cell. Since ADR 0071 (the history's
risk flags checked against the session-only path) issue 34's target holds in every
cell: any flag, and each family, at most 5% + 2 SE (7.5% at 300 sessions), unchanged or
changed history; a changed history also flags less than before ADR 0051 (no noise
check, uncapped history df), and names the changed judge no more often.
"""

from __future__ import annotations

import pytest

from bias_audit.session.test_history_drift import _benchmark

N_SESSIONS = 300
N_MEMBERS = 5
SEED = 1


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
    limit = bench.ceiling(N_SESSIONS)
    assert after.any_flag <= limit, (generator, scenario, after)
    for family, rate in after.families.items():
        assert rate <= limit, (generator, scenario, family, rate)
    if scenario != "unchanged":
        assert after.any_flag < before.any_flag, (generator, scenario, before, after)
        assert after.judge_zero_named <= before.judge_zero_named
