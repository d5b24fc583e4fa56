"""The faster fold (ADR 0053, fourth amendment) against the fold before it (``monitor_fold_before_speedup``, a
frozen copy): the same streams folded by both give the same e-process values, the same
confirmations, the same confidence sequences and the same sealed body, session by session.

Streams from two generators (the simulator, ``llm_council.simulation``, and the independent
one, ``tests/generators/independent_council.py``), 3, 5 and 9 members, with and without
missing cells, and with degenerate judges (one always gives the top score, one always the
same middle score). Numbers are compared to 1e-12 relative (the brief's bound) and, since
the new fold does the same floating-point operations on the same operands, also byte for
byte through the sealed body (which packs every float as its 8 bytes).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from llm_council.bias_audit.records.jsonl_store import append_records
from llm_council.bias_audit.records.monitor_append import appended_session
from llm_council.bias_audit.records.monitor_body import state_body
from llm_council.bias_audit.records.monitor_fold import MonitorState, fold_estimates
from llm_council.bias_audit.records.monitor_sessions import session_estimates
from llm_council.bias_audit.records.monitor_state import read_state, update_monitor
from llm_council.bias_audit.records.schema import ReviewRecord, upgrade_record
from llm_council.simulation.simulated_records import iter_record_chunks, load_simulated_profiles
from llm_council.stats.monitor.anytime_monitor import (
    MonitorSettings,
    MonitorSums,
    cells_estimated,
    combined_log_e,
    confidence_sequence,
    fold_session,
    log_e_values,
)
from llm_council.stats.monitor.monitor_session_effects import (
    BIASES,
    effect_design,
    session_effects,
)

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from bias_audit.records import monitor_fold_before_speedup as before  # noqa: E402
from generators.independent_council import CouncilSpec, generate_sessions  # noqa: E402

Session = list[ReviewRecord]
SIMULATED_MEMBERS = ("balanced", "harsh", "verbose", "primacy", "narcissist")


def _independent(members: int, n: int, seed: int, missing: float) -> list[Session]:
    spec = CouncilSpec(
        n_members=members,
        noise_sds=list(np.linspace(0.5, 1.5, members)),
        leniency=[-1.0] + [0.0] * (members - 1),
        missing_score_rate=missing,
        missing_review_rate=missing,
    )
    return [
        [ReviewRecord.model_validate(upgrade_record(raw)) for raw in session.records()]
        for session in generate_sessions(spec, n, seed)
    ]


def _simulated(members: int, n: int, seed: int, missing: float) -> list[Session]:
    names = [SIMULATED_MEMBERS[i % len(SIMULATED_MEMBERS)] for i in range(members)]
    profiles = [
        (f"{name}-{i}", profile) for i, (name, profile) in enumerate(load_simulated_profiles(names))
    ]
    text = "".join(iter_record_chunks(profiles, n, seed=seed, missing_score_rate=missing))
    sessions: dict[str, Session] = {}
    for line in text.splitlines():
        record = ReviewRecord.model_validate_json(line)
        sessions.setdefault(record.session_id, []).append(record)
    return list(sessions.values())


def _degenerate(sessions: list[Session]) -> list[Session]:
    """The first reviewer always gives the scale's top, the second always its middle."""
    reviewers = sorted({record.reviewer_id for record in sessions[0]})
    out = []
    for records in sessions:
        changed = []
        for record in records:
            low, high = record.score_scale
            if record.score_value is not None and record.reviewer_id == reviewers[0]:
                record = record.model_copy(update={"score_value": high})
            elif record.score_value is not None and record.reviewer_id == reviewers[1]:
                record = record.model_copy(update={"score_value": float(round((low + high) / 2))})
            changed.append(record)
        out.append(changed)
    return out


GENERATORS: dict[str, Callable[[int, int, int, float], list[Session]]] = {
    "simulator": _simulated,
    "independent": _independent,
}


def _log_e(state: MonitorState) -> np.ndarray:
    sums, settings = state.sums, state.settings
    return combined_log_e(
        log_e_values(
            sums.weighted_sum,
            sums.precision,
            settings.delta0,
            settings.prior_scale,
            settings.prior_mean,
        )
    )


