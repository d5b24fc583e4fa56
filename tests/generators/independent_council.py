"""A second council-data generator, written for the tests, independent of llm_council.simulation.

The audit and the report were first validated on the simulator they were built with. This
generator draws sessions from a deliberately different model, so an estimator that only
works on the simulator's assumptions fails here:

- scores are **integers** on a 1-10 scale, **clipped** (a ceiling at 10 and a floor at 1),
  so ties are common and the noise is not Gaussian near the ends;
- answer quality may be **correlated with length** (``quality_length_correlation``), so a
  length-score correlation appears with no judge bias at all;
- cells go **missing** at random (``missing_score_rate``) and a whole review may be missing
  (``missing_review_rate``);
- reviewers may all see **one shared order** (the reference design) or each its own;
- noise may differ between reviewers (``noise_sds``), which is not a bias.

Score of reviewer r for candidate c shown at slot s::

    round(clip(base + quality_scale * q_c + leniency_r + slot_effects_r[s]
               + verbosity_r * z(log words_c) + self_bias_r * [r == c]
               + noise_sd_r * e, 1, 10))

with ``q`` and ``z(log words)`` standard normal with correlation
``quality_length_correlation``. Every bias parameter defaults to zero: the null council.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

SCORE_SCALE = (1.0, 10.0)
_WORDS = ("alpha", "bravo", "delta", "echo", "kilo", "lima", "oscar", "tango", "zulu")


@dataclass(frozen=True)
class CouncilSpec:
    """What the generator draws; all bias parameters are zero unless set."""

    n_members: int = 5
    base: float = 6.0
    quality_scale: float = 1.5
    noise_sd: float = 1.0
    noise_sds: Sequence[float] | None = None  # per reviewer; overrides noise_sd
    leniency: Sequence[float] | None = None  # per reviewer, points
    slot_effects: Sequence[Sequence[float]] | None = None  # per reviewer, per slot, points
    verbosity: Sequence[float] | None = None  # per reviewer, points per SD of log words
    self_bias: Sequence[float] | None = None  # per reviewer, points on its own answer
    quality_length_correlation: float = 0.0
    missing_score_rate: float = 0.0
    missing_review_rate: float = 0.0  # per session: one reviewer's review missing
    shared_order: bool = False  # every reviewer sees the same display order
    self_review: bool = True  # reviewers also score their own answer
    member_prefix: str = "judge"

    def members(self) -> list[str]:
        return [f"{self.member_prefix}-{index}" for index in range(self.n_members)]

    def per_reviewer(self, values: Sequence[float] | None) -> np.ndarray:
        if values is None:
            return np.zeros(self.n_members)
        array = np.asarray(values, dtype=float)
        if array.shape != (self.n_members,):
            raise ValueError(f"expected {self.n_members} per-reviewer values, got {array.shape}")
        return array


@dataclass(frozen=True)
class GeneratedSession:
    """One session in the standalone-audit shapes, plus the truth it was drawn from."""

    session_id: str
    timestamp: str
    stage1_responses: dict[str, str]
    stage2_scores: dict[str, dict[str, float | None]]
    position_mapping: dict[str, dict[str, int]]  # per reviewer: {candidate: display_index}
    quality: dict[str, float]
    words: dict[str, int]
    is_missing_review: dict[str, bool] = field(default_factory=dict)

    def flat_position_mapping(self) -> dict[str, int]:
        """The reference design's flat ``{candidate: position}`` (only for shared orders)."""
        first = next(iter(self.position_mapping.values()))
        return dict(first)

    def records(self, *, config_hash: str = "independent-generator") -> list[dict[str, Any]]:
        """One ReviewRecord-shaped dict per (reviewer, candidate shown)."""
        rows: list[dict[str, Any]] = []
        for reviewer, given in self.stage2_scores.items():
            shown = self.position_mapping[reviewer]
            for candidate, position in shown.items():
                words = self.words[candidate]
                rows.append(
                    {
                        "schema_version": 1,
                        "session_id": self.session_id,
                        "timestamp": self.timestamp,
                        "reviewer_id": reviewer,
                        "model_id": candidate,
                        "position": position,
                        "n_candidates": len(shown),
                        "response_length_chars": len(self.stage1_responses[candidate]),
                        "response_length_words": words,
                        "score_value": given.get(candidate),
                        "score_scale": list(SCORE_SCALE),
                        "rank": None,
                        "is_self_review": reviewer == candidate,
                        "council_config_hash": config_hash,
                        "query_hash": None,
                    }
                )
        return rows


