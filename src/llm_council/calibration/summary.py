"""The text summary of a calibration report: what a person reads in ten seconds.

Judge names, model families and problem texts come from user files or provider replies:
every line goes through :func:`llm_council.infra.safe_text.terminal_safe`.
"""

from __future__ import annotations

from typing import Any

from llm_council.calibration.gate import too_few_judged
from llm_council.infra.safe_text import terminal_safe


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.0f}%"


def _interval(rate: dict[str, Any]) -> str:
    if rate.get("rate") is None:
        return "n/a"
    return f"{_pct(rate['rate'])} [{_pct(rate['ci_low'])}-{_pct(rate['ci_high'])}] (n={rate['n']})"


def _pct_or_na(rate: dict[str, Any]) -> str:
    return "n/a" if rate.get("rate") is None else f"{_pct(rate['rate'])} (n={rate['n']})"


def _num(value: float | None, digits: int = 2) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def _p_value(value: float | None) -> str:
    """``p=0.219``; below 0.001 ``p<0.001`` (three decimals would print ``p=0.000``)."""
    if value is not None and value < 0.001:
        return "p<0.001"
    return f"p={_num(value, 3)}"


def _ci(low: float | None, high: float | None, too_few: bool, digits: int = 2) -> str:
    return "[too few]" if too_few or low is None else f"[{_num(low, digits)}, {_num(high, digits)}]"


def _kappa(section: dict[str, Any]) -> str:
    low, high = section["kappa_ci"]
    return f"{_num(section['kappa'])} {_ci(low, high, section['too_few'])}"


def _human_lines(humans: dict[str, Any]) -> list[str]:
    """Accuracy beside the majority baseline, the three agreement statistics, the ceiling."""
    if humans["trusted_by"] == "human_ceiling":
        verdict = "OK: as good as the humans"
    else:
        verdict = "OK" if humans["trusted"] else "BELOW THRESHOLD"
    baseline = humans["majority_baseline"]
    weighted, alpha = humans["weighted_kappa"], humans["krippendorff_alpha"]
    lines = [
        f"  human agreement     accuracy {_interval(humans['accuracy'])}"
        f" (always '{baseline['label']}': {_pct(baseline['rate'])})"
        f"   kappa {_kappa(humans)}"
        f" {humans['landis_koch']}  (threshold {humans['threshold']:g}: {verdict})",
        f"                      weighted kappa {_kappa(weighted)}"
        f"   Krippendorff's alpha (ordinal) {_num(alpha['alpha'])}"
        f" {_ci(*alpha['ci'], alpha['too_few'])}",
    ]
    ceiling = humans.get("human_ceiling")
    if ceiling:
        lines.append(_ceiling_line(ceiling))
    return lines


def _ceiling_line(ceiling: dict[str, Any]) -> str:
    head = f"  human ceiling       {ceiling['pairs']} pairs with several votes"
    if ceiling["too_few"] or ceiling["human_kappa"] is None:
        return head + ": too few to estimate"
    place = {
        True: "as good as the humans",
        False: "below the humans",
        None: "not placed",
    }[ceiling["as_good_as_humans"]]
    return (
        f"{head}: annotator vs annotator kappa {_num(ceiling['human_kappa'])}"
        f" {_ci(*ceiling['human_kappa_ci'], False)}; judge vs annotator"
        f" {_num(ceiling['judge_kappa'])} {_ci(*ceiling['judge_kappa_ci'], False)}: {place}"
    )


#: the report's ``position_bias.direction`` codes in the words a reader expects (issue 28)
DIRECTION_TEXT = {
    "favors_first": "favors the first answer",
    "favors_second": "favors the second answer",
}


def direction_text(direction: str | None) -> str:
    """``"favors_first"`` -> ``"favors the first answer"``; ``None`` -> no direction."""
    return "no significant direction" if direction is None else DIRECTION_TEXT[direction]


def _direction(bias: dict[str, Any]) -> str:
    counts = (
        f"(flips toward first {bias['flips_favoring_first']},"
        f" toward second {bias['flips_favoring_second']};"
        f" sign test {_p_value(bias['direction_sign_test_p'])})"
    )
    return f"{direction_text(bias['direction'])} {counts}"


