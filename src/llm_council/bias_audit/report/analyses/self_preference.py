"""Per-reviewer self-preference: the bonus a reviewer gives its own answer.

The adjusted estimate is the joint model's self-review term (:mod:`.joint`), which holds
leniency, position and differential verbosity fixed; the raw one is the paired contrast
per session. An incremental section (ADR 0077) that needs the joint model's result: a
summary holds, per self-reviewing reviewer, the count, mean and centred sum of squares of
its self-review deviations and its own model; per (reviewer, model) pair, the sessions
it was scored in and its lowest and highest display slot (:func:`fixed_slot_pairs`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import duckdb
import numpy as np

from llm_council.bias_audit.report.estimates import Interval, JointEffect, SelfPreference
from llm_council.stats.inference.pooling import mean_interval_from_moments
from llm_council.stats.numerics.distribution_functions import t_two_sided_p
from llm_council.stats.numerics.moments import merged_moments


@dataclass(frozen=True)
class SelfPreferenceSummary:
    """Per self-reviewing reviewer (sorted): ``moments`` (n, mean, M2) of its self-review
    deviations and ``own_model`` (the least model name of its self-reviews); per pair
    (sorted): ``pair_slots`` (sessions, lowest slot, highest slot) over slots >= 0."""

    reviewers: tuple[str, ...]
    own_model: tuple[str, ...]
    moments: np.ndarray  # (reviewers, 3)
    pairs: tuple[tuple[str, str], ...]
    pair_slots: np.ndarray  # (pairs, 3)


def _summarize(connection: duckdb.DuckDBPyConnection) -> SelfPreferenceSummary:
    rows = connection.execute(
        """SELECT reviewer, min(model), count(deviation), avg(deviation),
                  coalesce(var_pop(deviation) * count(deviation), 0)
           FROM scored WHERE is_self GROUP BY reviewer ORDER BY reviewer"""
    ).fetchall()
    pairs = connection.execute(
        """SELECT reviewer, model, count(DISTINCT session), min(position), max(position)
           FROM scored WHERE position >= 0 GROUP BY reviewer, model ORDER BY reviewer, model"""
    ).fetchall()
    nan = float("nan")
    return SelfPreferenceSummary(
        reviewers=tuple(str(row[0]) for row in rows),
        own_model=tuple(str(row[1]) for row in rows),
        moments=np.array(
            [[n, nan if mean is None else mean, m2] for _, _, n, mean, m2 in rows], dtype=float
        ).reshape(-1, 3),
        pairs=tuple((str(row[0]), str(row[1])) for row in pairs),
        pair_slots=np.array([row[2:] for row in pairs], dtype=float).reshape(-1, 3),
    )


def _merged(first: SelfPreferenceSummary, second: SelfPreferenceSummary) -> SelfPreferenceSummary:
    nan = float("nan")
    reviewers = sorted(set(first.reviewers) | set(second.reviewers))
    empty = np.array([0.0, nan, 0.0])

    def by_reviewer(summary: SelfPreferenceSummary) -> np.ndarray:
        rows = dict(zip(summary.reviewers, summary.moments, strict=True))
        return np.array([rows.get(name, empty) for name in reviewers]).reshape(-1, 3)

    own = dict(zip(second.reviewers, second.own_model, strict=True))
    for name, model in zip(first.reviewers, first.own_model, strict=True):
        own[name] = min(model, own.get(name, model))
    pairs = sorted(set(first.pairs) | set(second.pairs))
    slots: dict[tuple[str, str], np.ndarray] = {}
    for summary in (first, second):
        for pair, (sessions, low, high) in zip(summary.pairs, summary.pair_slots, strict=True):
            seen = slots.get(pair)
            slots[pair] = (
                np.array([sessions, low, high])
                if seen is None
                else np.array([seen[0] + sessions, min(seen[1], low), max(seen[2], high)])
            )
    return SelfPreferenceSummary(
        reviewers=tuple(reviewers),
        own_model=tuple(own[name] for name in reviewers),
        moments=merged_moments(by_reviewer(first), by_reviewer(second)),
        pairs=tuple(pairs),
        pair_slots=np.array([slots[pair] for pair in pairs], dtype=float).reshape(-1, 3),
    )


def _t_p_value(estimate: float, standard_error: float, df: int) -> float:
    """Two-sided Student-t p of ``estimate / standard_error`` (NaN where it is no test)."""
    if not (df > 0 and standard_error > 0 and np.isfinite(estimate / standard_error)):
        return float("nan")
    return float(t_two_sided_p(estimate / standard_error, df))


def adjusted_self_preference(effect: JointEffect, n_joint_sessions: int) -> Interval:
    """The statistic: the joint model's self-review term with the two-sided t test of
    ``estimate / standard_error`` on ``n_joint_sessions - 1`` degrees of freedom, the same
    t its interval uses (NaN without ``n_joint_sessions``)."""
    return Interval(
        effect.estimate,
        effect.ci_low,
        effect.ci_high,
        _t_p_value(effect.estimate, effect.standard_error, n_joint_sessions - 1),
    )


def self_preferences_from_summary(
    summary: SelfPreferenceSummary,
    joint_effects: Sequence[JointEffect],
    n_joint_sessions: int = 0,
) -> list[SelfPreference]:
    """Each self-reviewing reviewer's bonus to its own answer (:func:`self_preferences`)."""
    adjusted_by_reviewer = {
        effect.term: adjusted_self_preference(effect, n_joint_sessions)
        for effect in joint_effects
        if effect.group == "self_review"
    }
    # fixed_slot_pairs: scored in two or more sessions, always at one slot
    fixed = {
        pair: int(low)
        for pair, (sessions, low, high) in zip(summary.pairs, summary.pair_slots, strict=True)
        if sessions >= 2 and low == high
    }
    nan = float("nan")
    results = []
    for reviewer, own_model, (n, mean, m2) in zip(
        summary.reviewers, summary.own_model, summary.moments, strict=True
    ):
        sd = float(np.sqrt(m2 / (n - 1))) if n >= 2 else nan
        raw = Interval.from_estimate(mean_interval_from_moments(float(mean), sd, int(n)))
        adjusted = adjusted_by_reviewer.get(reviewer, Interval(nan, nan, nan))
        fixed_slot = fixed.get((reviewer, own_model))
        results.append(
            SelfPreference(
                reviewer=reviewer,
                n_sessions=int(n),
                adjusted=adjusted,
                raw=raw,
                detected=adjusted.excludes_zero() and fixed_slot is None,
                confounded_with_slot=fixed_slot is not None,
                fixed_slot=fixed_slot,
            )
        )
    return results


