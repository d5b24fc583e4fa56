"""Fingerprints on the independent generator's records: a reviewer whose set-up changes
at a given session, with or without a leniency shift (for ADR 0062's segments)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from generators.independent_council import CouncilSpec, generate_session


def fingerprint(model: str, *, temperature: float | None = None) -> dict[str, Any]:
    """A well-formed fingerprint, written here rather than by llm_council's code."""
    digest = lambda text: hashlib.sha256(text.encode()).hexdigest()  # noqa: E731
    return {
        "provider": "openai",
        "model": model,
        "prompt_sha256": digest("prompt"),
        "rubric_sha256": digest("rubric"),
        "temperature": temperature,
        "scale": [1.0, 10.0],
        "options_sha256": digest("{}"),
    }


def write_fingerprinted_store(
    path: Path,
    spec: CouncilSpec,
    n_sessions: int,
    seed: int,
    *,
    change_at: int,
    changed_reviewer: int = 0,
    shift: float = 0.0,
    before: Mapping[str, Any] | None = None,
    after: Mapping[str, Any] | None = None,
    unfingerprinted: Sequence[int] = (),
) -> None:
    """Sessions ``0..change_at-1`` carry ``before`` for every reviewer; from ``change_at``
    on, ``changed_reviewer`` carries ``after`` and scores ``shift`` points higher (the
    generator's leniency). Sessions in ``unfingerprinted`` carry none (older lines)."""
    rng = np.random.default_rng(seed)
    old = dict(before or fingerprint("gpt-4o-2024-08-06"))
    new = dict(after or fingerprint("gpt-4o-2024-11-20"))
    leniency = np.zeros(spec.n_members)
    lines = []
    for index in range(n_sessions):
        if index == change_at:
            leniency[changed_reviewer] = shift
        session_spec = CouncilSpec(**{**spec.__dict__, "leniency": leniency.tolist()})
        session = generate_session(session_spec, rng, session_index=index)
        changed_name = spec.members()[changed_reviewer]
        for record in session.records():
            if index not in unfingerprinted:
                moved = record["reviewer_id"] == changed_name and index >= change_at
                record["reviewer_fingerprint"] = new if moved else old
            lines.append(json.dumps(record))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
