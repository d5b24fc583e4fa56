"""Write the PRD Vicuna80 pairwise reviews as bias-audit records (MIT data, see LICENSE here).

Usage:
    python tests/data/prd_vicuna80/build_sessions.py SOURCE_DIR OUT.jsonl.gz

One session per (question, ordered pair): ``answer_<first>-vs-answer_<second>`` shows
``first`` at position 0 ("Assistant 1") and ``second`` at position 1, and every reviewer of
that file saw that same order (the reference design's shared order; the reverse order is a
different session). Each reviewer's verdict (source ``score`` 1 = first shown wins, 2 =
second wins, 3 = tie) becomes two records on a [0, 1] scale: 1 for the winner, 0 for the
loser, 0.5 each for a tie; rank 1/2 for winner/loser, none for a tie. ``is_self_review``
is reviewer == candidate. Lengths are counted from the generations. gpt35's duplicate
``answer-gpt35-vs-answer-gpt4-...`` files (hyphens) are skipped, as in build_fixture.py.

The script prints the direct recount the report must reproduce (see test_prd_sessions.py).
"""

from __future__ import annotations

import argparse
import gzip
import json
from collections import defaultdict
from pathlib import Path

MODELS = ("bard", "claude", "gpt35", "gpt4", "vicuna-13b")
REVIEWERS = MODELS
SCORE_SCALE = (0.0, 1.0)


def _read_jsonl(path: Path) -> list[dict]:
    return [
        json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()
    ]


def _ratings_file(source: Path, reviewer: str, first: str, second: str) -> Path | None:
    stem = f"answer_{first}-vs-answer_{second}-{reviewer}-reviewer"
    candidates = sorted((source / f"ratings-{reviewer}").glob(f"{stem}*.jsonl"))
    if len(candidates) > 1:
        raise SystemExit(f"expected one file for {stem}, found {len(candidates)}")
    return candidates[0] if candidates else None


def _scores(verdict: int) -> tuple[float, float, int | None, int | None]:
    """Source verdict -> (score first, score second, rank first, rank second)."""
    if verdict == 1:
        return 1.0, 0.0, 1, 2
    if verdict == 2:
        return 0.0, 1.0, 2, 1
    if verdict == 3:
        return 0.5, 0.5, None, None
    raise SystemExit(f"unknown verdict score {verdict!r}")


def build_records(source: Path) -> list[dict]:
    answers: dict[tuple[str, int], str] = {}
    for model in MODELS:
        for row in _read_jsonl(source / "generations" / f"answer_{model}.jsonl"):
            answers[(model, int(row["question_id"]))] = row["text"]
    records = []
    for first in MODELS:
        for second in MODELS:
            if first == second:
                continue
            for reviewer in REVIEWERS:
                path = _ratings_file(source, reviewer, first, second)
                if path is None:
                    continue
                for row in _read_jsonl(path):
                    question = int(row["question_id"])
                    session_id = f"q{question:02d}-{first}-vs-{second}"
                    score_first, score_second, rank_first, rank_second = _scores(row["score"])
                    for position, (model, score, rank) in enumerate(
                        ((first, score_first, rank_first), (second, score_second, rank_second))
                    ):
                        text = answers[(model, question)]
                        records.append(
                            {
                                "schema_version": 1,
                                "session_id": session_id,
                                "timestamp": f"2023-05-{1 + question % 28:02d}T12:00:00Z",
                                "reviewer_id": reviewer,
                                "model_id": model,
                                "position": position,
                                "n_candidates": 2,
                                "response_length_chars": len(text),
                                "response_length_words": len(text.split()),
                                "score_value": score,
                                "score_scale": list(SCORE_SCALE),
                                "rank": rank,
                                "is_self_review": reviewer == model,
                                "council_config_hash": "prd-vicuna80",
                                "query_hash": None,
                            }
                        )
    records.sort(key=lambda r: (r["session_id"], r["reviewer_id"], r["position"]))
    return records


def recount(records: list[dict]) -> dict[str, float]:
    """Mean score at slot A minus 0.5 (= half of A minus B), council-wide and per reviewer."""
    totals: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
    for record in records:
        if record["position"] != 0:
            continue
        for key in ("council", record["reviewer_id"]):
            totals[key][0] += record["score_value"]
            totals[key][1] += 1
    return {key: total / count - 0.5 for key, (total, count) in sorted(totals.items())}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source", type=Path)
    parser.add_argument("out", type=Path)
    args = parser.parse_args()
    records = build_records(args.source)
    with gzip.open(args.out, "wt", encoding="utf-8", compresslevel=9) as handle:
        for record in records:
            handle.write(json.dumps(record, separators=(",", ":")) + "\n")
    sessions = len({record["session_id"] for record in records})
    print(f"{len(records)} records, {sessions} sessions -> {args.out}")
    for key, value in recount(records).items():
        print(f"  slot A effect {key:<12} {value:+.4f}")


if __name__ == "__main__":
    main()
