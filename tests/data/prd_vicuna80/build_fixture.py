"""Build the PRD Vicuna80 replay fixture from the shared data set (MIT, see LICENSE here).

Usage:
    python tests/data/prd_vicuna80/build_fixture.py SOURCE_DIR OUT.jsonl [--reviewers gpt4,claude]
        [--only-human-labelled] [--max-question-id N] [--with-votes] [--without-text]
        [--min-votes N]

The human-ceiling fixture (``replay_votes_5_judges.jsonl``) is built with
``--only-human-labelled --with-votes --without-text --min-votes 2``.

One replay record per (reviewer, question, unordered model pair): ``response_a`` is the
answer of the model that comes first in MODELS, ``judgments`` holds the reviewer's verdict
with that answer shown first (order ``ab``, from ``answer_<a>-vs-answer_<b>``) and shown
second (order ``ba``, from ``answer_<b>-vs-answer_<a>``). The source ``score`` (1 = first
shown wins, 2 = second shown wins, 3 = tie) is mapped to the display slot and then back to
the original labels. ``human_label`` is the strict plurality of the human votes in both
display orders (mapped the same way); when the top count is shared there is no label.
gpt35's two re-run files named ``answer-gpt35-vs-answer-gpt4-...`` (hyphens) are skipped:
the underscore-named files are the ones matching every other reviewer's naming.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

MODELS = ("bard", "claude", "gpt35", "gpt4", "vicuna-13b")
REVIEWERS = ("bard", "claude", "gpt35", "gpt4", "vicuna-13b")


def _read_jsonl(path: Path) -> list[dict]:
    return [
        json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()
    ]


def _ratings_file(source: Path, reviewer: str, first: str, second: str) -> Path:
    directory = source / f"ratings-{reviewer}"
    stem = f"answer_{first}-vs-answer_{second}-{reviewer}-reviewer"
    candidates = [p for p in directory.glob(f"{stem}*.jsonl")]
    if len(candidates) != 1:
        raise SystemExit(f"expected one file for {stem} in {directory}, found {len(candidates)}")
    return candidates[0]


def _winner(score: int, a_shown_first: bool) -> str:
    """score 1/2/3 = first/second/tie -> original label a/b/tie."""
    if score == 3:
        return "tie"
    first_won = score == 1
    return "a" if first_won == a_shown_first else "b"


def human_votes(source: Path) -> dict[tuple[int, str, str], list[str]]:
    """Every human vote per (question, model_a, model_b), mapped to the original labels."""
    votes: dict[tuple[int, str, str], list[str]] = {}
    for index, model_a in enumerate(MODELS):
        for model_b in MODELS[index + 1 :]:
            for first, second, a_first in ((model_a, model_b, True), (model_b, model_a, False)):
                path = (
                    source
                    / "ratings-human"
                    / f"answer_{first}-vs-answer_{second}-human-reviewer_threeclass.jsonl"
                )
                if not path.exists():
                    continue
                for row in _read_jsonl(path):
                    key = (row["question_id"], model_a, model_b)
                    votes.setdefault(key, []).append(_winner(row["score"], a_first))
    return votes


def human_majorities(source: Path) -> dict[tuple[int, str, str], str]:
    labels = {}
    for key, given in human_votes(source).items():
        counter = Counter(given)
        ranked = counter.most_common()
        if len(ranked) == 1 or ranked[0][1] > ranked[1][1]:
            labels[key] = ranked[0][0]
    return labels


def build_records(
    source: Path,
    reviewers: tuple[str, ...],
    only_human_labelled: bool,
    max_question_id: int | None = None,
    with_votes: bool = False,
    without_text: bool = False,
    min_votes: int = 0,
) -> list[dict]:
    question_rows = _read_jsonl(source / "prompts" / "vicuna_questions.jsonl")
    questions = {
        row["question_id"]: row
        for row in question_rows
        if max_question_id is None or row["question_id"] <= max_question_id
    }
    answers = {}
    for model in MODELS:
        for row in _read_jsonl(source / "generations" / f"answer_{model}.jsonl"):
            answers[row["answer_id"]] = (model, row["question_id"], row["text"])
    humans = human_majorities(source)
    votes = human_votes(source) if with_votes or min_votes else {}
    records = []
    for reviewer in reviewers:
        for index, model_a in enumerate(MODELS):
            for model_b in MODELS[index + 1 :]:
                forward = {
                    r["question_id"]: r
                    for r in _read_jsonl(_ratings_file(source, reviewer, model_a, model_b))
                }
                backward = {
                    r["question_id"]: r
                    for r in _read_jsonl(_ratings_file(source, reviewer, model_b, model_a))
                }
                for question_id in sorted(questions):
                    key = (question_id, model_a, model_b)
                    if only_human_labelled and key not in humans:
                        continue
                    if len(votes.get(key, ())) < min_votes:
                        continue
                    ab, ba = forward.get(question_id), backward.get(question_id)
                    text_a = text_b = None
                    for row, first_model in ((ab, model_a), (ba, model_b)):
                        if row is None:
                            continue
                        shown_first, _, first_text = answers[row["answer1_id"]]
                        shown_second, _, second_text = answers[row["answer2_id"]]
                        if shown_first != first_model:
                            raise SystemExit(
                                f"{reviewer} q{question_id}: answer1 is {shown_first}, expected {first_model}"
                            )
                        text_a, text_b = (
                            (first_text, second_text)
                            if first_model == model_a
                            else (second_text, first_text)
                        )
                    judgments = []
                    if ab is not None:
                        judgments.append({"order": "ab", "winner": _winner(ab["score"], True)})
                    if ba is not None:
                        judgments.append({"order": "ba", "winner": _winner(ba["score"], False)})
                    record = {
                        "id": f"q{question_id}-{model_a}-vs-{model_b}",
                        "prompt": questions[question_id]["text"],
                        "response_a": text_a,
                        "response_b": text_b,
                        "metadata": {
                            "model_a": model_a,
                            "model_b": model_b,
                            "category": questions[question_id]["category"],
                        },
                        "judge": reviewer,
                        "judgments": judgments,
                    }
                    if key in humans:
                        record["human_label"] = humans[key]
                    if key in votes:
                        record["human_labels"] = votes[key]
                    if without_text:
                        record["response_a"] = record["response_b"] = ""
                    records.append(record)
    return records


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--reviewers", default=",".join(REVIEWERS))
    parser.add_argument("--only-human-labelled", action="store_true")
    parser.add_argument("--max-question-id", type=int, default=None)
    parser.add_argument("--with-votes", action="store_true", help="every human vote too")
    parser.add_argument("--without-text", action="store_true", help="answers left empty")
    parser.add_argument("--min-votes", type=int, default=0, help="pairs with this many votes")
    args = parser.parse_args()
    records = build_records(
        args.source,
        tuple(args.reviewers.split(",")),
        args.only_human_labelled,
        args.max_question_id,
        args.with_votes,
        args.without_text,
        args.min_votes,
    )
    args.out.write_text(
        "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8"
    )
    print(f"wrote {len(records)} records to {args.out}")


if __name__ == "__main__":
    main()
