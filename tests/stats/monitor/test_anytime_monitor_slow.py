"""The monitor's targets on a reduced grid (issue 34 item 4; full grid:
``benchmarks/monitor_calibration.py``). Slow: ``pytest -m slow tests/stats/monitor/test_anytime_monitor_slow.py``.

100 streams of 400 sessions a cell (the full run: 200 of 1,000), noise SDs 0.5-1.5, both
generators, 3 and 5 members. False confirmations are counted over all reviewers and biases
and every look.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "tests"))

from monitor_calibration import GENERATORS, run_streams  # noqa: E402

from llm_council.stats.monitor.anytime_monitor import MonitorSettings  # noqa: E402

pytestmark = pytest.mark.slow

STREAMS = 100
SESSIONS = 400
CEILING = 0.05 + 2 * math.sqrt(0.05 * 0.95 / STREAMS)  # 9.4%


def _any_confirmed(
    generator: str, n_members: int, leniency: list[float], **settings: float
) -> float:
    draw = GENERATORS[generator](n_members, leniency)
    sums = run_streams(draw, n_members, STREAMS, SESSIONS, MonitorSettings(**settings), seed=21)
    return float((sums.confirmed_at > 0).any(axis=(1, 2)).mean())


@pytest.mark.parametrize("generator", sorted(GENERATORS))
@pytest.mark.parametrize("n_members", [3, 5])
def test_honest_streams_are_rarely_confirmed(generator: str, n_members: int) -> None:
    assert _any_confirmed(generator, n_members, [0.0] * n_members) <= CEILING
    # every test on the boundary of its null (delta0 = 0): the level is spent here
    assert _any_confirmed(generator, n_members, [0.0] * n_members, delta0=0.0) <= CEILING


@pytest.mark.parametrize("generator", sorted(GENERATORS))
@pytest.mark.parametrize("n_members", [3, 5])
def test_a_judge_inside_the_practical_null_is_rarely_confirmed(
    generator: str, n_members: int
) -> None:
    assert _any_confirmed(generator, n_members, [-0.3] + [0.0] * (n_members - 1)) <= CEILING


@pytest.mark.parametrize("generator", sorted(GENERATORS))
@pytest.mark.parametrize(
    ("n_members", "median_limit"),
    # issue 34's targets are 50 and 20 sessions. The full run (200 streams of 1,000)
    # measures medians of 44-47 at 3 members and 14-15 at 5 (ADR 0053, amendment); a
    # median of 100 streams has an SE of about 4 sessions at 3 members (IQR ~40), so the
    # limit asserted there is 55: a return to the first version's 54-58 would likely fail
    [(3, 55), (5, 20)],
)
def test_a_judge_one_point_harsh_is_confirmed_soon(
    generator: str, n_members: int, median_limit: int
) -> None:
    draw = GENERATORS[generator](n_members, [-1.0] + [0.0] * (n_members - 1))
    sums = run_streams(draw, n_members, STREAMS, SESSIONS, MonitorSettings(), seed=22)
    at = sums.confirmed_at[:, 0, 0]
    assert (at > 0).mean() >= 0.95
    assert float(np.median(np.where(at > 0, at, SESSIONS + 1))) <= median_limit


@pytest.mark.parametrize("n_members", [3, 9])
def test_missing_cells_keep_the_level_and_find_the_judge(n_members: int) -> None:
    # 10% of scores missing at random: every session is fitted on its own pattern
    from monitor_calibration import run_streams_with_missing

    streams, sessions = 60, 300
    limit = 0.05 + 2 * math.sqrt(0.05 * 0.95 / streams)  # 10.6%
    honest = run_streams_with_missing(
        n_members, [0.0] * n_members, streams, sessions, MonitorSettings(delta0=0.0), 23, 0.1
    )
    assert float((honest.confirmed_at > 0).any(axis=(1, 2)).mean()) <= limit
    harsh = run_streams_with_missing(
        n_members, [-1.0] + [0.0] * (n_members - 1), streams, sessions, MonitorSettings(), 24, 0.1
    )
    assert float((harsh.confirmed_at[:, 0, 0] > 0).mean()) >= 0.9
