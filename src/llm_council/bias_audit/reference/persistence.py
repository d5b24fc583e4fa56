"""The reference design's ``llm_council.bias_persistence``, as a thin facade over our audit.

Users of the reference council (amiable-dev/llm-council, its ADR-018) import these names
from this path; they work here with the reference's signatures (ADR 0039). What each one
is over ours:

- :class:`BiasMetricRecord` is the reference's JSON line (schema "1.x", ``score_scale``
  as text, ``consent_level``, ``query_metadata``). ``append_bias_records`` writes such
  lines to a file of the reference's format; ``llm-council bias-import`` converts such a
  file into our store (ADR 0015). ``read_bias_records`` reads the reference's lines *and*
  our records (a line with an integer ``schema_version``), so it also reads our store.
- ``create_bias_records_from_session`` and ``persist_session_bias_data`` take the
  reference's stage shapes through our audit's session code
  (:mod:`llm_council.bias_audit.plugin.external_session`): positions, rank points and
  review status are decided as for our own records. ``persist_session_bias_data`` writes
  *our* records to *our* store (``LLM_COUNCIL_BIAS_STORE``), so ``llm-council bias-report``
  reads them without an import.

Where this differs from the reference on purpose (docs/bias-audit.md lists each row):
a record is created only for a scored answer (the reference wrote 0.0 for "no score");
a ranking without scores gives rank points on the scale "1-N". As the reference since
0.53: ``hash_query_if_enabled`` is keyed by ``LLM_COUNCIL_HASH_SECRET``, else by a private
per-install key file (:mod:`llm_council.integrations.reference_hash_secret`); an unknown
``BIAS_CONSENT_LEVEL`` means OFF (a privacy switch fails closed, with a warning); a label
that cannot be mapped drops that label's record, counted in a warning, not the session
(:mod:`llm_council.integrations.reference_label_maps`).
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from enum import Enum
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from llm_council.bias_audit.plugin.external_session import external_event
from llm_council.bias_audit.records.jsonl_store import append_records, store_path
from llm_council.bias_audit.records.query_hash import (
    env_flag,
    hmac_query_hash,
    query_hash_from_env,
)
from llm_council.bias_audit.records.schema import ReviewRecord, upgrade_record
from llm_council.bias_audit.session.session_records import records_from_session, utc_timestamp
from llm_council.infra.install_hints import DISTRIBUTION_NAME
from llm_council.integrations.reference_hash_secret import resolve_hash_secret
from llm_council.integrations.reference_label_maps import usable_label_maps

# the name at the reference's path, as before the move (ADR 0066): log filters still match
logger = logging.getLogger("llm_council.bias_persistence")

#: the reference's switch for writing records (its default: off)
PERSISTENCE_VARIABLE = "BIAS_PERSISTENCE_ENABLED"
#: the reference's consent level, by name (OFF, LOCAL_ONLY, ANONYMOUS, ENHANCED, RESEARCH)
CONSENT_VARIABLE = "BIAS_CONSENT_LEVEL"
#: the schema version of records written here: position is the display slot (>= 1.2.0)
RECORD_SCHEMA_VERSION = "1.2.0"
#: where the reference kept its own JSONL file; ``append_bias_records``' default
REFERENCE_STORE_PATH = Path.home() / ".llm-council" / "bias_metrics.jsonl"


def _package_version() -> str:
    try:
        return version(DISTRIBUTION_NAME)
    except PackageNotFoundError:  # pragma: no cover - a source tree without metadata
        return "unknown"


def _get_bias_persistence_enabled() -> bool:
    """``BIAS_PERSISTENCE_ENABLED`` now (off when unset, as in the reference)."""
    return env_flag(PERSISTENCE_VARIABLE, os.environ)


#: the switch as it was at import (the reference exposed a module constant)
BIAS_PERSISTENCE_ENABLED = _get_bias_persistence_enabled()


def _get_bias_store_path() -> Path:
    """Our JSONL store (``LLM_COUNCIL_BIAS_STORE`` or the default), where ``persist`` writes."""
    return store_path()


class ConsentLevel(Enum):
    """The reference's consent levels; here only RESEARCH changes anything (the query hash)."""

    OFF = 0
    LOCAL_ONLY = 1
    ANONYMOUS = 2
    ENHANCED = 3
    RESEARCH = 4


