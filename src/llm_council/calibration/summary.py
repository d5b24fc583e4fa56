"""The text summary of a calibration report: what a person reads in ten seconds."""

from __future__ import annotations

from typing import Any


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.0f}%"


def _interval(rate: dict[str, Any]) -> str:
    if rate.get("rate") is None:
        return "n/a"
    return f"{_pct(rate['rate'])} [{_pct(rate['ci_low'])}-{_pct(rate['ci_high'])}] (n={rate['n']})"


def _num(value: float | None, digits: int = 2) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def render_summary(report: dict[str, Any]) -> str:
    """Grade first, then one line per finding, then what to do."""
    consistency = report["consistency"]
    bias = report["position_bias"]
    grade = report["grade"] or "ungraded (kappa undefined)"
    lines = [
        f"Judge calibration: {report['judge']}   GRADE {grade}",
        f"  pairs evaluated     {report['pairs_evaluated']} of {report['pairs_total']}"
        + (
            f"  ({report['pairs_unevaluated']} unevaluated: missing an order)"
            if report["pairs_unevaluated"]
            else ""
        ),
        f"  order agreement     {_interval(consistency['agreement'])}"
        f"   kappa {_num(consistency['kappa'])} [{_num(consistency['kappa_ci'][0])},"
        f" {_num(consistency['kappa_ci'][1])}] {consistency['landis_koch']}",
        f"  position flips      {_interval(bias['flips'])}   direction {bias['direction']}"
        f" ({bias['flips_favoring_first']} first / {bias['flips_favoring_second']} second,"
        f" sign test p={_num(bias['direction_sign_test_p'], 3)}"
        f"{'' if bias['direction_significant'] else ', not significant'})",
    ]
    verbosity = report["verbosity"]
    lines.append(
        f"  verbosity           length r={_num(verbosity['length_correlation'])}"
        f"   prefers longer {_interval(verbosity['prefers_longer'])}"
    )
    own = report["self_preference"]
    if own["pairs_with_own_answer"]:
        human = own["human_own_win_rate"]
        lines.append(
            f"  self-preference     own family '{own['judge_family']}'"
            f" wins {_interval(own['own_win_rate'])}"
            + (f"; humans: {_pct(human['rate'])}" if human["rate"] is not None else "")
        )
    else:
        lines.append(
            f"  self-preference     no pair names the judge's family '{own['judge_family']}'"
        )
    humans = report["human_agreement"]
    if humans["pairs"]:
        verdict = "OK" if humans["trusted"] else "BELOW THRESHOLD"
        lines.append(
            f"  human agreement     accuracy {_interval(humans['accuracy'])}"
            f"   kappa {_num(humans['kappa'])}"
            f" {humans['landis_koch']}  (threshold {humans['threshold']:g}: {verdict})"
        )
    stability = report.get("repetition_stability")
    if stability:
        lines.append(
            "  repetition          all repetitions agree"
            f" {_interval(stability['all_repetitions_agree'])}"
            f"   kappa rep1 vs rep2 {_num(stability['kappa_first_vs_second'])}"
        )
    for probe in (report.get("probes") or {}).values():
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
    if not failed and (not humans["pairs"] or humans["trusted"]):
        lines.append("  => No checklist threshold failed.")
    return "\n".join(lines)
