"""Judge calibration: position-swap runs, replay of recorded verdicts, probes, human labels.

The public names are re-exported here; the modules behind them may change.
"""

from __future__ import annotations

from llm_council.calibration.gate import GateThresholds, JudgeUntrustedError, evaluate_gate
from llm_council.calibration.judge_prompt import JUDGE_SYSTEM, build_judge_prompt, parse_verdict
from llm_council.calibration.pairs import HumanVote, Judgment, Pair, read_pairs
from llm_council.calibration.probes import PROBE_NAMES
from llm_council.calibration.report import PairOutcome, ReportOptions, compute_report, grade
from llm_council.calibration.session import (
    LiveSettings,
    live_report,
    replay_reports,
    replay_study,
    run_live,
)
from llm_council.calibration.summary import render_summary

__all__ = [
    "JUDGE_SYSTEM",
    "PROBE_NAMES",
    "GateThresholds",
    "HumanVote",
    "JudgeUntrustedError",
    "Judgment",
    "LiveSettings",
    "Pair",
    "PairOutcome",
    "ReportOptions",
    "build_judge_prompt",
    "compute_report",
    "evaluate_gate",
    "grade",
    "live_report",
    "parse_verdict",
    "read_pairs",
    "render_summary",
    "replay_reports",
    "replay_study",
    "run_live",
]
