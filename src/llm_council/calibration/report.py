"""The calibration report of one judge, computed from its verdicts on pairs in both orders.

Definitions (per pair, each order's verdict being the MAJORITY of its repetitions, see
:mod:`llm_council.calibration.outcomes`):

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

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from llm_council.calibration.confidence import confidence_calibration
from llm_council.calibration.estimates import (
    MIN_N_FOR_INTERVAL,
    kappa_estimate,
    mean_estimate,
    rate,
    significantly_positive,
)
from llm_council.calibration.family import model_family
from llm_council.calibration.human_ceiling import human_ceiling
from llm_council.calibration.outcomes import (
    PairOutcome,
    judgments_to_outcome,
    outcomes_from_judgments,
)
from llm_council.calibration.pairs import Winner, shown_order
from llm_council.calibration.reasoning import rationale_length_errors
from llm_council.calibration.repetitions import repetition_stability
from llm_council.calibration.self_preference import self_preference
from llm_council.calibration.verbosity import verbosity
from llm_council.stats.inference.proportions import sign_test_p_value
from llm_council.stats.reliability.agreement import (
    agreement_table,
    cohen_kappa,
    landis_koch_label,
    weighted_kappa_from_table,
)
from llm_council.stats.reliability.krippendorff_alpha import krippendorff_alpha_interval

__all__ = [
    "POSITIONAL_AGREEMENT_MIN",
    "PairOutcome",
    "ReportOptions",
    "compute_report",
    "grade",
    "judgments_to_outcome",
    "outcomes_from_judgments",
]

CATEGORIES: tuple[Winner, ...] = ("a", "b", "tie")

#: the issue's checklist thresholds (also used by the probes)
POSITIONAL_AGREEMENT_MIN = 0.85
LENGTH_CORRELATION_MAX = 0.5
OWN_STYLE_PREFERRED_MAX = 0.6
#: the longer answer may win at most this often (Wilson lower bound) without a human baseline
LENGTH_PREFERENCE_MAX = 0.6
DEFAULT_HUMAN_KAPPA_THRESHOLD = 0.6


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


@dataclass(frozen=True)
class ReportOptions:
    judge: str
    human_kappa_threshold: float = DEFAULT_HUMAN_KAPPA_THRESHOLD
    confidence: float = 0.95
    judge_family: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    #: pair id -> the other judges' consolidated verdicts (self-preference baseline)
    other_judges: Mapping[str, Sequence[Winner]] = field(default_factory=dict)


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
        # the level of every interval below (two-sided), printed where a threshold names it
        "confidence": conf,
    }
    report["consistency"] = _consistency(evaluated, conf)
    report["position_bias"] = _position_bias(evaluated, conf)
    report["verbosity"] = verbosity(evaluated, conf)
    family = options.judge_family or model_family(options.judge)
    report["self_preference"] = self_preference(evaluated, family, conf, options.other_judges)
    report["human_agreement"] = _human_agreement(evaluated, options.human_kappa_threshold, conf)
    report["repetition_stability"] = repetition_stability(evaluated, conf)
    report["reasoning_length"] = rationale_length_errors(evaluated, conf)  # ADR 0027
    calibration = confidence_calibration(evaluated, conf)
    if calibration is not None:  # only when verdicts state a confidence
        report["confidence_calibration"] = calibration
    report["grade"] = (
        grade(report["consistency"]["kappa"], report["position_bias"]["flip_rate"])
        if n >= MIN_N_FOR_INTERVAL
        else None
    )
    report["grade_note"] = (
        None if n >= MIN_N_FOR_INTERVAL else f"too few pairs (n={n} < {MIN_N_FOR_INTERVAL})"
    )
    report["checklist"] = _checklist(report, conf)
    report["pairs"] = [
        {
            "id": o.pair.pair_id,
            "ab": list(o.ab),
            "ba": list(o.ba),
            "verdict_ab": o.verdict_ab if o.ab else None,
            "verdict_ba": o.verdict_ba if o.ba else None,
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
        [o.verdict_ab for o in evaluated], [o.verdict_ba for o in evaluated], CATEGORIES, conf
    )
    return {
        "percent_agreement": agree / len(evaluated) if evaluated else None,
        "agreement": rate(agree, len(evaluated), conf),
        **kappa_estimate(kappa),
        "landis_koch": landis_koch_label(kappa.kappa),
    }


def _position_bias(evaluated: Sequence[PairOutcome], conf: float) -> dict[str, Any]:
    flips = [o for o in evaluated if not o.consistent]
    toward_first = sum(o.position_lean > 0 for o in flips)
    toward_second = sum(o.position_lean < 0 for o in flips)
    p_direction = sign_test_p_value(toward_first, toward_first + toward_second)
    significant = p_direction < 0.05
    # a direction is named only when the sign test finds one; the lean counts stay beside it
    direction = None
    if significant:
        direction = "favors_first" if toward_first > toward_second else "favors_second"
    # first-shown win rate over all decisive order verdicts (each order counts once)
    first_wins = decisive = 0
    for outcome in evaluated:
        for order, verdict in (("ab", outcome.verdict_ab), ("ba", outcome.verdict_ba)):
            first, _ = shown_order(order)  # type: ignore[arg-type]
            if verdict != "tie":
                decisive += 1
                first_wins += verdict == first
    flip_rate = rate(len(flips), len(evaluated), conf)
    return {
        "flip_rate": flip_rate["rate"],
        "flips": flip_rate,
        "direction": direction,
        "flips_favoring_first": toward_first,
        "flips_favoring_second": toward_second,
        "direction_sign_test_p": p_direction,
        "direction_significant": significant,
        "first_shown_win_rate": rate(first_wins, decisive, conf),
    }


def _human_agreement(
    evaluated: Sequence[PairOutcome], threshold: float, conf: float
) -> dict[str, Any]:
    """Agreement with the human labels: accuracy beside the majority-class baseline,
    Cohen's kappa, weighted kappa and Krippendorff's alpha over the ordered {a, tie, b},
    and, with several votes per pair, the human ceiling
    (:mod:`~llm_council.calibration.human_ceiling`). ``trusted``: kappa reaches the
    threshold, or the judge is as good as the humans (a kappa no annotator reaches either
    is not held against it)."""
    labelled = [o for o in evaluated if o.pair.human_label is not None]
    annotators = _annotator_agreement(evaluated, conf)
    ceiling = human_ceiling(evaluated, confidence=conf)
    if not labelled:
        return {
            "pairs": 0,
            "threshold": threshold,
            "trusted": None,
            "human_ceiling": ceiling,
            **annotators,
        }
    judge = [o.consolidated for o in labelled]
    human = [o.pair.human_label for o in labelled]
    correct = sum(j == h for j, h in zip(judge, human, strict=True))
    kappa = kappa_estimate(cohen_kappa(judge, human, CATEGORIES, conf))
    value = kappa["kappa"]
    enough = len(labelled) >= MIN_N_FOR_INTERVAL
    as_good = bool(ceiling and ceiling["as_good_as_humans"])
    # an undefined kappa, or one from fewer than MIN_N_FOR_INTERVAL labelled pairs, is
    # not evidence of agreement (2 labels can give kappa 1.0); n, not a zero SE, decides,
    # so a judge that agrees perfectly on many labels stays trusted
    above_threshold = value is not None and enough and value >= threshold
    return {
        "pairs": len(labelled),
        "accuracy": rate(correct, len(labelled), conf),
        "majority_baseline": _majority_baseline(human, conf),
        **kappa,
        "landis_koch": landis_koch_label(float("nan") if value is None else value),
        "weighted_kappa": _weighted_kappa(judge, human, conf),
        "krippendorff_alpha": _judge_human_alpha(judge, human, conf),
        "threshold": threshold,
        "trusted": above_threshold or (enough and as_good),
        "trusted_by": "threshold" if above_threshold else "human_ceiling" if as_good else None,
        "human_ceiling": ceiling,
        **annotators,
    }


#: the verdicts in their natural order, for the ordinal statistics
_ORDERED = {"a": 0.0, "tie": 1.0, "b": 2.0}


def _majority_baseline(human: Sequence[Any], conf: float) -> dict[str, Any]:
    """The accuracy of always answering the commonest human label (a judge below it has
    learnt nothing the label mix does not give away)."""
    counts = {label: sum(h == label for h in human) for label in CATEGORIES}
    label = max(CATEGORIES, key=lambda name: counts[name])
    return {"label": label, **rate(counts[label], len(human), conf)}


def _weighted_kappa(judge: Sequence[Any], human: Sequence[Any], conf: float) -> dict[str, Any]:
    """Linear-weighted kappa over a < tie < b: "a" for "b" is a bigger miss than a tie."""
    table = agreement_table(judge, human, CATEGORIES)
    estimate = kappa_estimate(weighted_kappa_from_table(table, "linear", conf))
    return {**estimate, "weights": "linear", "order": list(CATEGORIES)}


def _judge_human_alpha(judge: Sequence[Any], human: Sequence[Any], conf: float) -> dict[str, Any]:
    """Krippendorff's alpha (ordinal) of judge and human label as two raters."""
    ratings = [[_ORDERED[v] for v in judge], [_ORDERED[v] for v in human]]
    estimate = krippendorff_alpha_interval(ratings, "ordinal", confidence=conf, resamples=1000)
    too_few = estimate.units < MIN_N_FOR_INTERVAL
    return {
        "alpha": None if estimate.alpha != estimate.alpha else estimate.alpha,
        "ci": [None, None]
        if too_few or estimate.ci_low != estimate.ci_low
        else [estimate.ci_low, estimate.ci_high],
        "metric": "ordinal",
        "n": estimate.units,
        "too_few": too_few,
    }


