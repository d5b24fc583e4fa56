"""False-positive rates of the report's intervals and flags on councils with no bias at all.

Slow (minutes); run with
``NULL_CALIBRATION_RUNS=400 .venv/bin/pytest tests/bias_audit/report/analyses/test_null_calibration.py -m slow -s``;
the printed tables are the ones in docs/bias-report.md. Each run is a fresh no-bias store,
from two sources:

- ``independent``: ``tests/generators/independent_council.py`` (integer 1-10 scores with a
  floor and a ceiling, 5% missing scores, a whole review missing in 10% of sessions, each
  reviewer its own order), at 3, 4, 5, 7 and 9 members;
- ``simulator``: ``llm_council.simulation`` with five unbiased judges (Gaussian noise).

"Per store" rates count a store once if any reviewer is flagged (the family-wise rate the
Holm procedures control); "per reviewer" rates count reviewers. A 5% test should stay at
5% + Monte Carlo error. The default suite keeps a quick regression test at the end.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from generators.independent_council import CouncilSpec, generate_sessions, write_store
from llm_council.bias_audit.report.analyses.joint import fit_joint_model
from llm_council.bias_audit.report.analyses.length import pooled_length_bias
from llm_council.bias_audit.report.analyses.position import position_bias
from llm_council.bias_audit.report.analyses.reviewers import reviewer_profiles
from llm_council.bias_audit.report.load.loading import load_store
from llm_council.bias_audit.report.load.tables import create_analysis_tables
from llm_council.simulation.profile import SimulatedProfile
from llm_council.simulation.simulated_records import load_simulated_profiles, write_record_store

#: runs per cell; NULL_CALIBRATION_RUNS=2000 tightens the Monte Carlo error
N_RUNS = int(os.environ.get("NULL_CALIBRATION_RUNS", "300"))
MEMBER_COUNTS = (3, 4, 5, 7, 9)
SESSION_COUNTS = (10, 50)

StoreWriter = Callable[[Path, int, int], None]

RATE_NAMES = (
    "pooled length interval excludes 0",
    "record-count length interval excludes 0 (reference design)",
    "leniency labelled (per reviewer)",
    "leniency labelled (per store, any reviewer)",
    "council position test p < 0.05",
    "reviewer position flagged, Holm (per store, any reviewer)",
    "reviewer position p < 0.05, unadjusted (per reviewer)",
    "joint-model slot Wald test p < 0.05",
    "self-preference detected (per reviewer)",
)


def independent_writer(n_members: int) -> StoreWriter:
    spec = CouncilSpec(n_members=n_members, missing_score_rate=0.05, missing_review_rate=0.1)

    def write(path: Path, n_sessions: int, seed: int) -> None:
        write_store(path, generate_sessions(spec, n_sessions, seed=seed))

    return write


def simulator_writer(path: Path, n_sessions: int, seed: int) -> None:
    (unbiased,) = [profile for _, profile in load_simulated_profiles(["unbiased"])]
    assert unbiased == SimulatedProfile(noise_sd=1.0)  # all biases zero
    write_record_store(path, [(f"judge{i}", unbiased) for i in range(5)], n_sessions, seed=seed)


def null_rates(
    tmp_path: Path, write: StoreWriter, n_sessions: int, n_runs: int, seed: int
) -> dict[str, float]:
    """Each rate of :data:`RATE_NAMES` over ``n_runs`` fresh no-bias stores."""
    counts = dict.fromkeys(RATE_NAMES, 0)
    reviewer_tests = self_tests = 0
    for run in range(n_runs):
        path = tmp_path / f"null-{n_sessions}-{run}.jsonl"
        write(path, n_sessions, seed + run)
        store = load_store(path, threads=1)
        connection = store.connection
        create_analysis_tables(connection)
        length = pooled_length_bias(connection)
        if length is not None:
            counts[RATE_NAMES[0]] += length.pooled.excludes_zero()
            low, high = length.record_level_ci
            counts[RATE_NAMES[1]] += low > 0 or high < 0
        profiles = reviewer_profiles(connection)
        labelled = [p.leniency_label in ("harsh", "generous") for p in profiles]
        counts[RATE_NAMES[2]] += sum(labelled)
        counts[RATE_NAMES[3]] += any(labelled)
        reviewer_tests += len(profiles)
        position = position_bias(connection)
        assert position is not None
        counts[RATE_NAMES[4]] += position.council.test_p_value < 0.05
        counts[RATE_NAMES[5]] += any(p.flagged for p in position.per_reviewer)
        counts[RATE_NAMES[6]] += sum(p.test_p_value < 0.05 for p in position.per_reviewer)
        reference = [p.reviewer for p in profiles if p.in_leniency_reference]
        joint = fit_joint_model(connection, reference)
        if joint is not None:
            counts[RATE_NAMES[7]] += joint.model.position_wald_p < 0.05
            self_effects = [e for e in joint.model.effects if e.group == "self_review"]
            counts[RATE_NAMES[8]] += sum(e.ci_low > 0 or e.ci_high < 0 for e in self_effects)
            self_tests += len(self_effects)
        connection.close()
        path.unlink()
    per_reviewer = {RATE_NAMES[2], RATE_NAMES[6]}
    return {
        name: count
        / (
            self_tests
            if name == RATE_NAMES[8]
            else reviewer_tests
            if name in per_reviewer
            else n_runs
        )
        if (self_tests if name == RATE_NAMES[8] else 1)
        else float("nan")
        for name, count in counts.items()
    }


def _print_table(title: str, rates: dict[str, float]) -> None:
    print(f"\n{title} (Monte Carlo se of a 5% rate: {np.sqrt(0.05 * 0.95 / N_RUNS):.3f})")
    for name, rate in rates.items():
        print(f"  {name:<62} {rate:6.1%}")


def _assert_calibrated(rates: dict[str, float], n_runs: int) -> None:
    bound = 0.05 + 3 * np.sqrt(0.05 * 0.95 / n_runs)
    for name, rate in rates.items():
        if "reference design" not in name and np.isfinite(rate):
            assert rate <= bound, (name, rate)


@pytest.mark.slow
@pytest.mark.parametrize("n_sessions", SESSION_COUNTS)
@pytest.mark.parametrize("n_members", MEMBER_COUNTS)
def test_independent_generator_nulls(tmp_path: Path, n_members: int, n_sessions: int) -> None:
    rates = null_rates(
        tmp_path, independent_writer(n_members), n_sessions, N_RUNS, seed=97 * n_members
    )
    _print_table(
        f"{N_RUNS} no-bias stores, independent generator, {n_members} members x {n_sessions} "
        "sessions",
        rates,
    )
    _assert_calibrated(rates, N_RUNS)


@pytest.mark.slow
@pytest.mark.parametrize("n_sessions", SESSION_COUNTS)
def test_simulator_nulls(tmp_path: Path, n_sessions: int) -> None:
    rates = null_rates(tmp_path, simulator_writer, n_sessions, N_RUNS, seed=1000 * n_sessions)
    _print_table(f"{N_RUNS} no-bias stores, simulator, 5 judges x {n_sessions} sessions", rates)
    _assert_calibrated(rates, N_RUNS)
    # the reference design's record-count interval is the one that is not calibrated
    assert rates[RATE_NAMES[1]] > 0.10


def test_quick_null_regression(tmp_path: Path) -> None:
    """Default suite: 20 small no-bias stores (3 members, 10 sessions), the hardest size.

    Each flag is a 5% test; over 20 stores the number of stores where it fires is at most
    Binomial(20, 0.05), so P(count >= 5) = 0.26% (mean 1). A flag firing at 20% reaches 5
    in 37% of runs and one at 30% in 76%: a coarse alarm; the slow tables are the measure.
    """
    rates = null_rates(tmp_path, independent_writer(3), 10, 20, seed=4242)
    for name in (RATE_NAMES[3], RATE_NAMES[4], RATE_NAMES[5], RATE_NAMES[7]):
        assert round(rates[name] * 20) < 5, (name, rates[name])
