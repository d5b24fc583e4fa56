"""Per-session rates on rank points: false flags on honest councils beside the power on
deterministic judges (issue 23; the table in docs/bias-audit.md).

Sessions come from ``tests/generators/rank_council.py`` (karpathy-shaped rankings, each
reviewer its own shuffled order, independent of ``llm_council.simulation``) and pass
through the drop-in path (``extract_scores_from_stage2`` -> ``run_bias_audit``).

Slow; run with
``RANK_SESSION_RUNS=300 .venv/bin/pytest tests/bias_audit/session/test_rank_session_calibration.py -m slow -s``.
"""

from __future__ import annotations

import os

import pytest

from generators.rank_council import RankCouncilSpec, generate_sessions
from llm_council.bias_audit.session.audit import run_bias_audit
from llm_council.bias_audit.session.stage2_scores import extract_scores_from_stage2

N_RUNS = int(os.environ.get("RANK_SESSION_RUNS", "300"))

#: (label, judges for n members): the null council and the biased ones
COUNCILS = (
    ("honest", lambda n: ["honest"] * n),
    ("one always A first", lambda n: ["first"] + ["honest"] * (n - 1)),
    ("all always A first", lambda n: ["first"] * n),
    ("all always A last", lambda n: ["last"] * n),
    ("all A first 90%", lambda n: ["mostly_first"] * n),
)


def session_rates(n_members: int, judges: list[str], n_runs: int, seed: int) -> dict[str, float]:
    """Shares of sessions: position tested, position flagged, any risk flag, leniency
    counted as tested (must be 0 on rank points)."""
    spec = RankCouncilSpec(n_members=n_members, order="reviewer", judges=judges)
    tested = flagged = risky = leniency = 0
    for session in generate_sessions(spec, n_runs, seed=seed):
        scores = extract_scores_from_stage2(session.stage2, session.label_to_model)
        result = run_bias_audit(session.stage1, scores, session.label_to_model)
        tested += result.position_score_p_value is not None
        flagged += bool(result.position_bias_detected)  # None: not tested
        risky += result.overall_bias_risk in ("medium", "high")
        leniency += "leniency" in result.risk_tests_run
    return {
        "tested": tested / n_runs,
        "flagged": flagged / n_runs,
        "risky": risky / n_runs,
        "leniency": leniency / n_runs,
    }


@pytest.mark.slow
def test_print_the_rank_session_table() -> None:
    print(f"\n{N_RUNS} sessions per cell; each reviewer its own shuffled order")
    print("| members | council | position tested | position flagged | risk medium/high |")
    print("|---|---|---|---|---|")
    for n_members in (2, 3, 4, 5):
        for index, (label, judges) in enumerate(COUNCILS):
            rates = session_rates(n_members, judges(n_members), N_RUNS, 100 * n_members + index)
            print(
                f"| {n_members} | {label} | {rates['tested']:.2f} | {rates['flagged']:.3f} | "
                f"{rates['risky']:.3f} |"
            )
            assert rates["leniency"] == 0.0
            if label == "honest":
                # 5% test: flagged sessions at most 5% + 3 Monte Carlo SEs
                assert rates["flagged"] <= 0.05 + 3 * (0.05 * 0.95 / N_RUNS) ** 0.5


def test_rank_sessions_quick() -> None:
    honest = session_rates(5, ["honest"] * 5, 40, seed=1)
    assert honest["leniency"] == 0.0 and honest["flagged"] <= 0.15
    biased = session_rates(5, ["first"] * 5, 40, seed=2)
    assert biased["flagged"] >= 0.3  # measured 0.57 over 100 sessions
