"""Write realistic simulated bias-audit record stores of any size, fast.

The cross-session report is validated on stores whose biases are known. This module draws
whole councils' sessions at once with vectorised numpy (no council run, no provider call)
using the same score model as the simulated provider:

    score = quality + leniency + position_effects[slot] + verbosity * log(words / 200)
            + self_preference * is_self + reasoning_bias * log2(rationale / median)
            + style_mimicry * (similarity - 1/2)
            + noise_sd * N(0, 1), clipped to the scale, rounded,

where ``similarity`` (written as ``similarity_to_own``, null on self-reviews) compares the
answer's style vector with the reviewer's own answer's (:func:`answer_similarities`),

and writes one JSON line per (session, reviewer, candidate) matching
:class:`~llm_council.bias_audit.records.schema.ReviewRecord`. A million records take a few
seconds, so the scale benchmark and the interval-coverage runs can use fresh stores.

Reasoning and parse behaviour (ADR 0027) is drawn from a side stream of the generator,
so a council with none of it configured writes exactly the store it wrote before: a
member with ``rationale_mean_chars`` writes ``rationale_chars`` (one log-normal length per
review); ``abstention_probability`` leaves a review unscored and unranked with
``review_status`` "refused"; ``rank_mismatch_probability`` swaps one adjacent pair of a
review's ranking. ``review_status`` and ``rationale_chars`` are written only when some
member has such behaviour.

Run ``python -m llm_council.simulation.simulated_records --help`` for the command line.
"""

from __future__ import annotations

import argparse
import hashlib
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

from llm_council.bias_audit.records.schema import SCHEMA_VERSION
from llm_council.errors import ConfigError, CouncilError
from llm_council.infra.atomic_files import atomic_writer
from llm_council.simulation.profile import REFERENCE_ANSWER_WORDS, SimulatedProfile
from llm_council.simulation.profiles import resolve_profile

#: the council the generator uses when none is given: one member per kind of bias, plus one
#: without any, so every section of the report has something to find
DEFAULT_MEMBERS = ("balanced", "harsh", "verbose", "primacy", "narcissist")
#: characters per word of simulated answers (English prose averages about 5-6 with spaces)
_CHARS_PER_WORD = 5.8
_SESSIONS_PER_CHUNK = 4000
#: answer styles: each member has a centre in this many dimensions, each answer its centre
#: plus N(0, STYLE_SPREAD^2) per dimension; similarity = (1 + cos) / 2 of two answers
STYLE_DIMENSIONS = 16
STYLE_SPREAD = 1.0
_STYLE_CENTRE_SEED = 20261123


@dataclass(frozen=True)
class RecordColumns:
    """One chunk of simulated records as parallel arrays (one element per record)."""

    session_index: np.ndarray
    reviewer_index: np.ndarray
    model_index: np.ndarray
    position: np.ndarray
    n_candidates: int
    length_chars: np.ndarray
    length_words: np.ndarray
    score: np.ndarray  # NaN = no score given
    similarity: np.ndarray  # similarity_to_own; NaN on self-reviews
    rank: np.ndarray  # 0 = unranked
    is_self_review: np.ndarray
    rationale_chars: np.ndarray | None = None  # 0 = no rationale; None: not written
    refused: np.ndarray | None = None  # the review declined to judge; None: no status written

    def __len__(self) -> int:
        return int(self.score.shape[0])


def load_simulated_profiles(
    names: Sequence[str] | None = None,
) -> list[tuple[str, SimulatedProfile]]:
    """The named simulated profiles (default: one member per kind of bias)."""
    wanted = list(names) if names is not None else list(DEFAULT_MEMBERS)
    return [(name, resolve_profile(name, {})) for name in wanted]


def answer_similarities(n_sessions: int, n_members: int, rng: np.random.Generator) -> np.ndarray:
    """``[session, reviewer, candidate]`` similarity in [0, 1] of the candidate's answer to the
    reviewer's own: ``(1 + cos) / 2`` of style vectors ``centre[member] + STYLE_SPREAD * N(0, I)``.

    The centres are fixed per member position (a member writes in its own style), the
    per-answer part is drawn from ``rng``. Symmetric in reviewer and candidate, like a real
    similarity; the diagonal (own answer) is 1.
    """
    centres = np.random.default_rng(_STYLE_CENTRE_SEED).standard_normal(
        (n_members, STYLE_DIMENSIONS)
    )
    styles = centres[None] + STYLE_SPREAD * rng.standard_normal(
        (n_sessions, n_members, STYLE_DIMENSIONS)
    )
    unit = styles / np.linalg.norm(styles, axis=-1, keepdims=True)
    cosine = np.clip(np.einsum("srd,smd->srm", unit, unit), -1.0, 1.0)
    return np.asarray((1.0 + cosine) / 2.0)


