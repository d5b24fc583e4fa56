"""FastChat MT-bench pairwise judgments (``model_judgment/*_pair.jsonl``) to replay records.

FastChat's ``gen_judgment.py`` judges each pair twice: game 1 shows ``model_1``'s answer
first, game 2 shows ``model_2``'s first, and both winners are ALREADY mapped back to
``model_1`` / ``model_2`` / ``tie`` (``error`` when the verdict could not be parsed).

Field mapping (one foreign row -> the judgments of one of our pairs):

=================  ====================================================================
FastChat           ours
=================  ====================================================================
question_id, turn  ``id`` = ``q<question_id>-t<turn>-<a>-vs-<b>``; ``metadata.question_id``,
                   ``metadata.turn`` (absent ``turn`` = 1)
model_1, model_2   ``metadata.model_a`` / ``model_b``: the two names SORTED, so the same
                   comparison has one id whatever order a file wrote it in
judge              ``[model, prompt_name]``: ``judge`` = model, ``metadata.judge_prompt`` =
                   prompt name (one judge model may use several prompts, e.g. multi-turn)
g1_winner          judgment in the order showing ``model_1`` first: ``ab`` if ``model_1``
                   is ``a``, else ``ba``; winner ``model_1``/``model_2`` -> its label, ``tie``
g2_winner          the same with the other order
``error``          dropped and counted (``metadata.error_games``): an unevaluated game,
                   never a tie; a pair left without an order is reported unevaluated
=================  ====================================================================

A second row for the same (judge, pair) adds its games as repetition 2, 3, ...; the same
judge model with a different prompt name on the same pair is an error (a different prompt
is a different judge, not a repetition). Other fields (``g1_judgment``, ``tstamp``, ...)
are ignored. There is no answer text: ``prompt`` and ``response_a/b`` are empty strings
and ``metadata.answer_text`` is false, unless human judgments with conversations supply it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from llm_council.calibration.importers.pair_key import PairKey, Where, empty_pair_record, pair_key
from llm_council.calibration.importers.result import ImportResult
from llm_council.calibration.importers.tables import Row

SOURCE_FORMAT = "fastchat-pair"
GAME_WINNERS = ("model_1", "model_2", "tie", "error")


def _judge(row: Mapping[str, Any], where: Where) -> tuple[str, str]:
    value = row.get("judge")
    if (
        not isinstance(value, list | tuple)
        or len(value) != 2
        or not all(isinstance(part, str) and part.strip() for part in value)
    ):
        raise where.error(f"field 'judge' must be a [model, prompt_name] list, got {value!r}")
    return value[0], value[1]


def _game_winner(row: Mapping[str, Any], name: str, where: Where) -> str:
    value = row.get(name)
    if value not in GAME_WINNERS:
        raise where.error(f"field '{name}' must be one of {', '.join(GAME_WINNERS)}; got {value!r}")
    return str(value)


def fastchat_pair_records(rows: Iterable[tuple[int, Row]], path: str) -> ImportResult:
    """Replay records from FastChat pairwise judgment rows (see the module docstring)."""
    records: dict[tuple[str, PairKey], dict[str, Any]] = {}
    first_line: dict[tuple[str, PairKey], int] = {}
    rows_seen: dict[tuple[str, PairKey], int] = {}
    counts = {"rows": 0, "games": 0, "error_games_dropped": 0, "repeated_rows": 0}
    for number, row in rows:
        where = Where(path, number)
        counts["rows"] += 1
        key, swapped = pair_key(row, "model_1", "model_2", where)
        judge_model, prompt_name = _judge(row, where)
        games = (_game_winner(row, "g1_winner", where), _game_winner(row, "g2_winner", where))
        record_key = (judge_model, key)
        record = records.get(record_key)
        if record is None:
            record = empty_pair_record(key, SOURCE_FORMAT)
            record["metadata"].update({"judge_prompt": prompt_name, "error_games": 0})
            record.update({"judge": judge_model, "judgments": []})
            records[record_key] = record
            first_line[record_key] = number
            rows_seen[record_key] = 0
        elif record["metadata"]["judge_prompt"] != prompt_name:
            raise where.error(
                f"field 'judge': prompt {prompt_name!r} differs from"
                f" {record['metadata']['judge_prompt']!r} on line {first_line[record_key]}"
                f" for the same judge and pair; a different prompt is not a repetition"
            )
        else:
            counts["repeated_rows"] += 1
        rows_seen[record_key] += 1
        label = {"model_1": "b" if swapped else "a", "model_2": "a" if swapped else "b"}
        orders = ("ba", "ab") if swapped else ("ab", "ba")  # game 1 shows model_1 first
        for order, winner in zip(orders, games, strict=True):
            if winner == "error":
                counts["error_games_dropped"] += 1
                record["metadata"]["error_games"] += 1
                continue
            counts["games"] += 1
            record["judgments"].append(
                {
                    "order": order,
                    "winner": label.get(winner, winner),
                    "repetition": rows_seen[record_key],
                }
            )
    out = tuple(records.values())
    return ImportResult(
        source_format=SOURCE_FORMAT,
        records=out,
        counts={
            **counts,
            "pairs": len(out),
            "judges": len({judge for judge, _ in records}),
            "pairs_without_text": len(out),
        },
    )