def _get_bias_consent_level() -> int:
    """``BIAS_CONSENT_LEVEL`` by name (default LOCAL_ONLY); an unknown name means OFF.

    A privacy switch fails closed (the reference since 0.53): a typo stores nothing,
    and the warning names the value and the accepted names.
    """
    raw = os.environ.get(CONSENT_VARIABLE, "").strip().upper()
    if not raw:
        return ConsentLevel.LOCAL_ONLY.value
    try:
        return ConsentLevel[raw].value
    except KeyError:
        names = ", ".join(level.name for level in ConsentLevel)
        logger.warning("%s=%r is not one of %s: consent is OFF", CONSENT_VARIABLE, raw[:40], names)
        return ConsentLevel.OFF.value


class UnscoredRecord(ValueError):
    """One of our records without a score: the reference's line has no way to say so (its
    0.0 would read as a score), so readers skip it."""


@dataclass
class BiasMetricRecord:
    """One reference-format line: one (session, reviewer, candidate) score.

    ``position`` is the display slot (0 = shown first) from schema 1.2.0 on; below it the
    reference stored the reviewer's ranking index there (its #611), which
    :attr:`position_is_display_order` tells apart.
    """

    schema_version: str = RECORD_SCHEMA_VERSION
    session_id: str = ""
    timestamp: str = ""
    consent_level: int = ConsentLevel.LOCAL_ONLY.value
    reviewer_id: str = ""
    model_id: str = ""
    position: int = 0
    response_length_chars: int = 0
    score_value: float = 0.0
    score_scale: str = "1-10"
    council_config_version: str = "0.1.0"
    query_hash: str | None = None
    query_metadata: dict[str, Any] | None = None

    @property
    def position_is_display_order(self) -> bool:
        """``schema_version`` >= 1.2.0 (missing parts read as 0: "1.2" is 1.2.0)."""
        parts = str(self.schema_version).split(".")[:3]
        try:
            numbers = [int(part) for part in parts]
        except ValueError:
            return False
        numbers += [0] * (3 - len(numbers))
        return tuple(numbers) >= (1, 2, 0)

    def to_jsonl_line(self) -> str:
        """One JSON line (no newline inside)."""
        return json.dumps(asdict(self), ensure_ascii=False)

    @classmethod
    def from_jsonl_line(cls, line: str) -> BiasMetricRecord:
        """A reference line, or one of our records (an integer ``schema_version``)."""
        data = json.loads(line)
        if not isinstance(data, dict):
            raise TypeError(f"a record line must be a JSON object, got {type(data).__name__}")
        if isinstance(data.get("schema_version"), int):
            ours = ReviewRecord.model_validate(upgrade_record(data))
            if ours.score_value is None:
                raise UnscoredRecord(f"{ours.review_status or 'unscored'} review: no score")
            return from_review_record(ours)
        return cls(
            schema_version=str(data.get("schema_version", "1.0.0")),
            session_id=str(data.get("session_id", "")),
            timestamp=str(data.get("timestamp", "")),
            consent_level=int(data.get("consent_level", ConsentLevel.LOCAL_ONLY.value)),
            reviewer_id=str(data.get("reviewer_id", "")),
            model_id=str(data.get("model_id", "")),
            position=int(data.get("position", 0)),
            response_length_chars=int(data.get("response_length_chars", 0)),
            score_value=float(data.get("score_value", 0.0)),
            score_scale=str(data.get("score_scale", "1-10")),
            council_config_version=str(data.get("council_config_version", "")),
            query_hash=data.get("query_hash"),
            query_metadata=data.get("query_metadata"),
        )


def _scale_text(scale: Sequence[float]) -> str:
    return "-".join(f"{value:g}" for value in scale)


def from_review_record(record: ReviewRecord, consent_level: int = 1) -> BiasMetricRecord:
    """One of our *scored* records as the reference's line."""
    if record.score_value is None:
        raise UnscoredRecord("an unscored record has no reference form")
    return BiasMetricRecord(
        schema_version=RECORD_SCHEMA_VERSION,
        session_id=record.session_id,
        timestamp=record.timestamp,
        consent_level=consent_level,
        reviewer_id=record.reviewer_id,
        model_id=record.model_id,
        position=record.position,
        response_length_chars=record.response_length_chars,
        score_value=float(record.score_value),
        score_scale=_scale_text(record.score_scale),
        council_config_version=record.council_config_hash,
        query_hash=record.query_hash,
    )