@dataclass(frozen=True)
class _MemberArrays:
    """The profiles' parameters as arrays over members (reviewer or candidate by context)."""

    quality_mean: np.ndarray
    quality_sd: np.ndarray
    log_words_mean: np.ndarray
    log_words_sd: np.ndarray
    leniency: np.ndarray
    noise_sd: np.ndarray
    verbosity: np.ndarray
    self_preference: np.ndarray
    decimals: np.ndarray
    position_effect: np.ndarray  # [reviewer, slot] points
    drift: np.ndarray  # leniency points per week
    mimicry: np.ndarray
    anchoring: np.ndarray

    @classmethod
    def of(cls, profiles: Sequence[SimulatedProfile]) -> _MemberArrays:
        n_members = len(profiles)
        position_effect = np.zeros((n_members, n_members))
        for r, profile in enumerate(profiles):
            for slot in range(n_members):
                position_effect[r, slot] = profile.position_effect(slot)
        return cls(
            quality_mean=np.array([p.quality_mean for p in profiles]),
            quality_sd=np.array([p.quality_sd for p in profiles]),
            log_words_mean=np.log([p.answer_mean_words for p in profiles]),
            log_words_sd=np.array([p.answer_length_sigma for p in profiles]),
            leniency=np.array([p.leniency for p in profiles]),
            noise_sd=np.array([p.noise_sd for p in profiles]),
            verbosity=np.array([p.verbosity for p in profiles]),
            self_preference=np.array([p.self_preference for p in profiles]),
            decimals=np.array([p.score_decimals for p in profiles]),
            position_effect=position_effect,
            drift=np.array([p.leniency_drift_per_week for p in profiles]),
            mimicry=np.array([p.style_mimicry for p in profiles]),
            anchoring=np.array([p.anchoring for p in profiles]),
        )