def _bounds(state: MonitorState) -> tuple[np.ndarray, np.ndarray]:
    sums, settings = state.sums, state.settings
    share = settings.alpha / int(cells_estimated(sums.n))
    return confidence_sequence(
        sums.weighted_sum,
        sums.precision,
        settings.prior_scale,
        math.log(2.0 / share),
        settings.prior_mean,
    )


def _assert_same(old: MonitorState, new: MonitorState, where: str) -> None:
    assert new.reviewers == old.reviewers, where
    for name in ("n", "confirmed_at"):
        np.testing.assert_array_equal(getattr(new.sums, name), getattr(old.sums, name), where)
    for name in (
        "inv_k_sum",
        "x_over_k_sum",
        "x2_over_k_sum",
        "precision",
        "weighted_sum",
        "peak_log_e",
    ):
        np.testing.assert_allclose(
            getattr(new.sums, name), getattr(old.sums, name), rtol=1e-12, atol=0, err_msg=where
        )
    np.testing.assert_allclose(_log_e(new), _log_e(old), rtol=1e-12, atol=0, err_msg=where)
    for new_bound, old_bound in zip(_bounds(new), _bounds(old), strict=True):
        np.testing.assert_allclose(new_bound, old_bound, rtol=1e-12, atol=0, err_msg=where)
    # the sealed body packs each float as its 8 bytes: equal bodies, equal numbers bit for bit
    new_body, old_body = state_body(new), state_body(old)
    assert new_body["cells"] == old_body["cells"], where
    assert new_body["settings"] == old_body["settings"], where


def _fold_both(sessions: list[Session], settings: MonitorSettings) -> tuple[int, int]:
    """Fold with the old and the new code, comparing after every session; the sessions
    that gave estimates and the confirmations at the end."""
    old = new = MonitorState(settings=settings)
    folded = 0
    for index, records in enumerate(sessions):
        old_estimates = before.session_estimates(records)
        new_estimates = session_estimates(records)
        assert (old_estimates is None) == (new_estimates is None), index
        if old_estimates is None or new_estimates is None:
            continue
        assert new_estimates.reviewers == old_estimates.reviewers
        np.testing.assert_array_equal(new_estimates.estimates, old_estimates.estimates)
        np.testing.assert_array_equal(new_estimates.unit_variances, old_estimates.unit_variances)
        old = before.fold_estimates(old, old_estimates)
        new = fold_estimates(new, new_estimates)
        folded += 1
        _assert_same(old, new, f"after session {index}")
    return folded, int((new.sums.confirmed_at > 0).sum())


@pytest.mark.parametrize("generator", sorted(GENERATORS))
@pytest.mark.parametrize("members", [3, 5, 9])
@pytest.mark.parametrize("missing", [0.0, 0.15])
def test_the_new_fold_equals_the_old_session_by_session(
    generator: str, members: int, missing: float
) -> None:
    sessions = GENERATORS[generator](members, 60, 3, missing)
    folded, confirmed = _fold_both(sessions, MonitorSettings())
    # a 3-member session with a cell missing rarely identifies the model; still not vacuous
    assert folded >= 15
    # delta0 = 0 puts every test on its boundary: confirmations happen, and must agree
    _, confirmed_at_zero = _fold_both(sessions, MonitorSettings(delta0=0.0))
    assert confirmed_at_zero > 0
    assert confirmed >= 0


@pytest.mark.parametrize("generator", sorted(GENERATORS))
@pytest.mark.parametrize("members", [3, 9])
def test_the_new_fold_equals_the_old_for_degenerate_judges(generator: str, members: int) -> None:
    sessions = _degenerate(GENERATORS[generator](members, 40, 5, 0.1))
    folded, confirmed = _fold_both(sessions, MonitorSettings())
    assert folded >= 15
    assert confirmed > 0  # a judge that always gives the top score is lenient, and is found


