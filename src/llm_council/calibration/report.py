"""The calibration report of one judge, computed from its verdicts on pairs in both orders.

Definitions (per pair, using the first repetition of each order):

- *consistent*: the verdict in order ab equals the verdict in order ba (original labels);
  positional consistency = share of evaluated pairs that are consistent; Cohen's kappa
  treats the two orders as two raters over {a, b, tie}.
- *flip*: not consistent. Its direction comes from the position lean of the pair: +1 for
  each order in which the answer shown first won, -1 for each in which the second won;
  every flip has a non-zero lean (``favors_first`` > 0 > ``favors_second``).
- *consolidated verdict*: the common verdict when consistent, ``tie`` otherwise (the
  MT-Bench convention, Zheng et al. 2023), used for human agreement, verbosity and
  self-preference.
- a pair without a usable verdict in one of the orders is *unevaluated*: listed, never
  guessed.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from llm_council.calibration.family import model_family
from llm_council.calibration.pairs import Judgment, Pair, Winner, shown_order
from llm_council.stats.agreement import cohen_kappa, landis_koch_label
from llm_council.stats.correlation import pearson_correlation_t_test
from llm_council.stats.proportions import sign_test_p_value, wilson_interval

CATEGORIES: tuple[Winner, ...] = ("a", "b", "tie")

#: the issue's checklist thresholds (also used by the probes)
POSITIONAL_AGREEMENT_MIN = 0.85
LENGTH_CORRELATION_MAX = 0.5
OWN_STYLE_PREFERRED_MAX = 0.6
DEFAULT_HUMAN_KAPPA_THRESHOLD = 0.6


@dataclass(frozen=True)
class PairOutcome:
    """What the report knows about one pair: its verdicts, or why it was not evaluated."""

    pair: Pair
    ab: tuple[Winner, ...]
    ba: tuple[Winner, ...]
    problem: str | None = None  # e.g. a failed or unparseable call in a live run

    @property
    def evaluated(self) -> bool:
        return bool(self.ab) and bool(self.ba)

    @property
    def consistent(self) -> bool:
        return self.evaluated and self.ab[0] == self.ba[0]

    @property
    def consolidated(self) -> Winner:
        return self.ab[0] if self.consistent else "tie"

    @property
    def position_lean(self) -> int:
        """+1 per order the first-shown answer won, -1 per order the second-shown won."""
        lean = 0
        for order, verdicts in (("ab", self.ab), ("ba", self.ba)):
            first, second = shown_order(order)  # type: ignore[arg-type]
            lean += 1 if verdicts[0] == first else -1 if verdicts[0] == second else 0
        return lean


def outcomes_from_judgments(pairs: Sequence[Pair]) -> list[PairOutcome]:
    """Group each pair's recorded judgments by order (replay)."""
    outcomes = []
    for pair in pairs:
        ordered = sorted(pair.judgments, key=lambda j: (j.order, j.repetition))
        outcomes.append(
            PairOutcome(
                pair=pair,
                ab=tuple(j.winner for j in ordered if j.order == "ab"),
                ba=tuple(j.winner for j in ordered if j.order == "ba"),
            )
        )
    return outcomes


def _rate(successes: int, n: int, confidence: float) -> dict[str, Any]:
    low, high = wilson_interval(successes, n, confidence)
    return {
        "successes": successes,
        "n": n,
        "rate": successes / n if n else None,
        "ci_low": None if math.isnan(low) else low,
        "ci_high": None if math.isnan(high) else high,
    }


def _finite(value: float) -> float | None:
    return None if value is None or math.isnan(value) else value


def grade(kappa: float | None, position_bias: float | None) -> str | None:
    """The overall grade from between-order kappa and the flip rate (the issue's table).

    A: kappa > 0.8 and bias < 10%; B: > 0.6 and < 20%; C: > 0.4 and < 30%; D: kappa > 0.2;
    F otherwise.

    ``None`` when kappa is undefined (nothing evaluated, or a single category throughout).
    """
    if kappa is None or position_bias is None:
        return None
    if kappa > 0.8 and position_bias < 0.10:
        return "A"
    if kappa > 0.6 and position_bias < 0.20:
        return "B"
    if kappa > 0.4 and position_bias < 0.30:
        return "C"
    if kappa > 0.2:
        return "D"
    return "F"


def _words(text: str) -> int:
    return max(1, len(text.split()))


def _preference_for_a(outcome: PairOutcome) -> float:
    """Mean over both orders of +1 (a won), -1 (b won), 0 (tie): position-balanced."""
    values = {"a": 1.0, "b": -1.0, "tie": 0.0}
    return (values[outcome.ab[0]] + values[outcome.ba[0]]) / 2.0


