"""Reviewer history that stays valid when judges change (ADR 0051): the drift check, the
capped prior df, and the audited session left out of its own history."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import numpy as np
import pytest

from golden_compare import golden_differences
from llm_council.bias_audit import run_bias_audit
from llm_council.bias_audit.records.jsonl_store import append_records
from llm_council.bias_audit.records.reviewer_profiles import (
    Profiles,
    load_profiles,
    merge_profiles,
    records_profiles,
    session_profiles,
)
from llm_council.bias_audit.records.schema import ReviewRecord
from llm_council.bias_audit.session.audit import audit_score_table
from llm_council.bias_audit.session.history_exclusion import (
    history_without_session,
    profiles_without,
    stored_session_profiles,
)
from llm_council.bias_audit.session.moderated_noise import moderated_noise
from llm_council.bias_audit.session.score_table import ScoreTable, score_table_from_mappings
from llm_council.bias_audit.session.thresholds import AuditThresholds
from llm_council.errors import InputError
from llm_council.stats.design.design_cache import fit_additive_two_way_cached

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from generators.independent_council import (  # noqa: E402
    CouncilSpec,
    GeneratedSession,
    generate_session,
    generate_sessions,
)

SDS = [0.5, 0.75, 1.0, 1.25, 1.5]
NO_CHECK = AuditThresholds(
    noise_drift_level=0.0, noise_drift_council_level=0.0, history_prior_df_max=float("inf")
)


def _table(session: GeneratedSession) -> ScoreTable:
    return score_table_from_mappings(
        session.stage1_responses, session.stage2_scores, session.position_mapping
    )


def _cells(table: ScoreTable) -> list:  # type: ignore[type-arg]
    rows, columns = np.nonzero(~np.isnan(table.scores) & ~table.is_self)
    return [
        (
            table.reviewers[r],
            table.candidates[c],
            float(table.scores[r, c]),
            int(table.positions[r, c]),
        )
        for r, c in zip(rows.tolist(), columns.tolist(), strict=True)
    ]


def _history(spec: CouncilSpec, n_sessions: int, rng: np.random.Generator) -> Profiles:
    profiles: Profiles = {}
    for _ in range(n_sessions):
        profiles = merge_profiles(
            profiles, session_profiles(_cells(_table(generate_session(spec, rng))))
        )
    return profiles


def test_a_judge_whose_noise_moved_gets_the_default_prior_and_a_note() -> None:
    rng = np.random.default_rng(3)
    history = _history(CouncilSpec(n_members=5, noise_sds=SDS), 30, rng)
    louder = CouncilSpec(n_members=5, noise_sds=[4.0] + SDS[1:])  # 0.5 -> 4 points
    moved = 0
    for _ in range(20):
        table = _table(generate_session(louder, rng))
        audit = audit_score_table(table, AuditThresholds(), history=history)
        note = audit.indicator_only["reviewers"]
        if "'judge-0': residual variance" in note:
            moved += 1
            assert "from default" in note and "ADR 0051" in note
        unchecked = audit_score_table(table, NO_CHECK, history=history)
        assert "5 from history" in unchecked.indicator_only["reviewers"]
        assert "ADR 0051" not in unchecked.indicator_only["reviewers"]
    # variance 64 times the history's: the F test with ~2 session df finds it nearly always
    assert moved >= 17


def test_a_council_wide_rise_moves_every_reviewer_and_says_so() -> None:
    # ADR 0059 (an option, off by default): every judge twice as noisy as its history (a
    # new prompt or rubric). Each judge's own 2-4 session df see it often; their sum at 7
    # members (29 df) sees it alone too: with the per-reviewer screen off, the council
    # test moves all
    sds = np.linspace(0.5, 1.5, 7).tolist()
    rng = np.random.default_rng(21)
    history = _history(CouncilSpec(n_members=7, noise_sds=sds), 30, rng)
    louder = CouncilSpec(n_members=7, noise_sds=[2.0 * sd for sd in sds])
    council_only = AuditThresholds(noise_drift_level=0.0, noise_drift_council_level=0.2)
    both = AuditThresholds(noise_drift_council_level=0.2)
    council_moves = 0
    for index in range(20):
        table = _table(generate_session(louder, rng))
        fit = fit_additive_two_way_cached(np.where(table.is_self, np.nan, table.scores))
        assert fit is not None
        screened = moderated_noise(fit, list(table.reviewers), both, history)
        assert screened is not None
        # the council test runs on the reviewers the step-down kept, and moves them all
        if screened.council_moved is not None:
            assert screened.sources == ["default"] * 7 and len(screened.moved) < 7
        else:
            kept = [i for i, name in enumerate(table.reviewers) if name not in screened.moved]
            assert all(screened.sources[i] == "history" for i in kept)
        noise = moderated_noise(fit, list(table.reviewers), council_only, history)
        assert noise is not None and not noise.moved
        if noise.council_moved is None:
            continue
        council_moves += 1
        ratio, p_value = noise.council_moved
        assert ratio > 1.0 and p_value < council_only.noise_drift_council_level
        assert noise.sources == ["default"] * 7
        if index < 3:
            audit = audit_score_table(table, council_only, history=history)
            note = audit.indicator_only["reviewers"]
            assert "7 from default" in note and "together, is unlike their histories" in note
    # the council test alone fires in nearly every session
    assert council_moves >= 17
    # the checks off: every judge keeps its history
    off = AuditThresholds(noise_drift_level=0.0, noise_drift_council_level=0.0)
    table = _table(generate_session(louder, rng))
    note = audit_score_table(table, off, history=history).indicator_only["reviewers"]
    assert "7 from history" in note


def test_the_moved_judge_is_moderated_toward_the_default_and_the_others_keep_history() -> None:
    rng = np.random.default_rng(5)
    history = _history(CouncilSpec(n_members=5, noise_sds=SDS), 30, rng)
    louder = CouncilSpec(n_members=5, noise_sds=[4.0] + SDS[1:])
    thresholds = AuditThresholds()
    for _ in range(20):
        table = _table(generate_session(louder, rng))
        fit = fit_additive_two_way_cached(np.where(table.is_self, np.nan, table.scores))
        assert fit is not None
        noise = moderated_noise(fit, list(table.reviewers), thresholds, history)
        assert noise is not None
        if "judge-0" not in noise.moved:
            continue
        ratio, p_value = noise.moved["judge-0"]
        assert ratio > 1.0 and p_value < thresholds.noise_drift_level
        assert noise.sources[0] == "default" and noise.dfs[0] == thresholds.prior_noise_df
        kept = [i for i, name in enumerate(table.reviewers) if name not in noise.moved]
        assert all(noise.sources[i] == "history" for i in kept)
        # the history counts for at most history_prior_df_max df (30 sessions hold ~66)
        assert all(noise.dfs[i] == thresholds.history_prior_df_max for i in kept)
        return
    pytest.fail("judge-0's noise went 0.5 -> 4 points and was never found to have moved")


def test_with_a_moved_judge_the_slot_test_still_uses_the_history() -> None:
    rng = np.random.default_rng(11)
    history = _history(CouncilSpec(n_members=5, noise_sds=SDS), 30, rng)
    louder = CouncilSpec(n_members=5, noise_sds=[4.0] + SDS[1:])
    for _ in range(20):
        audit = audit_score_table(
            _table(generate_session(louder, rng)), AuditThresholds(), history=history
        )
        if "'judge-0': residual variance" in audit.indicator_only["reviewers"]:
            assert "weighted Wald test" in audit.indicator_only["position"]
            return
    pytest.fail("judge-0 never found to have moved")


@pytest.mark.parametrize("n_members", [3, 9])
def test_integer_ties_missing_cells_and_a_constant_judge_keep_finite_results(
    n_members: int,
) -> None:
    rng = np.random.default_rng(n_members)
    spec = CouncilSpec(n_members=n_members, noise_sds=np.linspace(0.5, 1.5, n_members).tolist(),
                       missing_score_rate=0.15)  # fmt: skip
    history = _history(spec, 30, rng)
    for _ in range(10):
        session = generate_session(spec, rng)
        scores = {name: dict(row) for name, row in session.stage2_scores.items()}
        scores["judge-0"] = {name: 7.0 for name in scores["judge-0"]}  # always the same score
        audit = run_bias_audit(
            session.stage1_responses, scores, session.position_mapping, history=history
        )
        json.dumps(audit.model_dump(mode="json"), allow_nan=False)


# --- the audited session left out of its own history ------------------------------------


def _records(index: int) -> tuple[GeneratedSession, list[ReviewRecord]]:
    spec = CouncilSpec(n_members=4, noise_sds=[0.5, 0.8, 1.1, 1.5], missing_score_rate=0.1)
    session = generate_sessions(spec, 1, 40 + index)[0]
    return session, [
        ReviewRecord(**{**record, "session_id": f"s{index}", "schema_version": 2})
        for record in session.records()
    ]


def _close(left: Profiles, right: Profiles) -> None:
    assert left.keys() == right.keys()
    for name, profile in left.items():
        other = right[name]
        assert profile.sessions == other.sessions
        assert profile.residual_sum_of_squares == pytest.approx(
            other.residual_sum_of_squares, rel=1e-9
        )
        assert profile.residual_df == pytest.approx(other.residual_df, rel=1e-9)
        assert profile.expectation.keys() == other.expectation.keys()
        for key, value in profile.expectation.items():
            assert value == pytest.approx(other.expectation[key], rel=1e-9, abs=1e-12)
        assert (profile.slot_adjusted is None) == (other.slot_adjusted is None)


def test_a_stored_session_is_left_out_of_the_history_it_is_audited_with(tmp_path: Path) -> None:
    store, without = tmp_path / "records.jsonl", tmp_path / "without.jsonl"
    sessions = [_records(index) for index in range(12)]
    for index, (_, records) in enumerate(sessions):
        append_records(store, records)
        if index != 7:
            append_records(without, records)
    audited, records = sessions[7]
    # the session's stored lines give exactly what the store summed for it
    _close(
        stored_session_profiles(store, "s7"), records_profiles([r.model_dump() for r in records])
    )
    left = history_without_session(store, "s7")
    _close(left, load_profiles(without))
    # the audit with session_id is the audit with the history that never held it
    arguments = (audited.stage1_responses, audited.stage2_scores, audited.position_mapping)
    excluded = run_bias_audit(*arguments, history=store, session_id="s7")
    reference = run_bias_audit(*arguments, history=load_profiles(without))
    counted_twice = run_bias_audit(*arguments, history=store)
    # the store's sums less the session's, against the other sessions summed directly: the
    # same numbers up to the last bits of the subtraction (one ulp with OpenBLAS's Haswell
    # kernels), every flag, name and count equal
    assert golden_differences(reference.model_dump(), excluded.model_dump(), "", 1e-12) == []
    assert golden_differences(reference.model_dump(), counted_twice.model_dump(), "", 1e-12)
    # an id the store does not hold leaves the history as it is
    _close(history_without_session(store, "s99"), load_profiles(store))


def test_a_reviewer_seen_only_in_the_audited_session_leaves_the_history(tmp_path: Path) -> None:
    store = tmp_path / "records.jsonl"
    _, first = _records(0)
    _, second = _records(1)
    renamed = [record.model_copy(update={"reviewer_id": "only-once"}) if record.reviewer_id == "judge-3" else record
               for record in second]  # fmt: skip
    append_records(store, first)
    append_records(store, renamed)
    left = history_without_session(store, "s1")
    assert "only-once" not in left
    _close(left, records_profiles([r.model_dump() for r in first]))


def test_a_torn_last_line_and_hostile_ids_are_handled(tmp_path: Path) -> None:
    store = tmp_path / "records.jsonl"
    for index in range(3):
        append_records(store, _records(index)[1])
    profiles = load_profiles(store)
    with store.open("ab") as handle:  # a crash mid-write: no newline
        handle.write(b'{"session_id": "s2", "reviewer_id": "judge-0"')
    for hostile in ['s"2', "s2\n", "s\\u00322", "' OR 1=1 --", "s2" * 500]:
        assert stored_session_profiles(store, hostile) == {}
    _close(
        stored_session_profiles(store, "s2"),
        records_profiles([r.model_dump() for r in _records(2)[1]]),
    )
    assert profiles_without(profiles, {}) == profiles


def test_session_id_needs_a_store(tmp_path: Path) -> None:
    from llm_council.errors import RecordError

    session, records = _records(0)
    arguments = (session.stage1_responses, session.stage2_scores)
    profiles = records_profiles([r.model_dump() for r in records])
    with pytest.raises(InputError, match="needs history as a store path or URL"):
        run_bias_audit(*arguments, history=profiles, session_id="s0")
    with pytest.raises(InputError, match="non-empty string"):
        run_bias_audit(*arguments, history=tmp_path / "r.jsonl", session_id="")
    # a PostgreSQL store is looked up (tests/bias_audit/session/test_postgres_history.py); one that
    # cannot be reached is a one-line RecordError without the password
    with pytest.raises(RecordError) as raised:
        run_bias_audit(*arguments, history="postgresql://u:secret@127.0.0.1:9/db", session_id="s0")
    assert "secret" not in str(raised.value) and "\n" not in str(raised.value)
    # a history path that is not a store is refused (issue 37 A.11: it used to mean "no
    # history" silently), with or without a session to leave out; no history at all is fine
    with pytest.raises(InputError, match="history store does not exist"):
        run_bias_audit(*arguments, history=tmp_path / "missing.jsonl", session_id="s0")
    run_bias_audit(*arguments, session_id="s0")


def test_the_middleware_reads_history_before_appending_its_session(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A real council with the audit on, three sessions into a fresh store: the first is
    audited with no history (its own records are not in it yet), each later one with the
    sessions before it; after each, the store holds one more. Never counted twice."""
    from llm_council.config import CouncilConfig, CouncilMember
    from llm_council.council import run_full_council

    store = tmp_path / "records.jsonl"
    monkeypatch.setenv("LLM_COUNCIL_BIAS_STORE", str(store))
    monkeypatch.setenv("LLM_COUNCIL_BIAS_AUDIT", "true")
    config = CouncilConfig(
        members=tuple(CouncilMember(name=f"m{i}", spec="simulated:unbiased") for i in range(5)),
        chairman=CouncilMember(name="chair", spec="simulated:unbiased"),
    )
    notes = []
    for count in (1, 2, 3):
        result = asyncio.run(run_full_council("q", config=config, seed=count))
        notes.append(result.metadata["bias_audit"]["indicator_only"]["reviewers"])
        assert {profile.sessions for profile in load_profiles(store).values()} == {count}
    assert "(Smyth 2004; 5 from default:" in notes[0]
    # each later session met its reviewers' history: used, or checked and set aside by the
    # noise screen (one or two sessions of history hold a few df, ADR 0059), never absent
    for note in notes[1:]:
        assert (
            "from history" in note
            or "unlike its history" in note
            or "unlike their histories" in note
        ), note