def hash_query_if_enabled(query: str, consent_level: ConsentLevel) -> str | None:
    """16 hex of HMAC-SHA256 over the query's first 100 characters, at RESEARCH only.

    The reference's format (so its stores group the same way), keyed by
    ``LLM_COUNCIL_HASH_SECRET``, else by a private per-install key file created once
    (:func:`~llm_council.integrations.reference_hash_secret.resolve_hash_secret`); None
    when no key can be trusted. Never a built-in key: a hash under a published key can be
    reversed by guessing short queries.
    """
    # by value: an int level, or an enum from a reloaded copy of this module, compares right
    if getattr(consent_level, "value", consent_level) != ConsentLevel.RESEARCH.value:
        return None
    secret = resolve_hash_secret()
    if secret is None:
        return None
    return hmac_query_hash(query[:100], secret).partition(":")[2][:16]


_CATEGORY_WORDS = (
    ("coding", ("def ", "function", "class ", "import ", "python", "javascript", "code")),
    ("math_reasoning", ("calculate", "compute", "equation", "math", "solve", "+", "=")),
    ("creative_writing", ("write", "story", "poem", "creative", "imagine")),
)


def _extract_query_metadata(query: str) -> dict[str, Any]:
    """The reference's coarse query description: a keyword category, a length bucket, "en".

    ``token_bucket`` is by characters: short < 50, medium < 200, long otherwise. Not
    stored in our records (they keep no query-derived field but the opt-in hash).
    """
    if not query:
        return {"category": "unknown", "token_bucket": "unknown", "language": "en"}
    lowered = query.lower()
    category = next(
        (name for name, words in _CATEGORY_WORDS if any(word in lowered for word in words)),
        "general",
    )
    bucket = "short" if len(query) < 50 else "medium" if len(query) < 200 else "long"
    return {"category": category, "token_bucket": bucket, "language": "en"}


def append_bias_records(records: Sequence[BiasMetricRecord], store_path: Path | None = None) -> int:
    """Append reference-format lines (one ``write``) to ``store_path``; returns the count.

    Default path: the reference's own (``~/.llm-council/bias_metrics.jsonl``), never our
    store, whose lines have another schema; convert with ``llm-council bias-import``.
    """
    if not records:
        return 0
    path = Path(store_path) if store_path is not None else REFERENCE_STORE_PATH
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = "".join(record.to_jsonl_line() + "\n" for record in records)
    with path.open("a", encoding="utf-8") as handle:
        handle.write(payload)
    return len(records)


def _instant(timestamp: str) -> datetime:
    """The timestamp as an aware datetime; unreadable or empty ones sort first."""
    try:
        parsed = datetime.fromisoformat(timestamp.replace("Z", "+00:00"))
    except ValueError:
        return datetime.min.replace(tzinfo=UTC)
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


def _lines(path: Path) -> Iterable[BiasMetricRecord]:
    with path.open(encoding="utf-8", errors="replace") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                yield BiasMetricRecord.from_jsonl_line(line)
            except UnscoredRecord:
                continue  # an abstention or unparsed review of ours: not a score
            except (ValueError, TypeError, KeyError) as error:
                logger.warning("skipping malformed line %d of %s: %s", number, path, error)


def read_bias_records(
    store_path: Path | None = None,
    max_sessions: int | None = None,
    max_days: int | None = None,
    since: datetime | None = None,
) -> list[BiasMetricRecord]:
    """Records oldest first, filtered by ``since``, the last ``max_days`` and the last
    ``max_sessions`` sessions; malformed lines are skipped with a warning.

    Reads both formats (reference lines and our records); default path: our store.
    """
    path = Path(store_path) if store_path is not None else _get_bias_store_path()
    if not path.exists():
        return []
    records = list(_lines(path))
    if max_days is not None:
        cutoff = datetime.now(UTC) - timedelta(days=max_days)
        records = [r for r in records if _instant(r.timestamp) >= cutoff]
    if since is not None:
        floor = since if since.tzinfo is not None else since.replace(tzinfo=UTC)
        records = [r for r in records if _instant(r.timestamp) >= floor]
    records.sort(key=lambda r: _instant(r.timestamp))
    if max_sessions is not None:
        kept: list[str] = []
        for record in reversed(records):
            if record.session_id not in kept:
                if len(kept) == max_sessions:
                    break
                kept.append(record.session_id)
        records = [r for r in records if r.session_id in set(kept)]
    return records


