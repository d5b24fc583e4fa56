"""The reference council's ``bias-report`` options on ours, and its stores read as they are.

Its users type ``llm-council bias-report --input FILE --sessions N --days N --verbose
--amplification``; ours reads ``--store`` / ``--since`` / ``--until``. Here:

- ``--input`` is ``--store`` (an alias on the option itself);
- ``--days N`` is ``--since Nd``;
- ``--sessions N`` keeps the last N sessions of a JSONL store (of the last ``--days``,
  when given too, as the reference): ``--since`` becomes the first timestamp of those
  sessions (the sessions that started at or after it: the last N when sessions do not
  interleave in time); ``--max-sessions`` / ``--max-days`` are the same options;
- ``--verbose`` is accepted: the report always has the reviewer profiles;
- ``--amplification`` appends the report-only amplification screen
  (:mod:`llm_council.bias_amplification`) to the text report, or as ``"amplification"``
  to the JSON one.

A JSONL file of the reference's own lines (``schema_version`` "1.x") is read through
the ``bias-import`` conversion into a temporary store, with a note saying so and how to
import it for good, instead of "no usable bias-audit records".
"""

from __future__ import annotations

import dataclasses
import json
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from llm_council.errors import ConfigError

_SNIFF_LINES = 50


def is_reference_store(store: str) -> bool:
    """A JSONL file whose first JSON object line has a text ``schema_version`` ("1.2.0")."""
    path = Path(store)
    if not path.is_file():
        return False
    with path.open(encoding="utf-8", errors="replace") as handle:
        for _, line in zip(range(_SNIFF_LINES), handle, strict=False):
            try:
                parsed = json.loads(line)
            except ValueError:
                continue
            if isinstance(parsed, dict) and "schema_version" in parsed:
                version = parsed["schema_version"]
                return isinstance(version, str) and version.startswith("1.")
    return False


@dataclass
class ReportInput:
    """What ``bias-report`` reads after the reference's options are applied."""

    store: str
    since: str | None
    notes: list[str] = field(default_factory=list)


def _since_of_last_sessions(store: str, sessions: int, days: int | None) -> str:
    from llm_council.bias_audit.reference.persistence import read_bias_records

    if sessions < 1:
        raise ConfigError(f"--sessions must be at least 1, got {sessions}")
    if not Path(store).is_file():
        raise ConfigError(f"--sessions needs a JSONL store file; {store!r} is not one")
    kept = read_bias_records(Path(store), max_sessions=sessions, max_days=days)
    stamps = [record.timestamp for record in kept]
    stamps = [stamp for stamp in stamps if stamp]
    if not stamps:
        raise ConfigError(f"--sessions {sessions}: no timestamped records in {store!r}")
    try:
        first = datetime.fromisoformat(min(stamps).replace("Z", "+00:00"))
    except ValueError:
        raise ConfigError(f"--sessions: timestamp {min(stamps)!r:.40} is not ISO 8601") from None
    # to the whole second: the import keeps timestamps to the second
    return first.replace(microsecond=0).isoformat()


@contextmanager
def reference_report_input(
    store: str, since: str | None, days: int | None, sessions: int | None
) -> Iterator[ReportInput]:
    """The store and ``--since`` to report on; a reference store is converted meanwhile."""
    if since and (days is not None or sessions is not None):
        raise ConfigError("give --since, or the reference's --days / --sessions, not both")
    if days is not None and days < 1:
        raise ConfigError(f"--days must be at least 1, got {days}")
    if sessions is not None:  # with --days: the last N sessions of the last D days
        since = _since_of_last_sessions(store, sessions, days)
    elif days is not None:
        since = f"{days}d"
    if not is_reference_store(store):
        yield ReportInput(store, since)
        return
    from llm_council.bias_audit.records.reference_import import import_reference_store

    with tempfile.TemporaryDirectory(prefix="llm-council-reference-") as scratch:
        converted = Path(scratch) / "records.jsonl"
        summary = import_reference_store(Path(store), converted)
        skipped = ", ".join(
            f"{count} {reason}" for reason, count in summary.skipped_by_reason().items()
        )
        note = (
            f"{store} holds the reference council's records (schema 1.x): read through the "
            f"bias-import conversion ({summary.n_records_written} of "
            f"{summary.n_records_read} converted"
            + (f"; not converted: {skipped}" if skipped else "")
            + f"). To keep them: llm-council bias-import --from reference {store}"
        )
        yield ReportInput(str(converted), since, [note])


def as_given(report: Any, chosen: ReportInput, store: str) -> Any:
    """The report naming the store the user gave, not the temporary conversion of it."""
    if chosen.store == store:
        return report
    return dataclasses.replace(report, store=f"{store} (reference records, converted)")


def amplification_section(store: str, output_format: str, rendered: str) -> str:
    """``rendered`` with the amplification screen of ``store`` appended (text or JSON)."""
    from llm_council.bias_audit.reference.amplification import (
        amplification_report,
        format_amplification_report,
    )
    from llm_council.bias_audit.reference.persistence import read_bias_records

    if output_format not in ("text", "json"):
        raise ConfigError("--amplification works with --format text or json")
    if not Path(store).is_file():
        raise ConfigError(f"--amplification needs a JSONL store file; {store!r} is not one")
    report = amplification_report(read_bias_records(Path(store)))
    if output_format == "json":
        document = json.loads(rendered)
        document["amplification"] = report
        return json.dumps(document, indent=2, allow_nan=False) + "\n"
    return rendered + "\n" + format_amplification_report(report)
