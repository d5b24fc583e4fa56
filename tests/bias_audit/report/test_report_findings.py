"""The report's findings: one procedure over every tested hypothesis, written back everywhere.

The adjusted p-values are recomputed here from the listed raw p-values (the procedure's own
reference values are in tests/stats/inference/test_report_multiplicity.py); the section verdicts,
the JSON, CSV and text must all say what the one list says.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import json
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import false_discovery_control

from generators.independent_council import CouncilSpec, generate_sessions, write_store
from generators.rank_council import RankCouncilSpec
from generators.rank_council import generate_sessions as rank_sessions
from generators.rank_council import write_store as write_rank_store
from llm_council.bias_audit.report import build_report, render_csv, render_json, render_text
from llm_council.bias_audit.report.finding import FAMILIES, FAMILY_WEIGHTS
from llm_council.bias_audit.report.model import BiasReport
from llm_council.bias_audit.report.report_verdicts import decide_findings
from llm_council.errors import ConfigError
from llm_council.stats.inference.multiplicity import holm_adjusted

FINDING_KEYS = {
    "subject",
    "bias",
    "family",
    "estimate",
    "ci_low",
    "ci_high",
    "unit",
    "p_value",
    "p_adjusted",
    "rule",
    "section",
    "finding",
}


@pytest.fixture(scope="module")
def biased_report(biased_store: Path) -> BiasReport:
    return build_report(biased_store, n_resamples=20)


def _family_holm_by_hand(p: np.ndarray, families: list[str]) -> np.ndarray:
    """The closed test's shortcut written out as the ADRs say it (0054, weights 0060): at
    each step every remaining family's smallest p times its members left times (the summed
    weights of the families left / its own weight); the smallest product is rejected next,
    and adjusted p-values never decrease."""
    left = {i for i in range(p.size)}
    adjusted = np.zeros(p.size)
    running = 0.0
    while left:
        total = sum(FAMILY_WEIGHTS[name] for name in {families[i] for i in left})
        step = {
            i: p[i]
            * sum(families[j] == families[i] for j in left)
            * total
            / FAMILY_WEIGHTS[families[i]]
            for i in left
        }
        chosen = min(step, key=lambda i: (step[i], i))
        running = max(running, min(1.0, step[chosen]))
        adjusted[chosen] = running
        left.remove(chosen)
    return adjusted


def test_every_finding_comes_from_the_one_procedure(biased_report: BiasReport) -> None:
    tested = biased_report.hypotheses
    assert biased_report.error_rate == "fwer"
    assert len(tested) > 40 and {t.family for t in tested} <= set(FAMILIES)
    p = np.array([t.p_value for t in tested])
    assert np.all((p >= 0) & (p <= 1))
    expected = _family_holm_by_hand(p, [t.family for t in tested])
    assert [t.p_adjusted for t in tested] == pytest.approx(expected)
    alpha = biased_report.significance_level
    for item in tested:
        if item.finding:
            assert item.p_adjusted < alpha and item.rule.startswith("finding")
        else:
            assert item.rule.startswith("not a finding")
    assert biased_report.findings == [t for t in tested if t.finding]
    # the default council's planted biases (config/simulated_members.toml)
    named = {(f.subject, f.family) for f in biased_report.findings}
    assert {("harsh", "leniency"), ("primacy", "position"), ("narcissist", "self-preference")} <= (
        named
    )
    method = biased_report.error_rate_method
    assert f"over {len(tested)} tests in {len({t.family for t in tested})} families" in method


def test_the_sections_say_what_the_list_says(biased_report: BiasReport) -> None:
    found = {(f.family, f.subject, f.bias) for f in biased_report.findings}
    for profile in biased_report.profiles:
        labelled = profile.leniency_label in ("harsh", "generous")
        assert labelled == (
            ("leniency", profile.reviewer, f"leniency: {profile.leniency_label}") in found
        )
    position = biased_report.position
    assert position is not None
    assert position.council.flagged == any(f[0] == "council position" for f in found)
    for slot in position.per_reviewer:
        assert slot.flagged == any(f[:2] == ("position", slot.subject) for f in found)
        if not slot.flagged and slot.identified:
            assert slot.direction == "none detected"
    for item in biased_report.self_preference:
        assert item.detected == (("self-preference", item.reviewer, "self-preference") in found)
    families = biased_report.families
    assert families is not None and families.favouritism is not None
    cells = {(f[1], f[2]) for f in found if f[0] == "favouritism"}
    for cell in families.favouritism.cells:
        kind = (
            "self-preference (favouritism matrix)"
            if cell.is_self
            else f"{'favours' if cell.effect.estimate > 0 else 'disfavours'} {cell.model}"
        )
        assert (cell.flagged and not cell.spillover) == ((cell.reviewer, kind) in cells)
    for anchoring in families.anchoring:
        assert anchoring.detected == any(f[:2] == ("anchoring", anchoring.reviewer) for f in found)


def test_the_false_discovery_rate_is_benjamini_yekutieli(biased_report: BiasReport) -> None:
    fdr = decide_findings(biased_report, "fdr")
    p = np.array([t.p_value for t in fdr.hypotheses])
    assert [t.p_adjusted for t in fdr.hypotheses] == pytest.approx(
        false_discovery_control(p, method="by")
    )
    assert fdr.error_rate == "fdr" and "Benjamini-Yekutieli" in fdr.error_rate_method
    assert fdr.findings == [t for t in fdr.hypotheses if t.finding]
    # deciding again from a decided report changes nothing (the p-values are the sections')
    assert decide_findings(fdr, "fwer").findings == biased_report.findings


def test_one_family_alone_is_holm_within_it(biased_report: BiasReport) -> None:
    """With every other section emptied the procedure is Holm over the one family."""
    families = biased_report.families
    assert families is not None
    only = decide_findings(
        dataclasses.replace(
            biased_report,
            profiles=[],
            position=None,
            length=None,
            self_preference=[],
            causal_checks=None,
            families=dataclasses.replace(
                families,
                favouritism=None,
                amplification=None,
                style_mimicry=None,
                reasoning=[],
                drift=None,
            ),
        )
    )
    raw = [t.p_value for t in only.hypotheses]
    assert {t.family for t in only.hypotheses} == {"anchoring"}
    assert [t.p_adjusted for t in only.hypotheses] == pytest.approx(holm_adjusted(raw))


def test_json_csv_and_text_carry_the_list(biased_report: BiasReport) -> None:
    document = json.loads(render_json(biased_report))
    assert document["error_rate"] == "fwer"
    assert len(document["findings"]) == len(biased_report.findings) > 0
    assert all(set(item) == FINDING_KEYS for item in document["hypotheses"])
    rows = list(csv.reader(io.StringIO(render_csv(biased_report))))
    finding_rows = [row for row in rows if row[0] == "finding" and "|p_adjusted" not in row[2]]
    assert len(finding_rows) == len(biased_report.findings)
    adjusted_rows = [row for row in rows if row[2].endswith("|p_adjusted")]
    assert len(adjusted_rows) == len(biased_report.hypotheses)
    text = render_text(biased_report)
    header = text[text.index("=== Findings") : text.index("=== Reviewer Profiles")]
    assert header.count("\n  ") == len(biased_report.findings) + 1
    assert "harsh: leniency: harsh:" in header


def test_no_finding_is_said_in_words(null_store: Path) -> None:
    report = build_report(null_store, n_resamples=20)
    if report.findings:  # a 5% event on this seed would make the test meaningless
        pytest.fail(f"unexpected findings on the null store: {report.findings}")
    assert "No finding at the report's error rate." in render_text(report)
    assert json.loads(render_json(report))["findings"] == []


@pytest.mark.parametrize("n_members", [3, 9])
def test_integer_scores_ties_and_missing_cells(tmp_path: Path, n_members: int) -> None:
    """The second generator (integer clipped scores, missing cells, shared orders)."""
    path = tmp_path / "s.jsonl"
    spec = CouncilSpec(
        n_members=n_members, missing_score_rate=0.1, missing_review_rate=0.1, shared_order=True
    )
    write_store(path, generate_sessions(spec, 12, seed=3))
    report = build_report(path, n_resamples=20)
    p = np.array([t.p_adjusted for t in report.hypotheses])
    assert p.size and np.all(np.isfinite(p)) and np.all((p >= 0) & (p <= 1))
    assert all(t.p_adjusted >= t.p_value for t in report.hypotheses)


def test_degenerate_judges_give_no_test_and_no_crash(tmp_path: Path) -> None:
    """A judge that always gives the same score, and one that always ranks A first."""
    from .conftest import scores_to_lines

    table = {
        f"s{s}": {m: {"flat": 5.0, "other": float((s + i) % 7 + 2)} for i, m in enumerate("abc")}
        for s in range(8)
    }
    path = tmp_path / "flat.jsonl"
    path.write_text("".join(scores_to_lines(table)), encoding="utf-8")
    report = build_report(path, n_resamples=20)
    assert all(np.isfinite(t.p_value) for t in report.hypotheses)
    ranked = tmp_path / "first.jsonl"
    spec = RankCouncilSpec(n_members=4, order="reviewer", judges=["first"] + ["honest"] * 3)
    write_rank_store(ranked, rank_sessions(spec, 30, seed=2))
    always_a = build_report(ranked, n_resamples=20)
    assert any(f.family == "position" and f.subject == "vendor/model-0" for f in always_a.findings)


def test_an_unknown_error_rate_is_one_clear_error(
    biased_store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from llm_council.cli.app import _run, app

    with pytest.raises(ConfigError, match="unknown error rate 'bonferroni'"):
        build_report(biased_store, error_rate="bonferroni")
    with pytest.raises(ValueError, match="unknown error rate 'x'"):
        decide_findings(build_report(biased_store, n_resamples=20), "x")
    args = ["bias-report", "--store", str(biased_store), "--bootstrap", "20"]
    assert _run([*args, "--error-rate", "bonferroni"], "llm-council", app) == 2
    assert "--error-rate" in capsys.readouterr().err
    assert _run([*args, "--error-rate", "fdr", "--format", "json"], "llm-council", app) == 0
    assert json.loads(capsys.readouterr().out)["error_rate"] == "fdr"


def test_self_preference_p_agrees_with_its_interval(biased_report: BiasReport) -> None:
    """The added p is the two-sided t test behind the interval: p < 5% iff it excludes 0."""
    tested = [s for s in biased_report.self_preference if np.isfinite(s.adjusted.p_value)]
    assert len(tested) == 5
    for item in tested:
        assert (item.adjusted.p_value < 0.05) == item.adjusted.excludes_zero()


def test_spillover_and_blocs_are_recomputed_over_the_findings(biased_report: BiasReport) -> None:
    """3 x 3 complete table: a +2 favour leaves -2/(k-1) = -1 on its row (the spill-over
    weights of a complete k x k table: -1/(k-1) on the row and column, 1/(k-1)^2 elsewhere)."""
    from llm_council.bias_audit.report.analyses.families import BiasFamilies
    from llm_council.bias_audit.report.analyses.favouritism import Favouritism, FavouritismCell
    from llm_council.bias_audit.report.model import Interval

    def cell(r: str, m: str, estimate: float, p: float, own: bool = False) -> FavouritismCell:
        effect = Interval(estimate, estimate - 0.2, estimate + 0.2, p)
        # holm_p and flagged hold the per-family verdict, which the procedure overrides
        return FavouritismCell(r, m, own, effect, 50, 1.0, False)

    names = ["a", "b", "c"]
    cells = [cell(r, m, 0.0, 0.9, own=r == m) for r in names for m in names]
    at = {(c.reviewer, c.model): i for i, c in enumerate(cells)}
    cells[at["a", "b"]] = cell("a", "b", 2.0, 1e-9)  # the favour
    cells[at["a", "c"]] = cell("a", "c", -1.0, 1e-6)  # its spill-over on the row
    cells[at["b", "a"]] = cell("b", "a", 0.8, 1e-7)  # b favours a's model back: a bloc
    matrix = Favouritism(
        reviewers=names, models=names, cells=cells, design_pattern=[[True] * 3] * 3
    )
    report = decide_findings(
        dataclasses.replace(
            biased_report,
            profiles=[],
            position=None,
            length=None,
            self_preference=[],
            causal_checks=None,
            families=BiasFamilies(favouritism=matrix),
        )
    )
    assert [(f.subject, f.bias) for f in report.findings] == [
        ("a", "favours b"),
        ("b", "favours a"),
    ]
    spilled = next(h for h in report.hypotheses if (h.subject, h.bias) == ("a", "disfavours c"))
    assert not spilled.finding and "spill-over" in spilled.rule and spilled.p_adjusted < 0.05
    assert report.families is not None and report.families.favouritism is not None
    decided = {(c.reviewer, c.model): c for c in report.families.favouritism.cells}
    assert decided["a", "c"].flagged and decided["a", "c"].spillover
    assert decided["a", "b"].flagged and not decided["a", "b"].spillover
    assert report.families.favouritism.mutual_blocs == [["a", "b"]]


def test_untestable_anchoring_is_said_so(tmp_path: Path) -> None:
    """Rank points: anchoring not identified, listed under "could not be tested here"."""
    from llm_council.bias_audit.report.dashboard.dashboard_findings import dashboard_findings

    path = tmp_path / "ranks.jsonl"
    write_rank_store(path, rank_sessions(RankCouncilSpec(n_members=4, order="fixed"), 12, 1))
    report = build_report(path, n_resamples=20)
    assert report.families is not None
    assert all(not a.identified for a in report.families.anchoring)
    assert not any(h.family == "anchoring" for h in report.hypotheses)
    untested = {u.bias: u.reason for u in dashboard_findings(report).untested}
    assert untested["anchoring"].startswith("not identified")


def test_self_preference_enters_one_sided() -> None:
    """The report-wide self-preference hypothesis is H0: bonus <= 0 (ADR 0060), its p the
    upper tail of the section's t test: scipy's t.sf(t, df) for either sign of t."""
    from scipy.stats import t as student_t

    from llm_council.bias_audit.report.hypotheses import upper_one_sided_p

    for statistic in (2.1, -2.1, 0.3, 4.5):
        two_sided = 2 * student_t.sf(abs(statistic), 29)
        assert upper_one_sided_p(two_sided, statistic * 0.25) == pytest.approx(
            student_t.sf(statistic, 29)
        )
    assert np.isnan(upper_one_sided_p(float("nan"), 1.0))
    assert np.isnan(upper_one_sided_p(0.01, float("inf")))


def test_a_reviewer_harder_on_its_own_answer_is_no_finding(biased_report: BiasReport) -> None:
    """Every self-preference hypothesis carries the one-sided p of its section's estimate."""
    from llm_council.bias_audit.report.hypotheses import upper_one_sided_p

    listed = {t.subject: t for t in biased_report.hypotheses if t.family == "self-preference"}
    assert listed
    for item in biased_report.self_preference:
        if item.reviewer in listed:
            expected = upper_one_sided_p(item.adjusted.p_value, item.adjusted.estimate)
            assert listed[item.reviewer].p_value == pytest.approx(expected)
            if item.adjusted.estimate <= 0:
                assert listed[item.reviewer].p_value >= 0.5
                assert not listed[item.reviewer].finding


