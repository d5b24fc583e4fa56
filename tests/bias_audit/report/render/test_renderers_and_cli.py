"""Every format through the real CLI path, on the generator's store."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import pytest

from llm_council.bias_audit.report import (
    build_report,
    render_csv,
    render_html,
    render_json,
    render_text,
)
from llm_council.bias_audit.report.render.render_tables import CSV_COLUMNS
from llm_council.cli.app import _run, app


def run_cli(args: list[str]) -> int:
    return _run(args, "llm-council", app)


@pytest.fixture(scope="module")
def biased_report(biased_store: Path):  # type: ignore[no-untyped-def]
    return build_report(biased_store, n_resamples=50)


def test_text_leads_with_the_findings_then_reviewer_profiles(biased_report) -> None:  # type: ignore[no-untyped-def]
    text = render_text(biased_report)
    order = [
        "=== Findings",
        "=== Reviewer Profiles",
        "=== Length Bias",
        "=== Position Bias",
        "=== Self-Preference",
        "=== Joint Model",
        "=== Leaderboard",
        "=== Adjusted view",
    ]
    positions = [text.index(heading) for heading in order]
    assert positions == sorted(positions)
    assert text.index("=== ") == positions[0]
    assert "Reliability: high (400 sessions" in text
    assert "Adjusted view (extra; NOT used above)" in text
    # primacy's +1 at slot A lifts its average by about +0.2 (one slot in five): significant
    # over 400 sessions but under the material floor (0.025 x 9 points), so not "generous"
    primacy_block = text[
        text.index("\nprimacy\n") : text.index("Reliability", text.index("\nprimacy\n"))
    ]
    assert "(neutral, z=" in primacy_block
    assert "also flagged for position bias" not in primacy_block
    assert "Reference: every reviewer except" in text


def test_json_is_strict_and_complete(biased_report) -> None:  # type: ignore[no-untyped-def]
    payload = json.loads(render_json(biased_report))
    assert set(payload) >= {
        "profiles",
        "length",
        "position",
        "self_preference",
        "joint",
        "leaderboard",
        "warnings",
    }
    assert payload["n_sessions"] == 400
    assert {p["reviewer"] for p in payload["profiles"]} == {
        "balanced",
        "harsh",
        "verbose",
        "primacy",
        "narcissist",
    }
    assert "NaN" not in render_json(biased_report)
    per_reviewer = {p["subject"]: p for p in payload["position"]["per_reviewer"]}
    assert set(per_reviewer) == {p["reviewer"] for p in payload["profiles"]}
    assert per_reviewer["primacy"]["flagged"] and per_reviewer["primacy"]["direction"] == "primacy"
    assert per_reviewer["primacy"]["basis"] == "within answers"
    assert len(per_reviewer["primacy"]["slot_effect"]) == 5


def test_csv_is_one_long_table(biased_report) -> None:  # type: ignore[no-untyped-def]
    rows = list(csv.reader(io.StringIO(render_csv(biased_report))))
    assert tuple(rows[0]) == CSV_COLUMNS
    assert all(len(row) == len(CSV_COLUMNS) for row in rows)
    sections = {row[0] for row in rows[1:]}
    assert sections == {
        "finding",  # ADR 0054: every tested hypothesis, two rows each, first
        "not_a_finding",
        "reviewer",
        "length",
        "position",
        "position_by_reviewer",
        "self_preference",
        "joint_model",
        "leaderboard",
        "anchoring",
        "favouritism",
        "amplification",
        "parse_outcomes",  # score/rank mismatch (ADR 0027); the store has no review_status
        "style_mimicry",
        "decisions_affected",  # ADR 0046
        "reliability",  # ADR 0062
        "score_resolution",
        "monitor",  # ADR 0053
    }  # no "drift": the fixture store spans under 3 weeks
    primacy_a = next(
        row for row in rows if row[:3] == ["position_by_reviewer", "primacy", "slot_effect:A"]
    )
    assert 0 < float(primacy_a[4]) < float(primacy_a[3]) < float(primacy_a[5])
    harsh = next(row for row in rows if row[:3] == ["reviewer", "harsh", "leniency"])
    assert float(harsh[4]) < float(harsh[3]) < float(harsh[5]) < 0


def test_html_is_self_contained_with_its_plots(biased_report) -> None:  # type: ignore[no-untyped-def]
    page = render_html(biased_report)
    assert "<script" not in page.lower()
    assert re.findall(r"src=", page) == []
    assert set(re.findall(r'href="([^"]*)"', page)) <= {
        "#findings",
        "#section-reviewers",
        "#section-position",
        "#section-length",
        "#section-self",
        "#section-families",
        "#section-causal",
    }  # in-page links from the findings header only
    assert set(re.findall(r"https?://[^\s\"']+", page)) == {"http://www.w3.org/2000/svg"}
    ids = re.findall(r'<svg id="(plot-[^"]+)"', page)
    assert ids == [
        "plot-position",
        "plot-position-by-reviewer",
        "plot-leniency",
        "plot-length",
        "plot-self-preference",
        "plot-leaderboard",
        "plot-leaderboard-length",
        "plot-favouritism",
        "plot-style-mimicry",
    ]
    # the reviewer cards: one slot strip each (drift sparklines need 3+ weeks of data)
    n_reviewers = len(biased_report.profiles)
    strips = re.findall(r'<svg id="strip-(\d+)"', page)
    assert sorted(strips, key=int) == [str(i) for i in range(n_reviewers)]


@pytest.mark.parametrize("fmt", ["text", "json", "csv", "html"])
def test_cli_writes_each_format(
    biased_store: Path, tmp_path: Path, fmt: str, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / f"report.{fmt}"
    code = run_cli(
        [
            "bias-report",
            "--store",
            str(biased_store),
            "--format",
            fmt,
            "--out",
            str(out),
            "--bootstrap",
            "20",
        ]
    )
    assert code == 0
    assert out.stat().st_size > 1000
    assert f"wrote {fmt} report" in capsys.readouterr().err
    assert not list(tmp_path.glob(".*.tmp"))


def test_cli_store_defaults_to_the_environment(
    biased_store: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("LLM_COUNCIL_BIAS_STORE", str(biased_store))
    assert run_cli(["bias-report", "--format", "json", "--bootstrap", "20"]) == 0
    assert json.loads(capsys.readouterr().out)["store"] == str(biased_store)


def test_cli_errors_are_one_line(
    tmp_path: Path, biased_store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run_cli(["bias-report", "--store", str(tmp_path / "none.jsonl")]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: no bias-audit store at") and "\n" not in err
    assert run_cli(["bias-report", "--store", str(biased_store), "--since", "soon"]) == 2
    assert "--since 'soon'" in capsys.readouterr().err
    assert run_cli(["bias-report", "--store", str(biased_store), "--since", "1d"]) == 1
    assert "no usable bias-audit records since 1d" in capsys.readouterr().err
    assert run_cli(["bias-report", "--store", str(biased_store), "--format", "pdf"]) == 2


def test_cli_warns_about_a_torn_line(
    biased_store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "torn.jsonl"
    store.write_bytes(biased_store.read_bytes() + b'{"schema_version":1,"session_id":"x')
    assert (
        run_cli(["bias-report", "--store", str(store), "--format", "csv", "--bootstrap", "20"]) == 0
    )
    captured = capsys.readouterr()
    assert "last line is incomplete" in captured.err
    assert captured.out.startswith('"section","subject"')


@pytest.mark.parametrize("fmt", ["text", "json", "csv", "html"])
def test_a_one_session_store_says_what_it_cannot_estimate(
    tmp_path: Path, fmt: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from llm_council.simulation.simulated_records import load_simulated_profiles, write_record_store

    store = tmp_path / "one.jsonl"
    write_record_store(store, load_simulated_profiles(["balanced", "harsh"]), 1, seed=0)
    assert run_cli(["bias-report", "--store", str(store), "--format", fmt]) == 0
    out = capsys.readouterr().out
    if fmt == "text":
        assert "=== Joint Model === not enough data" in out
        assert "=== Leaderboard === no rankings to compare" in out
        assert "Reliability: insufficient (1 sessions" in out
    elif fmt == "json":
        payload = json.loads(out)
        assert payload["joint"] is None and payload["leaderboard"] is None
        assert all(item["detected"] is False for item in payload["self_preference"])