def get_bias_store_stats(store_path: Path | None = None) -> dict[str, Any]:
    """Counts, date range and size of a store (zeros for a missing file)."""
    path = Path(store_path) if store_path is not None else _get_bias_store_path()
    records = read_bias_records(path) if path.exists() else []
    timestamps = sorted((r.timestamp for r in records if r.timestamp), key=_instant)
    return {
        "total_records": len(records),
        "unique_sessions": len({r.session_id for r in records}),
        "unique_reviewers": len({r.reviewer_id for r in records}),
        "oldest_record": timestamps[0] if timestamps else None,
        "newest_record": timestamps[-1] if timestamps else None,
        "file_size_bytes": path.stat().st_size if path.exists() else 0,
    }


def _our_records(
    session_id: str,
    stage1_results: Any,
    stage2_results: Any,
    label_to_model: Any,
    query: str | None,
) -> list[ReviewRecord]:
    """Our records of the session, built by the audit's own session code.

    Labels that cannot be mapped are dropped first, each named in a warning (the
    reference drops such a record; the rest of the session is kept).
    """
    stage2_results, label_to_model, dropped = usable_label_maps(
        stage1_results, stage2_results, label_to_model
    )
    if dropped:
        logger.warning(
            "session %s: %d label(s) dropped: %s", session_id, len(dropped), "; ".join(dropped)
        )
    event = external_event(
        stage1_results, stage2_results, label_to_model, session_id=session_id, query=query
    )
    hashed = query_hash_from_env(query) if query else None
    return records_from_session(event, timestamp=utc_timestamp(), query_hash=hashed)


def create_bias_records_from_session(
    session_id: str,
    stage1_results: list[dict[str, Any]],
    stage2_results: list[dict[str, Any]],
    label_to_model: dict[str, Any],
    query: str | None = None,
    consent_level: ConsentLevel = ConsentLevel.LOCAL_ONLY,
) -> list[BiasMetricRecord]:
    """The session's scored (reviewer, candidate) pairs as reference-format records.

    Positions are display slots (``display_index``, else the label letter); a ranking
    without scores gives rank points (1st of N gets N) on "1-N"; an answer without a score
    and an abstaining reviewer give no record. ``query_hash`` at RESEARCH only
    (:func:`hash_query_if_enabled`); ``query_metadata`` when a query is given.
    """
    level = consent_level.value if isinstance(consent_level, ConsentLevel) else consent_level
    records = _our_records(session_id, stage1_results, stage2_results, label_to_model, None)
    query_hash = hash_query_if_enabled(query, ConsentLevel(level)) if query else None
    metadata = _extract_query_metadata(query) if query else None
    converted = []
    for record in records:
        if record.score_value is None:
            continue
        line = from_review_record(record, int(level))
        line.council_config_version = _package_version()
        line.query_hash, line.query_metadata = query_hash, metadata
        converted.append(line)
    return converted


def persist_session_bias_data(
    session_id: str,
    stage1_results: list[dict[str, Any]],
    stage2_results: list[dict[str, Any]],
    label_to_model: dict[str, Any],
    query: str | None = None,
) -> int:
    """Write the session's records (ours, all of them) to our store; 0 when switched off.

    Off unless ``BIAS_PERSISTENCE_ENABLED`` is true (the reference's default), and off at
    consent OFF. The query is used only at RESEARCH consent, and then only for our opt-in
    ``query_hash`` (``LLM_COUNCIL_QUERY_HASH`` and a secret).
    """
    if not _get_bias_persistence_enabled():
        return 0
    level = _get_bias_consent_level()
    if level == ConsentLevel.OFF.value:
        return 0
    used_query = query if level == ConsentLevel.RESEARCH.value else None
    records = _our_records(session_id, stage1_results, stage2_results, label_to_model, used_query)
    return append_records(_get_bias_store_path(), records)


__all__ = [
    "BIAS_PERSISTENCE_ENABLED",
    "BiasMetricRecord",
    "ConsentLevel",
    "append_bias_records",
    "create_bias_records_from_session",
    "from_review_record",
    "get_bias_store_stats",
    "hash_query_if_enabled",
    "persist_session_bias_data",
    "read_bias_records",
]
