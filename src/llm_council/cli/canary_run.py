"""``calibrate --canary FILE``: re-score a frozen canary set, compare with earlier runs."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import typer

from llm_council.calibration.canary import (
    CANARY_FORMAT,
    canary_drift,
    canary_set_hash,
    judge_fingerprint,
    read_canary,
    read_canary_run,
    score_canary,
)
from llm_council.errors import ConfigError, CouncilError
from llm_council.infra.atomic_files import write_json_atomically
from llm_council.infra.safe_text import terminal_safe
from llm_council.providers.registry import create_provider


class JudgeDriftedError(CouncilError):
    """The canary scores moved from the baseline: the judge changed."""

    exit_code = 6


async def _scores(spec: str, options: dict[str, Any], items, **settings: Any):
    provider = create_provider(spec, options)
    try:
        return await score_canary(provider, items, **settings)
    finally:
        await provider.aclose()


def run_canary(
    canary_path: Path,
    *,
    model: str | None,
    options: dict[str, Any],
    temperature: float | None,
    repetitions: int,
    concurrency: int,
    seed: int,
    baselines: Sequence[Path],
    alpha: float,
    output: Path | None,
) -> None:
    """Score the canary set live, write the run, compare, and exit 6 on drift."""
    if model is None:
        raise ConfigError("--canary re-scores the canary set live: give --model")
    if not 0.0 < alpha < 1.0:
        raise ConfigError(f"--drift-alpha must be between 0 and 1, got {alpha}")
    if repetitions < 1 or concurrency < 1:
        raise ConfigError("--repetitions and --concurrency must be >= 1")
    items = read_canary(canary_path)
    earlier = [read_canary_run(path) for path in baselines]
    scores, failed = asyncio.run(
        _scores(
            model,
            options,
            items,
            repetitions=repetitions,
            concurrency=concurrency,
            seed=seed,
            temperature=temperature,
        )
    )
    document: dict[str, Any] = {
        "format": CANARY_FORMAT,
        "fingerprint": judge_fingerprint(model, options, temperature),
        "canary_sha256": canary_set_hash(items),
        "items": len(items),
        "repetitions": repetitions,
        "scores": scores,
        "failed": failed,
    }
    drift = canary_drift(document, earlier, alpha=alpha) if earlier else None
    if drift is not None:
        document["drift"] = drift
    if output is not None:
        write_json_atomically(output, document)
    typer.echo(_summary(model, document, drift))
    if drift is not None and drift["drifted"]:
        raise JudgeDriftedError(
            f"the canary scores moved by {drift['shift']:+.2f} (p={drift['p_value']:.3g}):"
            " the judge changed since the baseline"
        )


def _summary(model: str, document: dict[str, Any], drift: dict[str, Any] | None) -> str:
    lines = [
        f"Canary: {terminal_safe(model)}   {len(document['scores'])} of {document['items']}"
        f" items scored ({len(document['failed'])} failed)"
    ]
    if drift is None:
        lines.append("  no baseline: this run is the baseline for the next (--baseline FILE)")
        return "\n".join(lines)
    changed = ", ".join(drift["fingerprint_changes"]) or "nothing"
    if drift["shift"] is None:
        lines.append(f"  drift not tested: {drift['items_compared']} items in common")
    else:
        low, high = drift["ci"]
        verdict = "DRIFTED" if drift["drifted"] else "no drift detected"
        lines.append(
            f"  shift {drift['shift']:+.2f} [{low:+.2f}, {high:+.2f}] over"
            f" {drift['items_compared']} items, paired t p={drift['p_value']:.3g}: {verdict}"
        )
    lines.append(
        f"  fingerprint changed: {changed}; baselines pooled {drift['baselines_pooled']}"
        f" (not pooled, another fingerprint: {drift['baselines_not_pooled']})"
    )
    if not drift["same_canary_set"]:
        lines.append("  note: the canary set changed since the baseline; common items only")
    return "\n".join(lines)
