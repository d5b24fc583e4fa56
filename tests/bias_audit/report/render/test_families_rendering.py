"""The favouritism heat map: one cell per tested pair, flags outlined, names escaped."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import pytest

from llm_council.bias_audit.report import build_report, render_html
from llm_council.bias_audit.report.analyses.favouritism import Favouritism, FavouritismCell
from llm_council.bias_audit.report.dashboard.svg_heatmap import favouritism_heatmap
from llm_council.bias_audit.report.model import Interval
from llm_council.simulation.profile import SimulatedProfile
from llm_council.simulation.simulated_records import write_record_store

HOSTILE = '<script>alert("x")</script>&'


def _cell(reviewer: str, model: str, estimate: float, flagged: bool) -> FavouritismCell:
    return FavouritismCell(
        reviewer=reviewer,
        model=model,
        is_self=reviewer == model,
        effect=Interval(estimate, estimate - 0.3, estimate + 0.3, 0.01),
        n_sessions=50,
        holm_p=0.01 if flagged else 0.9,
        flagged=flagged,
    )


def test_heatmap_draws_every_tested_cell_and_outlines_flags() -> None:
    matrix = Favouritism(
        reviewers=["a", HOSTILE],
        models=["a", HOSTILE],
        cells=[
            _cell("a", "a", 0.1, False),
            _cell("a", HOSTILE, 1.2, True),
            _cell(HOSTILE, "a", -0.4, False),
        ],  # (HOSTILE, HOSTILE) untested: drawn grey without class="cell"
    )
    svg = favouritism_heatmap(matrix)
    root = ElementTree.fromstring(svg)  # well-formed XML: the hostile name is escaped
    namespace = "{http://www.w3.org/2000/svg}"
    cells = [rect for rect in root.iter(f"{namespace}rect") if rect.get("class") == "cell"]
    assert len(cells) == 3
    outlined = [rect for rect in cells if rect.get("stroke-width") == "3"]
    assert len(outlined) == 1 and "+1.20" in (outlined[0].findtext(f"{namespace}title") or "")
    assert "<script>" not in svg
    # blue for favours, orange-red for disfavours, white-ish near zero
    colours = {rect.findtext(f"{namespace}title", "")[:20]: rect.get("fill") for rect in cells}
    assert any(fill == "#2f6db3" for fill in colours.values())  # the largest |effect|


def test_html_report_carries_the_heatmap(tmp_path: Path) -> None:
    names = ["x", "y", "z", "w"]
    profiles = [
        SimulatedProfile(noise_sd=1.0, favours={"y": 2.0} if n == "x" else {}) for n in names
    ]
    path = tmp_path / "store.jsonl"
    write_record_store(path, list(zip(names, profiles, strict=True)), 150, seed=5)
    report = build_report(path, n_resamples=20)
    page = render_html(report)
    heatmap = re.search(r'<svg id="plot-favouritism".*?</svg>', page, re.S)
    assert heatmap is not None
    assert heatmap.group(0).count('class="cell"') == 16
    assert report.families is not None and report.families.favouritism is not None
    flagged = [(c.reviewer, c.model) for c in report.families.favouritism.flagged_pairs()]
    assert ("x", "y") in flagged


@pytest.mark.parametrize("bad", ["yesterday", "7x"])
def test_until_rejects_a_bad_value_naming_the_option(tmp_path: Path, bad: str) -> None:
    from llm_council.errors import InputError

    path = tmp_path / "store.jsonl"
    write_record_store(path, [("a", SimulatedProfile()), ("b", SimulatedProfile())], 5, seed=1)
    with pytest.raises(InputError, match=f"--until '{bad}'"):
        build_report(path, until=bad)


def test_cli_since_and_until_keep_only_the_window(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import json
    from datetime import UTC, datetime, timedelta

    from llm_council.cli.app import main

    path = tmp_path / "store.jsonl"
    members = [(name, SimulatedProfile(noise_sd=1.0)) for name in ("a", "b", "c")]
    # 10 sessions one day apart, the last on 2026-01-10 00:00 UTC
    end = datetime(2026, 1, 10, tzinfo=UTC)
    write_record_store(path, members, 10, seed=2, end_time=end, session_spacing=timedelta(days=1))
    args = ["bias-report", "--store", str(path), "--format", "json", "--bootstrap", "20"]
    window = ["--since", "2026-01-03", "--until", "2026-01-06"]
    with pytest.raises(SystemExit) as exited:
        main([*args, *window])
    assert exited.value.code in (0, None)
    payload = json.loads(capsys.readouterr().out)
    # sessions on Jan 3, 4, 5 (Jan 6 00:00 is excluded: --until is exclusive)
    assert payload["n_sessions"] == 3 and payload["until"] == "2026-01-06"


def test_malformed_positions_and_huge_slot_counts_are_left_out(tmp_path: Path) -> None:
    from llm_council.bias_audit.report.analyses.families import bias_families
    from llm_council.bias_audit.report.load.loading import load_store
    from llm_council.bias_audit.report.load.tables import create_analysis_tables

    path = tmp_path / "store.jsonl"
    members = [(name, SimulatedProfile(noise_sd=1.0)) for name in ("a", "b", "c")]
    write_record_store(path, members, 30, seed=3)
    hostile = {
        "schema_version": 1,
        "session_id": "evil",
        "timestamp": "2026-01-30T00:00:00Z",
        "reviewer_id": "a",
        "model_id": "b",
        "position": 2_000_000_000,
        "n_candidates": 2_000_000_001,
        "response_length_words": 10,
        "score_value": 5.0,
    }
    negative = {**hostile, "session_id": "evil2", "position": -5, "n_candidates": 3}
    with path.open("a", encoding="utf-8") as handle:
        for record in (hostile, negative):
            handle.write(json.dumps(record) + "\n")
    store = load_store(path)
    try:
        create_analysis_tables(store.connection)
        families = bias_families(store.connection)
    finally:
        store.connection.close()
    assert families.amplification is not None and families.amplification.n_sessions == 30
    assert {item.reviewer for item in families.anchoring} == {"a", "b", "c"}
