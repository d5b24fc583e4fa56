"""Every hypothesis a report tests, read from its sections with the test's own p-value.

One list, so one multiplicity procedure (:mod:`.report_verdicts`) decides every finding.
Each entry keeps a ``locator`` that says where in the report it came from, so the verdict
can be written back into its section. A hypothesis whose p-value is not finite (a test
that could not run) is not listed: it is untested, not "not a finding".
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from llm_council.bias_audit.report.analyses.causal_checks import CausalChecks, CheckEstimate
from llm_council.bias_audit.report.analyses.families import BiasFamilies
from llm_council.bias_audit.report.analyses.position import direction_if_rejected
from llm_council.bias_audit.report.estimates import Interval, SlotProfile
from llm_council.bias_audit.report.finding import Finding
from llm_council.bias_audit.report.fingerprint_hypotheses import fingerprint_findings
from llm_council.bias_audit.report.model import BiasReport
from llm_council.stats.inference.nested_wald import nested_wald_min_p

#: where a hypothesis sits: (section key, index[, check kind])
Locator = tuple[str | int, ...]

#: the causal checks that are tests (the repeat check measures stability, it tests nothing)
CAUSAL_TESTS = (
    ("slot_effect", "causal position (re-shuffle)", "points per slot later"),
    ("padding_effect", "causal verbosity (padding)", "points for padding"),
    ("identity_effect", "self-recognition (identity)", "points when signed"),
)


#: the length family's one hypothesis: verbosity, tested one-sided (ADR 0072)
LENGTH_BIAS = "length: longer answers score higher"


@dataclass(frozen=True)
class Hypothesis:
    """A tested hypothesis before the procedure (``p_adjusted`` NaN) and where it lives."""

    finding: Finding
    locator: Locator
    # a section rule that keeps it from being a finding whatever its p (e.g. a leniency
    # below the material size); None when only the procedure decides
    blocked_by: str | None = None
    # where this hypothesis's null implies another of its family's (the council's
    # all-slots test implies its edge test): that one's locator, and the p of the min-p
    # test of the two (ADR 0082); None and NaN otherwise
    implies: Locator | None = None
    combined_p: float = float("nan")


def upper_one_sided_p(two_sided_p: float, estimate: float) -> float:
    r"""The one-sided p of :math:`H_0: \theta \le 0` against :math:`\theta > 0` from a
    two-sided p of a test with a symmetric reference distribution (t or normal).

    With :math:`p_2 = 2\,P(T \ge |t|)`, the upper-tail p is :math:`P(T \ge t)`:
    :math:`p_2 / 2` when the estimate is positive, :math:`1 - p_2 / 2` otherwise (the sign
    of :math:`t` is the estimate's, its standard error being positive). NaN stays NaN.
    """
    if not math.isfinite(two_sided_p) or not math.isfinite(estimate):
        return float("nan")
    return two_sided_p / 2 if estimate > 0 else 1.0 - two_sided_p / 2


def _tested(
    subject: str,
    bias: str,
    family: str,
    interval: Interval | CheckEstimate,
    unit: str,
    section: str,
    p_value: float | None = None,
) -> Finding:
    nan = float("nan")
    return Finding(
        subject=subject,
        bias=bias,
        family=family,
        estimate=float(interval.estimate),
        ci_low=float(interval.ci_low),
        ci_high=float(interval.ci_high),
        unit=unit,
        p_value=float(interval.p_value if p_value is None else p_value),
        p_adjusted=nan,
        rule="",
        section=section,
    )


#: the council position family's second hypothesis from 4 slots on (ADR 0076)
ALL_SLOTS_BIAS = "position: a slot differs (all slots tested)"


def _council_all_slots(council: SlotProfile) -> Hypothesis:
    """The council's all-slots-equal test beside its edge test (4+ slots, ADR 0076). Its
    null implies the edge test's, so the closed test tests the pair with their min-p test
    at the family's whole share (ADR 0082; ``combined_p``). Its p is NaN (so it is not
    listed) where the edge test is already the all-slots test."""
    n_slots = len(council.slot_effect)
    combined = float("nan")
    if council.test_method == "wald" and n_slots >= 4 and council.test_df[0] == 2:
        combined = nested_wald_min_p(
            council.test_p_value,
            council.all_slots_p_value,
            2,
            n_slots - 1,
            council.test_df[1] + 2,  # the edge test's df are (2, C - 2)
        )
    return Hypothesis(
        _tested(
            council.subject,
            ALL_SLOTS_BIAS,
            "council position",
            council.trend,
            "points per slot later (Wald test: every slot equal)",
            "section-position",
            council.all_slots_p_value,
        ),
        ("position-council-all", 0),
        implies=("position-council", 0),
        combined_p=combined,
    )


def _core_hypotheses(report: BiasReport) -> list[Hypothesis]:
    """Leniency, position, length and self-preference (the core sections)."""
    found: list[Hypothesis] = []
    for index, profile in enumerate(report.profiles):
        if profile.leniency_label in ("not identified", "unknown"):
            continue
        leniency = profile.leniency
        bias = "leniency: harsh" if leniency.estimate < 0 else "leniency: generous"
        blocked = (
            f"smaller than the material {report.material_leniency:.2g} points"
            if abs(leniency.estimate) < report.material_leniency
            else None
        )
        found.append(
            Hypothesis(
                _tested(
                    profile.reviewer,
                    bias,
                    "leniency",
                    leniency,
                    "points vs the reference reviewers",
                    "section-reviewers",
                ),
                ("leniency", index),
                blocked,
            )
        )
    position = report.position
    if position is not None:
        # the council's test is its own family: one pooled hypothesis, not one of the
        # per-reviewer tests (it would otherwise share their family's share of the level)
        profiles = [("position-council", 0, position.council, "council position")] + [
            ("position", index, profile, "position")
            for index, profile in enumerate(position.per_reviewer)
        ]
        for key, index, slot, family in profiles:
            if not slot.identified:
                continue
            found.append(
                Hypothesis(
                    _tested(
                        slot.subject,
                        f"position: {direction_if_rejected(slot)}",
                        family,
                        slot.trend,
                        "points per slot later",
                        "section-position",
                        slot.test_p_value,
                    ),
                    (key, index),
                )
            )
        if position.council.identified:
            found.append(_council_all_slots(position.council))
    length = report.length
    if length is not None:
        # one-sided (ADR 0072): the bias is verbosity, longer answers scoring higher; a
        # council that scores shorter answers higher is shown in its section, never a finding
        found.append(
            Hypothesis(
                _tested(
                    "council",
                    LENGTH_BIAS,
                    "length",
                    length.pooled,
                    "within-session r (one-sided test)",
                    "section-length",
                    upper_one_sided_p(length.pooled.p_value, length.pooled.estimate),
                ),
                ("length", 0),
            )
        )
    for index, item in enumerate(report.self_preference):
        # one-sided, as the session audit's (ADR 0060): the bias is a bonus to one's own
        # answer; a reviewer harder on its own answer is shown, never a finding
        found.append(
            Hypothesis(
                _tested(
                    item.reviewer,
                    "self-preference",
                    "self-preference",
                    item.adjusted,
                    "points to its own answer (joint model; one-sided test)",
                    "section-self",
                    upper_one_sided_p(item.adjusted.p_value, item.adjusted.estimate),
                ),
                ("self", index),
                f"own answer always at slot {item.fixed_slot}: confounded with position"
                if item.confounded_with_slot
                else None,
            )
        )
    return found


def _family_hypotheses(families: BiasFamilies) -> list[Hypothesis]:
    """Anchoring, favouritism, amplification, style mimicry, reasoning and drift."""
    found: list[Hypothesis] = []
    section = "section-families"
    for index, item in enumerate(families.anchoring):
        if not item.identified:
            continue
        bias = "anchoring" if item.conditional.estimate > 0 else "anchoring: contrast (pushed away)"
        found.append(
            Hypothesis(
                _tested(
                    item.reviewer, bias, "anchoring", item.conditional, "conditional r", section
                ),
                ("anchoring", index),
            )
        )
    matrix = families.favouritism
    for index, cell in enumerate(matrix.cells if matrix is not None else []):
        kind = (
            "self-preference (favouritism matrix)"
            if cell.is_self
            else f"{'favours' if cell.effect.estimate > 0 else 'disfavours'} {cell.model}"
        )
        found.append(
            Hypothesis(
                _tested(cell.reviewer, kind, "favouritism", cell.effect, "points", section),
                ("favouritism", index),
                f"{cell.model} always at slot {cell.fixed_slot} for this reviewer: "
                "confounded with position"
                if cell.confounded_with_slot
                else None,
            )
        )
    amplified = families.amplification
    if amplified is not None:
        nan = float("nan")
        excess = Interval(amplified.n_suspect - amplified.expected_by_chance, nan, nan)
        found.append(
            Hypothesis(
                _tested(
                    "council",
                    "amplification",
                    "amplification",
                    excess,
                    f"suspect sessions above chance ({amplified.n_suspect} of "
                    f"{amplified.n_agreeing} agreeing)",
                    section,
                    amplified.excess_p_value,
                ),
                ("amplification", 0),
            )
        )
    mimicry = families.style_mimicry
    for index, mimic in enumerate(mimicry.reviewers if mimicry is not None else []):
        found.append(
            Hypothesis(
                _tested(
                    mimic.reviewer,
                    "style mimicry",
                    "style mimicry",
                    mimic.slope,
                    "points per unit of similarity to its own answer",
                    section,
                ),
                ("mimicry", index),
            )
        )
    for index, reasoning in enumerate(families.reasoning):
        found.append(
            Hypothesis(
                _tested(
                    reasoning.reviewer,
                    "reasoning-chain bias",
                    "reasoning",
                    reasoning.points_per_doubling,
                    "points per doubling of its rationale",
                    section,
                ),
                ("reasoning", index),
            )
        )
    for index, series in enumerate(families.drift.series if families.drift else []):
        nan = float("nan")
        change = series.weekly_mean[-1] - series.weekly_mean[0] if series.weekly_mean else nan
        found.append(
            Hypothesis(
                _tested(
                    series.reviewer,
                    f"drift of {series.quantity.replace('_', ' ')}",
                    "drift",
                    Interval(change, nan, nan),
                    "last week's mean minus the first week's (CUSUM test)",
                    "section-reviewers",
                    series.p_value,
                ),
                ("drift", index),
            )
        )
    return found


def _causal_hypotheses(section: CausalChecks) -> list[Hypothesis]:
    found: list[Hypothesis] = []
    for index, reviewer in enumerate(section.reviewers):
        for attribute, bias, unit in CAUSAL_TESTS:
            estimate: CheckEstimate | None = getattr(reviewer, attribute)
            if estimate is None:
                continue
            found.append(
                Hypothesis(
                    _tested(
                        reviewer.reviewer, bias, "causal checks", estimate, unit, "section-causal"
                    ),
                    ("causal", index, attribute),
                )
            )
    return found


def report_hypotheses(report: BiasReport) -> list[Hypothesis]:
    """Every hypothesis ``report`` tested, with a finite p, in the report's order."""
    found = _core_hypotheses(report)
    if report.families is not None:
        found += _family_hypotheses(report.families)
    if report.causal_checks is not None:
        found += _causal_hypotheses(report.causal_checks)
    if report.fingerprints is not None:  # ADR 0062: changes between fingerprint segments
        found += [Hypothesis(*item) for item in fingerprint_findings(report.fingerprints)]
    return [item for item in found if math.isfinite(item.finding.p_value)]
