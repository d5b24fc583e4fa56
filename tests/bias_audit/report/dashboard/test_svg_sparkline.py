"""The reviewer cards' small SVGs: marks where the numbers say, tooltips with intervals."""

from __future__ import annotations

import math
import re

from llm_council.bias_audit.report.dashboard.svg_sparkline import drift_sparkline, slot_strip
from llm_council.bias_audit.report.model import Interval


def test_sparkline_marks_band_and_change() -> None:
    svg = drift_sparkline(
        ["2026-01-05", "2026-01-12", "2026-01-19"],
        [0.0, 0.5, float("nan")],
        [0.1, 0.2, 0.3],
        changed_from="2026-01-12",
        plot_id="spark-0",
    )
    assert svg.count('class="mark"') == 2  # the NaN week has no mark
    # tooltip carries the mean and its +-1.96 se interval: 0.5 +- 0.392
    assert "week of 2026-01-12: +0.50 [+0.11, +0.89]" in svg
    assert svg.count('class="change"') == 1 and 'class="band"' in svg
    ys = [float(y) for y in re.findall(r'cy="([\d.]+)"', svg)]
    assert ys[1] < ys[0]  # a higher mean is drawn higher (smaller y)


def test_sparkline_without_change_has_no_rule() -> None:
    svg = drift_sparkline(["a", "b"], [1.0, 1.0], [0.0, 0.0], changed_from=None, plot_id="s")
    assert 'class="change"' not in svg and svg.count('class="mark"') == 2


def test_slot_strip_bars_point_the_way_of_the_effect() -> None:
    nan = math.nan
    svg = slot_strip(
        ["A", "B", "C"],
        [Interval(0.8, 0.6, 1.0), Interval(-0.4, -0.6, -0.2), Interval(nan, nan, nan)],
        plot_id="strip-0",
    )
    assert svg.count('class="mark bar up"') == 1 and svg.count('class="mark bar down"') == 1
    assert svg.count('class="whisker"') == 2
    assert "slot A: +0.80 [+0.60, +1.00] points" in svg
    heights = [float(h) for h in re.findall(r'height="([\d.]+)" class="mark bar', svg)]
    assert heights[0] > heights[1] > 0  # |0.8| drawn taller than |-0.4|
