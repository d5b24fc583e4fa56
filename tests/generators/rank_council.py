"""A third council generator, for the tests: karpathy-shaped rankings, independent of
llm_council.simulation and of the audit's own rank-point code.

karpathy/llm-council's backend returns stage 1 as ``[{"model", "response"}]`` and stage 2 as
``[{"model", "ranking", "parsed_ranking": ["Response C", ...]}]``: rankings only, no scores,
and one display order (the members' order) for every reviewer in every session. This
generator draws sessions in those shapes, with the knobs the audit must get right:

- ``order``: ``"fixed"`` (karpathy: member i always at slot i), ``"session"`` (one shuffled
  order per session, shared by its reviewers: the reference design) or ``"reviewer"`` (each
  reviewer its own shuffle: ours);
- per-reviewer judges: ``"honest"`` (ranks by its noisy perception of quality),
  ``"first"`` (always ranks Response A first), ``"last"`` (always ranks Response A last),
  ``"mostly_first"`` (Response A first with probability ``first_rate``, else honest);
- ``self_bias`` and ``favour`` (points added to the perceived quality of its own / one
  other member's answer), ``model_strength`` (per-member mean quality);
- ``truncate_rate``: a review ranks all but its last place (a missing cell);
  ``missing_review_rate``: one reviewer's review is missing;
- ``scores=True``: integer 1-10 scores instead of a ranking (``parsed_ranking`` as the
  reference design's ``{"ranking", "scores"}``), so ties are common.

Rank points are counted here, not by the audit's code: of N shown, 1st gets N, 2nd N-1, ...
(a Borda count). Every bias parameter defaults to zero: the null council.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

LETTERS = "ABCDEFGHIJ"
JUDGES = ("honest", "first", "last", "mostly_first")


@dataclass(frozen=True)
class RankCouncilSpec:
    """What the generator draws; all bias parameters are zero unless set."""

    n_members: int = 4
    order: str = "fixed"  # "fixed" | "session" | "reviewer"
    judges: Sequence[str] | None = None  # per reviewer, one of JUDGES (default: honest)
    first_rate: float = 0.9
    noise_sd: float = 1.0  # perception noise, in SDs of answer quality
    model_strength: Sequence[float] | None = None  # per member, mean quality
    self_bias: Sequence[float] | None = None  # per reviewer
    favour: Mapping[int, tuple[int, float]] | None = None  # reviewer -> (member, points)
    truncate_rate: float = 0.0
    missing_review_rate: float = 0.0
    scores: bool = False
    member_prefix: str = "vendor/model"

    def members(self) -> list[str]:
        return [f"{self.member_prefix}-{index}" for index in range(self.n_members)]

    def per_member(self, values: Sequence[float] | None) -> np.ndarray:
        if values is None:
            return np.zeros(self.n_members)
        array = np.asarray(values, dtype=float)
        if array.shape != (self.n_members,):
            raise ValueError(f"expected {self.n_members} values, got {array.shape}")
        return array


@dataclass(frozen=True)
class RankSession:
    """One session in karpathy's shapes, plus what the records need."""

    session_id: str
    timestamp: str
    stage1: list[dict[str, str]]
    stage2: list[dict[str, Any]]
    label_to_model: dict[str, dict[str, str]]  # per reviewer: {"Response A": model, ...}
    points: dict[str, dict[str, float]]  # per reviewer: {model: rank points or score}

    def shared_label_to_model(self) -> dict[str, str] | None:
        """The one ``label_to_model`` every reviewer saw, or None if they differ."""
        maps = list(self.label_to_model.values())
        return maps[0] if all(m == maps[0] for m in maps) else None

    def records(self) -> list[dict[str, Any]]:
        """One ReviewRecord-shaped dict per (reviewer, candidate shown)."""
        rows: list[dict[str, Any]] = []
        for reviewer, labels in self.label_to_model.items():
            given = self.points.get(reviewer)
            n_shown = len(labels)
            ranked = sorted(given, key=lambda m: -given[m]) if given else []
            for slot, model in enumerate(labels.values()):
                value = None if given is None else given.get(model)
                rows.append(
                    {
                        "schema_version": 2,
                        "session_id": self.session_id,
                        "timestamp": self.timestamp,
                        "reviewer_id": reviewer,
                        "model_id": model,
                        "position": slot,
                        "n_candidates": n_shown,
                        "response_length_chars": 60,
                        "response_length_words": 10,
                        "score_value": value,
                        "score_scale": [1.0, 10.0],
                        "rank": None if value is None else ranked.index(model) + 1,
                        "is_self_review": reviewer == model,
                        "council_config_hash": "rank-generator",
                        "query_hash": None,
                        "review_status": "final_ranking" if given is not None else "missing",
                    }
                )
        for row in rows:
            row["session_n_records"] = len(rows)
        return rows