def _draw_answers(
    members: _MemberArrays, n_sessions: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``[session, member]`` answer quality, words and characters (three draws from ``rng``)."""
    shape = (n_sessions, len(members.quality_mean))
    quality = members.quality_mean + members.quality_sd * rng.standard_normal(shape)
    words = np.maximum(
        1,
        np.rint(np.exp(members.log_words_mean + members.log_words_sd * rng.standard_normal(shape))),
    )
    chars = np.rint(words * (_CHARS_PER_WORD + 0.4 * rng.standard_normal(shape))).clip(min=words)
    return quality, words, chars


def _display_orders(
    n_sessions: int, n_members: int, self_review: bool, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``is_self``, ``order`` and ``position`` over [session, reviewer, candidate]: each
    reviewer's own uniform shuffle (its own answer last, to be dropped, when recused)."""
    is_self = np.broadcast_to(np.eye(n_members, dtype=bool), (n_sessions, n_members, n_members))
    shuffle_keys = rng.random((n_sessions, n_members, n_members))
    if not self_review:
        shuffle_keys = np.where(
            is_self, np.inf, shuffle_keys
        )  # own answer sorts last, then dropped
    order = np.argsort(shuffle_keys, axis=-1)
    position = np.empty_like(order)
    np.put_along_axis(position, order, np.arange(n_members)[None, None, :], axis=-1)
    return is_self, order, position


def _ranks(
    score: np.ndarray, keep: np.ndarray, reasoning: _ReasoningDraws, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """The scores after refusals and each review's ranking of them (0 = unranked).

    Rank 1 = best among the answers this reviewer was shown; ties broken at random.
    """
    n_members = score.shape[-1]
    rank_key = np.where(keep & ~np.isnan(score), -score, np.inf)
    rank_order = np.lexsort((rng.random(score.shape), rank_key), axis=-1)
    rank = np.empty_like(rank_order)
    np.put_along_axis(rank, rank_order, np.arange(1, n_members + 1)[None, None, :], axis=-1)
    rank = np.where(np.isnan(score), 0, rank)
    if reasoning.refused is not None:
        score = np.where(reasoning.refused[:, :, None], np.nan, score)
        rank = np.where(reasoning.refused[:, :, None], 0, rank)
    return score, reasoning.mismatched(rank)


def simulate_record_columns(
    profiles: Sequence[SimulatedProfile],
    n_sessions: int,
    rng: np.random.Generator,
    *,
    self_review: bool = True,
    missing_score_rate: float = 0.0,
    score_scale: tuple[float, float] = (1.0, 10.0),
    member_names: Sequence[str] | None = None,
    session_weeks: np.ndarray | None = None,
) -> RecordColumns:
    """Draw ``n_sessions`` sessions of a council whose members are ``profiles``.

    Every member answers and reviews every answer (its own too when ``self_review``),
    each reviewer in its own uniformly shuffled display order, as the council does.
    ``member_names`` (needed for ``favours``) name the profiles; ``session_weeks`` (for
    ``leniency_drift_per_week``) is each session's time in weeks since the first one.
    Answer styles come from a generator spawned from ``rng`` (spawning leaves ``rng``'s
    stream alone), so every score is what it was before styles existed when
    ``style_mimicry`` is 0. The draws from ``rng`` keep one order (seeded stores depend
    on it): reasoning, styles, answers, display orders, noise, missing scores, rank ties.
    """
    n_members = len(profiles)
    if n_members < 2:
        raise ValueError("a council needs at least 2 members")
    members = _MemberArrays.of(profiles)
    n_ranked = n_members if self_review else n_members - 1
    reasoning = _ReasoningDraws.draw(profiles, n_sessions, rng, n_ranked)
    favour_table = _favour_table(profiles, member_names)
    weeks = np.zeros(n_sessions) if session_weeks is None else np.asarray(session_weeks, float)
    similarity = answer_similarities(n_sessions, n_members, rng.spawn(1)[0])
    quality, words, chars = _draw_answers(members, n_sessions, rng)
    is_self, order, position = _display_orders(n_sessions, n_members, self_review, rng)
    slot_effect = np.take_along_axis(
        np.broadcast_to(members.position_effect, (n_sessions, n_members, n_members)),
        position,
        axis=-1,
    )
    log_length = np.log(words / REFERENCE_ANSWER_WORDS)
    score = (
        quality[:, None, :]
        + members.leniency[None, :, None]
        + slot_effect
        + members.verbosity[None, :, None] * log_length[:, None, :]
        + members.self_preference[None, :, None] * is_self
        + favour_table[None, :, :]
        + (members.drift[None, :] * weeks[:, None])[:, :, None]
        + reasoning.score_shift[:, :, None]
        + members.noise_sd[None, :, None] * rng.standard_normal((n_sessions, n_members, n_members))
    )
    if np.any(members.mimicry):
        score = score + np.where(is_self, 0.0, members.mimicry[None, :, None] * (similarity - 0.5))
    score = _anchored(score, order, members.anchoring)
    score = np.clip(score, *score_scale)
    scale_factor = (10.0**members.decimals)[None, :, None]
    score = np.round(score * scale_factor) / scale_factor
    if missing_score_rate > 0:
        score = np.where(rng.random(score.shape) < missing_score_rate, np.nan, score)
    keep = np.ones(score.shape, dtype=bool) if self_review else ~is_self
    score, rank = _ranks(score, keep, reasoning, rng)
    session_index, reviewer_index, model_index = np.nonzero(keep)
    return RecordColumns(
        session_index=session_index,
        reviewer_index=reviewer_index,
        model_index=model_index,
        position=position[keep],
        n_candidates=n_ranked,
        length_chars=chars[session_index, model_index].astype(np.int64),
        length_words=words[session_index, model_index].astype(np.int64),
        score=score[keep],
        similarity=np.where(is_self, np.nan, similarity)[keep],
        rank=rank[keep],
        is_self_review=is_self[keep],
        rationale_chars=None
        if reasoning.rationale_chars is None
        else reasoning.rationale_chars[session_index, reviewer_index],
        refused=None
        if reasoning.refused is None
        else reasoning.refused[session_index, reviewer_index],
    )


@dataclass(frozen=True)
class _ReasoningDraws:
    """Per (session, reviewer): rationale length, its score shift, refusals, ranking swaps."""

    score_shift: np.ndarray  # points added to every score of the review
    rationale_chars: np.ndarray | None  # int64, 0 = none; None when no member writes one
    refused: np.ndarray | None  # bool; None when no member abstains or mismatches
    swap_at: np.ndarray | None  # rank k swapped with k + 1 (0 = no swap); None: never

    @classmethod
    def draw(
        cls,
        profiles: Sequence[SimulatedProfile],
        n_sessions: int,
        rng: np.random.Generator,
        n_ranked: int,
    ) -> _ReasoningDraws:
        shape = (n_sessions, len(profiles))
        shift = np.zeros(shape)
        writes = [p.rationale_mean_chars is not None for p in profiles]
        abstain = np.array([p.abstention_probability for p in profiles])
        mismatch = np.array([p.rank_mismatch_probability for p in profiles])
        if not any(writes) and not abstain.any() and not mismatch.any():
            return cls(shift, None, None, None)  # nothing drawn: the null store is unchanged
        side = rng.spawn(1)[0]  # a side stream: the scores' own draws stay as they were
        chars = None
        if any(writes):
            median = np.array([p.rationale_mean_chars or 1.0 for p in profiles])
            sigma = np.array([p.rationale_length_sigma for p in profiles])
            log2_ratio = sigma * side.standard_normal(shape) / np.log(2.0)
            drawn = np.maximum(1, np.rint(median * np.exp2(log2_ratio))).astype(np.int64)
            chars = np.where(writes, drawn, 0)
            bias = np.array([p.reasoning_bias for p in profiles])
            shift = np.where(writes, bias * np.log2(np.maximum(drawn, 1) / median), 0.0)
        refused = side.random(shape) < abstain
        swap_at = np.where(
            side.random(shape) < mismatch, side.integers(1, max(n_ranked, 2), shape), 0
        )
        return cls(shift, chars, refused, swap_at)

    def mismatched(self, rank: np.ndarray) -> np.ndarray:
        """``rank[s, r, c]`` with ranks k and k + 1 exchanged where a swap was drawn."""
        if self.swap_at is None or not self.swap_at.any():
            return rank
        k = self.swap_at[:, :, None]
        swapped = np.where(rank == k, k + 1, np.where(rank == k + 1, k, rank))
        return np.where((k > 0) & (rank > 0), swapped, rank)


def _favour_table(
    profiles: Sequence[SimulatedProfile], member_names: Sequence[str] | None
) -> np.ndarray:
    """``[reviewer, model]`` points from each profile's ``favours`` map (by member name)."""
    table = np.zeros((len(profiles), len(profiles)))
    if not any(p.favours for p in profiles):
        return table
    if member_names is None or len(member_names) != len(profiles):
        raise ValueError("profiles with 'favours' need member_names, one per profile")
    column = {name: index for index, name in enumerate(member_names)}
    for r, profile in enumerate(profiles):
        for name, points in profile.favours.items():
            if name not in column:
                raise ConfigError(
                    f"favours of member {list(column)[r]!r} names unknown member {name!r} "
                    f"(members: {', '.join(column)})"
                )
            table[r, column[name]] = points
    return table


def _anchored(score: np.ndarray, order: np.ndarray, anchoring: np.ndarray) -> np.ndarray:
    """Pull each score toward the mean of the reviewer's earlier scores in its display order.

    ``score_i += anchoring * (mean(score_0..score_{i-1}) - score_i)`` for slots ``i >= 1``,
    in order, on the already pulled earlier scores. ``order[s, r, i]`` is the candidate at slot i.
    """
    if not np.any(anchoring):
        return score
    in_order = np.take_along_axis(score, order, axis=-1).copy()
    weight = anchoring[None, :]
    for slot in range(1, in_order.shape[-1]):
        earlier = in_order[:, :, :slot].mean(axis=-1)
        in_order[:, :, slot] += weight * (earlier - in_order[:, :, slot])
    pulled = np.empty_like(score)
    np.put_along_axis(pulled, order, in_order, axis=-1)
    return pulled


def _format_lines(
    columns: RecordColumns,
    member_names: Sequence[str],
    session_ids: Sequence[str],
    timestamps: Sequence[str],
    config_hash: str,
    score_scale: tuple[float, float],
) -> str:
    """Render a chunk as JSON lines; the fixed parts are preformatted once per value."""
    names_json = [json.dumps(name) for name in member_names]
    scale_json = json.dumps([float(score_scale[0]), float(score_scale[1])])
    tail = f',"score_scale":{scale_json},"rank":%s,"is_self_review":%s,' + (
        f'"council_config_hash":{json.dumps(config_hash)},"query_hash":null,'
        '"similarity_to_own":%s%s}\n'
    )
    head = f'{{"schema_version":{SCHEMA_VERSION},"session_id":"%s","timestamp":"%s",'
    template = (
        head
        + '"reviewer_id":%s,"model_id":%s,"position":%d,"n_candidates":'
        + str(columns.n_candidates)
        + ',"response_length_chars":%d,"response_length_words":%d,"score_value":%s'
        + tail
    )
    scores = [("null" if s != s else repr(s)) for s in columns.score.tolist()]
    ranks = [("null" if r == 0 else str(r)) for r in columns.rank.tolist()]
    self_json = ["true" if flag else "false" for flag in columns.is_self_review.tolist()]
    similarities = [("null" if x != x else repr(x)) for x in columns.similarity.tolist()]
    extra = _reasoning_fields(columns)
    parts = [
        template % fields
        for fields in zip(
            [session_ids[i] for i in columns.session_index.tolist()],
            [timestamps[i] for i in columns.session_index.tolist()],
            [names_json[i] for i in columns.reviewer_index.tolist()],
            [names_json[i] for i in columns.model_index.tolist()],
            columns.position.tolist(),
            columns.length_chars.tolist(),
            columns.length_words.tolist(),
            scores,
            ranks,
            self_json,
            similarities,
            extra,
            strict=True,
        )
    ]
    return "".join(parts)


def _reasoning_fields(columns: RecordColumns) -> list[str]:
    """Each record's ``rationale_chars`` / ``review_status`` JSON, or "" when not simulated."""
    n = len(columns)
    chars = (
        [""] * n
        if columns.rationale_chars is None
        else [
            f',"rationale_chars":{c}' if c > 0 else ',"rationale_chars":null'
            for c in columns.rationale_chars.tolist()
        ]
    )
    if columns.refused is None:
        return chars
    status = ["refused" if refused else "json" for refused in columns.refused.tolist()]
    return [f'{c},"review_status":"{s}"' for c, s in zip(chars, status, strict=True)]


def iter_record_chunks(
    members: Sequence[tuple[str, SimulatedProfile]],
    n_sessions: int,
    *,
    seed: int,
    self_review: bool = True,
    missing_score_rate: float = 0.0,
    end_time: datetime | None = None,
    session_spacing: timedelta = timedelta(minutes=5),
    score_scale: tuple[float, float] = (1.0, 10.0),
) -> Iterator[str]:
    """Yield the store's text in chunks of a few thousand sessions (oldest session first)."""
    rng = np.random.default_rng(seed)
    names = [name for name, _ in members]
    profiles = [profile for _, profile in members]
    end = end_time or datetime(2026, 1, 31, tzinfo=UTC)
    config_hash = "sha256:" + hashlib.sha256(json.dumps([names, seed]).encode()).hexdigest()
    for start in range(0, n_sessions, _SESSIONS_PER_CHUNK):
        count = min(_SESSIONS_PER_CHUNK, n_sessions - start)
        weeks_per_session = session_spacing / timedelta(weeks=1)
        columns = simulate_record_columns(
            profiles,
            count,
            rng,
            self_review=self_review,
            missing_score_rate=missing_score_rate,
            score_scale=score_scale,
            member_names=names,
            session_weeks=np.arange(start, start + count) * weeks_per_session,
        )
        session_ids = [f"sim{seed}-{start + i:08d}" for i in range(count)]
        timestamps = [
            (end - session_spacing * (n_sessions - 1 - start - i))
            .isoformat()
            .replace("+00:00", "Z")
            for i in range(count)
        ]
        yield _format_lines(columns, names, session_ids, timestamps, config_hash, score_scale)


def write_record_store(
    path: str | Path,
    members: Sequence[tuple[str, SimulatedProfile]],
    n_sessions: int,
    *,
    seed: int,
    self_review: bool = True,
    missing_score_rate: float = 0.0,
    end_time: datetime | None = None,
    session_spacing: timedelta = timedelta(minutes=5),
) -> int:
    """Write a simulated store to ``path`` atomically (temp file + rename); return its size."""
    per_session = len(members) if self_review else len(members) - 1
    with atomic_writer(path) as handle:
        for text in iter_record_chunks(
            members,
            n_sessions,
            seed=seed,
            self_review=self_review,
            missing_score_rate=missing_score_rate,
            end_time=end_time,
            session_spacing=session_spacing,
        ):
            handle.write(text)
    return n_sessions * len(members) * per_session


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="JSONL store to write (replaced)")
    size = parser.add_mutually_exclusive_group(required=True)
    size.add_argument("--sessions", type=int, help="number of sessions")
    size.add_argument("--records", type=int, help="approximate number of records")
    parser.add_argument("--members", default=",".join(DEFAULT_MEMBERS), help="profile names")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--recuse", action="store_true", help="reviewers skip their own answer")
    parser.add_argument("--missing-score-rate", type=float, default=0.0)
    args = parser.parse_args(argv)
    try:
        members = load_simulated_profiles(args.members.split(","))
    except CouncilError as error:
        parser.error(str(error))
    per_session = len(members) * (len(members) - 1 if args.recuse else len(members))
    n_sessions = args.sessions if args.sessions is not None else max(1, args.records // per_session)
    written = write_record_store(
        args.out,
        members,
        n_sessions,
        seed=args.seed,
        self_review=not args.recuse,
        missing_score_rate=args.missing_score_rate,
    )
    print(f"wrote {written} records ({n_sessions} sessions) to {args.out}")


if __name__ == "__main__":
    main()
