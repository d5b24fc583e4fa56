"""False-positive rates of the report's intervals and flags on councils with no bias at all.

Run with ``.venv/bin/pytest tests/bias_audit/report/test_null_calibration.py -m slow -s``;
the printed table is the one in docs/bias-report.md. Each run is a fresh store of
unbiased simulated judges (noise only); a 95% interval should exclude zero in about 5% of
runs. The record-count interval of the reference design is computed on the same data.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from llm_council.bias_audit.report.joint import fit_joint_model
from llm_council.bias_audit.report.length import pooled_length_bias
from llm_council.bias_audit.report.loading import load_store
from llm_council.bias_audit.report.position import position_bias
from llm_council.bias_audit.report.reviewers import reviewer_profiles
from llm_council.bias_audit.report.tables import create_analysis_tables
from llm_council.bias_audit.simulated_records import load_simulated_profiles, write_record_store
from llm_council.simulation.profile import SimulatedProfile

#: runs per store size; NULL_CALIBRATION_RUNS=2000 tightens the Monte Carlo error
N_RUNS = int(os.environ.get("NULL_CALIBRATION_RUNS", "500"))
TARGET = 0.06  # the bound for the pooled length interval


def _null_rates(tmp_path: Path, n_sessions: int, seed: int) -> dict[str, float]:
    (unbiased,) = [profile for _, profile in load_simulated_profiles(["unbiased"])]
    assert unbiased == SimulatedProfile(noise_sd=1.0)  # all biases zero
    members = [(f"judge{i}", unbiased) for i in range(5)]
    counts = {"pooled": 0, "record": 0, "leniency": 0, "position": 0, "self": 0, "slots": 0}
    reviewer_tests = 0
    for run in range(N_RUNS):
        path = tmp_path / f"null-{n_sessions}-{run}.jsonl"
        write_record_store(path, members, n_sessions, seed=seed + run)
        store = load_store(path, threads=1)
        connection = store.connection
        create_analysis_tables(connection)
        length = pooled_length_bias(connection)
        assert length is not None
        counts["pooled"] += length.pooled.excludes_zero()
        low, high = length.record_level_ci
        counts["record"] += low > 0 or high < 0
        profiles = reviewer_profiles(connection)
        counts["leniency"] += sum(p.leniency_label != "neutral" for p in profiles)
        reviewer_tests += len(profiles)
        position = position_bias(connection)
        assert position is not None
        counts["position"] += position.test_p_value < 0.05
        joint = fit_joint_model(connection)
        assert joint is not None
        self_effects = [e for e in joint.model.effects if e.group == "self_review"]
        counts["self"] += sum(e.ci_low > 0 or e.ci_high < 0 for e in self_effects)
        counts["slots"] += joint.model.position_wald_p < 0.05
        connection.close()
        path.unlink()
    return {
        "pooled length interval excludes 0": counts["pooled"] / N_RUNS,
        "record-count length interval excludes 0 (reference design)": counts["record"] / N_RUNS,
        "reviewer labelled harsh/generous (per reviewer)": counts["leniency"] / reviewer_tests,
        "within-reviewer position test p < 0.05": counts["position"] / N_RUNS,
        "joint-model slot Wald test p < 0.05": counts["slots"] / N_RUNS,
        "self-preference detected (per reviewer)": counts["self"] / reviewer_tests,
    }


@pytest.mark.slow
@pytest.mark.parametrize("n_sessions", [10, 50])
def test_no_bias_false_positive_rates(tmp_path: Path, n_sessions: int) -> None:
    rates = _null_rates(tmp_path, n_sessions, seed=1000 * n_sessions)
    monte_carlo_se = np.sqrt(0.05 * 0.95 / N_RUNS)
    print(
        f"\n{N_RUNS} no-bias stores of {n_sessions} sessions x 5 judges "
        f"(Monte Carlo se of a 5% rate: {monte_carlo_se:.3f})"
    )
    for name, rate in rates.items():
        print(f"  {name:<60} {rate:6.1%}")
    assert rates["pooled length interval excludes 0"] <= TARGET
    # every other flag is a 5% test too: within 5% + 3 Monte Carlo standard errors
    bound = 0.05 + 3 * monte_carlo_se
    for name, rate in rates.items():
        if "reference design" not in name:
            assert rate <= bound, name
    # the reference design's interval is the one that is not calibrated
    assert rates["record-count length interval excludes 0 (reference design)"] > 0.10