@dataclass(frozen=True)
class ReportOptions:
    judge: str
    human_kappa_threshold: float = DEFAULT_HUMAN_KAPPA_THRESHOLD
    confidence: float = 0.95
    judge_family: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def compute_report(outcomes: Sequence[PairOutcome], options: ReportOptions) -> dict[str, Any]:
    """The full calibration report of one judge as a JSON-ready dict."""
    conf = options.confidence
    evaluated = [o for o in outcomes if o.evaluated]
    unevaluated = [
        {"id": o.pair.pair_id, "reason": o.problem or _missing_reason(o)}
        for o in outcomes
        if not o.evaluated
    ]
    n = len(evaluated)
    report: dict[str, Any] = {
        "judge": options.judge,
        "pairs_total": len(outcomes),
        "pairs_evaluated": n,
        "pairs_unevaluated": len(unevaluated),
        "unevaluated": unevaluated,
    }
    report["consistency"] = _consistency(evaluated, conf)
    report["position_bias"] = _position_bias(evaluated, conf)
    report["verbosity"] = _verbosity(evaluated, conf)
    family = options.judge_family or model_family(options.judge)
    report["self_preference"] = _self_preference(evaluated, family, conf)
    report["human_agreement"] = _human_agreement(evaluated, options.human_kappa_threshold, conf)
    report["repetition_stability"] = _repetition_stability(evaluated, conf)
    report["grade"] = grade(report["consistency"]["kappa"], report["position_bias"]["flip_rate"])
    report["checklist"] = _checklist(report)
    report["pairs"] = [
        {
            "id": o.pair.pair_id,
            "ab": list(o.ab),
            "ba": list(o.ba),
            "consolidated": o.consolidated if o.evaluated else None,
        }
        for o in outcomes
    ]
    report.update(options.extra)
    return report


def _missing_reason(outcome: PairOutcome) -> str:
    missing = [
        order for order, verdicts in (("ab", outcome.ab), ("ba", outcome.ba)) if not verdicts
    ]
    return "missing both orders" if len(missing) == 2 else f"missing order {missing[0]}"


def _consistency(evaluated: Sequence[PairOutcome], conf: float) -> dict[str, Any]:
    agree = sum(o.consistent for o in evaluated)
    kappa = cohen_kappa(
        [o.ab[0] for o in evaluated], [o.ba[0] for o in evaluated], CATEGORIES, conf
    )
    return {
        "percent_agreement": agree / len(evaluated) if evaluated else None,
        "agreement": _rate(agree, len(evaluated), conf),
        "kappa": _finite(kappa.kappa),
        "kappa_se": _finite(kappa.standard_error),
        "kappa_ci": [_finite(kappa.ci_low), _finite(kappa.ci_high)],
        "landis_koch": landis_koch_label(kappa.kappa),
    }


def _position_bias(evaluated: Sequence[PairOutcome], conf: float) -> dict[str, Any]:
    flips = [o for o in evaluated if not o.consistent]
    toward_first = sum(o.position_lean > 0 for o in flips)
    toward_second = sum(o.position_lean < 0 for o in flips)
    direction = "none"
    if toward_first > toward_second:
        direction = "favors_first"
    elif toward_second > toward_first:
        direction = "favors_second"
    # first-shown win rate over all decisive verdicts (each order counts once)
    first_wins = decisive = 0
    for outcome in evaluated:
        for order, verdicts in (("ab", outcome.ab), ("ba", outcome.ba)):
            first, _ = shown_order(order)  # type: ignore[arg-type]
            if verdicts[0] != "tie":
                decisive += 1
                first_wins += verdicts[0] == first
    flip_rate = _rate(len(flips), len(evaluated), conf)
    return {
        "flip_rate": flip_rate["rate"],
        "flips": flip_rate,
        "direction": direction,
        "flips_favoring_first": toward_first,
        "flips_favoring_second": toward_second,
        "direction_sign_test_p": (
            p_direction := sign_test_p_value(toward_first, toward_first + toward_second)
        ),
        # the direction is the majority side; it is a finding only when the sign test says so
        "direction_significant": p_direction < 0.05,
        "first_shown_win_rate": _rate(first_wins, decisive, conf),
    }


def _verbosity(evaluated: Sequence[PairOutcome], conf: float) -> dict[str, Any]:
    log_ratio = [math.log(_words(o.pair.response_a) / _words(o.pair.response_b)) for o in evaluated]
    preference = [_preference_for_a(o) for o in evaluated]
    test = pearson_correlation_t_test(log_ratio, preference) if len(evaluated) >= 3 else None
    longer_wins = decisive = 0
    for outcome in evaluated:
        words_a, words_b = _words(outcome.pair.response_a), _words(outcome.pair.response_b)
        if outcome.consolidated == "tie" or words_a == words_b:
            continue
        decisive += 1
        longer = "a" if words_a > words_b else "b"
        longer_wins += outcome.consolidated == longer
    return {
        "length_correlation": test.r if test else None,
        "length_correlation_p": test.p_value if test else None,
        "length_measure": "log(words_a / words_b) vs position-balanced preference for a",
        "prefers_longer": _rate(longer_wins, decisive, conf),
    }


