"""Open the HTML report in headless Chromium and check the favouritism heat map is drawn."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from llm_council.bias_audit.report import build_report, render_html

pytestmark = pytest.mark.browser


def test_heatmap_renders_one_box_per_tested_cell(
    biased_store: Path, tmp_path: Path, chromium_launch_options: dict[str, Any]
) -> None:
    from playwright import sync_api

    report = build_report(biased_store, n_resamples=20)
    assert report.families is not None and report.families.favouritism is not None
    n_cells = len(report.families.favouritism.cells)
    page_path = tmp_path / "report.html"
    page_path.write_text(render_html(report), encoding="utf-8")
    errors: list[str] = []
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(**chromium_launch_options)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.on("console", lambda message: errors.append(message.text))
            page.goto(page_path.as_uri())
            heatmap = page.locator("svg#plot-favouritism")
            box = heatmap.bounding_box()
            assert box is not None and box["width"] > 200 and box["height"] > 200
            cells = heatmap.locator("rect.cell")
            assert cells.count() == n_cells == 25  # five members, self cells included
            for index in range(n_cells):
                cell_box = cells.nth(index).bounding_box()
                assert cell_box is not None and cell_box["width"] > 10
                assert box["x"] <= cell_box["x"] <= box["x"] + box["width"]
            # issue 37: the title was cut off at the SVG's right edge; every line of it
            # (the biased store's matrix is length-controlled: the longest title) must fit
            title_lines = heatmap.locator("text.title")
            assert title_lines.count() >= 1
            for index in range(title_lines.count()):
                title_box = title_lines.nth(index).bounding_box()
                assert title_box is not None and title_box["width"] > 100
                assert box["x"] <= title_box["x"], (title_box, box)
                assert title_box["x"] + title_box["width"] <= box["x"] + box["width"], (
                    title_box,
                    box,
                )
                assert box["y"] <= title_box["y"], (title_box, box)
        finally:
            browser.close()
    assert errors == []