def self_preferences(
    connection: duckdb.DuckDBPyConnection,
    joint_effects: Sequence[JointEffect],
    n_joint_sessions: int = 0,
) -> list[SelfPreference]:
    """Each self-reviewing reviewer's bonus to its own answer.

    ``adjusted`` is :func:`adjusted_self_preference`: the joint model's per-reviewer
    self-review term, which holds leniency, position and differential verbosity fixed.
    ``raw`` is the simple paired contrast per session (own score minus the others' mean on
    its answer; t interval over sessions): it still contains the reviewer's leniency and,
    since an author's own answer has its own typical length, its taste for length.
    ``detected`` reads the adjusted interval, except where the reviewer saw its own answer
    at one slot in every session (:func:`fixed_slot_pairs`): there it is
    ``confounded_with_slot`` and never detected. Every session of ``connection``:
    :class:`SelfPreferenceSection` with nothing saved.
    """
    return self_preferences_from_summary(_summarize(connection), joint_effects, n_joint_sessions)


def _names(meta: Mapping[str, Any], field: str) -> list[Any]:
    names = meta.get(field)
    if not isinstance(names, list) or not all(isinstance(name, str) for name in names):
        raise ValueError(f"self-preference summary: {field!r} is not a list of names")
    return names


class SelfPreferenceSection:
    """:func:`self_preferences` as a dependent incremental section (ADRs 0073, 0077):
    ``finish(summary, joint_effects=..., n_joint_sessions=...)``."""

    name = "self_preference"
    version = 1
    needs_inputs = True

    def summarize(self, connection: duckdb.DuckDBPyConnection) -> SelfPreferenceSummary:
        return _summarize(connection)

    def merge(
        self, saved: SelfPreferenceSummary, new: SelfPreferenceSummary
    ) -> SelfPreferenceSummary:
        return _merged(saved, new)

    def finish(
        self,
        summary: SelfPreferenceSummary,
        *,
        joint_effects: Sequence[JointEffect] = (),
        n_joint_sessions: int = 0,
    ) -> list[SelfPreference]:
        return self_preferences_from_summary(summary, joint_effects, n_joint_sessions)

    def to_payload(
        self, summary: SelfPreferenceSummary
    ) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        meta = {
            "reviewers": list(summary.reviewers),
            "own_model": list(summary.own_model),
            "pair_reviewers": [reviewer for reviewer, _ in summary.pairs],
            "pair_models": [model for _, model in summary.pairs],
        }
        return meta, {"moments": summary.moments, "pair_slots": summary.pair_slots}

    def from_payload(
        self, meta: Mapping[str, Any], arrays: Mapping[str, np.ndarray]
    ) -> SelfPreferenceSummary:
        reviewers, own_model = _names(meta, "reviewers"), _names(meta, "own_model")
        pair_reviewers, pair_models = _names(meta, "pair_reviewers"), _names(meta, "pair_models")
        if len(own_model) != len(reviewers) or reviewers != sorted(set(reviewers)):
            raise ValueError("self-preference summary: 'reviewers' unsorted or unmatched")
        pairs = list(zip(pair_reviewers, pair_models, strict=False))
        if len(pair_models) != len(pair_reviewers) or pairs != sorted(set(pairs)):
            raise ValueError("self-preference summary: 'pair_models' unsorted or unmatched")
        for field, rows in (("moments", len(reviewers)), ("pair_slots", len(pairs))):
            array = arrays.get(field)
            if array is None or array.shape != (rows, 3) or array.dtype != np.float64:
                raise ValueError(f"self-preference summary: {field!r} is not ({rows}, 3) float64")
        moments, pair_slots = arrays["moments"], arrays["pair_slots"]
        counts_ok = np.isfinite(moments[:, [0, 2]]).all() and (moments[:, 0] >= 0).all()
        if not counts_ok or not np.isfinite(pair_slots).all():
            raise ValueError("self-preference summary: 'moments' holds a non-finite count")
        return SelfPreferenceSummary(
            tuple(reviewers), tuple(own_model), moments, tuple(pairs), pair_slots
        )


SELF_PREFERENCE = SelfPreferenceSection()
