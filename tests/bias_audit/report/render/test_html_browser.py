"""Open the HTML report in headless Debian Chromium and check every plot was drawn."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from llm_council.bias_audit.report import build_report, render_html

pytestmark = pytest.mark.browser


def test_every_plot_renders_with_its_marks(
    biased_store: Path, tmp_path: Path, chromium_launch_options: dict[str, Any]
) -> None:
    from playwright import sync_api

    report = build_report(biased_store, n_resamples=30)
    page_path = tmp_path / "report.html"
    page_path.write_text(render_html(report), encoding="utf-8")
    expected_marks = {
        "plot-position": len(report.position.positions),
        "plot-leniency": len(report.profiles),
        "plot-length": len(report.length.sample_words),
        "plot-self-preference": len(report.self_preference),
        "plot-leaderboard": len(report.leaderboard.entries),
    }
    requests: list[str] = []
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(**chromium_launch_options)
        try:
            page = browser.new_page()
            page.on("request", lambda request: requests.append(request.url))
            page.goto(page_path.as_uri())
            for plot_id, n_marks in expected_marks.items():
                svg = page.locator(f"svg#{plot_id}")
                box = svg.bounding_box()
                assert box is not None and box["width"] > 100 and box["height"] > 50, plot_id
                marks = svg.locator("circle.mark")
                assert marks.count() == n_marks, plot_id
                # each mark is laid out inside its plot (non-zero box within the svg)
                for index in range(min(n_marks, 10)):
                    mark_box = marks.nth(index).bounding_box()
                    assert mark_box is not None and mark_box["width"] > 0, plot_id
                    assert box["x"] <= mark_box["x"] <= box["x"] + box["width"], plot_id
                if plot_id != "plot-length":
                    assert svg.locator("line.interval").count() == n_marks, plot_id
            grid = page.locator("svg#plot-position-by-reviewer")
            n_cells = len(report.position.per_reviewer) * len(report.position.positions)
            assert grid.locator("rect.mark").count() == n_cells
            grid_box = grid.bounding_box()
            assert grid_box is not None and grid_box["height"] > 50
            for index in range(n_cells):
                cell_box = grid.locator("rect.mark").nth(index).bounding_box()
                assert cell_box is not None and cell_box["width"] > 10
                assert cell_box["x"] + cell_box["width"] <= grid_box["x"] + grid_box["width"]
            fit = page.locator("svg#plot-length line.fit")
            assert fit.count() == 1 and fit.bounding_box()["width"] > 100
        finally:
            browser.close()
    assert requests == [page_path.as_uri()]  # nothing fetched but the file itself
