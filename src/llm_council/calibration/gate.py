"""The CI gate of ``calibrate``: thresholds a weekly run must meet, and the exit it causes.

Three rules, checked in this order, each with its own exit status so a CI log says which
one fired:

- too few successful judgments (exit 5): fewer than ``min_evaluated`` of the pairs were
  judged in both orders (a judge whose every call fails must not pass);
- ``--fail-under METRIC=VALUE,...`` (exit 4): a named metric is below its floor or
  undefined (an undefined metric is not evidence of quality);
- the human-kappa rule (exit 3, :class:`~llm_council.calibration.session.JudgeUntrustedError`).

The thresholds used and the verdict go into the JSON report, so the artefact of a CI run
says what it was held to.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from llm_council.calibration.estimates import MIN_N_FOR_INTERVAL
from llm_council.errors import ConfigError, CouncilError
from llm_council.safe_text import terminal_safe

#: default share of pairs that must be judged in both orders
DEFAULT_MIN_EVALUATED = 0.5


class TooFewJudgmentsError(CouncilError):
    """Too few pairs got a verdict in both orders for the report to mean anything."""

    exit_code = 5


class GateFailedError(CouncilError):
    """A ``--fail-under`` threshold failed."""

    exit_code = 4


def _human_kappa(report: Mapping[str, Any]) -> float | None:
    """Undefined (so a floor on it fails) below MIN_N_FOR_INTERVAL labelled pairs."""
    human = report["human_agreement"]
    if (human.get("pairs") or 0) < MIN_N_FOR_INTERVAL:
        return None
    return human.get("kappa")


def _order_agreement(report: Mapping[str, Any]) -> float | None:
    return report["consistency"]["percent_agreement"]


def _order_kappa(report: Mapping[str, Any]) -> float | None:
    return report["consistency"]["kappa"]


def _human_accuracy(report: Mapping[str, Any]) -> float | None:
    accuracy = report["human_agreement"].get("accuracy")
    return None if accuracy is None else accuracy["rate"]


def _evaluated_share(report: Mapping[str, Any]) -> float | None:
    total = report["pairs_total"]
    return report["pairs_evaluated"] / total if total else None


#: metric name -> (what it is, how to read it from a report)
METRICS: dict[str, tuple[str, Callable[[Mapping[str, Any]], float | None]]] = {
    "kappa": ("Cohen's kappa with the human labels", _human_kappa),
    "human_kappa": ("Cohen's kappa with the human labels", _human_kappa),
    "human_accuracy": ("accuracy against the human labels", _human_accuracy),
    "agreement": ("order agreement (same verdict in both orders)", _order_agreement),
    "order_agreement": ("order agreement (same verdict in both orders)", _order_agreement),
    "order_kappa": ("Cohen's kappa between the two orders", _order_kappa),
    "evaluated": ("share of pairs judged in both orders", _evaluated_share),
}


def parse_fail_under(text: str | None) -> dict[str, float]:
    """``"kappa=0.6,agreement=0.85"`` -> ``{"kappa": 0.6, "agreement": 0.85}``."""
    floors: dict[str, float] = {}
    for item in (text or "").split(","):
        if not item.strip():
            continue
        name, sep, raw = item.partition("=")
        name = name.strip()
        if not sep or name not in METRICS:
            raise ConfigError(
                f"--fail-under: unknown metric or missing '=' in {item.strip()!r};"
                f" known: {', '.join(METRICS)}"
            )
        try:
            value = float(raw)
        except ValueError:
            raise ConfigError(f"--fail-under: {name} needs a number, got {raw.strip()!r}") from None
        if math.isnan(value):
            raise ConfigError(f"--fail-under: {name} needs a number, got {raw.strip()!r}")
        floors[name] = value
    return floors


@dataclass(frozen=True)
class GateThresholds:
    """What a run is held to: metric floors and the share of pairs that must be evaluated."""

    fail_under: Mapping[str, float] = field(default_factory=dict)
    min_evaluated: float = DEFAULT_MIN_EVALUATED
    human_kappa: float | None = None

    def __post_init__(self) -> None:
        if math.isnan(self.min_evaluated) or not 0.0 <= self.min_evaluated <= 1.0:
            raise ConfigError(
                f"--min-evaluated must be a share from 0 to 1, got {self.min_evaluated!r}"
            )


def _too_few(report: Mapping[str, Any], min_evaluated: float) -> str | None:
    evaluated, total = report["pairs_evaluated"], report["pairs_total"]
    if evaluated == 0 or evaluated < min_evaluated * total:
        reasons = _commonest_reason(report)
        return (
            f"{terminal_safe(str(report['judge']))}: only {evaluated} of {total} pairs judged"
            " in both orders"
            f" (need {min_evaluated:.0%}){reasons}"
        )
    return None


def _commonest_reason(report: Mapping[str, Any]) -> str:
    """``"; commonest problem (x12): call failed ..."`` or ``""``, on one line."""
    counts = Counter(item["reason"] for item in report["unevaluated"])
    if not counts:
        return ""
    reason, count = counts.most_common(1)[0]
    return f"; commonest problem (x{count}): {terminal_safe(' '.join(reason.split())[:200])}"


def evaluate_gate(
    reports: Sequence[Mapping[str, Any]], thresholds: GateThresholds
) -> dict[str, Any]:
    """The gate's verdict over every judge's report, JSON-ready.

    ``verdict`` is ``"too_few_judgments"``, ``"fail"`` or ``"pass"`` (the human-kappa rule
    is reported by the reports' ``human_agreement.trusted`` and raised by the caller).
    """
    too_few = [reason for r in reports if (reason := _too_few(r, thresholds.min_evaluated))]
    failures = []
    for report in reports:
        for name, floor in thresholds.fail_under.items():
            value = METRICS[name][1](report)
            if value is None or value < floor:
                shown = "undefined" if value is None else f"{value:.3f}"
                failures.append(
                    {
                        "judge": report["judge"],
                        "metric": name,
                        "value": value,
                        "threshold": floor,
                        "message": f"{terminal_safe(str(report['judge']))}: {name} {shown}"
                        f" < {floor:g}"
                        f" ({METRICS[name][0]})",
                    }
                )
    verdict = "too_few_judgments" if too_few else "fail" if failures else "pass"
    return {
        "thresholds": {
            "fail_under": dict(thresholds.fail_under),
            "min_evaluated": thresholds.min_evaluated,
            "human_kappa": thresholds.human_kappa,
        },
        "verdict": verdict,
        "too_few_judgments": too_few,
        "failures": failures,
    }


def raise_for_gate(gate: Mapping[str, Any]) -> None:
    """Turn a failed gate into its one-line error (and exit status)."""
    if gate["too_few_judgments"]:
        raise TooFewJudgmentsError("; ".join(gate["too_few_judgments"]))
    if gate["failures"]:
        raise GateFailedError(
            "--fail-under failed: " + "; ".join(f["message"] for f in gate["failures"])
        )
