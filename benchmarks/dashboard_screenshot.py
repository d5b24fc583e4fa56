"""Write ``docs/img/dashboard.png``: the bias dashboard of a simulated council with known biases.

The store has two parts, both from the simulated council of ``config/simulated_members.toml``
(``balanced``, ``harsh`` -1.5 points, ``verbose`` 1.5 points per ln(words/200), ``primacy``
+1 point at slot A, ``narcissist`` +1.5 points to its own answer):

- ``--sessions`` sessions from the record-store simulator spread over about five weeks, with
  ``balanced`` given ``leniency_drift_per_week = --drift`` so its weekly sparkline moves;
- ``--live-sessions`` sessions of the live council (``run_full_council`` through the
  bias-audit middleware) with ``bias_check_probability = 0.5``, so the causal-checks section
  and the repeat (self-consistency) rows have data.

The dashboard is rendered by ``render_html`` and photographed in headless Chromium at
1400 px wide, from the top down to the end of the first row of reviewer cards (``--height``
to choose), and saved with a 256-colour palette (about 130 KB).

What the picture shows is what the estimators flag on this store, including their known
confounds: anchoring is also flagged for ``balanced`` (its drift: a drifting reviewer was
flagged for anchoring in 20 of 20 stores of five otherwise unbiased judges, 300 sessions
over five weeks, drift 0.4 points a week) and for ``narcissist`` (self-preference 1.5 alone:
7 of 20 such stores).

    .venv/bin/python benchmarks/dashboard_screenshot.py [--out docs/img/dashboard.png]
"""

from __future__ import annotations

import argparse
import asyncio
import io
import os
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from PIL import Image

from llm_council import run_full_council
from llm_council.bias_audit.middleware import BiasAuditMiddleware
from llm_council.bias_audit.report import build_report, render_html
from llm_council.config import load_council_config
from llm_council.infra.log_setup import configure_logging
from llm_council.simulation.simulated_records import load_simulated_profiles, write_record_store

CHROMIUM = "/usr/bin/chromium"
WIDTH = 1400


def write_store(path: Path, sessions: int, live_sessions: int, drift: float) -> None:
    members = [
        (name, profile.model_copy(update={"leniency_drift_per_week": drift}))
        if name == "balanced"
        else (name, profile)
        for name, profile in load_simulated_profiles()
    ]
    write_record_store(
        path,
        members,
        sessions,
        seed=20261123,
        end_time=datetime.now(UTC) - timedelta(hours=1),
        session_spacing=timedelta(weeks=5) / sessions,
    )
    config = load_council_config().model_copy(update={"bias_check_probability": 0.5})
    os.environ["LLM_COUNCIL_BIAS_STORE"] = str(path)

    async def run_live() -> None:
        for index in range(live_sessions):
            await run_full_council(
                "How do I shard a queue?",
                config=config,
                seed=index,
                middleware=[BiasAuditMiddleware()],
            )

    asyncio.run(run_live())


def screenshot(page_path: Path, out: Path, height: int) -> None:
    from playwright import sync_api

    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"], headless=True
        )
        try:
            page = browser.new_page(viewport={"width": WIDTH, "height": 900})
            page.goto(page_path.as_uri())
            if height <= 0:  # down to the end of the first row of reviewer cards
                first = page.locator("section.card").first.bounding_box()
                bottoms = [
                    box["y"] + box["height"]
                    for box in (card.bounding_box() for card in page.locator("section.card").all())
                    if box is not None and first is not None and abs(box["y"] - first["y"]) < 1
                ]
                height = int(max(bottoms, default=1500)) + 24
            png = page.screenshot(
                type="png", full_page=True, clip={"x": 0, "y": 0, "width": WIDTH, "height": height}
            )
        finally:
            browser.close()
    # 256 colours keep the anti-aliased text legible and the file small enough for a README
    with Image.open(io.BytesIO(png)) as image:
        image.convert("RGB").quantize(colors=256).save(out, optimize=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("docs/img/dashboard.png"))
    parser.add_argument("--html", type=Path, help="also keep the dashboard HTML here")
    parser.add_argument("--sessions", type=int, default=300)
    parser.add_argument("--live-sessions", type=int, default=60)
    parser.add_argument("--drift", type=float, default=0.3, help="balanced: points per week")
    parser.add_argument(
        "--height", type=int, default=0, help="pixels from the top (0: the first row of cards)"
    )
    args = parser.parse_args()
    configure_logging(level="ERROR", standard_logging=False)
    with tempfile.TemporaryDirectory() as scratch:
        store = Path(scratch) / "simulated-council.jsonl"
        started = time.perf_counter()
        write_store(store, args.sessions, args.live_sessions, args.drift)
        report = build_report(store, n_resamples=100)
        page_path = args.html or Path(scratch) / "dashboard.html"
        page_path.write_text(render_html(report), encoding="utf-8")
        args.out.parent.mkdir(parents=True, exist_ok=True)
        screenshot(page_path, args.out, args.height)
        elapsed = time.perf_counter() - started
    with Image.open(args.out) as image:
        size = f"{image.width} x {image.height} px"
    print(
        f"{args.out}: {args.out.stat().st_size // 1024} KB, {size}; "
        f"{report.n_sessions} sessions, {report.n_records} records; {elapsed:.1f} s"
    )


if __name__ == "__main__":
    main()
