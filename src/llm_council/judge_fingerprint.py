"""What identifies a judge set-up: its fingerprint, shared by calibration and the council.

A judge is its provider and model id, the prompt it is given (template and version), the
rubric it judges by (the system text, with the member's persona), its temperature, the
score scale and its other options. Any of them changing can move its verdicts, so records
and calibration reports carry all of them, and a reader compares fingerprints component by
component (:func:`fingerprint_changes`) to say which one changed.

Privacy: texts and options are hashed (SHA-256, hex), never copied, so no prompt, persona
or option value (an API key passed as an option) reaches a record or a report.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

#: the components, in the order a change is reported
FINGERPRINT_FIELDS = (
    "provider",
    "model",
    "prompt_sha256",
    "rubric_sha256",
    "temperature",
    "scale",
    "options_sha256",
)


def text_sha256(*parts: str) -> str:
    """SHA-256 (hex) of the parts joined by NUL: a prompt's or a rubric's hash."""
    return hashlib.sha256("\x00".join(parts).encode("utf-8")).hexdigest()


def options_sha256(options: Mapping[str, Any]) -> str:
    """SHA-256 (hex) of the options as canonical JSON; the values never leave it."""
    options_text = json.dumps(dict(options), sort_keys=True, default=str)
    return hashlib.sha256(options_text.encode("utf-8")).hexdigest()


def option_temperature(options: Mapping[str, Any]) -> float | None:
    """The member's ``temperature`` option when it is a finite number, else ``None``."""
    value = options.get("temperature")
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def judge_fingerprint(
    spec: str,
    options: Mapping[str, Any],
    temperature: float | None,
    *,
    prompt_sha256: str,
    scale: Sequence[Any],
    rubric_sha256: str | None = None,
) -> dict[str, Any]:
    """The fingerprint of a judge set-up: ``spec`` is ``provider:model``; ``rubric_sha256``
    is ``None`` where the rubric is part of the prompt (calibration's judges)."""
    provider, _, model = spec.partition(":")
    fingerprint: dict[str, Any] = {
        "provider": provider,
        "model": model,
        "prompt_sha256": prompt_sha256,
        "temperature": temperature,
        "scale": list(scale),
        "options_sha256": options_sha256(options),
    }
    if rubric_sha256 is not None:
        fingerprint["rubric_sha256"] = rubric_sha256
    return fingerprint


def fingerprint_changes(
    before: Mapping[str, Any], after: Mapping[str, Any]
) -> list[tuple[str, Any, Any]]:
    """``(component, before, after)`` for each component that differs, in
    :data:`FINGERPRINT_FIELDS` order, then any other key in sorted order."""
    names = [*FINGERPRINT_FIELDS]
    names += sorted((set(before) | set(after)) - set(FINGERPRINT_FIELDS))
    return [
        (name, before.get(name), after.get(name))
        for name in names
        if before.get(name) != after.get(name)
    ]