def _prefers_longer(longer: dict[str, Any]) -> str:
    """The n of this rate is decisive pairs of unequal length, not all pairs: say so."""
    if longer.get("rate") is None:
        return "prefers longer n/a (no decisive pair of unequal length)"
    return (
        f"prefers longer in {_pct(longer['rate'])} [{_pct(longer['ci_low'])}-"
        f"{_pct(longer['ci_high'])}] of {longer['n']} decisive pairs"
        f" (sign test {_p_value(longer['sign_test_p'])})"
    )


def _self_preference_line(own: dict[str, Any]) -> str:
    if not own["pairs_with_own_answer"]:
        return f"  self-preference     no pair names the judge's family '{own['judge_family']}'"
    line = (
        f"  self-preference     own family '{own['judge_family']}'"
        f" wins {_interval(own['own_win_rate'])}"
    )
    if own["basis"] == "unadjusted":
        return line + "  (unadjusted: no human labels or other judges to compare with)"
    excess = own["excess_over_humans" if own["basis"] == "humans" else "excess_over_other_judges"]
    return (
        line + f"; excess over {own['basis'].replace('_', ' ')} {_num(excess['estimate'])}"
        f" {_ci(excess['ci_low'], excess['ci_high'], excess['too_few'])} (n={excess['n']})"
    )


def _reasoning_lines(section: dict[str, Any] | None) -> list[str]:
    """Disagreement with humans by rationale-length tercile and the slope (ADR 0027)."""
    if not section or not section.get("available"):
        return []
    terciles = "  ".join(
        f"T{row['tercile']} ({row['chars_low']:.0f}-{row['chars_high']:.0f} chars) "
        f"{_pct(row['disagreement'])} [{_pct(row['ci_low'])}-{_pct(row['ci_high'])}]"
        for row in section["by_tercile"]
    )
    flag = "LONGER MORE OFTEN WRONG" if section["longer_more_often_wrong"] else "no trend detected"
    return [
        f"  rationale length    wrong vs humans {terciles}",
        f"                      log-odds per doubling {_num(section['log_odds_per_doubling'])}"
        f" {_ci(section['ci_low'], section['ci_high'], False)}"
        f" p={_num(section['p_value'], 3)} ({flag}; {section['n_verdicts']} verdicts,"
        f" {section['n_pairs']} pairs)",
    ]


def _confidence_lines(section: dict[str, Any] | None) -> list[str]:
    """Expected calibration error of the judge's stated confidence, and its curve."""
    if not section:
        return []
    if not section["available"]:
        return [f"  confidence          not assessed: {section['reason']}"]
    curve = "  ".join(
        f"{row['bin_low']:.1f}-{row['bin_high']:.1f}: {_pct(row['accuracy'])} right"
        f" at {_pct(row['mean_confidence'])} (n={row['n']})"
        for row in section["reliability"]
    )
    return [
        f"  confidence          ECE {section['ece']:.3f} ({section['bins']} equal bins)"
        f"   Brier {section['brier']:.3f}   stated {_pct(section['mean_confidence'])}"
        f" vs right {_pct(section['accuracy'])} ({section['n_verdicts']} verdicts)",
        f"                      reliability {curve}",
        _isotonic_line(section.get("isotonic")),
    ]


def _isotonic_line(isotonic: dict[str, Any] | None) -> str:
    if not isotonic or not isotonic["available"]:
        reason = isotonic["reason"] if isotonic else "not computed"
        return f"                      isotonic correction not assessed: {reason}"
    return (
        f"                      isotonic correction: ECE on held-out pairs"
        f" {isotonic['ece_before']:.3f} -> {isotonic['ece_after']:.3f}"
        " (fitted on the other half; --save-confidence-map FILE keeps the map)"
    )


def calm_probe_line(probe: dict[str, Any]) -> str:
    """One CALM or injection probe: RR, CR, target wins and the paired flag, or "not
    measured" when no pair could be compared (never "ok" for nothing measured)."""
    if not probe["pairs"]:
        return (
            f"  probe {probe['probe']:<13} not measured: no pair could be probed"
            " (fallacy and injection need a pair the judge decides, not a tie or a"
            " verdict that changes with the order)"
        )
    shift = probe["shift"]
    return (
        f"  probe {probe['probe']:<13} RR {_interval(probe['robustness'])}"
        f"   CR {_interval(probe['consistency'])}"
        f"   target wins {_pct_or_na(probe['value'])} vs control"
        f" {_pct_or_na(probe['control_value'])}"
        f"   shift {shift['toward_target']} toward / {shift['away_from_target']} away,"
        f" sign test p={shift['p_value']:.2g}   {'FAIL' if probe['failed'] else 'ok'}"
    )


