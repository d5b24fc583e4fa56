"""The effective-number-of-judges section as text (with a Markdown table) and as HTML.

Judge names come from user files: text strips control and bidi characters (and ``|``,
which would break the table), HTML escapes them.
"""

from __future__ import annotations

import html
import re
from collections.abc import Mapping
from typing import Any

_UNSAFE = re.compile(r"[\x00-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069|]")

TITLE = "Effective number of independent judges"


def _clean(text: str) -> str:
    return _UNSAFE.sub("?", text)


def _num(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def _interval(estimate: Mapping[str, Any], unbounded: bool = False) -> str:
    if estimate["ci_low"] is None:
        return f"{_num(estimate['estimate'])} [too few]"
    high = "unbounded" if unbounded else _num(estimate["ci_high"])
    return f"{_num(estimate['estimate'])} [{_num(estimate['ci_low'])}, {high}]"


def independence_lines(section: Mapping[str, Any]) -> list[str]:
    """Headline, conclusion and caveat (plain text; the table is separate)."""
    k = section["k"]
    head = (
        f"{TITLE} ({k} judges, {section['shared_labelled_pairs']} pairs all of them"
        " evaluated with a human label)"
    )
    if section["not_computed"]:
        return [f"{head}: not computed: {_clean(section['not_computed'])}"]
    n_eff = section["effective_judges"]
    rho = section["mean_error_correlation"]
    confidence = f"{100 * section['confidence']:.0f}%"
    lines = [
        head,
        f"  n_eff {_interval(n_eff, n_eff['ci_high_unbounded'])} of k={k}"
        f"   mean error correlation {_interval(rho)}"
        + (
            f"   ({confidence} bootstrap over pairs, {section['resamples']} resamples)"
            if not section["too_few"]
            else ""
        ),
    ]
    if section["too_few"]:
        lines.append(f"  => no interval and no conclusion: {_clean(section['too_few_reason'])}")
    elif section["shared_error_detected"]:
        lines.append(
            f"  => the judges fail together more than chance: the {k} are worth about"
            f" {_num(n_eff['estimate'])} independent judges (interval below {k})"
        )
    else:
        lines.append(f"  => no shared error detected (the interval reaches k={k})")
    if section["pairs_with_conflicting_labels"]:
        lines.append(
            f"  {section['pairs_with_conflicting_labels']} pairs left out: the judges' records"
            " give them different human labels"
        )
    lines.append(f"  note: {section['caveat']}")
    return lines


def independence_markdown(section: Mapping[str, Any]) -> str:
    """Per-judge error rates and pairwise error correlations as a Markdown table."""
    rates = section["error_rates"]
    lines = ["| judges | error rates | error correlation r |", "|---|---|---|"]
    for pair in section.get("pair_correlations") or []:
        first, second = _clean(pair["first"]), _clean(pair["second"])
        lines.append(
            f"| {first} - {second} | {_num(rates[pair['first']])},"
            f" {_num(rates[pair['second']])} | {_num(pair['r'])} |"
        )
    return "\n".join(lines)


def render_independence_text(section: Mapping[str, Any]) -> str:
    lines = independence_lines(section)
    if section["not_computed"]:
        return lines[0]
    return "\n".join(lines) + "\n\n" + independence_markdown(section)


def render_independence_html(section: Mapping[str, Any]) -> str:
    """One ``<section>`` for the calibration HTML page."""
    rates = section["error_rates"]
    paragraphs = "".join(
        f"<p>{html.escape(line.strip())}</p>" for line in independence_lines(section)[1:]
    )
    rows = "".join(
        "<tr>"
        + "".join(
            f"<td>{html.escape(cell)}</td>"
            for cell in (
                f"{pair['first']} - {pair['second']}",
                f"{_num(rates[pair['first']])}, {_num(rates[pair['second']])}",
                _num(pair["r"]),
            )
        )
        + "</tr>"
        for pair in section.get("pair_correlations") or []
    )
    table = (
        '<table class="effective-judges"><thead><tr><th>judges</th><th>error rates</th>'
        "<th>error correlation r</th></tr></thead>"
        f"<tbody>{rows}</tbody></table>"
        if rows
        else ""
    )
    heading = html.escape(independence_lines(section)[0])
    return f"<section><h2>{html.escape(TITLE)}</h2><p>{heading}</p>{paragraphs}{table}</section>"
