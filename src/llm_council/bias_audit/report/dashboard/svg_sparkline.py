"""Small inline SVGs for the reviewer cards: a weekly drift sparkline and a slot strip.

Both are drawn from numbers the report already holds, each mark with a ``<title>`` tooltip
carrying its value and interval; data marks carry ``class="mark"`` so tests can count them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from html import escape

from llm_council.bias_audit.report.estimates import Interval

_Z95 = 1.96


def _span(values: Sequence[float]) -> tuple[float, float]:
    finite = [value for value in values if math.isfinite(value)]
    low, high = (min(finite), max(finite)) if finite else (-1.0, 1.0)
    if high - low < 1e-9:
        low, high = low - 1.0, high + 1.0
    pad = 0.08 * (high - low)
    return low - pad, high + pad


def drift_sparkline(
    weeks: Sequence[str],
    means: Sequence[float],
    standard_errors: Sequence[float],
    *,
    changed_from: str | None,
    plot_id: str,
    width: int = 240,
    height: int = 48,
) -> str:
    """Weekly means as a line with a +-1.96 se band; a dashed rule at the detected change."""
    lows = [m - _Z95 * s for m, s in zip(means, standard_errors, strict=True)]
    highs = [m + _Z95 * s for m, s in zip(means, standard_errors, strict=True)]
    low, high = _span([*lows, *highs, 0.0])
    pad_x = 6.0
    step = (width - 2 * pad_x) / max(len(means) - 1, 1)

    def x_of(index: int) -> float:
        return pad_x + step * index

    def y_of(value: float) -> float:
        return (1 - (value - low) / (high - low)) * (height - 4) + 2

    parts = [
        f'<svg id="{plot_id}" class="spark" xmlns="http://www.w3.org/2000/svg" width="{width}" '
        f'height="{height}" viewBox="0 0 {width} {height}" role="img" '
        'aria-label="weekly leniency with 95% band">',
        f'<line x1="0" y1="{y_of(0.0):.1f}" x2="{width}" y2="{y_of(0.0):.1f}" class="reference"/>',
    ]
    band = [
        (x_of(i), y_of(h))
        for i, h in enumerate(highs)
        if math.isfinite(h) and math.isfinite(means[i])
    ]
    band += [
        (x_of(i), y_of(lo))
        for i, lo in reversed(list(enumerate(lows)))
        if math.isfinite(lo) and math.isfinite(means[i])
    ]
    if band:
        points = " ".join(f"{x:.1f},{y:.1f}" for x, y in band)
        parts.append(f'<polygon points="{points}" class="band"/>')
    line = [(x_of(i), y_of(m)) for i, m in enumerate(means) if math.isfinite(m)]
    if len(line) > 1:
        points = " ".join(f"{x:.1f},{y:.1f}" for x, y in line)
        parts.append(f'<polyline points="{points}" class="spark-line"/>')
    if changed_from is not None and changed_from in weeks:
        x = x_of(weeks.index(changed_from)) - step / 2
        parts.append(
            f'<line x1="{x:.1f}" y1="0" x2="{x:.1f}" y2="{height}" class="change">'
            f"<title>change detected from the week of {escape(changed_from)}</title></line>"
        )
    for index, (week, mean) in enumerate(zip(weeks, means, strict=True)):
        if not math.isfinite(mean):
            continue
        parts.append(
            f'<circle cx="{x_of(index):.1f}" cy="{y_of(mean):.1f}" r="2.5" class="mark">'
            f"<title>week of {escape(week)}: {mean:+.2f} "
            f"[{lows[index]:+.2f}, {highs[index]:+.2f}]</title></circle>"
        )
    parts.append("</svg>")
    return "".join(parts)


def slot_strip(
    slot_labels: Sequence[str],
    effects: Sequence[Interval],
    *,
    plot_id: str,
    width: int = 240,
    height: int = 64,
) -> str:
    """One bar per display slot (points vs the reviewer's average slot) with its interval."""
    low, high = _span([v for e in effects for v in (e.estimate, e.ci_low, e.ci_high)] + [0.0])
    top, bottom = 4.0, 14.0
    inner = height - top - bottom
    column = width / max(len(effects), 1)

    def y_of(value: float) -> float:
        return top + (1 - (value - low) / (high - low)) * inner

    zero = y_of(0.0)
    parts = [
        f'<svg id="{plot_id}" class="strip" xmlns="http://www.w3.org/2000/svg" width="{width}" '
        f'height="{height}" viewBox="0 0 {width} {height}" role="img" '
        'aria-label="slot effects with 95% intervals">',
        f'<line x1="0" y1="{zero:.1f}" x2="{width}" y2="{zero:.1f}" class="reference"/>',
    ]
    for index, (label, effect) in enumerate(zip(slot_labels, effects, strict=True)):
        centre = column * index + column / 2
        parts.append(
            f'<text x="{centre:.1f}" y="{height - 2}" text-anchor="middle" class="tick">'
            f"{escape(label)}</text>"
        )
        if not math.isfinite(effect.estimate):
            continue
        y = y_of(effect.estimate)
        bar = "bar up" if effect.estimate >= 0 else "bar down"
        parts.append(
            f'<rect x="{centre - column * 0.3:.1f}" y="{min(y, zero):.1f}" '
            f'width="{column * 0.6:.1f}" height="{max(abs(zero - y), 0.5):.1f}" '
            f'class="mark {bar}"><title>slot {escape(label)}: {effect.estimate:+.2f} '
            f"[{effect.ci_low:+.2f}, {effect.ci_high:+.2f}] points</title></rect>"
        )
        if math.isfinite(effect.ci_low) and math.isfinite(effect.ci_high):
            parts.append(
                f'<line x1="{centre:.1f}" y1="{y_of(effect.ci_low):.1f}" x2="{centre:.1f}" '
                f'y2="{y_of(effect.ci_high):.1f}" class="whisker"/>'
            )
    parts.append("</svg>")
    return "".join(parts)