def _annotator_agreement(evaluated: Sequence[PairOutcome], conf: float) -> dict[str, Any]:
    """With several annotators per pair: how much they agree with their majority.

    ``annotator_agreement`` is the mean over pairs with a majority of the share of votes
    that gave it (t interval); pairs whose votes have no strict majority stay unlabelled
    and are counted in ``pairs_without_majority``.
    """
    voted = [o.pair for o in evaluated if len(o.pair.human_votes) > 1]
    if not voted:
        return {}
    shares = [a for p in voted if (a := p.human_vote_agreement) is not None]
    return {
        "pairs_with_several_annotators": len(voted),
        "pairs_without_majority": sum(p.human_label is None for p in voted),
        "annotator_agreement": mean_estimate(shares, conf),
    }


def _checklist(report: dict[str, Any], conf: float) -> list[dict[str, Any]]:
    """The issue's thresholds that apply to a position-swap run; probes add their own.

    One positional bar: the grade summarises kappa and flips (B tolerates up to 20%
    flips), while this check asks whether ONE order's verdict can be trusted (at most 15%
    flips, agreement >= 0.85). A grade-B judge below the bar is usable only with both
    orders judged and the consolidated verdict kept, which is what the advice says.
    """
    items = []
    agreement = report["consistency"]["percent_agreement"]
    items.append(
        {
            "check": "positional agreement",
            "value": agreement,
            "threshold": f">= {POSITIONAL_AGREEMENT_MIN}",
            "failed": agreement is not None and agreement < POSITIONAL_AGREEMENT_MIN,
            "advice": "a single-order verdict is not reliable: judge both orders and keep the"
            " consolidated verdict, or revise the judge prompt"
            + (
                " (grade B allows up to 20% flips; this bar allows 15%)"
                if report["grade"] == "B"
                else ""
            ),
        }
    )
    verbosity = report["verbosity"]
    correlation = verbosity["length_correlation"]
    items.append(
        {
            "check": "length correlation",
            "value": correlation,
            "threshold": f"<= {LENGTH_CORRELATION_MAX}",
            "failed": correlation is not None and correlation > LENGTH_CORRELATION_MAX,
            "advice": "the bigger the length gap, the more the judge favours the longer answer",
        }
    )
    items.append(_length_preference_item(verbosity, conf))
    items.append(_self_preference_item(report["self_preference"]))
    return items