@pytest.mark.parametrize("members", [3, 9])
def test_the_saved_state_after_appends_equals_the_old_fold(tmp_path: Path, members: int) -> None:
    """Through the store: appended and folded from memory (the middleware's path), then
    read back from the file; the old fold of the same sessions has the same body."""
    store = tmp_path / "records.jsonl"
    sessions = _independent(members, 25, 11, 0.1)
    old = MonitorState(settings=MonitorSettings())
    for index, records in enumerate(sessions):
        append_records(store, records)
        update = update_monitor(store, appended=appended_session(records))
        assert update.path == ("rebuilt" if index == 0 else "memory")  # no state before
        estimates = before.session_estimates(records)
        if estimates is not None:
            old = before.fold_estimates(old, estimates)
    saved = read_state(store)
    assert saved is not None
    assert saved.n_sessions == len(sessions)
    _assert_same(old, saved, "the saved state")


@dataclass(frozen=True)
class _Row:
    """A record as a PostgreSQL row gives it (the monitor's fields only, no validation)."""

    session_id: str
    reviewer_id: str
    model_id: str
    position: int
    score_value: float | None
    is_self_review: bool = False
    check_kind: str | None = None
    session_n_records: int | None = None
    score_scale: tuple[float, float] = (1.0, 10.0)


def _hostile_session(seed: int) -> list[_Row]:
    """A 4-member session with what validation would refuse: scores outside their scale,
    NaN and infinite scores, a reversed and a NaN scale, a cell given twice, two records at
    position 0 for one reviewer (the second of an unscored answer), a check record."""
    rng = np.random.default_rng(seed)
    members = [f"m{i}" for i in range(4)]
    rows = []
    for r, reviewer in enumerate(members):
        for position, c in enumerate(rng.permutation(4)):
            score = float(rng.integers(1, 11))
            rows.append(_Row("s", reviewer, members[c], position, score, is_self_review=(r == c)))
    rows += [
        _Row("s", "m0", "m1", 2, 1e300),  # outside its scale: not a score
        _Row("s", "m1", "m2", 3, float("nan")),
        _Row("s", "m2", "m3", 3, float("inf")),
        _Row("s", "m3", "m0", 1, 7.0, score_scale=(10.0, 1.0)),  # reversed: still 1-10
        _Row("s", "m3", "m1", 1, 5.0, score_scale=(float("nan"), 10.0)),
        _Row("s", "m1", "m3", 2, 4.0),  # the same cell again: the last one counts
        _Row("s", "m2", "m9", 0, None),  # position 0 of an answer nobody scored
        _Row("s", "m0", "m2", 0, 9.0, check_kind="padding"),  # a check: not counted
    ]
    return rows


@pytest.mark.parametrize("seed", range(12))
def test_hostile_rows_give_the_same_estimates_as_before(seed: int) -> None:
    rows = _hostile_session(seed)
    order = np.random.default_rng(seed + 100).permutation(len(rows))
    shuffled = [rows[i] for i in order]  # which record comes last matters: same rule
    for records in (rows, shuffled):
        old = before.session_estimates(records)
        new = session_estimates(records)
        assert old is not None and new is not None  # the session identifies the model
        assert new.reviewers == old.reviewers
        np.testing.assert_array_equal(new.estimates, old.estimates)
        np.testing.assert_array_equal(new.unit_variances, old.unit_variances)


def test_a_batch_of_streams_folds_as_before() -> None:
    """The array path (a batch of streams, as the calibration benchmarks fold them) keeps
    numpy; its masked divisions and filled sides give the old fold's numbers bit for bit."""
    rng = np.random.default_rng(8)
    members, streams = 5, 40
    design = effect_design(~np.eye(members, dtype=bool), np.arange(members))
    assert design is not None
    settings = MonitorSettings(delta0=0.0)
    old = new = MonitorSums.empty((streams, members, len(BIASES)))
    for _ in range(60):
        scores = np.clip(np.round(rng.normal(6, 1.5, (streams, members, members))), 1, 10)
        scores[:, 0, :] -= 1.0  # one harsh judge: confirmations happen
        first = np.argsort(rng.random((streams, members, members)), axis=-1)[..., 0]
        estimates, variances = session_effects(design, scores, first)
        old = before.fold_session(old, estimates, variances, settings)
        new = fold_session(new, estimates, variances, settings)
        for name in ("n", "confirmed_at", "precision", "weighted_sum", "peak_log_e"):
            np.testing.assert_array_equal(getattr(new, name), getattr(old, name), name)
    assert (new.confirmed_at > 0).any()
