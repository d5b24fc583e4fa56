"""Inline SVG plots drawn from numbers: no plotting library, no JavaScript, no network.

Two kinds suffice for the report: a forest plot (one row per item: a dot for the estimate
and a line for its interval, with a reference line) and a scatter plot with a fitted line.
Every data mark carries ``class="mark"`` and every interval ``class="interval"`` so tests
can count what was drawn.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from html import escape

from llm_council.infra.safe_text import distinct_labels, terminal_safe

_WIDTH = 640
_ROW_HEIGHT = 26
_LEFT = 170
_RIGHT = 30
_TOP = 34
_BOTTOM = 40


def _finite(values: Sequence[float]) -> list[float]:
    return [value for value in values if value is not None and math.isfinite(value)]


def _nice_ticks(low: float, high: float, count: int = 5) -> list[float]:
    span = high - low
    if span <= 0:
        return [low]
    raw = span / count
    magnitude = 10 ** math.floor(math.log10(raw))
    step = min((m * magnitude for m in (1, 2, 5, 10) if m * magnitude >= raw), default=raw)
    start = math.ceil(low / step) * step
    ticks = []
    value = start
    while value <= high + 1e-12:
        ticks.append(round(value, 10))
        value += step
    return ticks


def _log_ticks(low: float, high: float) -> list[float]:
    """1-2-5 ticks per decade between ``low`` and ``high`` (for a log axis)."""
    ticks = []
    for decade in range(math.floor(math.log10(max(low, 1e-9))), math.ceil(math.log10(high)) + 1):
        for mantissa in (1, 2, 5):
            value = mantissa * 10.0**decade
            if low <= value <= high:
                ticks.append(value)
    return ticks


def _tick_label(value: float) -> str:
    return f"{value:g}"


def forest_plot(
    title: str,
    labels: Sequence[str],
    estimates: Sequence[float],
    lows: Sequence[float],
    highs: Sequence[float],
    *,
    axis_label: str,
    reference: float | None = 0.0,
    plot_id: str,
) -> str:
    """Rows of estimate dots with interval lines, on a shared horizontal axis."""
    values = _finite([*estimates, *lows, *highs]) + ([reference] if reference is not None else [])
    low, high = (min(values), max(values)) if values else (0.0, 1.0)
    if high - low < 1e-9:
        low, high = low - 1.0, high + 1.0
    pad = 0.05 * (high - low)
    low, high = low - pad, high + pad
    height = _TOP + _BOTTOM + _ROW_HEIGHT * max(len(labels), 1)
    plot_width = _WIDTH - _LEFT - _RIGHT

    def x_of(value: float) -> float:
        return _LEFT + (value - low) / (high - low) * plot_width

    parts = [
        f'<svg id="{plot_id}" xmlns="http://www.w3.org/2000/svg" width="{_WIDTH}" '
        f'height="{height}" viewBox="0 0 {_WIDTH} {height}" role="img" '
        f'aria-label="{escape(title)}">',
        f'<text x="{_WIDTH / 2}" y="18" text-anchor="middle" class="title">{escape(title)}</text>',
    ]
    axis_y = height - _BOTTOM + 6
    for tick in _nice_ticks(low, high):
        x = x_of(tick)
        parts.append(
            f'<line x1="{x:.1f}" y1="{_TOP - 6}" x2="{x:.1f}" y2="{axis_y}" class="grid"/>'
        )
        parts.append(
            f'<text x="{x:.1f}" y="{axis_y + 14}" text-anchor="middle" class="tick">'
            f"{_tick_label(tick)}</text>"
        )
    if reference is not None:
        x = x_of(reference)
        parts.append(
            f'<line x1="{x:.1f}" y1="{_TOP - 6}" x2="{x:.1f}" y2="{axis_y}" class="reference"/>'
        )
    parts.append(
        f'<text x="{_LEFT + plot_width / 2}" y="{height - 4}" text-anchor="middle" class="axis">'
        f"{escape(axis_label)}</text>"
    )
    # long ids are shortened in the middle to fit left of the axis; the full id is the tooltip
    shown_labels = distinct_labels(labels)
    for row, (full_label, shown, estimate, ci_low, ci_high) in enumerate(
        zip(labels, shown_labels, estimates, lows, highs, strict=True)
    ):
        label = terminal_safe(full_label)
        y = _TOP + _ROW_HEIGHT * row + _ROW_HEIGHT / 2
        parts.append(
            f'<text x="{_LEFT - 8}" y="{y + 4:.1f}" text-anchor="end" class="label">'
            f"<title>{escape(label)}</title>{escape(shown)}</text>"
        )
        if (
            ci_low is not None
            and ci_high is not None
            and math.isfinite(ci_low)
            and math.isfinite(ci_high)
        ):
            parts.append(
                f'<line x1="{x_of(ci_low):.1f}" y1="{y:.1f}" x2="{x_of(ci_high):.1f}" '
                f'y2="{y:.1f}" class="interval"><title>{escape(label)}: '
                f"[{ci_low:.3g}, {ci_high:.3g}]</title></line>"
            )
        if estimate is not None and math.isfinite(estimate):
            parts.append(
                f'<circle cx="{x_of(estimate):.1f}" cy="{y:.1f}" r="5" class="mark">'
                f"<title>{escape(label)}: {estimate:.3g}</title></circle>"
            )
    parts.append("</svg>")
    return "".join(parts)


def scatter_plot(
    title: str,
    xs: Sequence[float],
    ys: Sequence[float],
    *,
    x_label: str,
    y_label: str,
    fitted_line: tuple[float, float] | None,
    log_x: bool,
    plot_id: str,
) -> str:
    """Points with an optional fitted line ``y = a + b * ln(x)`` (or ``a + b * x``)."""
    height = 360
    left, right, top, bottom = 56, 20, 30, 44
    width_inner = _WIDTH - left - right
    height_inner = height - top - bottom

    def transform(value: float) -> float:
        return math.log(max(value, 1e-9)) if log_x else value

    points = [(transform(x), y) for x, y in zip(xs, ys, strict=True) if math.isfinite(y)]
    tx = [p[0] for p in points] or [0.0, 1.0]
    ty = [p[1] for p in points] or [0.0, 1.0]
    x_low, x_high = min(tx), max(tx)
    y_low, y_high = min(ty), max(ty)
    if x_high - x_low < 1e-9:
        x_low, x_high = x_low - 1, x_high + 1
    if y_high - y_low < 1e-9:
        y_low, y_high = y_low - 1, y_high + 1

    def px(value: float) -> float:
        return left + (value - x_low) / (x_high - x_low) * width_inner

    def py(value: float) -> float:
        return top + (1 - (value - y_low) / (y_high - y_low)) * height_inner

    parts = [
        f'<svg id="{plot_id}" xmlns="http://www.w3.org/2000/svg" width="{_WIDTH}" '
        f'height="{height}" viewBox="0 0 {_WIDTH} {height}" role="img" '
        f'aria-label="{escape(title)}">',
        f'<text x="{_WIDTH / 2}" y="18" text-anchor="middle" class="title">{escape(title)}</text>',
        f'<rect x="{left}" y="{top}" width="{width_inner}" height="{height_inner}" class="frame"/>',
    ]
    raw_ticks = (
        _log_ticks(math.exp(x_low), math.exp(x_high)) if log_x else _nice_ticks(x_low, x_high)
    )
    for tick in raw_ticks:
        if log_x and tick <= 0:
            continue
        x = px(transform(tick))
        parts.append(
            f'<text x="{x:.1f}" y="{top + height_inner + 14}" text-anchor="middle" class="tick">'
            f"{_tick_label(tick)}</text>"
        )
    for tick in _nice_ticks(y_low, y_high):
        y = py(tick)
        parts.append(
            f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end" class="tick">'
            f"{_tick_label(tick)}</text>"
        )
    for x, y in points:
        parts.append(f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="2.2" class="mark point"/>')
    if fitted_line is not None and all(math.isfinite(v) for v in fitted_line):
        intercept, slope = fitted_line
        y_start, y_end = intercept + slope * x_low, intercept + slope * x_high
        parts.append(
            f'<line x1="{px(x_low):.1f}" y1="{py(y_start):.1f}" x2="{px(x_high):.1f}" '
            f'y2="{py(y_end):.1f}" class="fit"><title>fitted: {intercept:.3g} + '
            f"{slope:.3g} ln(words)</title></line>"
        )
    parts.append(
        f'<text x="{left + width_inner / 2}" y="{height - 6}" text-anchor="middle" class="axis">'
        f"{escape(x_label)}</text>"
    )
    parts.append(
        f'<text x="14" y="{top + height_inner / 2}" text-anchor="middle" class="axis" '
        f'transform="rotate(-90 14 {top + height_inner / 2})">{escape(y_label)}</text>'
    )
    parts.append("</svg>")
    return "".join(parts)


def _diverging_fill(value: float, limit: float) -> str:
    """Blue (negative) - white - orange (positive), saturating at ``limit``."""
    if not math.isfinite(value) or limit <= 0:
        return "#eef1f4"
    t = max(-1.0, min(1.0, value / limit))
    low, high = (47, 109, 179), (194, 65, 12)
    end = high if t > 0 else low
    mix = [round(255 + (channel - 255) * abs(t)) for channel in end]
    return f"rgb({mix[0]},{mix[1]},{mix[2]})"


def heatmap_plot(
    title: str,
    row_labels: Sequence[str],
    column_labels: Sequence[str],
    estimates: Sequence[Sequence[float]],
    intervals: Sequence[Sequence[tuple[float, float]]],
    *,
    row_notes: Sequence[str],
    plot_id: str,
) -> str:
    """A rows x columns grid of estimates (reviewer x slot), colour = signed size.

    Each cell is a ``rect class="mark"`` with the estimate printed in it and its interval
    in a tooltip; ``row_notes`` are printed right of each row (e.g. "primacy, flagged").
    """
    cell_width, cell_height = 62, 24
    left, top, right_note = _LEFT, _TOP + 14, 250
    width = max(_WIDTH, left + cell_width * len(column_labels) + right_note)
    height = top + cell_height * max(len(row_labels), 1) + 30
    finite = _finite([value for row in estimates for value in row])
    limit = max((abs(value) for value in finite), default=0.0)
    parts = [
        f'<svg id="{plot_id}" xmlns="http://www.w3.org/2000/svg" width="{width}" '
        f'height="{height}" viewBox="0 0 {width} {height}" role="img" '
        f'style="max-width: 100%; height: auto" aria-label="{escape(title)}">',
        f'<text x="{width / 2}" y="18" text-anchor="middle" class="title">{escape(title)}</text>',
    ]
    for column, label in enumerate(column_labels):
        x = left + cell_width * column + cell_width / 2
        parts.append(
            f'<text x="{x:.1f}" y="{top - 6}" text-anchor="middle" class="tick">'
            f"{escape(label)}</text>"
        )
    shown_labels = distinct_labels(row_labels)
    for row, (full_label, shown) in enumerate(zip(row_labels, shown_labels, strict=True)):
        y = top + cell_height * row
        label = terminal_safe(full_label)
        parts.append(
            f'<text x="{left - 8}" y="{y + cell_height / 2 + 4:.1f}" text-anchor="end" '
            f'class="label"><title>{escape(label)}</title>{escape(shown)}</text>'
        )
        for column, value in enumerate(estimates[row]):
            x = left + cell_width * column
            low, high = intervals[row][column]
            text = f"{value:+.2f}" if math.isfinite(value) else "n/a"
            tip = (
                f"{label}, {column_labels[column]}: {value:.3g} [{low:.3g}, {high:.3g}]"
                if math.isfinite(value)
                else f"{label}, {column_labels[column]}: not estimated"
            )
            parts.append(
                f'<rect x="{x}" y="{y}" width="{cell_width - 2}" height="{cell_height - 2}" '
                f'fill="{_diverging_fill(value, limit)}" class="mark">'
                f"<title>{escape(tip)}</title></rect>"
            )
            parts.append(
                f'<text x="{x + cell_width / 2 - 1:.1f}" y="{y + cell_height / 2 + 3:.1f}" '
                f'text-anchor="middle" class="tick">{text}</text>'
            )
        parts.append(
            f'<text x="{left + cell_width * len(column_labels) + 8}" '
            f'y="{y + cell_height / 2 + 4:.1f}" class="label">{escape(row_notes[row])}</text>'
        )
    parts.append(
        f'<text x="{left}" y="{height - 8}" class="axis">points vs the reviewer\'s own average '
        "slot (blue: lower, orange: higher)</text>"
    )
    parts.append("</svg>")
    return "".join(parts)
