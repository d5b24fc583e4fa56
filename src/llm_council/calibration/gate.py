"""The CI gate of ``calibrate``: thresholds a weekly run must meet, and the exit it causes.

Three rules, checked in this order, each with its own exit status so a CI log says which
one fired:

- too few successful judgments (exit 5): fewer than ``min_evaluated`` of the pairs were
  judged in both orders (a judge whose every call fails must not pass);
- ``--fail-under METRIC=VALUE,...`` (exit 4): a named metric is below its floor or
  undefined (an undefined metric is not evidence of quality);
- the human-kappa rule (exit 3): a judge with human labels whose kappa with them is below
  ``--human-threshold``, or measured on too few labelled pairs (its report's
  ``human_agreement.trusted`` is false). A file without human labels is not held to it.

:func:`decide_gate` returns one :class:`GateDecision`; the JSON report's ``gate`` and the
exit status are both read from it, so a CI step reading the JSON and one reading the exit
status cannot disagree (issue 28: the JSON said "pass" while the run exited 3).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from llm_council.calibration.estimates import MIN_N_FOR_INTERVAL
from llm_council.errors import ConfigError, CouncilError
from llm_council.infra.safe_text import terminal_safe

#: default share of pairs that must be judged in both orders
DEFAULT_MIN_EVALUATED = 0.5


class TooFewJudgmentsError(CouncilError):
    """Too few pairs got a verdict in both orders for the report to mean anything."""

    exit_code = 5


class GateFailedError(CouncilError):
    """A ``--fail-under`` threshold failed."""

    exit_code = 4


class JudgeUntrustedError(CouncilError):
    """The judge's agreement with human labels is below the threshold: recalibrate it first."""

    exit_code = 3


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


def _kappa_vs_ceiling(report: Mapping[str, Any]) -> float | None:
    """Judge-annotator kappa minus annotator-annotator kappa (undefined without a ceiling)."""
    ceiling = report["human_agreement"].get("human_ceiling")
    if not ceiling or ceiling["too_few"]:
        return None
    judge, humans = ceiling["judge_kappa"], ceiling["human_kappa"]
    return None if judge is None or humans is None else judge - humans


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
    "kappa_vs_ceiling": (
        "judge-annotator kappa minus annotator-annotator kappa (the human ceiling)",
        _kappa_vs_ceiling,
    ),
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


def too_few_judged(evaluated: int, total: int, min_evaluated: float) -> bool:
    """The exit-5 rule: no pair, or fewer than ``min_evaluated`` of them, judged both ways."""
    return evaluated == 0 or evaluated < min_evaluated * total


def _too_few(report: Mapping[str, Any], min_evaluated: float) -> str | None:
    evaluated, total = report["pairs_evaluated"], report["pairs_total"]
    if too_few_judged(evaluated, total, min_evaluated):
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


#: verdict -> exit status; the order of the rules is the order of :func:`decide_gate`
VERDICT_EXIT_STATUS: dict[str, int] = {
    "pass": 0,
    "too_few_judgments": TooFewJudgmentsError.exit_code,
    "fail": GateFailedError.exit_code,
    "untrusted": JudgeUntrustedError.exit_code,
}


@dataclass(frozen=True)
class GateDecision:
    """Every rule's findings and the one verdict they give; JSON and exit status both come
    from here."""

    thresholds: GateThresholds
    too_few_judgments: tuple[str, ...]
    failures: tuple[dict[str, Any], ...]
    untrusted: tuple[str, ...]

    @property
    def verdict(self) -> str:
        """The first rule that fired, in the module's order, else ``"pass"``."""
        if self.too_few_judgments:
            return "too_few_judgments"
        if self.failures:
            return "fail"
        if self.untrusted:
            return "untrusted"
        return "pass"

    @property
    def exit_status(self) -> int:
        return VERDICT_EXIT_STATUS[self.verdict]

    @property
    def message(self) -> str | None:
        """The one line the CLI prints for the verdict (``None`` on a pass)."""
        verdict = self.verdict
        if verdict == "too_few_judgments":
            return "; ".join(self.too_few_judgments)
        if verdict == "fail":
            return "--fail-under failed: " + "; ".join(f["message"] for f in self.failures)
        if verdict == "untrusted":
            threshold = self.thresholds.human_kappa
            below = "below threshold" if threshold is None else f"below {threshold:g}"
            return (
                f"human agreement {below} for {', '.join(self.untrusted)}:"
                " do not trust until recalibrated"
            )
        return None

    def as_json(self) -> dict[str, Any]:
        """The report's ``gate`` object: thresholds, verdict, exit status and every finding."""
        return {
            "thresholds": {
                "fail_under": dict(self.thresholds.fail_under),
                "min_evaluated": self.thresholds.min_evaluated,
                "human_kappa": self.thresholds.human_kappa,
            },
            "verdict": self.verdict,
            "exit_status": self.exit_status,
            "message": self.message,
            "too_few_judgments": list(self.too_few_judgments),
            "failures": list(self.failures),
            "untrusted_judges": list(self.untrusted),
        }

    def raise_if_failed(self) -> None:
        """Raise the verdict's error (its ``exit_code`` is the exit status); nothing on a pass."""
        error = {
            "too_few_judgments": TooFewJudgmentsError,
            "fail": GateFailedError,
            "untrusted": JudgeUntrustedError,
        }.get(self.verdict)
        if error is not None:
            raise error(self.message or self.verdict)


def _kappa_text(report: Mapping[str, Any]) -> str:
    human = report["human_agreement"]
    if human.get("kappa") is None:
        return "undefined"
    if (human.get("pairs") or 0) < MIN_N_FOR_INTERVAL:
        return f"{human['kappa']:.2f} from only {human['pairs']} labelled pairs, too few"
    return f"{human['kappa']:.2f}"


def _untrusted(report: Mapping[str, Any]) -> str | None:
    """``"judge (kappa 0.41)"`` when the report's human-agreement section distrusts it."""
    human = report["human_agreement"]
    if not human.get("pairs") or human.get("trusted") is not False:
        return None
    return f"{terminal_safe(str(report['judge']))} (kappa {_kappa_text(report)})"


def _fail_under_failures(
    report: Mapping[str, Any], floors: Mapping[str, float]
) -> list[dict[str, Any]]:
    failures = []
    for name, floor in floors.items():
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
    return failures


def decide_gate(reports: Sequence[Mapping[str, Any]], thresholds: GateThresholds) -> GateDecision:
    """Apply every rule to every judge's report; the decision holds all that fired."""
    return GateDecision(
        thresholds=thresholds,
        too_few_judgments=tuple(
            reason for r in reports if (reason := _too_few(r, thresholds.min_evaluated))
        ),
        failures=tuple(
            failure for r in reports for failure in _fail_under_failures(r, thresholds.fail_under)
        ),
        untrusted=tuple(name for r in reports if (name := _untrusted(r))),
    )


def evaluate_gate(
    reports: Sequence[Mapping[str, Any]], thresholds: GateThresholds
) -> dict[str, Any]:
    """The gate's verdict over every judge's report, JSON-ready.

    ``verdict`` is ``"too_few_judgments"`` (exit 5), ``"fail"`` (4), ``"untrusted"`` (3) or
    ``"pass"`` (0), and ``exit_status`` says which.
    """
    return decide_gate(reports, thresholds).as_json()
