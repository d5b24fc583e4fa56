"""Study-mode tables as text (a Markdown table, readable in a terminal) and as HTML.

Every cell that holds an estimate shows its interval and the row its n; a subset below the
minimum n says "too small" where the grade would be, and so does a paired difference
between judges on fewer pairs. Ids and subset names come from user files: HTML output
escapes them, text output shows control and bidi-override characters as visible escapes
(:func:`llm_council.infra.safe_text.terminal_safe`) and escapes ``|`` so a name cannot add a
Markdown column.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from typing import Any

from llm_council.calibration.judge_independence_render import render_independence_html
from llm_council.calibration.summary import direction_text
from llm_council.infra.safe_text import terminal_safe

COLUMNS = (
    "n",
    "order agreement",
    "kappa (orders)",
    "flips, direction (first/second)",
    "length r",
    "prefers longer",
    "self-preference",
    "human accuracy",
    "human kappa",
    "grade",
)


def _clean(text: str) -> str:
    """Terminal-safe text that stays inside one Markdown table cell."""
    return terminal_safe(text).replace("|", "\\|")


def _level(confidence: float) -> str:
    """``0.95`` -> ``"95%"``, ``0.999`` -> ``"99.9%"``."""
    return f"{100 * confidence:g}%"


def _difference(diff: Mapping[str, Any]) -> str:
    """A paired difference with its interval, or ``[too small]`` below the minimum n."""
    if diff.get("too_small"):
        shown = "n/a" if diff["difference"] is None else _num(diff["difference"])
        return f"{shown} [too small]"
    return _interval(diff["difference"], (diff["ci_low"], diff["ci_high"]), False)


def _differences_caption(comparison: Mapping[str, Any]) -> str:
    level = _level(comparison.get("confidence", 0.95))
    return (
        f"paired differences (first - second, {level} paired bootstrap interval over pairs;"
        f" too small below {comparison.get('min_n', 0)} pairs)"
    )


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.0f}%"


def _rate(rate: Mapping[str, Any] | None) -> str:
    if not rate or rate.get("rate") is None:
        return "n/a"
    return f"{_pct(rate['rate'])} [{_pct(rate['ci_low'])}, {_pct(rate['ci_high'])}]"


def _num(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def _interval(value: float | None, bounds: Sequence[float | None], too_few: bool) -> str:
    if value is None:
        return "n/a"
    if too_few or bounds[0] is None:
        return f"{_num(value)} [too few]"
    return f"{_num(value)} [{_num(bounds[0])}, {_num(bounds[1])}]"


def _self_preference(own: Mapping[str, Any]) -> str:
    if own["basis"] == "unadjusted":
        rate = own["own_win_rate"]
        return "n/a" if rate["rate"] is None else f"{_pct(rate['rate'])} raw (unadjusted)"
    excess = own["excess"]
    basis = "humans" if own["basis"] == "humans" else "other judges"
    shown = _interval(excess["estimate"], (excess["ci_low"], excess["ci_high"]), False)
    return f"{shown} vs {basis}"


def row_cells(row: Mapping[str, Any]) -> list[str]:
    """One table row's cells, in :data:`COLUMNS` order."""
    kappa, human_kappa = row["order_kappa"], row["human_kappa"]
    return [
        str(row["n"]),
        _rate(row["order_agreement"]),
        _interval(kappa["kappa"], kappa["kappa_ci"], kappa["too_few"]),
        f"{_pct(row['flips']['rate'])}, {direction_text(row['direction'])}"
        f" ({row['flips_favoring'][0]}/{row['flips_favoring'][1]})",
        _interval(row["length_correlation"], row["length_correlation_ci"], False),
        _rate(row["prefers_longer"]),
        _self_preference(row["self_preference"]),
        _rate(row["human_accuracy"]),
        _interval(human_kappa["kappa"], human_kappa["kappa_ci"], bool(human_kappa["too_few"])),
        "too small" if row["too_small"] else (row["grade"] or "ungraded"),
    ]