def _order(spec: RankCouncilSpec, rng: np.random.Generator, shared: np.ndarray) -> np.ndarray:
    if spec.order == "fixed":
        return np.arange(spec.n_members)
    if spec.order == "session":
        return shared
    if spec.order == "reviewer":
        return rng.permutation(spec.n_members)
    raise ValueError(f"unknown order {spec.order!r}")


def _ranking(
    judge: str,
    perceived: np.ndarray,
    shown: np.ndarray,
    rng: np.random.Generator,
    first_rate: float,
) -> list[int]:
    """Slots (display indexes) best first."""
    by_value = sorted(range(len(shown)), key=lambda slot: -perceived[shown[slot]])
    if judge == "first" or (judge == "mostly_first" and rng.random() < first_rate):
        return [0] + [slot for slot in by_value if slot != 0]
    if judge == "last":
        return [slot for slot in by_value if slot != 0] + [0]
    if judge in ("honest", "mostly_first"):
        return by_value
    raise ValueError(f"unknown judge {judge!r}")


def generate_session(
    spec: RankCouncilSpec, rng: np.random.Generator, *, session_index: int = 0
) -> RankSession:
    """Draw one session from ``spec`` (see the module docstring)."""
    members = spec.members()
    n = spec.n_members
    judges = list(spec.judges) if spec.judges is not None else ["honest"] * n
    quality = spec.per_member(spec.model_strength) + rng.standard_normal(n)
    self_bias = spec.per_member(spec.self_bias)
    shared = rng.permutation(n)
    missing = int(rng.integers(0, n)) if rng.random() < spec.missing_review_rate else None
    stage1 = [{"model": name, "response": f"answer {session_index} of {name}"} for name in members]
    stage2: list[dict[str, Any]] = []
    maps: dict[str, dict[str, str]] = {}
    points: dict[str, dict[str, float]] = {}
    for r, reviewer in enumerate(members):
        shown = _order(spec, rng, shared)
        labels = {f"Response {LETTERS[slot]}": members[c] for slot, c in enumerate(shown)}
        maps[reviewer] = labels
        perceived = quality + spec.noise_sd * rng.standard_normal(n)
        perceived[r] += self_bias[r]
        if spec.favour and r in spec.favour:
            member, bonus = spec.favour[r]
            perceived[member] += bonus
        if r == missing:
            continue
        if spec.scores:
            raw = np.clip(np.rint(6.0 + 1.5 * perceived[shown]), 1, 10)
            if judges[r] != "honest":
                raw[0] = 10.0 if judges[r] in ("first", "mostly_first") else 1.0
            given = {members[c]: float(raw[slot]) for slot, c in enumerate(shown)}
            order_slots = sorted(range(n), key=lambda slot: -raw[slot])
            label_scores = {f"Response {LETTERS[s]}": float(raw[s]) for s in range(n)}
            parsed: Any = {
                "ranking": [f"Response {LETTERS[s]}" for s in order_slots],
                "scores": label_scores,
            }
        else:
            order_slots = _ranking(judges[r], perceived, shown, rng, spec.first_rate)
            if rng.random() < spec.truncate_rate:
                order_slots = order_slots[:-1]
            given = {members[shown[s]]: float(n - place) for place, s in enumerate(order_slots)}
            parsed = [f"Response {LETTERS[s]}" for s in order_slots]
        ranking_lines = [f"{i + 1}. Response {LETTERS[s]}" for i, s in enumerate(order_slots)]
        stage2.append(
            {
                "model": reviewer,
                "ranking": "Evaluation...\n\nFINAL RANKING:\n" + "\n".join(ranking_lines),
                "parsed_ranking": parsed,
            }
        )
        points[reviewer] = given
    start = datetime(2026, 2, 1, tzinfo=UTC)
    return RankSession(
        session_id=f"rank-{session_index:06d}",
        timestamp=(start + timedelta(hours=session_index)).isoformat().replace("+00:00", "Z"),
        stage1=stage1,
        stage2=stage2,
        label_to_model=maps,
        points=points,
    )


def generate_sessions(spec: RankCouncilSpec, n_sessions: int, seed: int) -> list[RankSession]:
    rng = np.random.default_rng(seed)
    return [generate_session(spec, rng, session_index=i) for i in range(n_sessions)]


def write_store(path: Path, sessions: Sequence[RankSession]) -> int:
    """Write the sessions' records as a JSONL store; returns the number of records."""
    count = 0
    with path.open("w", encoding="utf-8") as handle:
        for session in sessions:
            for record in session.records():
                handle.write(json.dumps(record) + "\n")
                count += 1
    return count
