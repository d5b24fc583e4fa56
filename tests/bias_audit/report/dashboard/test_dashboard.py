"""The dashboard's findings header, cards and tables, without a browser."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from bias_audit.report.conftest import scores_to_lines
from llm_council.bias_audit.report import build_report, render_html
from llm_council.bias_audit.report.dashboard.dashboard_findings import dashboard_findings
from llm_council.bias_audit.report.dashboard.dashboard_tables import _ranks
from llm_council.bias_audit.report.model import BiasReport

#: ids that try to inject markup, flip text direction, forge lines or overflow the layout
HOSTILE_REVIEWERS = (
    '<script>alert("r")</script>',
    "admin\u202egnp.exe",
    '"><img src=x onerror=alert(1)>',
    "w" * 300,
)
HOSTILE_MODELS = ("<b>bold</b>&amp;", "\u2067rtl\u2069 model", "m" * 250)


@pytest.fixture(scope="module")
def biased_report(biased_store: Path) -> BiasReport:
    return build_report(biased_store, n_resamples=20)


def _council_findings(report: BiasReport) -> int:
    """The council position family's findings: from 4 slots on it tests the edges and all
    slots (ADR 0076), so one flagged council can give two; it gives one at least exactly
    when the council's position verdict is flagged."""
    assert report.position is not None
    found = sum(h.finding for h in report.hypotheses if h.family == "council position")
    assert (found >= 1) == bool(report.position.council.flagged)
    return found


def _bias_counts(report: BiasReport) -> dict[str, int]:
    """How many flags each estimator raised, read straight from the report's fields."""
    position = report.position
    assert position is not None and report.families is not None
    favour = report.families.favouritism
    return {
        "leniency": sum(p.leniency_label in ("harsh", "generous") for p in report.profiles),
        "position": sum(p.flagged for p in position.per_reviewer) + _council_findings(report),
        "self-preference": sum(s.detected for s in report.self_preference)
        + (sum(c.flagged and c.is_self and not c.spillover for c in favour.cells) if favour else 0),
        "anchoring": sum(a.detected for a in report.families.anchoring),
    }


def test_findings_are_exactly_the_flags_the_estimators_raised(biased_report: BiasReport) -> None:
    findings = dashboard_findings(biased_report).findings
    # the header words the report's one list, in its order, and adds nothing
    assert [(f.subject, f.bias, f.family) for f in findings] == [
        (f.subject, f.bias, f.family) for f in biased_report.findings
    ]
    counts = _bias_counts(biased_report)
    for bias, expected in counts.items():
        got = sum(f.bias.startswith(bias) for f in findings)
        assert got == expected, bias
    subjects = {(f.subject, f.bias.split(":")[0]) for f in findings}
    # the default council's planted biases (config/simulated_members.toml)
    assert ("harsh", "leniency") in subjects
    assert ("primacy", "position") in subjects
    assert ("narcissist", "self-preference") in subjects
    harsh = next(f for f in findings if f.subject == "harsh" and f.bias.startswith("leniency"))
    assert harsh.bias == "leniency: harsh"
    profile = next(p for p in biased_report.profiles if p.reviewer == "harsh")
    # the size quotes the estimate and its interval to 2 decimals, the certainty the
    # report-wide adjusted p (named by its error rate) and the test's own p
    assert f"{profile.leniency.estimate:.2f} [{profile.leniency.ci_low:.2f}," in harsh.size
    assert "adjusted p" in harsh.certainty and "family-wise" in harsh.certainty


def test_findings_header_says_nothing_flagged_when_no_flag_is_set(
    biased_report: BiasReport,
) -> None:
    quiet = dataclasses.replace(
        biased_report,
        profiles=[dataclasses.replace(p, leniency_label="neutral") for p in biased_report.profiles],
        position=None,
        length=None,
        self_preference=[
            dataclasses.replace(s, detected=False) for s in biased_report.self_preference
        ],
        families=None,
        causal_checks=None,
        findings=[],
    )
    assert dashboard_findings(quiet).findings == []
    page = render_html(quiet)
    assert "No finding at the report&#x27;s error rate" in page
    assert 'id="findings-table"' not in page
    untested = page[page.index("Could not be tested here") :]
    assert "causal checks" in untested and "position" in untested and "length" in untested


def test_findings_table_rows_match_the_findings(biased_report: BiasReport) -> None:
    page = render_html(biased_report)
    table = re.search(r'<table class="grid-table" id="findings-table">.*?</table>', page, re.S)
    assert table is not None
    assert table.group(0).count("<tr>") == len(dashboard_findings(biased_report).findings) + 1
    assert "No finding at the report" not in page
    # the header's per-family counts add up to the rows, one chip per family
    findings = dashboard_findings(biased_report).findings
    chips = dict(re.findall(r'<span class="chip">([^<]+) <b>(\d+)</b></span>', page))
    assert {family: int(n) for family, n in chips.items()} == {
        family: sum(f.family == family for f in findings) for family in {f.family for f in findings}
    }


