"""MT-bench human judgments to human labels: one majority label per pair, agreement reported.

Field mapping (one row = one annotator's verdict on one pair and turn):

=======================  ==============================================================
MT-bench human           ours
=======================  ==============================================================
question_id, turn        ``id`` as for FastChat (``q<question_id>-t<turn>-<a>-vs-<b>``)
model_a, model_b         sorted into ``metadata.model_a`` / ``model_b``
winner                   ``model_a`` / ``model_b`` -> that model's label; ``tie`` and
                         ``tie (bothbad)`` -> ``tie``
judge                    the annotator id: ``human_labels[i].annotator``
conversation_a/_b        optional ([{"role", "content"}, ...]): ``prompt`` = the turn-th
                         user message, ``response_a/b`` = each model's turn-th reply
=======================  ==============================================================

Several annotators on one pair become ``human_label`` = the strict plurality of their
labels; when the top labels tie there is no label (counted, never guessed). The per-pair
agreement is the share of annotators who gave the majority label (``metadata.human_agreement``,
undefined without a majority); the import summary reports its mean over pairs with two or
more annotators and how many were unanimous.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from llm_council.calibration.importers.pair_key import PairKey, Where, empty_pair_record, pair_key
from llm_council.calibration.importers.result import ImportResult
from llm_council.calibration.importers.tables import Row
from llm_council.calibration.majority import strict_plurality

SOURCE_FORMAT = "mtbench-human"
HUMAN_WINNERS = ("model_a", "model_b", "tie", "tie (bothbad)")


@dataclass(frozen=True)
class HumanVoteRow:
    """One annotator's label in OUR labels (``a`` = the alphabetically first model)."""

    label: str
    annotator: str
    line: int


@dataclass(frozen=True)
class PairText:
    prompt: str
    response_a: str
    response_b: str


@dataclass(frozen=True)
class HumanJudgments:
    """All votes per pair, the answer text where the rows carried it, and the row count."""

    votes: Mapping[PairKey, tuple[HumanVoteRow, ...]]
    texts: Mapping[PairKey, PairText]
    rows: int


def _turn_message(row: Mapping[str, Any], name: str, role: str, turn: int, where: Where) -> str:
    conversation = row.get(name)
    messages = (
        [m for m in conversation if isinstance(m, dict) and m.get("role") == role]
        if isinstance(conversation, list)
        else []
    )
    if len(messages) < turn or not isinstance(messages[turn - 1].get("content"), str):
        raise where.error(f"field '{name}' has no {role} message {turn} with string 'content'")
    return str(messages[turn - 1]["content"])


def _text(row: Mapping[str, Any], key: PairKey, swapped: bool, where: Where) -> PairText | None:
    if row.get("conversation_a") is None and row.get("conversation_b") is None:
        return None
    first = _turn_message(row, "conversation_a", "assistant", key.turn, where)
    second = _turn_message(row, "conversation_b", "assistant", key.turn, where)
    prompt = _turn_message(row, "conversation_a", "user", key.turn, where)
    return PairText(prompt, *((second, first) if swapped else (first, second)))


def read_human_judgments(rows: Iterable[tuple[int, Row]], path: str) -> HumanJudgments:
    """Group annotator rows by pair, labels mapped to ours (see the module docstring)."""
    votes: dict[PairKey, list[HumanVoteRow]] = {}
    texts: dict[PairKey, PairText] = {}
    count = 0
    for number, row in rows:
        where = Where(path, number)
        count += 1
        key, swapped = pair_key(row, "model_a", "model_b", where)
        winner = row.get("winner")
        if winner not in HUMAN_WINNERS:
            raise where.error(
                f"field 'winner' must be one of {', '.join(HUMAN_WINNERS)}; got {winner!r}"
            )
        annotator = row.get("judge")
        if not isinstance(annotator, str) or not annotator.strip():
            raise where.error(f"field 'judge' must be the annotator id string, got {annotator!r}")
        if winner.startswith("tie"):
            label = "tie"
        else:
            label = "a" if (winner == "model_a") != swapped else "b"
        votes.setdefault(key, []).append(HumanVoteRow(label, annotator, number))
        text = _text(row, key, swapped, where)
        if text is not None:
            texts.setdefault(key, text)
    return HumanJudgments(
        votes={key: tuple(rows_) for key, rows_ in votes.items()}, texts=texts, rows=count
    )


