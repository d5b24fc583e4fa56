"""Style mimicry in ``bias-report``: found on its target, silent on null councils (simulator
and second generator, with style correlated with quality), rendered safely everywhere.

The calibration tables in docs/bias-report.md come from
``.venv/bin/python benchmarks/style_mimicry_calibration.py`` (the same estimator on arrays,
thousands of runs) and ``.venv/bin/pytest tests/bias_audit/report/analyses/test_style_mimicry.py -m slow -s``
(through the report's own loading, fewer runs).
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import numpy as np
import pytest

from generators.independent_council import CouncilSpec, generate_sessions
from generators.style_similarity import StyleSpec, add_similarity, write_styled_store
from llm_council.bias_audit.report import build_report, render_csv, render_html, render_json
from llm_council.bias_audit.report.analyses.style_mimicry import StyleMimicry, style_mimicry
from llm_council.bias_audit.report.load.loading import load_store
from llm_council.bias_audit.report.load.tables import create_analysis_tables
from llm_council.bias_audit.report.render.render_text import render_text
from llm_council.simulation.profile import SimulatedProfile
from llm_council.simulation.simulated_records import (
    load_simulated_profiles,
    simulate_record_columns,
    write_record_store,
)

HOSTILE = '=cmd|"/c calc"!A1 <script>alert(1)</script>\x1b[2J\u202e'


def simulator_store(path: Path, n_members: int, n_sessions: int, seed: int, mimicry: float) -> Path:
    names = [f"judge{i}" for i in range(n_members)]
    profiles = [
        SimulatedProfile(noise_sd=0.8, style_mimicry=mimicry if i == 0 else 0.0)
        for i in range(n_members)
    ]
    write_record_store(path, list(zip(names, profiles, strict=True)), n_sessions, seed=seed)
    return path


def independent_store(
    path: Path, n_members: int, n_sessions: int, seed: int, mimicry: float
) -> Path:
    spec = CouncilSpec(n_members=n_members, missing_score_rate=0.05)
    styled = add_similarity(
        generate_sessions(spec, n_sessions, seed),
        StyleSpec(style_quality=0.15, mimicry=[mimicry] + [0.0] * (n_members - 1)),
        seed=seed + 1,
    )
    write_styled_store(path, styled)
    return path


STORES = {"simulator": simulator_store, "independent": independent_store}
MIMIC = {"simulator": "judge0", "independent": "judge-0"}  # member 0 of each generator


def analyse(path: Path) -> StyleMimicry | None:
    store = load_store(path)
    try:
        create_analysis_tables(store.connection)
        return style_mimicry(store.connection)
    finally:
        store.connection.close()


def flagged(found: StyleMimicry | None) -> set[str]:
    return {item.reviewer for item in found.reviewers if item.detected} if found else set()


def test_simulator_scores_are_unchanged_by_the_style_columns() -> None:
    # pinned from the simulator before answer styles existed (commit febb12b, same call):
    # drawing styles from a spawned generator leaves the score stream alone
    profiles = [profile for _, profile in load_simulated_profiles()]
    columns = simulate_record_columns(profiles, 50, np.random.default_rng(7))
    digest = hashlib.sha256(np.ascontiguousarray(columns.score).tobytes()).hexdigest()
    assert digest[:16] == "75fd6797f5b8391a"
    assert np.isnan(columns.similarity[columns.is_self_review]).all()
    others = columns.similarity[~columns.is_self_review]
    assert ((others >= 0) & (others <= 1)).all() and others.std() > 0.05


@pytest.mark.parametrize("generator", sorted(STORES))
def test_null_council_flags_nobody(tmp_path: Path, generator: str) -> None:
    found = analyse(STORES[generator](tmp_path / "null.jsonl", 5, 300, 31, 0.0))
    assert found is not None and len(found.reviewers) == 5
    assert flagged(found) == set()
    assert all(abs(item.slope.estimate) < 2.0 for item in found.reviewers)


@pytest.mark.parametrize("generator", sorted(STORES))
def test_the_mimic_and_only_the_mimic_is_flagged(tmp_path: Path, generator: str) -> None:
    found = analyse(STORES[generator](tmp_path / "mimic.jsonl", 5, 300, 32, 6.0))
    assert flagged(found) == {MIMIC[generator]}
    assert found is not None
    mimic = next(item for item in found.reviewers if item.reviewer == MIMIC[generator])
    assert mimic.slope.estimate > 3.0 and mimic.points_per_sd > 0.3
    assert mimic.n_sessions == 300 and mimic.holm_p < 0.001


def test_a_store_without_similarities_has_no_section(tmp_path: Path) -> None:
    path = simulator_store(tmp_path / "old.jsonl", 4, 40, 3, 0.0)
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    for line in lines:
        line.pop("similarity_to_own")
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    assert analyse(path) is None
    report = build_report(path, n_resamples=20)
    assert report.families is not None and report.families.style_mimicry is None
    assert "Style mimicry" not in render_text(report)


def test_every_format_shows_the_section_with_hostile_names_escaped(tmp_path: Path) -> None:
    names = [HOSTILE, "plain", "third", "fourth"]
    profiles = [
        SimulatedProfile(noise_sd=0.8, style_mimicry=8.0 if i == 0 else 0.0) for i in range(4)
    ]
    path = tmp_path / "hostile.jsonl"
    write_record_store(path, list(zip(names, profiles, strict=True)), 200, seed=5)
    report = build_report(path, n_resamples=20)
    assert report.families is not None and report.families.style_mimicry is not None
    assert HOSTILE in flagged(report.families.style_mimicry)

    text = render_text(report)
    assert "=== Style mimicry" in text and "MIMICRY" in text
    assert "\x1b" not in text and "\u202e" not in text

    rows = list(csv.reader(io.StringIO(render_csv(report))))
    mimicry_rows = [row for row in rows if row[0] == "style_mimicry"]
    assert {row[2] for row in mimicry_rows} == {"slope", "points_per_sd"}
    assert all(not row[1].startswith("=") for row in mimicry_rows)

    html = render_html(report)
    assert "<h2>Style mimicry</h2>" in html and "<script>alert(1)" not in html
    start = html.index('<svg id="plot-style-mimicry"')
    ElementTree.fromstring(html[start : html.index("</svg>", start) + len("</svg>")])

    as_json = json.loads(render_json(report))
    section = as_json["families"]["style_mimicry"]
    assert HOSTILE in {item["reviewer"] for item in section["reviewers"] if item["detected"]}


def _rates(generator: str, n_members: int, mimicry: float, runs: int, tmp: Path) -> float:
    """Null: share of runs flagging anyone; power: share flagging the mimic (member 0)."""
    hits = 0
    for run in range(runs):
        path = STORES[generator](
            tmp / f"{generator}-{run}.jsonl", n_members, 150, 500 + run, mimicry
        )
        found = flagged(analyse(path))
        hits += int(bool(found) if mimicry == 0.0 else MIMIC[generator] in found)
        path.unlink()
    return hits / runs


@pytest.mark.slow
@pytest.mark.parametrize("generator", sorted(STORES))
@pytest.mark.parametrize("n_members", [3, 5, 9])
def test_false_alarm_rate_and_power(tmp_path: Path, generator: str, n_members: int) -> None:
    runs = int(os.environ.get("MIMICRY_REPLICATES", "100"))
    null = _rates(generator, n_members, 0.0, runs, tmp_path)
    power = _rates(generator, n_members, 4.0, runs, tmp_path)
    print(
        f"{generator:11s} k={n_members} false alarm {null:.3f} power(4 pts/unit) {power:.3f} "
        f"({runs} runs of 150 sessions)"
    )
    # <= 5% promised per report (Holm); 3 binomial standard errors of slack for the runs
    assert null <= 0.05 + 3 * np.sqrt(0.05 * 0.95 / runs)


def test_the_dashboard_header_names_the_flagged_mimic(tmp_path: Path) -> None:
    from llm_council.bias_audit.report.dashboard.dashboard_findings import dashboard_findings

    path = simulator_store(tmp_path / "mimic.jsonl", 5, 150, seed=7, mimicry=8.0)
    report = build_report(path)
    found = report.families.style_mimicry if report.families else None
    assert flagged(found) == {"judge0"}
    rows = [f for f in dashboard_findings(report).findings if f.family == "style mimicry"]
    assert [row.subject for row in rows] == ["judge0"]
    assert "points per unit of similarity" in rows[0].size and "adjusted p" in rows[0].certainty
    assert 'id="findings"' in render_html(report) and "style mimicry" in render_html(report)