def test_untested_lists_missing_live_checks_and_short_drift(biased_report: BiasReport) -> None:
    untested = {u.bias: u.reason for u in dashboard_findings(biased_report).untested}
    assert biased_report.causal_checks is None
    assert "PROBABILITY is 0" in untested["causal checks"]
    # the fixture store spans under 3 weeks: every drift series is skipped, and said so
    assert untested["drift"].startswith("fewer than 3 weeks")


def test_one_card_per_reviewer_with_every_bias_row(biased_report: BiasReport) -> None:
    page = render_html(biased_report)
    cards = re.findall(r'<section class="card" id="card-\d+">.*?</section>', page, re.S)
    assert len(cards) == len(biased_report.profiles) == 5
    for card in cards:
        for row in ("Leniency", "Position", "Length r", "Verbosity", "Self-preference"):
            assert f"<th>{row}</th>" in card
        for row in ("Favouritism", "Repeat (live)", "Anchoring", "Drift"):
            assert f"<th>{row}</th>" in card
    harsh = next(card for card in cards if ">harsh</bdi>" in card)
    assert '<tr class="flagged"><th>Leniency</th>' in harsh
    balanced = next(card for card in cards if ">balanced</bdi>" in card)
    assert '<tr class="flagged"><th>Leniency</th>' not in balanced


def test_leaderboard_table_sets_the_three_views_side_by_side(biased_report: BiasReport) -> None:
    board = biased_report.leaderboard
    assert board is not None
    page = render_html(biased_report)
    table = re.search(r'id="leaderboard-table">.*?</table>', page, re.S)
    assert table is not None
    for header in ("raw mean score", "Bradley-Terry", "length-controlled", "adjusted mean"):
        assert header in table.group(0)
    body = table.group(0)[table.group(0).index("<tbody>") :]
    assert body.count("<tr><th>") == len(board.entries)
    for entry in board.entries:
        assert f"{entry.length_controlled.estimate:.2f} [" in table.group(0)


def test_ranks_hand_example() -> None:
    # 1 = largest; NaN unranked; the order of the input is kept
    assert _ranks([0.5, 2.0, float("nan"), -1.0]) == [2, 1, None, 3]


def test_family_sections_arrive_through_render_families(biased_report: BiasReport) -> None:
    from llm_council.bias_audit.report.render.render_families import families_html_sections

    assert biased_report.families is not None
    page = render_html(biased_report)
    for part in families_html_sections(biased_report.families):
        assert part in page


def _hostile_store(write_lines: Callable[[Sequence[str]], Path]) -> Path:
    table = {
        f"s{session}": {
            model: {
                reviewer: float(3 + (session * 7 + index * 3 + j) % 6)
                for index, reviewer in enumerate(HOSTILE_REVIEWERS)
            }
            for j, model in enumerate(HOSTILE_MODELS)
        }
        for session in range(8)
    }
    return write_lines(scores_to_lines(table))


def test_hostile_ids_stay_escaped_in_every_part(
    write_lines: Callable[[Sequence[str]], Path],
) -> None:
    report = build_report(_hostile_store(write_lines), n_resamples=20)
    page = render_html(report)
    assert "<script" not in page.lower()
    assert "<img" not in page and "<b>bold" not in page
    assert re.findall(r"(?:src|href)=\"(?!#)", page) == []  # only in-page anchors
    assert not re.search("[\u202a-\u202e\u2066-\u2069]", page)
    assert "&lt;script&gt;alert(&quot;r&quot;)&lt;/script&gt;" in page
    assert "admin\\u202egnp.exe" in page  # the bidi override is shown, not obeyed
    assert "&lt;b&gt;bold&lt;/b&gt;&amp;amp;" in page
    # every untrusted id in running text is isolated in a <bdi> that may wrap anywhere
    assert page.count('<bdi class="id">' + "w" * 300 + "</bdi>") >= 1


def test_causal_checks_table_findings_and_repeat_rows(tmp_path: Path) -> None:
    from bias_audit.report.analyses.test_causal_checks import (
        CheckWorld,
        generate_check_lines,
        write_store,
    )

    world = CheckWorld(
        n_sessions=60, slot_effect={"r1": -0.6}, padding_effect={"r2": 1.0}, noise_sd=0.7
    )
    report = build_report(write_store(tmp_path / "s.jsonl", generate_check_lines(world, 0)))
    assert report.causal_checks is not None
    checks = {r.reviewer: r for r in report.causal_checks.reviewers}
    findings = dashboard_findings(report).findings
    causal = {(f.subject, f.bias) for f in findings if f.section == "section-causal"}
    # exactly the check estimates the report-wide procedure made findings
    expected = {
        (name, bias)
        for name, r in checks.items()
        for bias, estimate in (
            ("causal position (re-shuffle)", r.slot_effect),
            ("causal verbosity (padding)", r.padding_effect),
            ("self-recognition (identity)", r.identity_effect),
        )
        if estimate is not None and estimate.finding
    }
    assert causal == expected
    assert ("r1", "causal position (re-shuffle)") in causal
    assert ("r2", "causal verbosity (padding)") in causal
    page = render_html(report)
    table = re.search(r'id="causal-table">.*?</table>', page, re.S)
    assert table is not None
    body = table.group(0)[table.group(0).index("<tbody>") :]
    assert body.count("<tr><th>") == 3
    r1 = checks["r1"].slot_effect
    assert r1 is not None
    assert f'<td class="flagged">{r1.estimate:.2f} [{r1.ci_low:.2f}, {r1.ci_high:.2f}]' in body
    assert "not run (opt-in)" in body  # no identity checks in this world
    repeat = checks["r1"].repeat
    assert repeat is not None
    assert f"ICC {repeat.icc.estimate:.2f} [" in page  # in r1's card and the table