def _answer_text(n_words: int, rng: np.random.Generator) -> str:
    picks = rng.integers(0, len(_WORDS), size=n_words)
    return " ".join(_WORDS[i] for i in picks.tolist())


def generate_session(
    spec: CouncilSpec, rng: np.random.Generator, *, session_index: int = 0
) -> GeneratedSession:
    """Draw one session from ``spec`` (see the module docstring for the model)."""
    members = spec.members()
    n = spec.n_members
    rho = spec.quality_length_correlation
    quality = rng.standard_normal(n)
    length_z = rho * quality + np.sqrt(max(0.0, 1.0 - rho * rho)) * rng.standard_normal(n)
    words = np.maximum(5, np.rint(np.exp(np.log(250.0) + 0.5 * length_z))).astype(int)
    texts = {name: _answer_text(int(w), rng) for name, w in zip(members, words, strict=True)}

    leniency = spec.per_reviewer(spec.leniency)
    verbosity = spec.per_reviewer(spec.verbosity)
    self_bias = spec.per_reviewer(spec.self_bias)
    noise = spec.per_reviewer(spec.noise_sds) if spec.noise_sds is not None else None
    slot_table = np.zeros((n, n))
    if spec.slot_effects is not None:
        for r, effects in enumerate(spec.slot_effects):
            slot_table[r, : len(effects)] = effects

    shared = rng.permutation(n)
    missing_reviewer = (
        int(rng.integers(0, n)) if rng.random() < spec.missing_review_rate else None
    )
    scores: dict[str, dict[str, float | None]] = {}
    positions: dict[str, dict[str, int]] = {}
    for r, reviewer in enumerate(members):
        shown = [c for c in (shared if spec.shared_order else rng.permutation(n))]
        if not spec.self_review:
            shown = [c for c in shown if c != r]
        positions[reviewer] = {members[c]: slot for slot, c in enumerate(shown)}
        if r == missing_reviewer:
            continue
        given: dict[str, float | None] = {}
        for slot, c in enumerate(shown):
            sd = spec.noise_sd if noise is None else noise[r]
            raw = (
                spec.base
                + spec.quality_scale * quality[c]
                + leniency[r]
                + slot_table[r, slot]
                + verbosity[r] * length_z[c]
                + (self_bias[r] if r == c else 0.0)
                + sd * rng.standard_normal()
            )
            score = float(np.rint(np.clip(raw, *SCORE_SCALE)))
            given[members[c]] = None if rng.random() < spec.missing_score_rate else score
        scores[reviewer] = given
    start = datetime(2026, 1, 5, tzinfo=UTC)
    return GeneratedSession(
        session_id=f"indep-{session_index:06d}",
        timestamp=(start + timedelta(hours=session_index)).isoformat().replace("+00:00", "Z"),
        stage1_responses=texts,
        stage2_scores=scores,
        position_mapping=positions,
        quality={name: float(q) for name, q in zip(members, quality, strict=True)},
        words={name: int(w) for name, w in zip(members, words, strict=True)},
        is_missing_review={name: i == missing_reviewer for i, name in enumerate(members)},
    )


def generate_sessions(spec: CouncilSpec, n_sessions: int, seed: int) -> list[GeneratedSession]:
    rng = np.random.default_rng(seed)
    return [generate_session(spec, rng, session_index=i) for i in range(n_sessions)]


def write_store(path: Path, sessions: Sequence[GeneratedSession]) -> int:
    """Write the sessions' records as a JSONL store; returns the number of records."""
    count = 0
    with path.open("w", encoding="utf-8") as handle:
        for session in sessions:
            for record in session.records():
                handle.write(json.dumps(record) + "\n")
                count += 1
    return count
