"""Issue 24's targets at small N (fast): the reference example, power and level (ADR 0045).

The full table is ``benchmarks/audit_power_history.py``; the slow test
``test_audit_power_slow.py`` asserts its targets at 200 sessions a cell.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

from llm_council.bias_audit import run_bias_audit
from llm_council.bias_audit.session.thresholds import AuditThresholds

BENCHMARK = Path(__file__).resolve().parents[3] / "benchmarks" / "audit_power_history.py"


def load_benchmark() -> ModuleType:
    spec = importlib.util.spec_from_file_location("audit_power_history", BENCHMARK)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_the_reference_example_names_both_extreme_judges() -> None:
    # the reference design's example: three reviewers scoring three answers
    texts = {"A": "one", "B": "two", "C": "three"}
    scores = {
        "harsh": {"A": 1, "B": 2, "C": 3},
        "generous": {"A": 9, "B": 10, "C": 10},
        "normal": {"A": 4, "B": 6, "C": 8},
    }
    audit = run_bias_audit(texts, scores)
    assert audit.harsh_reviewers == ["harsh"] and audit.generous_reviewers == ["generous"]
    assert audit.overall_bias_risk == "medium"  # one risk flag: harsh-or-generous
    # before (session-only noise, 4 residual df spread over 3 reviewers): nobody, "low"
    before = run_bias_audit(
        texts, scores, thresholds=AuditThresholds(moderate_reviewer_noise=False)
    )
    assert (before.harsh_reviewers, before.generous_reviewers) == ([], [])


def test_key_cells_at_small_n() -> None:
    bench = load_benchmark()
    named = bench.POWER["judge 4 points harsh"][1]
    # 5 members, judge 0 four points harsh: named in every one of 40 sessions here (100%
    # at 200); before: 42%
    results = bench.audits(bench.independent_draw(5, leniency=[-4.0, 0, 0, 0, 0]), 40, 0, seed=3)
    assert bench.rate([named(a) for a in results["after, no history"]]) >= 0.9
    assert bench.rate([named(a) for a in results["before"]]) <= 0.75
    # with 30 sessions of history, a 2-point harsh judge at 5 members (90-96% at 200 before
    # ADR 0050/0051; 17 of 25 here with both; 4 of 25 since ADR 0071: a flag needs the
    # session-only path's evidence too, whatever the history says)
    results = bench.audits(bench.independent_draw(5, leniency=[-2.0, 0, 0, 0, 0]), 25, 30, seed=4)
    assert bench.rate([named(a) for a in results["after, 30 sessions"]]) >= 0.08
    # honest judges, noise SD 0.5-1.5: few flags of any kind (1.5-5% at 200 sessions)
    results = bench.audits(bench.independent_draw(5), 40, 30, seed=5)
    for mode in ("after, no history", "after, 30 sessions"):
        for fired in bench.NULL_FLAGS.values():
            assert bench.rate([fired(a) for a in results[mode]]) <= 0.15