def test_drift_sparkline_in_each_card_and_a_detected_change_is_a_finding(
    tmp_path: Path,
) -> None:
    from datetime import UTC, datetime, timedelta

    from llm_council.simulation.profile import SimulatedProfile
    from llm_council.simulation.simulated_records import write_record_store

    members = [
        ("drifter", SimulatedProfile(noise_sd=1.0, leniency_drift_per_week=0.6)),
        *((f"steady{i}", SimulatedProfile(noise_sd=1.0)) for i in range(3)),
    ]
    path = tmp_path / "drift.jsonl"
    write_record_store(
        path,
        members,
        240,
        seed=11,
        end_time=datetime(2026, 3, 1, tzinfo=UTC),
        session_spacing=timedelta(weeks=6) / 240,
    )
    report = build_report(path, n_resamples=10)
    assert report.families is not None and report.families.drift is not None
    series = {s.reviewer: s for s in report.families.drift.series if s.quantity == "leniency"}
    page = render_html(report)
    for index, profile in enumerate(report.profiles):
        spark = re.search(rf'<svg id="spark-{index}".*?</svg>', page, re.S)
        assert spark is not None
        weekly = series[profile.reviewer].weekly_mean
        assert spark.group(0).count('class="mark"') == len(weekly) >= 6
    assert series["drifter"].detected  # 0.6 points a week over six weeks
    drift_findings = [f for f in dashboard_findings(report).findings if f.bias.startswith("drift")]
    assert {(f.subject, f.bias) for f in drift_findings} == {
        (s.reviewer, f"drift of {s.quantity.replace('_', ' ')}")
        for s in report.families.drift.series
        if s.detected
    }
    drifter = series["drifter"]
    finding = next(f for f in drift_findings if f.subject == "drifter" and "leniency" in f.bias)
    change = drifter.weekly_mean[-1] - drifter.weekly_mean[0]
    assert finding.size.startswith(f"{change:.2f} last week's mean minus the first week's")
    index = next(i for i, p in enumerate(report.profiles) if p.reviewer == "drifter")
    drifter_card = page[page.index(f'<section class="card" id="card-{index}">') :]
    drifter_card = drifter_card[: drifter_card.index("</section>")]
    assert 'class="change"' in drifter_card  # the dashed rule at the detected change


def test_p_text_never_writes_an_equals_before_a_less_than() -> None:
    from llm_council.bias_audit.report.dashboard.dashboard_findings import p_text

    assert p_text(0.0131) == "p=0.013"
    assert p_text(3e-7) == "p<1e-4"
    assert p_text(float("nan")) == "p n/a"


def test_cards_come_most_flagged_first(biased_report: BiasReport) -> None:
    page = render_html(biased_report)
    cards = re.findall(r'<section class="card" id="card-\d+">.*?</section>', page, re.S)
    counts = [card.count('<tr class="flagged">') for card in cards]
    assert counts == sorted(counts, reverse=True) and counts[0] > 0
    for card, count in zip(cards, counts, strict=True):
        badge = f"{count} flagged</span>" if count else "nothing flagged</span>"
        assert badge in card


def test_a_negative_anchoring_flag_is_named_a_contrast_not_a_pull(
    biased_report: BiasReport,
) -> None:
    from llm_council.bias_audit.report.analyses.anchoring import ReviewerAnchoring
    from llm_council.bias_audit.report.analyses.families import BiasFamilies
    from llm_council.bias_audit.report.model import Interval
    from llm_council.bias_audit.report.report_verdicts import decide_findings

    def anchoring(name: str, r: float) -> ReviewerAnchoring:
        interval = Interval(r, r - 0.03, r + 0.03, 1e-4)
        return ReviewerAnchoring(name, 300, interval, interval, 0.001, False)

    only_anchoring = dataclasses.replace(
        biased_report,
        profiles=[],
        position=None,
        length=None,
        self_preference=[],
        causal_checks=None,
        families=BiasFamilies(anchoring=[anchoring("a", 0.2), anchoring("b", -0.2)]),
    )
    found = dashboard_findings(decide_findings(only_anchoring)).findings
    assert [(f.subject, f.bias, f.family) for f in found] == [
        ("a", "anchoring", "anchoring"),
        ("b", "anchoring: contrast (pushed away)", "anchoring"),
    ]
