"""The within-session self-preference statistics of ``benchmarks/self_preference_alternatives.py``
(ADR 0090), against a plain numpy computation from the ``scored`` table's deviations and,
for the randomization z's variance, against every relabelling of "own" enumerated."""

from __future__ import annotations

import itertools
import math
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from generators.independent_council import CouncilSpec, generate_sessions, write_store
from llm_council.bias_audit.report.load.loading import load_store
from llm_council.bias_audit.report.load.tables import create_analysis_tables

sys.path.insert(0, str(Path(__file__).resolve().parents[4] / "benchmarks"))

from self_preference_alternatives import within_session_p_values  # noqa: E402


def _contrasts(path: Path) -> dict[str, list[tuple[float, np.ndarray]]]:
    """Per reviewer, per session with one own contrast and at least one other: (own, others)."""
    loaded = load_store(path)
    create_analysis_tables(loaded.connection)
    rows = loaded.connection.execute(
        "SELECT reviewer, session, is_self, deviation FROM scored WHERE deviation IS NOT NULL"
    ).fetchall()
    loaded.connection.close()
    grouped: dict[tuple[str, int], list[tuple[bool, float]]] = {}
    for reviewer, session, is_self, deviation in rows:
        grouped.setdefault((str(reviewer), int(session)), []).append((bool(is_self), deviation))
    found: dict[str, list[tuple[float, np.ndarray]]] = {}
    for (reviewer, _), cells in sorted(grouped.items()):
        own = [value for is_self, value in cells if is_self]
        others = np.array([value for is_self, value in cells if not is_self])
        if len(own) == 1 and others.size >= 1:
            found.setdefault(reviewer, []).append((own[0], others))
    return found


@pytest.mark.parametrize(("members", "missing"), [(3, 0.0), (4, 0.1), (9, 0.05)])
def test_the_sql_statistics_equal_a_numpy_computation(
    tmp_path: Path, members: int, missing: float
) -> None:
    path = tmp_path / "store.jsonl"
    spec = CouncilSpec(n_members=members, missing_score_rate=missing)
    write_store(path, generate_sessions(spec, 12, seed=members))
    got = within_session_p_values(path)
    expected = _contrasts(path)
    assert set(got) == set(expected) and got
    for reviewer, sessions in expected.items():
        t_sum = variance = d_sum = other_ss = df = inflation = 0.0
        for own, others in sessions:
            every = np.append(others, own)
            t_sum += own - every.mean()
            variance += every.var()
            d_sum += own - others.mean()
            other_ss += float(((others - others.mean()) ** 2).sum())
            df += others.size - 1
            inflation += every.size / (every.size - 1)
        z_p, t_p = got[reviewer]
        assert z_p == pytest.approx(stats.norm.sf(t_sum / math.sqrt(variance)), abs=1e-12)
        if df >= 1 and other_ss > 0:
            t = d_sum / math.sqrt(other_ss / df * inflation)
            assert t_p == pytest.approx(stats.t.sf(t, df), abs=1e-12)
        else:
            assert math.isnan(t_p)


def test_the_randomization_variance_is_that_of_every_relabelling(tmp_path: Path) -> None:
    """T = sum_s (c_own,s - mean c_s) over every choice of "own" in each session (3^5
    relabellings): mean 0 and variance sum_s mean_j (c_s,j - mean c_s)^2, the V the
    randomization z divides by."""
    path = tmp_path / "store.jsonl"
    write_store(path, generate_sessions(CouncilSpec(n_members=3), 5, seed=11))
    sessions = next(iter(_contrasts(path).values()))
    assert len(sessions) == 5
    cells = [np.append(others, own) for own, others in sessions]
    draws = np.array(
        [
            sum(session[j] - session.mean() for session, j in zip(cells, pick, strict=True))
            for pick in itertools.product(*(range(session.size) for session in cells))
        ]
    )
    assert draws.size == 3**5
    assert draws.mean() == pytest.approx(0.0, abs=1e-12)
    assert draws.var() == pytest.approx(sum(session.var() for session in cells), rel=1e-12)