def render_summary(report: dict[str, Any], *, min_evaluated: float | None = None) -> str:
    """Grade first, then one line per finding, then what to do.

    With ``min_evaluated`` (the gate's share, ``--min-evaluated``), a report with too few
    pairs judged in both orders ends by saying nothing was checked, instead of "No
    checklist threshold failed" just before the run's exit-5 error (issue 26 item 7).
    """
    consistency = report["consistency"]
    bias = report["position_bias"]
    grade = report["grade"] or f"ungraded ({report.get('grade_note') or 'kappa undefined'})"
    lines = [
        f"Judge calibration: {report['judge']}   GRADE {grade}",
        f"  pairs evaluated     {report['pairs_evaluated']} of {report['pairs_total']}"
        + (
            f"  ({report['pairs_unevaluated']} unevaluated: missing an order)"
            if report["pairs_unevaluated"]
            else ""
        ),
        f"  order agreement     {_interval(consistency['agreement'])}"
        f"   kappa {_kappa(consistency)} {consistency['landis_koch']}",
        f"  position flips      {_interval(bias['flips'])}   {_direction(bias)}",
    ]
    verbosity = report["verbosity"]
    r_low, r_high = verbosity["length_correlation_ci"]
    without_text = verbosity.get("pairs_without_text", 0)
    if without_text and without_text == report["pairs_evaluated"]:
        lines.append("  verbosity           not measured: no answer text (imported verdicts)")
    else:
        lines.append(
            f"  verbosity           length r={_num(verbosity['length_correlation'])}"
            f" {_ci(r_low, r_high, r_low is None)}"
            f"   {_prefers_longer(verbosity['prefers_longer'])}"
            + (f"; {without_text} pairs without answer text left out" if without_text else "")
        )
    lines.append(_self_preference_line(report["self_preference"]))
    humans = report["human_agreement"]
    if humans["pairs"]:
        lines.extend(_human_lines(humans))
    stability = report.get("repetition_stability")
    if stability:
        share = stability["majority_share"]
        between = stability["kappa_between_repetitions"]
        first, second = between["repetitions"]
        lines.append(
            "  repetition          all agree"
            f" {_interval(stability['all_repetitions_agree'])}"
            f"   majority share {_num(share['estimate'])}"
            f" {_ci(share['ci_low'], share['ci_high'], share['too_few'])}"
            f"   kappa rep{first} vs rep{second} {_kappa(between)}"
            + (
                f"   reps per order {stability['repetitions_per_order']}"
                if len(stability["repetitions_per_order"]) > 1
                else ""
            )
        )
    lines.extend(_reasoning_lines(report.get("reasoning_length")))
    lines.extend(_confidence_lines(report.get("confidence_calibration")))
    for probe in (report.get("probes") or {}).values():
        if "shift" in probe:  # a CALM or injection probe: RR, CR and the paired flag
            lines.append(calm_probe_line(probe))
            continue
        value = probe["value"]
        shown = _interval(value) if isinstance(value, dict) else _num(value)
        measured = "" if probe["short"] == "robust" else f"   {probe['short']} {shown}"
        lines.append(
            f"  probe {probe['probe']:<13} robust {_interval(probe['robustness'])}{measured}"
            f"   {'FAIL' if probe['failed'] else 'ok'} ({probe['short']} {probe['threshold']})"
        )
    failed = [item for item in report["checklist"] if item["failed"]]
    failed += [p for p in (report.get("probes") or {}).values() if p["failed"]]
    if humans["pairs"] and not humans["trusted"]:
        lines.append(
            "  => Do not trust this judge until it is recalibrated"
            " (human agreement below threshold)."
        )
    for item in failed:
        name = item.get("check") or f"probe {item['probe']}"
        advice = item.get("advice", "perturbation changes verdicts")
        lines.append(f"  => {name}: {advice} (threshold {item['threshold']})")
    evaluated, total = report["pairs_evaluated"], report["pairs_total"]
    # the gate's own rule, which makes the run exit 5
    too_few = min_evaluated is not None and too_few_judged(evaluated, total, min_evaluated)
    if too_few:
        lines.append(
            f"  => Not checked against any threshold: only {evaluated} of {total} pairs"
            f" judged in both orders (need {min_evaluated:.0%}; see --min-evaluated)"
        )
    elif not failed and (not humans["pairs"] or humans["trusted"]):
        lines.append("  => No checklist threshold failed.")
    return "\n".join(terminal_safe(line) for line in lines)
