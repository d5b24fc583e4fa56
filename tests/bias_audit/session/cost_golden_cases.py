"""Seeded sessions whose audit results were saved before the per-session cost work (ADR 0075).

``tests/data/audit_golden/cost_results.json.gz`` holds, for every session below, the
result of ``audit_score_table`` computed by main's code before the audit's repeated work
was removed (``30b677d``). ``test_cost_golden.py`` recomputes them: every number must agree
to 1e-12 relative and every flag, note, name and None must be equal.

The cells cross two generators (``tests/generators/independent_council.py`` and the
simulator), 3, 5 and 9 members, without and with 30 sessions of history, and five kinds of
session: honest, 15% missing cells, biased (a harsh judge, self-preference, a slot effect),
one degenerate judge that gives every answer the same score, and one that gives the
answer in slot A 10 and every other answer 1 ("always A"). The history cells also read
histories whose first judge was quieter (noise SD 0.5 in the history, 2.0 now: the noise
screen and ADR 0071's session-only check both fire). 40 sessions a cell, 60 cells.

The file is compact: per session the result's numbers in a fixed order (the JSON paths
they sit at are in the skeleton) and everything else (flags, names, notes, Nones, ints)
as the skeleton with each float replaced by a marker. Regenerate only when a statistic is
*meant* to change: ``PYTHONPATH=src .venv/bin/python tests/bias_audit/session/cost_golden_cases.py``.
"""

from __future__ import annotations

import gzip
import json
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

GOLDEN_PATH = Path(__file__).resolve().parents[2] / "data" / "audit_golden" / "cost_results.json.gz"
#: sessions a cell; the default test checks every ``QUICK_STRIDE``-th, the slow test all
SESSIONS_PER_CELL = 40
QUICK_STRIDE = 8
N_HISTORY = 30
#: distinct histories a cell (session i reads history i % HISTORY_POOL)
HISTORY_POOL = 4
FLOAT_MARK = "<float>"
GENERATORS = ("independent", "simulator")
SIZES = (3, 5, 9)
KINDS = ("honest", "missing", "biased", "same-score", "always-a")


@dataclass(frozen=True)
class Cell:
    """One generator x size x history x kind; ``seed`` keeps cells independent."""

    generator: str
    n_members: int
    history: bool
    kind: str
    seed: int

    @property
    def name(self) -> str:
        history = "history" if self.history else "no-history"
        return f"{self.generator}-{self.n_members}-{history}-{self.kind}"


def cells() -> list[Cell]:
    """Every cell, in the file's order."""
    found = []
    for generator in GENERATORS:
        for n_members in SIZES:
            for history in (False, True):
                for kind in KINDS:
                    found.append(Cell(generator, n_members, history, kind, 1000 + len(found)))
    return found


def _sds(n_members: int) -> list[float]:
    return np.linspace(0.5, 1.5, n_members).tolist()


def _biases(cell: Cell) -> dict[str, Any]:
    n = cell.n_members
    if cell.kind != "biased":
        return {}
    slots = [[0.0] * n for _ in range(n)]
    slots[1][0] = 1.5
    return {
        "leniency": [-2.0] + [0.0] * (n - 1),
        "self_bias": [0.0, 1.5] + [0.0] * (n - 2),
        "slot_effects": slots,
    }


def _draw(cell: Cell, sds: list[float]) -> Callable[[np.random.Generator], Any]:
    """A function drawing one session's score table for ``cell`` at noise ``sds``."""
    from generators.independent_council import CouncilSpec, generate_session
    from llm_council.bias_audit.session.score_table import score_table_from_mappings

    missing = 0.15 if cell.kind == "missing" else 0.0
    biases = _biases(cell)
    if cell.generator == "independent":
        spec = CouncilSpec(
            n_members=cell.n_members, noise_sds=sds, missing_score_rate=missing, **biases
        )

        def draw_independent(rng: np.random.Generator) -> Any:
            session = generate_session(spec, rng)
            return score_table_from_mappings(
                session.stage1_responses, session.stage2_scores, session.position_mapping
            )

        return draw_independent
    from llm_council.simulation.profile import SimulatedProfile
    from llm_council.simulation.simulated_records import simulate_record_columns

    n = cell.n_members
    profiles = [
        SimulatedProfile(
            noise_sd=sd,
            leniency=float(biases.get("leniency", [0.0] * n)[index]),
            self_preference=float(biases.get("self_bias", [0.0] * n)[index]),
            position_effects=tuple(biases.get("slot_effects", [()] * n)[index]),
        )
        for index, sd in enumerate(sds)
    ]
    members = tuple(f"sim-{index}" for index in range(n))

    def draw_simulated(rng: np.random.Generator) -> Any:
        columns = simulate_record_columns(profiles, 1, rng, missing_score_rate=missing)
        return _table_from_columns(columns, members)

    return draw_simulated


