"""The session's error rate holds on honest councils (ADR 0050), on a reduced grid.

Slow (minutes): ``.venv/bin/python -m pytest tests/bias_audit/session/test_session_error_rate_slow.py
-m slow``. The full grid (1,000 sessions a cell, 3/4/5/7/9 members, noise SDs 0.5-1.5 and
0.5-2.0) and the power table are ``benchmarks/session_error_rate.py``.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

BENCHMARK = Path(__file__).resolve().parents[3] / "benchmarks" / "session_error_rate.py"
N_SESSIONS = 300


def load_benchmark() -> ModuleType:
    spec = importlib.util.spec_from_file_location("session_error_rate", BENCHMARK)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
@pytest.mark.parametrize("generator", ["independent", "simulator"])
@pytest.mark.parametrize("n_members", [3, 5, 9])
def test_an_honest_council_reads_above_low_in_at_most_five_percent(
    generator: str, n_members: int
) -> None:
    bench = load_benchmark()
    bench._with_noise(0.5, 2.0)
    draw = bench.draws.GENERATORS[generator](n_members)
    found = bench.rates(
        draw, N_SESSIONS, 500 + n_members, {"above low": bench.above_low}, history_block=10
    )
    limit = bench.ceiling(N_SESSIONS)  # 5% + 2 SE = 7.5%
    for mode in bench.HISTORY_MODES:
        assert found[mode]["above low"] <= limit, (generator, n_members, mode, found)
