"""What an importer returns: our replay records plus the counts a user needs to trust them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class ImportResult:
    """Replay-format records (dicts, as :func:`pairs.parse_pair` reads them) and what was done.

    ``counts`` holds integers (``rows``, ``pairs``, ``error_games_dropped``, ...) and
    ``human_agreement_mean`` when human votes were read; every figure in
    :func:`render_import_summary` comes from here.
    """

    source_format: str
    records: tuple[dict[str, Any], ...]
    counts: Mapping[str, Any] = field(default_factory=dict)


_LABELS = {
    "rows": "rows read",
    "pairs": "pairs written",
    "judges": "judges",
    "games": "judgments kept",
    "error_games_dropped": "'error' games dropped (unevaluated, not ties)",
    "repeated_rows": "rows merged into an earlier pair as repetitions",
    "pairs_without_text": "pairs without answer text",
    "human_rows": "human judgment rows",
    "human_pairs": "human-judged pairs",
    "human_labelled": "pairs with a majority human label",
    "human_no_majority": "human pairs with tied annotators (no label)",
    "human_multi_annotator": "human pairs with 2+ annotators",
    "human_unanimous": "of which unanimous",
    "human_repeat_votes": "votes by an annotator who already voted on that pair (each counted)",
    "human_agreement_mean": "mean share of annotators agreeing with the majority (2+ annotators)",
    "human_pairs_attached": "judge pairs given a human label",
    "human_pairs_unmatched": "human pairs matching no judge pair",
}


def render_import_summary(result: ImportResult, source: str) -> str:
    """A few lines naming every count; ``source`` is the file the rows came from."""
    lines = [f"imported {source} ({result.source_format})"]
    for key, label in _LABELS.items():
        if key not in result.counts:
            continue
        value = result.counts[key]
        shown = "n/a" if value is None else f"{value:.3f}" if isinstance(value, float) else value
        lines.append(f"  {label}: {shown}")
    return "\n".join(lines)
