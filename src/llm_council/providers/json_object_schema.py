"""The verdict schema as llama.cpp's server can enforce it: ``json_object`` with a grammar.

llama.cpp's OpenAI-compatible server (``llama_cpp.server``, ``llama-server``) takes
``response_format={"type": "json_object", "schema": SCHEMA}`` and turns the schema into a
sampling grammar, not ``json_schema``. Its grammar honours ``enum``, ``required``,
``properties`` and string ``maxLength``, but ignores ``minimum``/``maximum`` (scores of 98
and 326875190454856 came back on a 1-10 scale) and cannot make an array a permutation
(rankings repeated labels). So for the stage-2 verdict (ADR 0041):

- each score is an ``enum`` of the scale's whole numbers, which the grammar enforces;
- no ``ranking`` is asked for: the parser derives it from the scores
  (:func:`llm_council.ranking_parser.parse_review`), and leaves it empty when scores tie,
  rather than guess an order;
- the rationale is capped (``maxLength``), so a small ``max_tokens`` still closes the object,
  and written as plain characters (:func:`rationale_schema`): llama-cpp-python's grammar for
  a JSON string lets a raw newline or tab through, which JSON forbids, so such verdicts
  were "not valid JSON" to the parser (ADR 0065, amendment of 27 November 2026).

Any other schema (not the verdict's) is sent as it is.

The pairwise judge of ``calibrate`` and ``probe`` asks for free text ending in a line
``Verdict: Response A`` / ``Verdict: Response B`` / ``Verdict: tie``
(:func:`llm_council.calibration.judge_prompt.format_verdict`) and sends no schema. A
135M model never wrote that line (it copied the answers on until ``max_tokens``), so for
llama.cpp a ``pairwise_judge`` request carries :data:`PAIRWISE_VERDICT_GRAMMAR` in
llama.cpp's own ``grammar`` field: one line of reasoning, then the verdict line. The
grammar fixes the format only; which answer wins is still the model's choice.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from llm_council.errors import ConfigError

#: the widest scale whose whole numbers are spelt out as an enum
MAX_ENUM_STEPS = 101
#: the rationale's cap in characters (about 40 tokens of SmolLM2's tokenizer); a member's
#: ``rationale_max_chars`` option sets its own (ADR 0065)
RATIONALE_MAX_CHARS = 160
#: the widest rationale cap the option accepts
MAX_RATIONALE_CHARS = 2_000
DEFAULT_SCORE_SCALE = (1.0, 10.0)


def score_enum(scale: object) -> list[int]:
    """The whole numbers of ``scale`` (``[low, high]``), for the ``score_scale`` option.

    A :class:`ConfigError` quoting the value when it is not two whole numbers ``low < high``
    at most :data:`MAX_ENUM_STEPS` apart, because only such a scale can be an enum.
    """
    problem = f"option 'score_scale' must be [low, high], whole numbers, got {str(scale)[:40]!r}"
    if not isinstance(scale, list | tuple) or len(scale) != 2:
        raise ConfigError(problem)
    bounds: list[int] = []
    for value in scale:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ConfigError(problem)
        if not math.isfinite(value) or value != int(value):
            raise ConfigError(problem)
        bounds.append(int(value))
    low, high = bounds
    if not low < high or high - low + 1 > MAX_ENUM_STEPS:
        raise ConfigError(
            f"option 'score_scale' must have low < high and at most {MAX_ENUM_STEPS} steps, "
            f"got {[low, high]}"
        )
    return list(range(low, high + 1))


def verdict_labels(schema: dict[str, Any]) -> list[str] | None:
    """The labels of a stage-2 verdict schema (:func:`llm_council.prompts.review_verdict_schema`),
    or ``None`` when ``schema`` is not one."""
    properties = schema.get("properties")
    if not isinstance(properties, dict) or set(properties) != {"ranking", "scores", "rationale"}:
        return None
    scores = properties["scores"]
    required = scores.get("required") if isinstance(scores, dict) else None
    if not isinstance(required, list) or not all(isinstance(x, str) for x in required):
        return None
    return list(required)


def rationale_cap(value: object) -> int:
    """Validate the ``rationale_max_chars`` option: a whole number of characters, 1 to
    :data:`MAX_RATIONALE_CHARS`; a :class:`ConfigError` quoting the value otherwise."""
    if (
        isinstance(value, bool)
        or not isinstance(value, int)
        or not 1 <= value <= MAX_RATIONALE_CHARS
    ):
        raise ConfigError(
            f"option 'rationale_max_chars' must be a whole number from 1 to "
            f"{MAX_RATIONALE_CHARS}, got {str(value)[:40]!r}"
        )
    return value


def rationale_schema(rationale_max_chars: int) -> dict[str, Any]:
    """The verdict rationale's schema: at most ``rationale_max_chars`` characters, none of
    them a double quote, a backslash or a control character (U+0000-U+001F).

    ``pattern`` is what llama-cpp-python's schema converter turns into the grammar (it then
    ignores ``maxLength``, which the pattern's ``{0,N}`` repeats); its default string rule
    (``[^"\\]`` or an escape) admits raw control characters, which strict JSON (RFC 8259,
    section 7) and so ``json.loads`` reject. Without quotes and backslashes no escape is
    needed, so whatever the grammar lets through is valid JSON.
    """
    return {
        "type": "string",
        "maxLength": rationale_max_chars,
        "pattern": f'^[^"\\\\\\x00-\\x1f]{{0,{rationale_max_chars}}}$',
    }


def json_object_schema(
    schema: dict[str, Any], scores: Sequence[int], rationale_max_chars: int = RATIONALE_MAX_CHARS
) -> dict[str, Any]:
    """The schema sent as ``response_format.schema`` to llama.cpp for ``schema``."""
    labels = verdict_labels(schema)
    if labels is None:
        return schema
    return {
        "type": "object",
        "properties": {
            "scores": {
                "type": "object",
                "properties": {label: {"enum": list(scores)} for label in labels},
                "required": labels,
                "additionalProperties": False,
            },
            "rationale": rationale_schema(rationale_max_chars),
        },
        "required": ["scores", "rationale"],
        "additionalProperties": False,
    }


def json_object_response_format(
    schema: dict[str, Any], scores: Sequence[int], rationale_max_chars: int = RATIONALE_MAX_CHARS
) -> dict[str, Any]:
    """``response_format`` for llama.cpp's server: ``json_object`` plus the grammar's schema."""
    return {
        "type": "json_object",
        "schema": json_object_schema(schema, scores, rationale_max_chars),
    }


#: GBNF for the pairwise judge's reply: a line of reasoning, then exactly one verdict line
PAIRWISE_VERDICT_GRAMMAR = (
    'root ::= reason "\\nVerdict: " choice\n'
    f"reason ::= [^\\n]{{1,{RATIONALE_MAX_CHARS}}}\n"
    'choice ::= "Response A" | "Response B" | "tie"\n'
)
