"""The favouritism heat map as inline SVG: reviewers down, candidate models across.

Colour is the effect in points (blue = favours, red = disfavours, white = none), clipped
at the largest absolute effect. A flagged cell (Holm) gets a heavy outline and a star (a
tilde when it is spill-over of a larger flag); the self cell an "s". Every cell carries
``class="cell"`` and a ``<title>`` tooltip with the number and interval, so the picture
never holds a number the text lacks.
"""

from __future__ import annotations

import math
from html import escape

from llm_council.bias_audit.report.analyses.favouritism import Favouritism
from llm_council.infra.safe_text import distinct_labels, terminal_safe

_CELL = 44
_LEFT = 150
_TITLE_LINE = 16  # px between the title's two baselines (13 px bold text)
_TOP = 110 + _TITLE_LINE  # the rotated model names keep their room below the second line
_MARGIN = 20
#: the title's longer line starts at _MARGIN and measures about 535 px in Chromium (13 px
#: bold, 73 characters; the one-line title measured 725 px and was cut off at 700)
_MIN_WIDTH = 700


def _colour(value: float, limit: float) -> str:
    """White at 0, toward #2f6db3 (positive) or #c2410c (negative) at +-limit."""
    if not math.isfinite(value) or limit <= 0:
        return "#f0f0f0"
    share = max(-1.0, min(1.0, value / limit))
    target = (0x2F, 0x6D, 0xB3) if share > 0 else (0xC2, 0x41, 0x0C)
    weight = abs(share)
    red, green, blue = (round(255 + (t - 255) * weight) for t in target)
    return f"#{red:02x}{green:02x}{blue:02x}"


def favouritism_heatmap(matrix: Favouritism, plot_id: str = "plot-favouritism") -> str:
    """One square per tested (reviewer, model) cell; untested cells are left grey."""
    cells = {(cell.reviewer, cell.model): cell for cell in matrix.cells}
    # ids are untrusted: short, distinct, terminal-safe labels; the full (safe) id in tooltips
    model_labels = dict(zip(matrix.models, distinct_labels(matrix.models), strict=True))
    reviewer_labels = dict(zip(matrix.reviewers, distinct_labels(matrix.reviewers), strict=True))
    limit = max((abs(cell.effect.estimate) for cell in matrix.cells), default=0.0)
    width = max(_LEFT + _CELL * len(matrix.models) + _MARGIN, _MIN_WIDTH)
    height = _TOP + _CELL * len(matrix.reviewers) + _MARGIN
    parts = [
        f'<svg id="{plot_id}" xmlns="http://www.w3.org/2000/svg" width="{width}" '
        f'height="{height}" viewBox="0 0 {width} {height}" role="img" '
        f'aria-label="Favouritism heat map">',
        # two lines from the left margin, so the title fits the narrowest (700 px) map
        f'<text x="{_MARGIN}" y="16" class="title">Favouritism: reviewer (row) on model '
        f"(column), points{', length-controlled' if matrix.length_controlled else ''}</text>",
        f'<text x="{_MARGIN}" y="{16 + _TITLE_LINE}" class="title">'
        "* = finding (report-wide); s = self cell</text>",
    ]
    for column, model in enumerate(matrix.models):
        x = _LEFT + _CELL * column + _CELL / 2
        parts.append(
            f'<text x="{x:.1f}" y="{_TOP - 6}" class="tick" text-anchor="start" '
            f'transform="rotate(-45 {x:.1f} {_TOP - 6})">{escape(model_labels[model])}'
            f"<title>{escape(terminal_safe(model))}</title></text>"
        )
    for row, reviewer in enumerate(matrix.reviewers):
        y = _TOP + _CELL * row
        parts.append(
            f'<text x="{_LEFT - 8}" y="{y + _CELL / 2 + 4:.1f}" class="label" '
            f'text-anchor="end">{escape(reviewer_labels[reviewer])}'
            f"<title>{escape(terminal_safe(reviewer))}</title></text>"
        )
        for column, model in enumerate(matrix.models):
            x = _LEFT + _CELL * column
            cell = cells.get((reviewer, model))
            if cell is None:
                parts.append(
                    f'<rect x="{x}" y="{y}" width="{_CELL}" height="{_CELL}" fill="#f0f0f0" '
                    'stroke="#ffffff"><title>not tested</title></rect>'
                )
                continue
            effect = cell.effect
            tooltip = (
                f"{terminal_safe(reviewer)} on {terminal_safe(model)}: {effect.estimate:+.2f} "
                f"[{effect.ci_low:+.2f}, {effect.ci_high:+.2f}] points, "
                f"Holm p={cell.holm_p:.2g}, {cell.n_sessions} sessions"
                + (" (self)" if cell.is_self else "")
                + (" (flagged; consistent with spill-over)" if cell.spillover else "")
            )
            stroke = 'stroke="#1d232a" stroke-width="3"' if cell.flagged else 'stroke="#ffffff"'
            parts.append(
                f'<rect class="cell" x="{x}" y="{y}" width="{_CELL}" height="{_CELL}" '
                f'fill="{_colour(effect.estimate, limit)}" {stroke}>'
                f"<title>{escape(tooltip)}</title></rect>"
            )
            mark = ("~" if cell.spillover else "*" if cell.flagged else "") + (
                "s" if cell.is_self else ""
            )
            parts.append(
                f'<text x="{x + _CELL / 2:.1f}" y="{y + _CELL / 2 + 4:.1f}" class="tick" '
                f'text-anchor="middle">{effect.estimate:+.1f}{escape(mark)}</text>'
            )
    parts.append("</svg>")
    return "".join(parts)