# --- the benchmark's mechanics (its numbers: benchmarks/history_drift.py, ADR 0051) ------


def _benchmark():  # type: ignore[no-untyped-def]
    import importlib.util

    path = Path(__file__).resolve().parents[3] / "benchmarks" / "history_drift.py"
    spec = importlib.util.spec_from_file_location("history_drift_benchmark", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_the_benchmark_draws_the_scenarios_it_names_and_counts_flags_per_family() -> None:
    bench = _benchmark()
    sds = bench.history_sds(5)
    assert sds == [0.5, 0.75, 1.0, 1.25, 1.5]
    assert bench.SCENARIOS["one judge 0.5 -> 2.0"](sds) == [2.0, 0.75, 1.0, 1.25, 1.5]
    assert bench.SCENARIOS["all x4/3"](sds)[4] == pytest.approx(2.0)
    assert bench.SCENARIOS["reversed"](sds) == sds[::-1]
    # before: ADR 0045/0047 exactly (no cap, no check); after: the shipped defaults
    assert bench.BEFORE.noise_drift_level == 0.0 and bench.BEFORE.history_prior_df_max == float(
        "inf"
    )
    assert AuditThresholds() == bench.AFTER
    assert bench.ceiling(1000) == pytest.approx(0.05 + 2 * (0.05 * 0.95 / 1000) ** 0.5)
    for generator in bench.GENERATORS.values():
        results = bench.audits(
            generator(sds), generator([4.0] + sds[1:]), bench.MODES, 6, 1, n_history=4,
            history_pool=2,
        )  # fmt: skip
        for audits in results.values():
            rates = bench.null_rates(audits)
            assert set(rates.families) == {"leniency", "self-pref", "position"}
            # any flag is the union of the families: at least the largest, at most the sum
            assert rates.largest_family[1] <= rates.any_flag <= sum(rates.families.values())
            for audit in audits:
                assert bool(audit.risk_flags) == any(f(audit) for f in bench.FAMILIES.values())


@pytest.mark.parametrize("bad", [float("inf"), float("nan"), 1e308, -5.0])
def test_a_non_finite_or_absurd_history_given_directly_neither_overflows_nor_is_trusted(
    bad: float,
) -> None:
    import warnings

    from llm_council.bias_audit.records.reviewer_profiles import ReviewerProfile

    texts = {f"j{i}": "w " * 20 for i in range(4)}
    scores = {
        f"j{r}": {f"j{c}": float((r * 3 + c * 5) % 7 + 2) for c in range(4)} for r in range(4)
    }
    history = {
        f"j{i}": ReviewerProfile(30, bad if i == 0 else 30.0, 60.0, {f"j{i}": 60.0})
        for i in range(4)
    }
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no overflow on the way
        audit = run_bias_audit(texts, scores, history=history)
    note = audit.indicator_only["reviewers"]
    # j0's history is not used: left out (not finite) or found to be unlike the session
    assert "4 from history" not in note
    json.dumps(audit.model_dump(mode="json"), allow_nan=False)


# --- a moved judge moderated toward its own session estimate (ADR 0070) ---------------

OWN_ESTIMATE = AuditThresholds(noise_drift_replacement="session-estimate")


def test_a_moved_judge_takes_its_own_session_noise_at_least_its_historys() -> None:
    rng = np.random.default_rng(5)
    history = _history(CouncilSpec(n_members=5, noise_sds=SDS), 30, rng)
    louder = CouncilSpec(n_members=5, noise_sds=[4.0] + SDS[1:])  # variance 0.25 -> 16
    found = wald = 0
    for _ in range(20):
        table = _table(generate_session(louder, rng))
        fit = fit_additive_two_way_cached(np.where(table.is_self, np.nan, table.scores))
        assert fit is not None
        noise = moderated_noise(fit, list(table.reviewers), OWN_ESTIMATE, history)
        assert noise is not None and noise.screen_dfs is not None
        if "judge-0" not in noise.moved:
            continue
        found += 1
        assert noise.sources[0] == "session"
        # the prior is on the screen's session df (about 3 at 5 members), not 10 (the
        # screen's last step re-weights the neighbours, which moves its df a little)
        assert noise.dfs[0] == pytest.approx(noise.screen_dfs[0], rel=0.05)
        assert 1.0 < noise.dfs[0] < 4.0
        # at least the history's variance (0.25), and here far above it
        assert noise.variances[0] > 1.0
        kept = [i for i, name in enumerate(table.reviewers) if name not in noise.moved]
        assert all(noise.sources[i] == "history" for i in kept)
        audit = audit_score_table(table, OWN_ESTIMATE, history=history)
        note = audit.indicator_only["reviewers"]
        assert "from session" in note and "toward its own noise in this session" in note
        # the slot test keeps ADR 0059's screen: a moved reviewer there takes the default
        # prior and its 10 df, so F(k, smallest df) is not set by a 3-df session estimate
        position = audit.indicator_only.get("position", "")
        if "weighted Wald test" in position:
            denominator = int(position.split("weighted Wald test, F(4, ")[1].split(")")[0])
            assert denominator >= 10
            wald += 1
    assert found >= 15 and wald >= 5


def test_the_own_estimate_is_unbiased_across_sessions_where_rss_over_df_is_not() -> None:
    # the replacement's mean over sessions of a judge 0.5 -> 2.0 (variance 4) whose noise
    # was found to move sits near 4 (selected sessions: somewhat above); the residual
    # variance RSS_0 / d_0 of the same sessions sits well below it
    rng = np.random.default_rng(17)
    history = _history(CouncilSpec(n_members=5, noise_sds=SDS), 30, rng)
    louder = CouncilSpec(n_members=5, noise_sds=[2.0] + SDS[1:])
    replaced, residual = [], []
    for _ in range(60):
        table = _table(generate_session(louder, rng))
        fit = fit_additive_two_way_cached(np.where(table.is_self, np.nan, table.scores))
        assert fit is not None
        noise = moderated_noise(fit, list(table.reviewers), OWN_ESTIMATE, history)
        assert noise is not None
        if "judge-0" in noise.moved:
            replaced.append(noise.variances[0])
            residual.append(noise.noise.variances[0])
    assert len(replaced) >= 30
    assert 3.0 < float(np.mean(replaced)) < 8.0
    assert float(np.mean(residual)) < float(np.mean(replaced))


@pytest.mark.parametrize("bad", [float("inf"), float("nan"), 1e308, -5.0])
def test_the_own_estimate_path_survives_absurd_histories(bad: float) -> None:
    import warnings

    from llm_council.bias_audit.records.reviewer_profiles import ReviewerProfile

    texts = {f"j{i}": "w " * 20 for i in range(4)}
    scores = {
        f"j{r}": {f"j{c}": float((r * 3 + c * 5) % 7 + 2) for c in range(4)} for r in range(4)
    }
    scores["j1"] = {f"j{c}": 7.0 for c in range(4)}  # a judge always giving the same score
    history = {
        f"j{i}": ReviewerProfile(30, bad if i == 0 else 0.3, 60.0, {f"j{i}": 60.0})
        for i in range(4)
    }
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        audit = run_bias_audit(texts, scores, history=history, thresholds=OWN_ESTIMATE)
    json.dumps(audit.model_dump(mode="json"), allow_nan=False)


def test_the_council_wide_move_with_the_own_estimate_says_where_the_noise_came_from() -> None:
    sds = np.linspace(0.5, 1.5, 7).tolist()
    rng = np.random.default_rng(21)
    history = _history(CouncilSpec(n_members=7, noise_sds=sds), 30, rng)
    louder = CouncilSpec(n_members=7, noise_sds=[2.0 * sd for sd in sds])
    council_only = AuditThresholds(
        noise_drift_level=0.0,
        noise_drift_council_level=0.2,
        noise_drift_replacement="session-estimate",
    )
    for _ in range(10):
        table = _table(generate_session(louder, rng))
        audit = audit_score_table(table, council_only, history=history)
        note = audit.indicator_only["reviewers"]
        if "together, is unlike their histories" in note:
            assert "7 from session" in note and "toward its own noise in this session" in note
            assert "toward the default prior" not in note
            return
    pytest.fail("every judge twice as noisy and the council-wide test never fired")