def test_every_family_has_a_fixed_positive_weight() -> None:
    """ADR 0060: each family named, none at zero (a zero-weight family could never be
    tested while another family is left), no exploratory family above a primary one."""
    from llm_council.bias_audit.report.finding import PRIMARY_FAMILIES

    assert set(FAMILY_WEIGHTS) == set(FAMILIES)
    assert all(weight > 0 for weight in FAMILY_WEIGHTS.values())
    exploratory = set(FAMILIES) - set(PRIMARY_FAMILIES)
    assert max(FAMILY_WEIGHTS[f] for f in exploratory) < min(
        FAMILY_WEIGHTS[f] for f in PRIMARY_FAMILIES
    )


def test_the_weights_move_the_level_to_the_primary_families() -> None:
    """Hand check on a 5-member, 30-session report's families (leniency 5, council position
    1, position 5, length 1, self-preference 5, anchoring 5, favouritism 25, amplification
    1): weights 1 + 7 + 1 + 7 + 7 + 3 x 1/4 = 23.75, so the lone council-position p enters
    at alpha x 7 / 23.75 = 0.0147 (0.05 / 8 = 0.00625 with equal shares), each
    self-preference p at 0.0147 / 5 and each favouritism cell at 0.05 x 0.25 / 23.75 / 25."""
    families = (
        ["leniency"] * 5
        + ["council position"]
        + ["position"] * 5
        + ["length"]
        + ["self-preference"] * 5
        + ["anchoring"] * 5
        + ["favouritism"] * 25
        + ["amplification"]
    )
    from llm_council.bias_audit.report.finding import Finding
    from llm_council.bias_audit.report.hypotheses import Hypothesis
    from llm_council.bias_audit.report.report_verdicts import adjusted_p_values

    def adjusted(p: np.ndarray) -> np.ndarray:
        nan = float("nan")
        listed = [
            Hypothesis(Finding("x", "b", f, nan, nan, nan, "", float(q), nan, "", ""), ("t", i))
            for i, (f, q) in enumerate(zip(families, p, strict=True))
        ]
        return adjusted_p_values(listed, "fwer")

    p = np.full(len(families), 0.9)
    p[5] = 0.014  # the council position test
    assert adjusted(p)[5] == pytest.approx(0.014 * 23.75 / 7)
    assert adjusted(p)[5] < 0.05 <= 0.014 * 8  # a finding now, none with equal shares
    p[5] = 0.016
    assert adjusted(p)[5] == pytest.approx(0.016 * 23.75 / 7) and adjusted(p)[5] > 0.05
    p[5], p[30] = 0.9, 0.05 * 0.25 / 23.75 / 25 * 0.99  # one favouritism cell just inside
    assert adjusted(p)[30] < 0.05