def _length_preference_item(verbosity: dict[str, Any], conf: float) -> dict[str, Any]:
    excess = verbosity["excess_over_humans"]
    if not excess["too_few"]:
        return {
            "check": "prefers longer (vs humans)",
            "value": excess["estimate"],
            "threshold": "excess interval reaching 0",
            "failed": significantly_positive(excess),
            "advice": "the judge picks the longer answer more often than humans do",
        }
    longer = verbosity["prefers_longer"]
    return {
        "check": "prefers longer",
        "value": longer["rate"],
        "threshold": f"lower {100 * conf:g}% bound <= {LENGTH_PREFERENCE_MAX}",
        "failed": longer["ci_low"] is not None and longer["ci_low"] > LENGTH_PREFERENCE_MAX,
        "advice": "the longer answer wins most decisive pairs (no human labels to tell"
        " whether it was better)",
    }


def _self_preference_item(own: dict[str, Any]) -> dict[str, Any]:
    basis = own["basis"]
    if basis == "unadjusted":
        return {
            "check": "own answers preferred (unadjusted)",
            "value": own["own_win_rate"]["rate"],
            "threshold": "needs human labels or other judges as a baseline",
            "failed": False,
            "advice": "no baseline: a raw own-family win rate cannot tell bias from quality",
        }
    excess = own["excess_over_humans" if basis == "humans" else "excess_over_other_judges"]
    return {
        "check": f"own answers preferred (vs {basis.replace('_', ' ')})",
        "value": excess["estimate"],
        "threshold": "excess interval reaching 0",
        "failed": own["significant_excess"],
        "advice": "do not let this judge grade its own family",
    }
