"""How often the baseline checks say "detected" when nothing is there, on data from the
independent generator (integer 1-10 scores, ceilings, ties, quality correlated with length).

Each generated session becomes one pair: the answers of ``judge-0`` (the judge under test,
whose family is ``judge-0``) and ``judge-1``; the judge's verdict is the higher of its own
two integer scores (``tie`` when equal) and the blinded "human" label is the same
comparison by ``judge-2``, a reviewer with no bias. The generator gives one score per
answer, so both orders carry that verdict (a position-neutral judge). Answer quality is
correlated with length (rho = 0.6), so the longer answer really is better more often than
not: a raw "prefers longer" rate fires although the judge has no length bias, and the
excess over humans must not.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from generators.independent_council import CouncilSpec, generate_sessions
from llm_council.calibration.outcomes import PairOutcome
from llm_council.calibration.pairs import Pair
from llm_council.calibration.report import ReportOptions, compute_report


def _verdict(scores: dict[str, float | None], first: str, second: str) -> str:
    a, b = scores[first], scores[second]
    assert a is not None and b is not None
    return "a" if a > b else "b" if b > a else "tie"


def _outcomes(spec: CouncilSpec, n_pairs: int, seed: int) -> list[PairOutcome]:
    outcomes = []
    for index, session in enumerate(generate_sessions(spec, n_pairs, seed)):
        first, second = ("judge-0", "judge-1") if index % 2 == 0 else ("judge-1", "judge-0")
        pair = Pair(
            pair_id=session.session_id,
            prompt="q",
            response_a=session.stage1_responses[first],
            response_b=session.stage1_responses[second],
            model_a=first,
            model_b=second,
            human_label=_verdict(session.stage2_scores["judge-2"], first, second),  # type: ignore[arg-type]
        )
        verdict = _verdict(session.stage2_scores["judge-0"], first, second)
        outcomes.append(PairOutcome(pair, (verdict,), (verdict,)))  # type: ignore[arg-type]
    return outcomes


def _rates(spec: CouncilSpec, replicates: int, n_pairs: int) -> dict[str, float]:
    fired: dict[str, int] = {"self": 0, "longer_vs_humans": 0, "longer_raw": 0}
    for replicate in range(replicates):
        outcomes = _outcomes(spec, n_pairs, seed=1000 + replicate)
        report: dict[str, Any] = compute_report(outcomes, ReportOptions(judge="judge-0"))
        fired["self"] += report["self_preference"]["significant_excess"]
        checks = {item["check"]: item["failed"] for item in report["checklist"]}
        fired["longer_vs_humans"] += checks["prefers longer (vs humans)"]
        longer = report["verbosity"]["prefers_longer"]
        fired["longer_raw"] += longer["ci_low"] is not None and longer["ci_low"] > 0.6
    return {name: count / replicates for name, count in fired.items()}


NULL = CouncilSpec(n_members=3, quality_length_correlation=0.6, noise_sd=1.0)
SELF_BIASED = CouncilSpec(
    n_members=3, quality_length_correlation=0.6, noise_sd=1.0, self_bias=(1.5, 0.0, 0.0)
)


def test_baseline_checks_quick() -> None:
    null = _rates(NULL, 40, 120)
    assert null["self"] <= 0.15 and null["longer_vs_humans"] <= 0.15
    biased = _rates(SELF_BIASED, 20, 120)
    assert biased["self"] >= 0.5


@pytest.mark.slow
def test_baseline_checks_false_positive_rate_and_power() -> None:
    null = _rates(NULL, 500, 200)
    biased = _rates(SELF_BIASED, 200, 200)
    print(
        f"\nnull judge (500 x 200 pairs): self-preference flagged {null['self']:.3f},"
        f" prefers-longer vs humans {null['longer_vs_humans']:.3f},"
        f" raw prefers-longer (no baseline) {null['longer_raw']:.3f}"
        f"\nself_bias 1.5 points (200 x 200 pairs): self-preference flagged {biased['self']:.3f}"
    )
    # one-sided tests at 2.5%: allow sampling error of 500 replicates (sd ~0.007)
    assert null["self"] <= 0.05 and null["longer_vs_humans"] <= 0.05
    assert biased["self"] >= 0.8
    assert np.isfinite(null["longer_raw"])