@pytest.mark.parametrize("verbosity", [1.5, -1.5])
def test_length_enters_one_sided(tmp_path: Path, verbosity: float) -> None:
    """ADR 0072: the length hypothesis is verbosity, H0 "longer answers score no higher",
    its p the upper tail of the section's pooled t test (p/2 for a positive estimate,
    1 - p/2 otherwise). A council that scores shorter answers higher is shown in the length
    section with its own two-sided p and is never a finding."""
    from llm_council.bias_audit.report.hypotheses import LENGTH_BIAS

    path = tmp_path / "length.jsonl"
    spec = CouncilSpec(n_members=4, verbosity=[verbosity] * 4)
    write_store(path, generate_sessions(spec, 30, seed=11))
    report = build_report(path, n_resamples=20)
    assert report.length is not None
    pooled = report.length.pooled
    assert pooled.p_value < 1e-3 and np.sign(pooled.estimate) == np.sign(verbosity)
    (length,) = [t for t in report.hypotheses if t.family == "length"]
    assert length.bias == LENGTH_BIAS
    if verbosity > 0:
        assert length.p_value == pytest.approx(pooled.p_value / 2)
        assert length.finding
    else:
        assert length.p_value == pytest.approx(1 - pooled.p_value / 2)
        assert length.p_value > 0.99 and not length.finding
        assert not any(f.family == "length" for f in report.findings)
