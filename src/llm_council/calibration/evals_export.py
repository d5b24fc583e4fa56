"""Export labelled pairs as an OpenAI Evals dataset with a model-graded eval spec.

Layout under ``out`` mirrors the ``evals/registry`` tree, so it can be copied in as is:

- ``data/<name>/samples.jsonl``: one sample per pair and display order; ``input`` is our
  judge prompt (system + user), ``ideal`` the human verdict in that order's labels;
- ``modelgraded/<name>.yaml``: a grader prompt asking whether the judge's final verdict
  matches the ideal one (choices Y / N scored 1 / 0, so the mean score is accuracy);
- ``evals/<name>.yaml``: the eval registry entry using ``ModelBasedClassify``.

YAML is written by hand (the structure is fixed and small) to avoid a dependency.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from pathlib import Path

from llm_council.calibration.judge_prompt import (
    FIRST_LABEL,
    JUDGE_SYSTEM,
    SECOND_LABEL,
    build_judge_prompt,
)
from llm_council.calibration.pairs import ORDERS, Pair, shown_order
from llm_council.errors import ConfigError, InputError
from llm_council.infra.atomic_files import write_text_atomically

GRADER_PROMPT = """You are checking the verdict of a judge who compared two answers.
[BEGIN DATA]
************
[Judge prompt]: {input}
************
[Expert verdict]: {ideal}
************
[Judge reply]: {completion}
************
[END DATA]
Does the judge's final verdict name the same winner as the expert verdict
("Response A", "Response B" or "tie")? Ignore the judge's reasoning, only the final verdict counts.
Answer Y if it does and N if it does not."""


_DESCRIPTION = "LLM judge verdicts on pairs vs human labels (exported by llm-council)"


def _yaml_string(value: str) -> str:
    """A double-quoted YAML scalar (JSON string syntax is valid YAML)."""
    return json.dumps(value, ensure_ascii=False)


def _yaml_block(value: str, indent: int) -> str:
    pad = " " * indent
    return "|-\n" + "\n".join(pad + line if line else "" for line in value.split("\n"))


def _ideal(pair: Pair, order: str) -> str:
    if pair.human_label == "tie":
        return "tie"
    first, _ = shown_order(order)  # type: ignore[arg-type]
    return FIRST_LABEL if pair.human_label == first else SECOND_LABEL


def samples_jsonl(pairs: Sequence[Pair]) -> str:
    """Both display orders of every human-labelled pair, with a fixed per-pair nonce."""
    lines = []
    seen: set[str] = set()
    for pair in pairs:
        # a replay file repeats each pair once per judge; export each pair once
        if pair.human_label is None or pair.pair_id in seen:
            continue
        seen.add(pair.pair_id)
        for order in ORDERS:
            first, second = shown_order(order)
            # a deterministic nonce keeps the export reproducible; it only delimits blocks
            nonce = hashlib.sha256(f"{pair.pair_id}\x00{order}".encode()).hexdigest()[:12]
            prompt = build_judge_prompt(
                pair.prompt,
                pair.response(first),
                pair.response(second),
                nonce,
                pair.reference_answer,
            )
            sample = {
                "input": [
                    {"role": "system", "content": JUDGE_SYSTEM},
                    {"role": "user", "content": prompt},
                ],
                "ideal": _ideal(pair, order),
                "id": pair.pair_id,
                "order": order,
            }
            lines.append(json.dumps(sample, ensure_ascii=False))
    return "".join(line + "\n" for line in lines)


def export_openai_evals(
    pairs: Sequence[Pair], out: Path, *, eval_name: str = "llm-council-pairwise"
) -> list[Path]:
    """Write the three files; only pairs with a ``human_label`` can be exported."""
    if not re.fullmatch(r"[a-z0-9][a-z0-9._-]*", eval_name):
        raise ConfigError(
            f"invalid eval name '{eval_name}': use lower-case letters, digits, '.', '_', '-'"
        )
    samples = samples_jsonl(pairs)
    if not samples:
        raise InputError("no pair has a human_label: nothing to use as the ideal verdict")
    samples_path = out / "data" / eval_name / "samples.jsonl"
    graded_path = out / "modelgraded" / f"{eval_name}.yaml"
    eval_path = out / "evals" / f"{eval_name}.yaml"
    graded = (
        f"{eval_name}:\n"
        f"  prompt: {_yaml_block(GRADER_PROMPT, 4)}\n"
        '  choice_strings:\n    - "Y"\n    - "N"\n'
        '  choice_scores:\n    "Y": 1.0\n    "N": 0.0\n'
        "  input_outputs:\n    input: completion\n"
    )
    registry = (
        f"{eval_name}:\n"
        f"  id: {eval_name}.dev.v0\n"
        f"  description: {_yaml_string(_DESCRIPTION)}\n"
        "  metrics:\n    - accuracy\n"
        f"{eval_name}.dev.v0:\n"
        "  class: evals.elsuite.modelgraded.classify:ModelBasedClassify\n"
        "  args:\n"
        f"    samples_jsonl: {_yaml_string(f'{eval_name}/samples.jsonl')}\n"
        "    eval_type: cot_classify\n"
        f"    modelgraded_spec: {_yaml_string(eval_name)}\n"
    )
    write_text_atomically(samples_path, samples)
    write_text_atomically(graded_path, graded)
    write_text_atomically(eval_path, registry)
    return [samples_path, graded_path, eval_path]
