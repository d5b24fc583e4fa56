"""A similarity column for the independent generator's sessions, with a known mimicry effect.

Wraps ``independent_council`` (not edited): each (reviewer, candidate) pair gets a
similarity of the candidate's answer to the reviewer's own answer,

    x_rc = clip(0.5 + style_quality * (q_r + q_c) / 2 + pair_sd * e_rc, 0, 1),   e_rc = e_cr,

symmetric like a real similarity, and -- the null that matters -- **correlated with
quality** when ``style_quality > 0``: two good answers resemble each other, so a naive
"score vs similarity" correlation is positive with no mimicry at all. ``mimicry[r]``
then adds ``mimicry[r] * (x_rc - 0.5)`` points to reviewer r's integer score (clipped
to 1-10, then rounded stochastically so the shift survives the integer scale in
expectation). Self-reviews carry no similarity.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from generators.independent_council import SCORE_SCALE, GeneratedSession


@dataclass(frozen=True)
class StyleSpec:
    """How similarity is drawn and how much each reviewer mimics (points per unit)."""

    style_quality: float = 0.1  # similarity per unit of (q_r + q_c) / 2 (q ~ N(0, 1))
    pair_sd: float = 0.08
    mimicry: Sequence[float] | None = None


@dataclass(frozen=True)
class StyledSession:
    session: GeneratedSession
    similarity: dict[str, dict[str, float]]  # reviewer -> candidate -> similarity_to_own


def add_similarity(
    sessions: Sequence[GeneratedSession], spec: StyleSpec, seed: int
) -> list[StyledSession]:
    """Each session with similarities drawn from ``spec`` and scores moved by its mimicry."""
    rng = np.random.default_rng(seed)
    styled = []
    for session in sessions:
        members = list(session.quality)
        n = len(members)
        quality = np.array([session.quality[m] for m in members])
        noise = rng.standard_normal((n, n))
        symmetric = np.triu(noise, 1) + np.triu(noise, 1).T
        x = np.clip(
            0.5
            + spec.style_quality * (quality[:, None] + quality[None, :]) / 2
            + spec.pair_sd * symmetric,
            0.0,
            1.0,
        )
        mimicry = np.zeros(n) if spec.mimicry is None else np.asarray(spec.mimicry, float)
        similarity: dict[str, dict[str, float]] = {}
        scores: dict[str, dict[str, float | None]] = {}
        for r, reviewer in enumerate(members):
            similarity[reviewer] = {
                candidate: float(x[r, c]) for c, candidate in enumerate(members) if c != r
            }
            given = session.stage2_scores.get(reviewer)
            if given is None:
                continue
            moved: dict[str, float | None] = {}
            for candidate, score in given.items():
                c = members.index(candidate)
                if score is None or c == r or mimicry[r] == 0.0:
                    moved[candidate] = score
                else:
                    raw = float(np.clip(score + mimicry[r] * (x[r, c] - 0.5), *SCORE_SCALE))
                    # stochastic rounding keeps the shift's expectation on the integer scale
                    # (plain rounding would erase every shift below half a point)
                    floor = float(np.floor(raw))
                    moved[candidate] = floor + float(rng.random() < raw - floor)
            scores[reviewer] = moved
        styled.append(StyledSession(replace(session, stage2_scores=scores), similarity))
    return styled


def styled_records(styled: StyledSession) -> list[dict[str, Any]]:
    """The session's records with ``similarity_to_own`` (null on self-reviews)."""
    rows = styled.session.records()
    for row in rows:
        row["similarity_to_own"] = styled.similarity.get(row["reviewer_id"], {}).get(
            row["model_id"]
        )
    return rows


def write_styled_store(path: Path, sessions: Sequence[StyledSession]) -> int:
    """A JSONL store of the styled sessions' records; returns the number of records."""
    count = 0
    with path.open("w", encoding="utf-8") as handle:
        for styled in sessions:
            for record in styled_records(styled):
                handle.write(json.dumps(record) + "\n")
                count += 1
    return count


def styled_arrays(sessions: Sequence[StyledSession]) -> dict[str, np.ndarray]:
    """Non-self scored records as arrays for ``mimicry_slopes`` (reviewer = member index)."""
    columns: dict[str, list[float]] = {
        k: [] for k in ("score", "similarity", "log_words", "reviewer", "answer", "session")
    }
    for s, styled in enumerate(sessions):
        members = list(styled.session.quality)
        for r, reviewer in enumerate(members):
            for candidate, score in styled.session.stage2_scores.get(reviewer, {}).items():
                if candidate == reviewer or score is None:
                    continue
                c = members.index(candidate)
                columns["score"].append(score)
                columns["similarity"].append(styled.similarity[reviewer][candidate])
                columns["log_words"].append(float(np.log(styled.session.words[candidate])))
                columns["reviewer"].append(r)
                columns["answer"].append(s * len(members) + c)
                columns["session"].append(s)
    return {name: np.asarray(values) for name, values in columns.items()}