def _markdown(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(_clean(cell) for cell in header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_clean(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def render_subset_text(judge: str, key: str, rows: Sequence[Mapping[str, Any]]) -> str:
    title = f"{_clean(judge)} by {_clean(key)}"
    body = [[str(row["subset"]), *row_cells(row)] for row in rows]
    return title + "\n" + _markdown([key, *COLUMNS], body)


def render_comparison_text(comparison: Mapping[str, Any]) -> str:
    rows = [[str(row["judge"]), *row_cells(row)] for row in comparison["judges"]]
    lines = [
        f"judges on the {comparison['common_pairs']} pairs all of them evaluated",
        _markdown(["judge", *COLUMNS], rows),
        "",
        _differences_caption(comparison),
    ]
    diff_rows = []
    for diff in comparison["differences"]:
        agreement, kappa = diff["order_agreement"], diff["human_kappa"]
        diff_rows.append(
            [
                f"{diff['first']} - {diff['second']}",
                _difference(agreement),
                str(agreement["n"]),
                _difference(kappa),
                str(kappa["n"]),
            ]
        )
    lines.append(
        _markdown(
            ["judges", "order agreement diff", "n", "human kappa diff", "n labelled"], diff_rows
        )
    )
    return "\n".join(lines)


def render_study_text(
    reports: Sequence[Mapping[str, Any]], comparison: Mapping[str, Any] | None
) -> str:
    parts = [
        render_subset_text(report["judge"], key, rows)
        for report in reports
        for key, rows in (report.get("subsets") or {}).items()
    ]
    if comparison is not None:
        parts.append(render_comparison_text(comparison))
    return "\n\n".join(parts)


def _html_text(text: str) -> str:
    """Escaped for HTML, with bidi overrides visible (they reorder text in a browser too)."""
    return html.escape(terminal_safe(text))


def _html_table(caption: str, header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    head = "".join(f"<th>{_html_text(cell)}</th>" for cell in header)
    body = "".join(
        "<tr>" + "".join(f"<td>{_html_text(cell)}</td>" for cell in row) + "</tr>" for row in rows
    )
    return (
        f"<table><caption>{_html_text(caption)}</caption>"
        f"<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
    )


def render_study_html(
    reports: Sequence[Mapping[str, Any]],
    comparison: Mapping[str, Any] | None,
    independence: Mapping[str, Any] | None = None,
) -> str:
    """A standalone HTML page with one table per (judge, key), the judge comparison and the
    effective number of independent judges (replay of 2+ judges)."""
    tables = [
        _html_table(
            f"{report['judge']} by {key}",
            [key, *COLUMNS],
            [[str(row["subset"]), *row_cells(row)] for row in rows],
        )
        for report in reports
        for key, rows in (report.get("subsets") or {}).items()
    ]
    if comparison is not None:
        tables.append(
            _html_table(
                f"judges on the {comparison['common_pairs']} pairs all of them evaluated",
                ["judge", *COLUMNS],
                [[str(row["judge"]), *row_cells(row)] for row in comparison["judges"]],
            )
        )
        tables.append(
            _html_table(
                _differences_caption(comparison),
                ["judges", "order agreement diff", "n", "human kappa diff", "n labelled"],
                [
                    [
                        f"{d['first']} - {d['second']}",
                        _difference(d["order_agreement"]),
                        str(d["order_agreement"]["n"]),
                        _difference(d["human_kappa"]),
                        str(d["human_kappa"]["n"]),
                    ]
                    for d in comparison["differences"]
                ],
            )
        )
    if independence is not None:
        tables.append(render_independence_html(independence))
    style = (
        "body{font-family:sans-serif}table{border-collapse:collapse;margin:1em 0}"
        "td,th{border:1px solid #ccc;padding:4px 8px;text-align:left}caption{font-weight:bold}"
    )
    return (
        "<!doctype html><html><head><meta charset='utf-8'><title>llm-council calibration study"
        f"</title><style>{style}</style></head><body>{''.join(tables)}</body></html>\n"
    )
