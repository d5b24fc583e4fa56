"""False-flag rate and power of the segment-change test (ADR 0062) on the independent
generator: one reviewer's fingerprint changes half-way, its leniency moves by ``shift``.

Run: ``pytest -m slow tests/bias_audit/report/analyses/test_fingerprint_segments_slow.py -s``
(prints the table docs/bias-report.md quotes).
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from generators.fingerprinted_council import write_fingerprinted_store
from generators.independent_council import CouncilSpec
from llm_council.bias_audit.report.analyses.fingerprints import fingerprint_history
from llm_council.bias_audit.report.load.loading import load_store
from llm_council.bias_audit.report.load.tables import create_analysis_tables

LEVEL = 0.05
POWER_FLOORS = {3: 0.42, 5: 0.88, 9: 0.88}


def change_p_value(path: Path) -> float:
    """The p-value of the one segment change in the store (the section alone)."""
    store = load_store(path)
    try:
        create_analysis_tables(store.connection)
        history = fingerprint_history(store.connection)
    finally:
        store.connection.close()
    assert history is not None and len(history.reviewers) == 1
    (change,) = history.reviewers[0].changes
    return change.difference.p_value


def rejection_rate(
    tmp: Path, n_members: int, shift: float, runs: int, n_sessions: int = 40
) -> float:
    rejected = 0
    for run in range(runs):
        path = tmp / f"fp-{n_members}-{shift}-{run}.jsonl"
        spec = CouncilSpec(n_members=n_members, missing_score_rate=0.05)
        write_fingerprinted_store(
            path, spec, n_sessions, seed=run, change_at=n_sessions // 2, shift=shift
        )
        p_value = change_p_value(path)
        rejected += bool(math.isfinite(p_value) and p_value < LEVEL)
        path.unlink()
    return rejected / runs


@pytest.mark.slow
@pytest.mark.parametrize("n_members", [3, 5, 9])
def test_level_and_power(tmp_path: Path, n_members: int) -> None:
    runs = 300
    null = rejection_rate(tmp_path, n_members, 0.0, runs)
    power = rejection_rate(tmp_path, n_members, 0.8, runs // 3)
    print(f"\n{n_members} members, 40 sessions: false flags {null:.3f}, power(0.8) {power:.2f}")
    assert null <= LEVEL + 2 * math.sqrt(LEVEL * (1 - LEVEL) / runs)
    # measured 2026-11-27 (docs/bias-report.md): 0.54 at 3 members (each answer has one
    # other score to compare with), 0.96 at 5; floors a little below, over 100 runs
    assert power >= POWER_FLOORS[n_members]
