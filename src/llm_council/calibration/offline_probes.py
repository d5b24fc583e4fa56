"""Probes for a judge that runs elsewhere: write the comparisons, read back the verdicts.

``probe --emit DIR`` writes every comparison the probes need that has no verdict yet to
``DIR/calls.jsonl``, one JSON line per call: its ``call_id``, the pair, the probe variant,
the display order, the two texts as shown (``first``, ``second``) and the exact system and
user prompt our own judge would get. The user's judge answers each with a line
``{"call_id": ..., "winner": "first" | "second" | "tie"}`` (or ``"reply": <the judge's
text>``, parsed as a live reply is); ``probe --replay FILE`` reads those and computes the
same statistics and flags as a live run.

Two rounds, because two probes choose what to perturb from the unperturbed verdicts: the
authority probe plants authority on the baseline loser, and the CALM probes plant on a
side chosen from the baseline. The first ``--emit`` writes the position-swap baseline and
the probes that do not depend on it; run again with ``--replay`` (the verdicts so far) and
``--emit`` to get the rest. A run with no call missing prints the report.

A ``call_id`` is SHA-256 of the pair id, variant, order, repetition and the texts shown,
so a verdict can never be applied to other texts than the ones it was given for.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from llm_council.calibration.judge_prompt import JUDGE_SYSTEM, build_judge_prompt, parse_verdict
from llm_council.calibration.pairs import Pair, distinct_questions, slot_to_original
from llm_council.calibration.probes import run_probes
from llm_council.calibration.report import ReportOptions, compute_report
from llm_council.calibration.runner import (
    CallResult,
    JudgeCall,
    outcomes_from_results,
    position_swap_calls,
)
from llm_council.errors import InputError
from llm_council.infra.atomic_files import write_text_atomically
from llm_council.prompts import new_nonce

CALLS_FILE = "calls.jsonl"
SLOT_WINNERS = ("first", "second", "tie")
#: a verdicts file larger than this is refused (a judge's verdict line is well under 1 KiB)
MAX_VERDICTS_BYTES = 256 * 1024 * 1024


def call_id(call: JudgeCall) -> str:
    """The id that binds a verdict to exactly this comparison (module docstring)."""
    first, second = call.texts_in_display_order()
    content = "\x00".join(
        (
            call.pair.pair_id,
            call.variant,
            call.order,
            str(call.repetition),
            call.pair.prompt,
            first,
            second,
            call.pair.reference_answer or "",
        )
    )
    return hashlib.sha256(content.encode("utf-8")).hexdigest()[:32]


def call_record(call: JudgeCall) -> dict[str, Any]:
    """One line of ``calls.jsonl``."""
    first, second = call.texts_in_display_order()
    return {
        "call_id": call_id(call),
        "pair_id": call.pair.pair_id,
        "variant": call.variant,
        "order": call.order,
        "repetition": call.repetition,
        "question": call.pair.prompt,
        "first": first,
        "second": second,
        "system": JUDGE_SYSTEM,
        "prompt": build_judge_prompt(
            call.pair.prompt, first, second, new_nonce(), call.pair.reference_answer
        ),
        "answer_with": {"call_id": "<this call_id>", "winner": "first | second | tie"},
    }


@dataclass
class OfflineRunner:
    """Answers :class:`JudgeCall` s from a verdicts file; records the calls it cannot.

    Has the ``run`` method of :class:`~llm_council.calibration.runner.JudgeRunner`, so the
    probes run on it unchanged.
    """

    verdicts: Mapping[str, str]
    missing: dict[str, JudgeCall] = field(default_factory=dict)
    used: set[str] = field(default_factory=set)
    calls_made: int = 0
    calls_from_checkpoint: int = 0
    calls_reused_in_run: int = 0

    async def run(self, calls: Sequence[JudgeCall]) -> list[CallResult]:
        results = []
        for call in calls:
            identity = call_id(call)
            slot = self.verdicts.get(identity)
            if slot is None:
                self.missing.setdefault(identity, call)
                results.append(CallResult(call, None, "not judged yet (see --emit)", False))
                continue
            self.used.add(identity)
            winner = slot_to_original(call.order, slot)  # type: ignore[arg-type]
            results.append(CallResult(call, winner, None, True))
        return results


def _slot(record: Mapping[str, Any], where: tuple[str, int]) -> str:
    winner = record.get("winner")
    if winner is not None:
        if winner not in SLOT_WINNERS:
            raise InputError(
                f"field 'winner' must be one of {', '.join(SLOT_WINNERS)}, got {winner!r}",
                path=where[0],
                line=where[1],
            )
        return str(winner)
    reply = record.get("reply")
    if not isinstance(reply, str):
        raise InputError("needs 'winner' or 'reply'", path=where[0], line=where[1])
    slot = parse_verdict(reply)
    if slot is None:
        raise InputError("no verdict line in 'reply'", path=where[0], line=where[1])
    return slot


def read_verdicts(path: Path) -> dict[str, str]:
    """``call_id -> first | second | tie`` from a verdicts JSONL file (module docstring);
    a bad line is one InputError naming the file and line; a repeated id must agree."""
    if not path.is_file():
        raise InputError("not a regular file", path=str(path))
    if path.stat().st_size > MAX_VERDICTS_BYTES:
        raise InputError(f"larger than {MAX_VERDICTS_BYTES} bytes", path=str(path))
    verdicts: dict[str, str] = {}
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as error:
        raise InputError(f"cannot read: {error}", path=str(path)) from None
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = (str(path), number)
        try:
            record = json.loads(line)
        except (ValueError, RecursionError):
            raise InputError("not a JSON object", path=where[0], line=number) from None
        if not isinstance(record, dict) or not isinstance(record.get("call_id"), str):
            raise InputError("needs a string 'call_id'", path=where[0], line=number)
        slot = _slot(record, where)
        earlier = verdicts.setdefault(record["call_id"], slot)
        if earlier != slot:
            raise InputError(
                f"call_id {record['call_id']!r} has two different verdicts",
                path=where[0],
                line=number,
            )
    return verdicts


def write_calls(directory: Path, calls: Sequence[JudgeCall]) -> Path:
    """``directory/calls.jsonl`` with every call (whole or not at all)."""
    target = directory / CALLS_FILE
    text = "".join(json.dumps(call_record(call), ensure_ascii=False) + "\n" for call in calls)
    write_text_atomically(target, text)
    return target


@dataclass(frozen=True)
class OfflineProbeRun:
    """The report when every call had a verdict, else the calls still to judge."""

    report: dict[str, Any] | None
    missing: list[JudgeCall]
    verdicts_used: int


def offline_probe_run(
    pairs: Sequence[Pair],
    probes: Sequence[str],
    verdicts: Mapping[str, str],
    *,
    judge: str,
    source: str = "<pairs>",
) -> OfflineProbeRun:
    """The probes of a live run, answered from ``verdicts`` (module docstring).

    ``judge`` names the judge in the report and in the identity probe's sign-off.
    """
    pairs = distinct_questions(pairs, path=source)
    runner = OfflineRunner(verdicts)

    async def both_rounds() -> tuple[list[CallResult], dict[str, Any]]:
        results = await runner.run(position_swap_calls(pairs, 1))
        summaries = await run_probes(runner, pairs, probes, judge)  # type: ignore[arg-type]
        return results, summaries

    results, summaries = asyncio.run(both_rounds())
    if runner.missing:
        return OfflineProbeRun(None, list(runner.missing.values()), len(runner.used))
    extra = {
        "probes": summaries,
        "bias_check_pairs": len(pairs),
        "verdicts_file_calls": len(runner.used),
    }
    report = compute_report(
        outcomes_from_results(pairs, results), ReportOptions(judge=judge, extra=extra)
    )
    return OfflineProbeRun(report, [], len(runner.used))
