"""The dashboard in headless Chromium at 1400 px: a screenshot that is not blank, regions laid
out where a reader looks, no console errors, and hostile ids that cannot break the layout."""

from __future__ import annotations

import io
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from bias_audit.report.dashboard.test_dashboard import _hostile_store
from llm_council.bias_audit.report import build_report, render_html

pytestmark = pytest.mark.browser

WIDTH = 1400


def _open(pages: Sequence[tuple[Path, Callable[[Any], None]]], launch: dict[str, Any]) -> list[str]:
    """Open each page at 1400 x 900 in one browser, run its check, return console messages."""
    from playwright import sync_api

    messages: list[str] = []
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(**launch)
        try:
            for page_path, check in pages:
                page = browser.new_page(viewport={"width": WIDTH, "height": 900})
                page.on("console", lambda message: messages.append(message.text))
                page.on("pageerror", lambda error: messages.append(str(error)))
                page.goto(page_path.as_uri())
                check(page)
                page.close()
        finally:
            browser.close()
    return messages


def _pixels(png: bytes) -> np.ndarray:
    from PIL import Image

    with Image.open(io.BytesIO(png)) as image:
        return np.asarray(image.convert("RGB"), dtype=np.int32)


def test_screenshot_at_1400px_shows_findings_cards_and_plots(
    biased_store: Path, tmp_path: Path, chromium_launch_options: dict[str, Any]
) -> None:
    report = build_report(biased_store, n_resamples=20)
    page_path = tmp_path / "dashboard.html"
    page_path.write_text(render_html(report), encoding="utf-8")
    shots: dict[str, Any] = {}

    def check(page: Any) -> None:
        shots["png"] = page.screenshot(full_page=True, type="png")
        boxes = {}
        for selector in (
            "#findings",
            "#findings-table",
            "#section-reviewers",
            "#card-0",
            "#plot-position-by-reviewer",
            "#plot-leniency",
            "#leaderboard-table",
            "#plot-favouritism",
            "#section-causal",
            "#section-method",
        ):
            box = page.locator(selector).bounding_box()
            assert box is not None and box["width"] > 50 and box["height"] > 20, selector
            boxes[selector] = box
        shots["boxes"] = boxes
        shots["scroll_width"] = page.evaluate("document.documentElement.scrollWidth")
        cards = page.locator("section.card")
        shots["card_tops"] = [cards.nth(i).bounding_box()["y"] for i in range(cards.count())]
        shots["n_sparks"] = page.locator("svg.strip rect.mark").count()

    errors = _open([(page_path, check)], chromium_launch_options)
    assert errors == []
    assert shots["scroll_width"] <= WIDTH  # nothing wider than the window
    pixels = _pixels(shots["png"])
    height, width, _ = pixels.shape
    assert width == WIDTH and height > 1500
    boxes = shots["boxes"]
    # reading order: findings, then the reviewer cards, then plots, the method notes last
    assert boxes["#findings"]["y"] < boxes["#section-reviewers"]["y"]
    assert boxes["#section-reviewers"]["y"] < boxes["#plot-leniency"]["y"]
    assert boxes["#plot-leniency"]["y"] < boxes["#section-method"]["y"]
    # the findings header is in the first screen a reader sees
    assert boxes["#findings-table"]["y"] < 900
    # three cards side by side at 1400 px: the first row holds three tops at one height
    tops = shots["card_tops"]
    assert len(tops) == 5 and tops[0] == tops[1] == tops[2] < tops[3]
    # one slot bar per (reviewer, slot) in the card strips
    assert report.position is not None
    assert shots["n_sparks"] == len(report.position.per_reviewer) * len(report.position.positions)
    # not blank: each key region holds ink (dark pixels) and more than two colours
    for selector in (
        "#findings-table",
        "#card-0",
        "#plot-position-by-reviewer",
        "#plot-favouritism",
    ):
        box = boxes[selector]
        x0, y0 = int(box["x"]), int(box["y"])
        region = pixels[y0 : y0 + int(box["height"]), x0 : x0 + int(box["width"])]
        assert region.size > 0, selector
        dark = (region.sum(axis=2) < 300).mean()
        assert dark > 0.005, selector
        packed = (region[..., 0] << 16) | (region[..., 1] << 8) | region[..., 2]
        assert np.unique(packed).size > 8, selector
    # whole page: not one flat colour
    assert pixels.std() > 10