def _self_preference(evaluated: Sequence[PairOutcome], family: str, conf: float) -> dict[str, Any]:
    own_wins = own_losses = ties = 0
    human_own_wins = human_decisive = 0
    for outcome in evaluated:
        pair = outcome.pair
        sides = [
            side
            for side, model in (("a", pair.model_a), ("b", pair.model_b))
            if model and model_family(model) == family
        ]
        if len(sides) != 1:
            continue  # no own answer, or both answers from the judge's family
        own = sides[0]
        verdict = outcome.consolidated
        if verdict == "tie":
            ties += 1
        elif verdict == own:
            own_wins += 1
        else:
            own_losses += 1
        if pair.human_label in ("a", "b"):
            human_decisive += 1
            human_own_wins += pair.human_label == own
    pairs_with_own = own_wins + own_losses + ties
    judge_rate = _rate(own_wins, own_wins + own_losses, conf)
    human = _rate(human_own_wins, human_decisive, conf)
    excess = (
        judge_rate["rate"] - human["rate"]
        if judge_rate["rate"] is not None and human["rate"] is not None
        else None
    )
    return {
        "judge_family": family,
        "pairs_with_own_answer": pairs_with_own,
        "own_wins": own_wins,
        "own_losses": own_losses,
        "ties": ties,
        "own_win_rate": judge_rate,
        "human_own_win_rate": human,
        "excess_over_humans": excess,
    }


def _human_agreement(
    evaluated: Sequence[PairOutcome], threshold: float, conf: float
) -> dict[str, Any]:
    labelled = [o for o in evaluated if o.pair.human_label is not None]
    if not labelled:
        return {"pairs": 0, "threshold": threshold, "trusted": None}
    judge = [o.consolidated for o in labelled]
    human = [o.pair.human_label for o in labelled]
    correct = sum(j == h for j, h in zip(judge, human, strict=True))
    kappa = cohen_kappa(judge, human, CATEGORIES, conf)
    value = _finite(kappa.kappa)
    return {
        "pairs": len(labelled),
        "accuracy": _rate(correct, len(labelled), conf),
        "kappa": value,
        "kappa_ci": [_finite(kappa.ci_low), _finite(kappa.ci_high)],
        "landis_koch": landis_koch_label(kappa.kappa),
        "threshold": threshold,
        # an undefined kappa is not evidence of agreement
        "trusted": value is not None and value >= threshold,
    }


def _repetition_stability(evaluated: Sequence[PairOutcome], conf: float) -> dict[str, Any] | None:
    repeated = [v for o in evaluated for v in (o.ab, o.ba) if len(v) > 1]
    if not repeated:
        return None
    stable = sum(len(set(v)) == 1 for v in repeated)
    kappa = cohen_kappa([v[0] for v in repeated], [v[1] for v in repeated], CATEGORIES, conf)
    counts = Counter(len(v) for v in repeated)
    return {
        "orders_with_repetitions": len(repeated),
        "repetitions_per_order": dict(sorted(counts.items())),
        "all_repetitions_agree": _rate(stable, len(repeated), conf),
        "kappa_first_vs_second": _finite(kappa.kappa),
    }


def _checklist(report: dict[str, Any]) -> list[dict[str, Any]]:
    """The issue's thresholds that apply to a position-swap run; probes add their own."""
    items = []
    agreement = report["consistency"]["percent_agreement"]
    items.append(
        {
            "check": "positional agreement",
            "value": agreement,
            "threshold": f">= {POSITIONAL_AGREEMENT_MIN}",
            "failed": agreement is not None and agreement < POSITIONAL_AGREEMENT_MIN,
            "advice": "revise the judge prompt",
        }
    )
    correlation = report["verbosity"]["length_correlation"]
    items.append(
        {
            "check": "length correlation",
            "value": correlation,
            "threshold": f"<= {LENGTH_CORRELATION_MAX}",
            "failed": correlation is not None and correlation > LENGTH_CORRELATION_MAX,
            "advice": "the judge rewards length",
        }
    )
    own_rate = report["self_preference"]["own_win_rate"]["rate"]
    items.append(
        {
            "check": "own answers preferred",
            "value": own_rate,
            "threshold": f"<= {OWN_STYLE_PREFERRED_MAX}",
            "failed": own_rate is not None and own_rate > OWN_STYLE_PREFERRED_MAX,
            "advice": "do not let this judge grade its own family",
        }
    )
    return items


def judgments_to_outcome(
    pair: Pair, judgments: Sequence[Judgment], problem: str | None
) -> PairOutcome:
    """Build an outcome from live verdicts (repetitions in order)."""
    ordered = sorted(judgments, key=lambda j: (j.order, j.repetition))
    return PairOutcome(
        pair=pair,
        ab=tuple(j.winner for j in ordered if j.order == "ab"),
        ba=tuple(j.winner for j in ordered if j.order == "ba"),
        problem=problem,
    )