def _table_from_columns(columns: Any, members: tuple[str, ...]) -> Any:
    from llm_council.bias_audit.session.score_table import ScoreTable

    n = len(members)
    scores = np.full((n, n), np.nan)
    positions = np.full((n, n), -1, dtype=np.intp)
    is_self = np.zeros((n, n), dtype=bool)
    reviewer, model = columns.reviewer_index, columns.model_index
    scores[reviewer, model] = columns.score
    positions[reviewer, model] = columns.position
    is_self[reviewer, model] = columns.is_self_review
    words, chars = np.zeros(n), np.zeros(n)
    words[model] = columns.length_words
    chars[model] = columns.length_chars
    return ScoreTable(members, members, scores, positions, is_self, chars, words)


def _degenerate(table: Any, kind: str) -> Any:
    """Judge 0 made degenerate: the same score everywhere, or slot A 10 and the rest 1."""
    if kind not in ("same-score", "always-a"):
        return table
    scores = table.scores.copy()
    given = ~np.isnan(scores[0])
    if kind == "same-score":
        scores[0, given] = 7.0
    else:
        scores[0, given] = np.where(table.positions[0, given] == 0, 10.0, 1.0)
    return replace(table, scores=scores)


def _profiles(table: Any) -> Any:
    """The session's contribution to its reviewers' profiles (the store's own sums)."""
    from llm_council.bias_audit.records.reviewer_profiles import session_profiles

    rows, columns = np.nonzero(~np.isnan(table.scores) & ~table.is_self)
    return session_profiles(
        (
            table.reviewers[r],
            table.candidates[c],
            float(table.scores[r, c]),
            int(table.positions[r, c]) if table.positions[r, c] >= 0 else None,
        )
        for r, c in zip(rows.tolist(), columns.tolist(), strict=True)
    )


def _histories(cell: Cell, rng: np.random.Generator) -> list[Any]:
    """``HISTORY_POOL`` histories of ``N_HISTORY`` sessions; odd ones with judge 0 quieter."""
    from llm_council.bias_audit.records.reviewer_profiles import merge_profiles

    histories = []
    for index in range(HISTORY_POOL):
        sds = _sds(cell.n_members)
        if index % 2:
            sds = [0.5] + sds[1:]
        draw = _draw(replace(cell, kind="honest"), sds)
        history: Any = {}
        for _ in range(N_HISTORY):
            history = merge_profiles(history, _profiles(draw(rng)))
        histories.append(history)
    return histories


def cell_sessions(cell: Cell) -> Iterator[tuple[int, Any, Any]]:
    """``(index, score table, history or None)`` for each of the cell's sessions."""
    rng = np.random.default_rng(cell.seed)
    histories = _histories(cell, rng) if cell.history else []
    sds = _sds(cell.n_members)
    draw = _draw(cell, sds)
    for index in range(SESSIONS_PER_CELL):
        table = _degenerate(draw(rng), cell.kind)
        history = histories[index % HISTORY_POOL] if histories else None
        yield index, table, history


def audit_json(table: Any, history: Any, index: int) -> dict[str, Any]:
    """The default audit of one session as JSON, without the constant methods text."""
    from llm_council.bias_audit.session.audit import audit_score_table
    from llm_council.bias_audit.session.thresholds import AuditThresholds

    result = audit_score_table(table, AuditThresholds(), permutation_seed=index, history=history)
    dumped = result.model_dump(mode="json")
    dumped.pop("methods")
    return dumped


def split_floats(value: Any, floats: list[float]) -> Any:
    """``value`` with each float replaced by :data:`FLOAT_MARK`, the floats appended in order."""
    if isinstance(value, dict):
        return {key: split_floats(value[key], floats) for key in sorted(value)}
    if isinstance(value, list):
        return [split_floats(item, floats) for item in value]
    if isinstance(value, float):
        floats.append(value)
        return FLOAT_MARK
    return value


def main() -> None:
    entries = []
    for cell in cells():
        for index, table, history in cell_sessions(cell):
            floats: list[float] = []
            skeleton = split_floats(audit_json(table, history, index), floats)
            entries.append(
                {"case": cell.name, "index": index, "skeleton": skeleton, "floats": floats}
            )
        print(cell.name, file=sys.stderr)
    payload = json.dumps(entries, sort_keys=True, separators=(",", ":")).encode("utf-8")
    GOLDEN_PATH.write_bytes(gzip.compress(payload, mtime=0))
    print(f"wrote {len(entries)} audit results to {GOLDEN_PATH}")


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    main()