def test_hostile_ids_do_not_break_the_layout(
    write_lines: Callable[[Sequence[str]], Path],
    tmp_path: Path,
    chromium_launch_options: dict[str, Any],
) -> None:
    report = build_report(_hostile_store(write_lines), n_resamples=20)
    page_path = tmp_path / "hostile.html"
    page_path.write_text(render_html(report), encoding="utf-8")
    seen: dict[str, Any] = {}

    def check(page: Any) -> None:
        seen["scripts"] = page.locator("script").count()
        seen["images"] = page.locator("img").count()
        seen["bold"] = page.locator("b", has_text="bold").count()
        seen["scroll_width"] = page.evaluate("document.documentElement.scrollWidth")
        grid = page.locator("div.cards").bounding_box()
        seen["grid"] = grid
        cards = page.locator("section.card")
        seen["cards"] = [cards.nth(i).bounding_box() for i in range(cards.count())]
        seen["text"] = (
            page.locator("#findings").inner_text() + page.locator("#section-reviewers").inner_text()
        )

    errors = _open([(page_path, check)], chromium_launch_options)
    assert errors == []
    assert seen["scripts"] == 0 and seen["images"] == 0 and seen["bold"] == 0
    assert seen["scroll_width"] <= WIDTH
    grid = seen["grid"]
    assert len(seen["cards"]) == 4
    for box in seen["cards"]:
        assert (
            box["x"] >= grid["x"] - 1 and box["x"] + box["width"] <= grid["x"] + grid["width"] + 1
        )
        assert box["width"] < 700  # a 300-character id wraps inside its card
    assert '<script>alert("r")</script>' in seen["text"]  # shown as text, not run
    assert "admin\\u202egnp.exe" in seen["text"]


def test_sparklines_and_causal_table_are_laid_out(
    tmp_path: Path, chromium_launch_options: dict[str, Any]
) -> None:
    from datetime import UTC, datetime, timedelta

    from bias_audit.report.analyses.test_causal_checks import (
        CheckWorld,
        generate_check_lines,
        write_store,
    )
    from llm_council.simulation.profile import SimulatedProfile
    from llm_council.simulation.simulated_records import write_record_store

    drift_path = tmp_path / "drift.jsonl"
    members = [
        ("drifter", SimulatedProfile(noise_sd=1.0, leniency_drift_per_week=0.6)),
        *((f"steady{i}", SimulatedProfile(noise_sd=1.0)) for i in range(3)),
    ]
    write_record_store(
        drift_path,
        members,
        200,
        seed=3,
        end_time=datetime(2026, 3, 1, tzinfo=UTC),
        session_spacing=timedelta(weeks=6) / 200,
    )
    checks_path = write_store(
        tmp_path / "checks.jsonl",
        generate_check_lines(CheckWorld(n_sessions=40, slot_effect={"r1": -0.6}), 1),
    )
    drift_page = tmp_path / "drift.html"
    drift_page.write_text(render_html(build_report(drift_path, n_resamples=10)), "utf-8")
    checks_page = tmp_path / "checks.html"
    checks_page.write_text(render_html(build_report(checks_path, n_resamples=10)), "utf-8")
    seen: dict[str, Any] = {}

    def sparks(page: Any) -> None:
        marks = []
        for index in range(page.locator("svg.spark").count()):
            svg = page.locator("svg.spark").nth(index)
            box = svg.bounding_box()
            for mark in svg.locator("circle.mark").all():
                mark_box = mark.bounding_box()
                inside = box["x"] <= mark_box["x"] <= box["x"] + box["width"]
                marks.append(inside and box["y"] <= mark_box["y"] <= box["y"] + box["height"])
        seen["sparks"] = page.locator("svg.spark").count()
        seen["marks"] = marks

    def causal(page: Any) -> None:
        seen["causal_rows"] = page.locator("#causal-table tbody tr").count()
        seen["causal_box"] = page.locator("#causal-table").bounding_box()

    assert _open([(drift_page, sparks), (checks_page, causal)], chromium_launch_options) == []
    assert seen["sparks"] == 4 and len(seen["marks"]) >= 4 * 6 and all(seen["marks"])
    assert seen["causal_rows"] == 3 and seen["causal_box"]["width"] > 600