def label_fields(votes: Sequence[HumanVoteRow]) -> dict[str, Any]:
    """``human_label`` (when a majority exists), ``human_labels`` and the agreement metadata."""
    label = strict_plurality([vote.label for vote in votes])
    fields: dict[str, Any] = {
        "human_labels": [{"label": v.label, "annotator": v.annotator} for v in votes]
    }
    if label is not None:
        fields["human_label"] = label
    agreement = sum(v.label == label for v in votes) / len(votes) if label is not None else None
    fields["metadata"] = {"human_annotators": len(votes), "human_agreement": agreement}
    return fields


def human_counts(judgments: HumanJudgments) -> dict[str, Any]:
    """The human half of the import summary."""
    labels = {
        key: strict_plurality([v.label for v in votes]) for key, votes in judgments.votes.items()
    }
    multi = [key for key, votes in judgments.votes.items() if len(votes) >= 2]
    shares = [
        sum(v.label == labels[key] for v in judgments.votes[key]) / len(judgments.votes[key])
        for key in multi
        if labels[key] is not None
    ]
    return {
        "human_rows": judgments.rows,
        "human_pairs": len(judgments.votes),
        "human_labelled": sum(label is not None for label in labels.values()),
        "human_no_majority": sum(label is None for label in labels.values()),
        "human_multi_annotator": len(multi),
        # each row is a vote; an annotator voting twice on a pair counts twice (said here)
        "human_repeat_votes": sum(
            len(votes) - len({v.annotator for v in votes}) for votes in judgments.votes.values()
        ),
        "human_unanimous": sum(share == 1.0 for share in shares),
        # pairs with tied annotators have no majority and are counted above, not averaged
        "human_agreement_mean": sum(shares) / len(shares) if shares else None,
    }


def _apply(record: dict[str, Any], votes: Sequence[HumanVoteRow], text: PairText | None) -> None:
    fields = label_fields(votes)
    record["metadata"].update(fields.pop("metadata"))
    record.update(fields)
    if text is not None:
        record.update(prompt=text.prompt, response_a=text.response_a, response_b=text.response_b)
        record["metadata"]["answer_text"] = True


def human_pair_records(judgments: HumanJudgments) -> ImportResult:
    """One labelled pair per human-judged comparison (no judge, no verdicts)."""
    records = []
    for key, votes in judgments.votes.items():
        record = empty_pair_record(key, SOURCE_FORMAT)
        _apply(record, votes, judgments.texts.get(key))
        records.append(record)
    counts = human_counts(judgments)
    counts.update(
        rows=judgments.rows,
        pairs=len(records),
        pairs_without_text=sum(not r["metadata"]["answer_text"] for r in records),
    )
    return ImportResult(SOURCE_FORMAT, tuple(records), counts)


def attach_human_judgments(result: ImportResult, judgments: HumanJudgments) -> ImportResult:
    """``result``'s judge records with the human labels (and text) of the same comparison.

    Records are matched on ``metadata`` question_id, turn, model_a and model_b, which both
    MT-bench importers write; every judge of a comparison gets the same labels.
    """
    attached = 0
    matched: set[PairKey] = set()
    records = []
    for original in result.records:
        record = {**original, "metadata": dict(original["metadata"])}
        meta = record["metadata"]
        key = PairKey(
            str(meta.get("question_id")), meta.get("turn", 1), meta["model_a"], meta["model_b"]
        )
        if key in judgments.votes:
            _apply(record, judgments.votes[key], judgments.texts.get(key))
            attached += "human_label" in record
            matched.add(key)
        records.append(record)
    counts = dict(result.counts)
    counts.update(human_counts(judgments))
    counts.update(
        human_pairs_attached=attached,
        human_pairs_unmatched=len(judgments.votes) - len(matched),
        pairs_without_text=sum(not r["metadata"]["answer_text"] for r in records),
    )
    return ImportResult(f"{result.source_format}+{SOURCE_FORMAT}", tuple(records), counts)
