"""Edit each summary file beside a JSONL store, leave the records alone: does a verdict move?

Issue 37 A.2's goal: no edit of a summary alone changes a verdict. The store is a council
of the independent generator (``tests/generators/independent_council.py``: integer scores
clipped to 1-10, per-reviewer orders, missing cells) with judge 0 two points harsh, judge
1 one point generous and judge 0 favouring the first slot, appended through
``append_records`` so its summaries are written as the store's writer writes them. A
second store (another seed) supplies files to copy. For every edit the script compares,
with caches cleared as in a new process:

- the per-session audit of a fixed probe session with ``history=store`` (harsh and
  generous judges, self-preferring judges, flags, risk, every reviewer, self-preference
  and position p-value);
- the debiased aggregate's adjustments for the probe's reviewers (leniency, slot effects,
  length slope) and the answer it puts first (each candidate's mean over the other
  reviewers of score - leniency - slot effect - slope x centred log2 length, the formula of
  ``llm_council.debiased_aggregate``).

"equal" means the same names, risk, flags and leader, and every number within 1e-9
(relative) of the untouched store's. Runs against any checkout (``PYTHONPATH=<src>``), so
the same edits can be measured on the code before the seal.

    PYTHONPATH=src .venv/bin/python benchmarks/summary_tamper.py [--members 4] [--sessions 30]
"""

from __future__ import annotations

import argparse
import base64
import json
import math
import shutil
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from generators.independent_council import (  # noqa: E402
    CouncilSpec,
    GeneratedSession,
    generate_sessions,
)
from llm_council.bias_audit import run_bias_audit  # noqa: E402
from llm_council.bias_audit.records import adjustment_sidecar, reviewer_profiles  # noqa: E402
from llm_council.bias_audit.records.adjustment_sidecar import sidecar_path  # noqa: E402
from llm_council.bias_audit.records.jsonl_store import append_records  # noqa: E402
from llm_council.bias_audit.records.reviewer_profiles import (  # noqa: E402
    journal_path,
    profile_path,
)
from llm_council.bias_audit.records.schema import SCHEMA_VERSION, ReviewRecord  # noqa: E402
from llm_council.bias_audit.session.history_adjustments import (  # noqa: E402
    reviewer_adjustments,
)
from llm_council.debiased_aggregate import centred_log_lengths  # noqa: E402

CONFIG_HASH = "tamper-council"
#: sessions appended after the "older" snapshot of the summaries (the replay attacks)
LATER_SESSIONS = 5
RELATIVE = 1e-9


def _spec(n_members: int, *, reversed_roles: bool = False) -> CouncilSpec:
    leniency = [-2.0, 1.0] + [0.0] * (n_members - 2)
    if reversed_roles:  # the other store: its judges' roles differ, so its sums do too
        leniency = [0.0] * (n_members - 2) + [3.0, -3.0]
    slots = [[0.0] * n_members for _ in range(n_members)]
    slots[0][0] = 1.5  # judge 0 favours the answer it sees first
    return CouncilSpec(
        n_members=n_members,
        leniency=leniency,
        slot_effects=slots,
        noise_sds=list(np.linspace(0.6, 1.4, n_members)),
        missing_score_rate=0.05,
    )


def _append(
    store: Path, sessions: list[GeneratedSession], *, degenerate_first: bool = False
) -> None:
    """Append the sessions; with ``degenerate_first`` the second one's reviewers give every
    answer 10 (a degenerate session: no residual noise at all)."""
    for index, session in enumerate(sessions):
        records = [
            ReviewRecord.model_validate(
                {
                    **row,
                    "schema_version": SCHEMA_VERSION,
                    "score_value": 10.0
                    if degenerate_first and index == 1 and row["score_value"] is not None
                    else row["score_value"],
                }
            )
            for row in session.records(config_hash=CONFIG_HASH)
        ]
        append_records(store, records)


def _summary_files(store: Path) -> list[Path]:
    return [profile_path(store), journal_path(store), sidecar_path(store)]


def _snapshot(store: Path) -> dict[Path, bytes | None]:
    return {path: path.read_bytes() if path.exists() else None for path in _summary_files(store)}


def _restore(snapshot: dict[Path, bytes | None]) -> None:
    for path, content in snapshot.items():
        if path.is_symlink() or path.exists():
            path.unlink()
        if content is not None:
            path.write_bytes(content)


@dataclass
class Stores:
    """The attacked store, its summaries now and LATER_SESSIONS sessions ago, and another
    store's summaries (to copy from)."""

    store: Path
    now: dict[Path, bytes | None]
    older: dict[Path, bytes | None]
    other: Path
    members: list[str]
    probe: GeneratedSession


def build_stores(directory: Path, n_members: int, n_sessions: int, seed: int) -> Stores:
    sessions = generate_sessions(_spec(n_members), n_sessions + 1, seed)
    store = directory / "records.jsonl"
    _append(store, sessions[: n_sessions - LATER_SESSIONS], degenerate_first=True)
    older = _snapshot(store)
    _append(store, sessions[n_sessions - LATER_SESSIONS : n_sessions])
    other = directory / "other.jsonl"
    _append(
        other, generate_sessions(_spec(n_members, reversed_roles=True), n_sessions, seed + 1000)
    )
    return Stores(store, _snapshot(store), older, other, _spec(n_members).members(), sessions[-1])


def _clear_caches() -> None:
    """What a new process would know: nothing read, nothing rebuilt."""
    reviewer_profiles._CHAIN_READS.clear()
    adjustment_sidecar._READS.clear()
    try:
        from llm_council.bias_audit.records.summary_files import forget_rebuilt
    except ImportError:  # the code before the seal kept no rebuild in memory
        return
    forget_rebuilt()


@dataclass(frozen=True)
class Verdict:
    """Everything a summary could move."""

    names: tuple[Any, ...]
    numbers: tuple[float | None, ...]
    leader: str

    def equals(self, other: Verdict) -> bool:
        if self.names != other.names or self.leader != other.leader:
            return False
        if len(self.numbers) != len(other.numbers):
            return False
        for mine, theirs in zip(self.numbers, other.numbers, strict=True):
            if (mine is None) != (theirs is None):
                return False
            if (
                mine is not None
                and theirs is not None
                and not math.isclose(mine, theirs, rel_tol=RELATIVE, abs_tol=1e-12)
            ):
                return False
        return True


def _leader(probe: GeneratedSession, adjustments: dict[str, Any]) -> str:
    lengths = centred_log_lengths({m: len(t) for m, t in probe.stage1_responses.items()})
    adjusted: dict[str, list[float]] = {}
    for reviewer, given in probe.stage2_scores.items():
        adjustment = adjustments.get(reviewer)
        for candidate, score in given.items():
            if candidate == reviewer or score is None:
                continue
            value = float(score)
            if adjustment is not None:
                value -= adjustment.leniency + adjustment.length_slope * lengths[candidate]
                value -= adjustment.slot_effect(probe.position_mapping[reviewer][candidate])
            adjusted.setdefault(candidate, []).append(value)
    means = {candidate: sum(v) / len(v) for candidate, v in adjusted.items()}
    return max(sorted(means), key=lambda candidate: means[candidate])


def verdict(stores: Stores) -> Verdict:
    """The probe session's audit and debiased leader with ``history=store``, cold."""
    _clear_caches()
    probe = stores.probe
    audit = run_bias_audit(
        probe.stage1_responses,
        probe.stage2_scores,
        probe.position_mapping,
        history=stores.store,
    )
    adjustments = reviewer_adjustments(
        stores.store, stores.members, council_config_hash=CONFIG_HASH
    )
    numbers: list[float | None] = []
    for name in stores.members:
        numbers.append(audit.reviewer_offset_p_values.get(name))
        numbers.append(audit.self_preference_p_values.get(name))
        found = adjustments.get(name)
        if found is not None:
            numbers.extend([found.leniency, found.length_slope, *found.slot_effects])
    numbers.append(audit.position_score_p_value)
    numbers.append(audit.pooled_self_preference_p_value)
    names = (
        tuple(audit.harsh_reviewers),
        tuple(audit.generous_reviewers),
        tuple(audit.self_preferring_reviewers),
        audit.overall_bias_risk,
        tuple(audit.flags_raised),
        audit.indicator_only.get("reviewers"),
    )
    return Verdict(names, tuple(numbers), _leader(probe, adjustments))


# ---- the edits ---------------------------------------------------------------------------

DEEP = b"[" * 100_000


def _load(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


def _dump(path: Path, document: Any) -> None:
    path.write_text(json.dumps(document), encoding="utf-8")


def _store_key(store: Path) -> list[int]:
    status = store.stat()
    return [status.st_ino, status.st_size, status.st_mtime_ns]


def _honest_judge(stores: Stores) -> str:
    return stores.members[-1]


def _present(reviewers: dict[str, Any], preferred: str) -> str:
    """``preferred`` when the summary holds it, else the last reviewer it does hold (a
    small council's first session may miss a reviewer or, with a missing cell at 3
    members, have no residual to sum: then a placeholder entry is forged)."""
    if preferred in reviewers:
        return preferred
    if reviewers:
        return sorted(reviewers)[-1]
    reviewers[preferred] = [1, 1.0, 1.0, {preferred: 1.0}]
    return preferred


def base_noise_shrunk(stores: Stores) -> None:
    """An honest judge's residual sum of squares / 100 in the base (as if it never erred)."""
    path = profile_path(stores.store)
    document = _load(path)
    reviewers = document["reviewers"]
    reviewers[_present(reviewers, _honest_judge(stores))][1] /= 100.0
    _dump(path, document)


def base_harsh_hidden(stores: Stores) -> None:
    """The harsh judge's residual sum of squares x 100 (its harshness drowned in noise)."""
    path = profile_path(stores.store)
    document = _load(path)
    reviewers = document["reviewers"]
    reviewers[_present(reviewers, stores.members[0])][1] *= 100.0
    _dump(path, document)


def base_huge_residual(stores: Stores) -> None:
    path = profile_path(stores.store)
    document = _load(path)
    reviewers = document["reviewers"]
    reviewers[_present(reviewers, stores.members[0])][1] = 1e308
    _dump(path, document)


def base_sessions_inflated(stores: Stores) -> None:
    path = profile_path(stores.store)
    document = _load(path)
    for values in document["reviewers"].values():
        values[0] *= 1000
        values[1] *= 1000
        values[2] *= 1000
    _dump(path, document)


def base_replayed_with_current_key(stores: Stores) -> None:
    """The base of LATER_SESSIONS sessions ago, its store_key set to the store's current
    key and the journal deleted: a stale summary made to look fresh."""
    _restore({profile_path(stores.store): stores.older[profile_path(stores.store)]})
    path = profile_path(stores.store)
    document = _load(path)
    document["store_key"] = _store_key(stores.store)
    _dump(path, document)
    journal_path(stores.store).unlink(missing_ok=True)


def base_seal_deleted(stores: Stores) -> None:
    path = profile_path(stores.store)
    document = _load(path)
    document.pop("seal", None)
    _dump(path, document)


def base_truncated(stores: Stores) -> None:
    path = profile_path(stores.store)
    content = path.read_bytes()
    path.write_bytes(content[: len(content) // 2])


def base_copied_from_other_store(stores: Stores) -> None:
    """The other store's base, store_key set to this store's current state, journal gone."""
    document = _load(profile_path(stores.other))
    document["store_key"] = _store_key(stores.store)
    _dump(profile_path(stores.store), document)
    journal_path(stores.store).unlink(missing_ok=True)


def base_deeply_nested(stores: Stores) -> None:
    profile_path(stores.store).write_bytes(DEEP)


def base_symlink_to_other(stores: Stores) -> None:
    path = profile_path(stores.store)
    path.unlink()
    path.symlink_to(profile_path(stores.other))
    journal_path(stores.store).unlink(missing_ok=True)


def _journal_lines(stores: Stores) -> list[bytes]:
    return journal_path(stores.store).read_bytes().splitlines(keepends=True)


def _write_journal(stores: Stores, lines: list[bytes]) -> None:
    journal_path(stores.store).write_bytes(b"".join(lines))


def journal_noise_shrunk(stores: Stores) -> None:
    """Every journal line: the honest judge's residual sum of squares / 100."""
    lines = []
    for line in _journal_lines(stores):
        entry = json.loads(line)
        values = entry["reviewers"].get(_honest_judge(stores))
        if values is not None:
            values[1] /= 100.0
        lines.append((json.dumps(entry) + "\n").encode())
    _write_journal(stores, lines)


def journal_line_copied_from_other_store(stores: Stores) -> None:
    """The last line replaced by the other store's last line, its keys patched to chain."""
    lines = _journal_lines(stores)
    mine = json.loads(lines[-1])
    theirs = json.loads(journal_path(stores.other).read_bytes().splitlines()[-1])
    theirs["before"], theirs["after"] = mine["before"], mine["after"]
    lines[-1] = (json.dumps(theirs) + "\n").encode()
    _write_journal(stores, lines)


def journal_seal_deleted(stores: Stores) -> None:
    lines = _journal_lines(stores)
    entry = json.loads(lines[-1])
    entry.pop("seal", None)
    lines[-1] = (json.dumps(entry) + "\n").encode()
    _write_journal(stores, lines)


def journal_line_truncated(stores: Stores) -> None:
    lines = _journal_lines(stores)
    lines[-1] = lines[-1][: len(lines[-1]) // 2] + b"\n"
    _write_journal(stores, lines)


def journal_deeply_nested_line(stores: Stores) -> None:
    lines = _journal_lines(stores)
    _write_journal(stores, [*lines[:-1], DEEP + b"\n", lines[-1]])


def journal_session_skipped(stores: Stores) -> None:
    """A middle line deleted and the line before it re-keyed to chain past the gap."""
    lines = _journal_lines(stores)
    if len(lines) < 3:
        return
    middle = len(lines) // 2
    dropped = json.loads(lines[middle])
    before = json.loads(lines[middle - 1])
    before["after"] = dropped["after"]
    lines[middle - 1] = (json.dumps(before) + "\n").encode()
    del lines[middle]
    _write_journal(stores, lines)


def _packed(council: dict[str, Any], name: str) -> np.ndarray:
    return np.frombuffer(base64.b64decode(council[name]), dtype="<f8").copy()


def _pack(values: np.ndarray) -> str:
    return base64.b64encode(values.astype("<f8").tobytes()).decode("ascii")


def adjustments_scores_shifted(stores: Stores) -> None:
    """The sums' score column for judge 1 (the generous one) scaled by 10: its leniency
    read as some ten times larger."""
    path = sidecar_path(stores.store)
    document = _load(path)
    council = document["councils"][CONFIG_HASH]
    reviewers = council["reviewers"]
    size = len(council["columns"]) + 1
    upper = np.triu_indices(size)
    cross = _packed(council, "cross").reshape(len(reviewers), -1)
    judge = reviewers.index(stores.members[1])
    last_column = upper[1] == size - 1
    cross[judge, last_column] *= 10.0
    cross[judge, last_column & (upper[0] == size - 1)] *= 10.0
    council["cross"] = _pack(cross.ravel())
    _dump(path, document)


def adjustments_forged_from_fabricated_sessions(stores: Stores) -> None:
    """Sums computed with the project's own code from fabricated sessions in which the
    probe's last-placed answer's author is 24.4 points generous, written with the store's
    current key: its leniency then pulls every other answer down."""
    probe = stores.probe
    _, first = _raw_leader_and_last(probe)
    fabricated = generate_sessions(_spec(len(stores.members)), 20, 4242)
    records = []
    for session in fabricated:
        for row in session.records(config_hash=CONFIG_HASH):
            if row["reviewer_id"] == first and row["score_value"] is not None:
                row = {**row, "score_value": row["score_value"] + 24.4}
            records.append(ReviewRecord.model_validate({**row, "schema_version": SCHEMA_VERSION}))
    sums = adjustment_sidecar.sums_by_council(records)
    document = {
        "format": adjustment_sidecar.SIDECAR_FORMAT,
        "store_key": _store_key(stores.store),
        "councils": {name: adjustment_sidecar._encode(value) for name, value in sums.items()},
    }
    _dump(sidecar_path(stores.store), document)


def _raw_leader_and_last(probe: GeneratedSession) -> tuple[str, str]:
    means = {
        candidate: float(
            np.mean(
                [
                    given[candidate]
                    for reviewer, given in probe.stage2_scores.items()
                    if reviewer != candidate and given.get(candidate) is not None
                ]
            )
        )
        for candidate in probe.stage1_responses
    }
    ordered = sorted(sorted(means), key=lambda candidate: -means[candidate])
    return ordered[0], ordered[-1]


def adjustments_counts_inflated(stores: Stores) -> None:
    path = sidecar_path(stores.store)
    document = _load(path)
    council = document["councils"][CONFIG_HASH]
    council["n_scores"] = [n * 1000 for n in council["n_scores"]]
    council["cross"] = _pack(_packed(council, "cross") * 1000)
    _dump(path, document)


def adjustments_replayed_with_current_key(stores: Stores) -> None:
    _restore({sidecar_path(stores.store): stores.older[sidecar_path(stores.store)]})
    path = sidecar_path(stores.store)
    document = _load(path)
    document["store_key"] = _store_key(stores.store)
    _dump(path, document)


def adjustments_seal_deleted(stores: Stores) -> None:
    path = sidecar_path(stores.store)
    document = _load(path)
    document.pop("seal", None)
    _dump(path, document)


def adjustments_truncated(stores: Stores) -> None:
    path = sidecar_path(stores.store)
    content = path.read_bytes()
    path.write_bytes(content[: len(content) // 2])


def adjustments_copied_from_other_store(stores: Stores) -> None:
    document = _load(sidecar_path(stores.other))
    document["store_key"] = _store_key(stores.store)
    _dump(sidecar_path(stores.store), document)


def adjustments_huge_sum(stores: Stores) -> None:
    path = sidecar_path(stores.store)
    document = _load(path)
    council = document["councils"][CONFIG_HASH]
    cross = _packed(council, "cross")
    cross[-1] = 1e308
    council["cross"] = _pack(cross)
    _dump(path, document)


def adjustments_deeply_nested(stores: Stores) -> None:
    sidecar_path(stores.store).write_bytes(DEEP)


EDITS: dict[str, tuple[str, Callable[[Stores], None]]] = {
    "base: honest judge's residual sum / 100": ("profiles.json", base_noise_shrunk),
    "base: harsh judge's residual sum x 100": ("profiles.json", base_harsh_hidden),
    "base: a residual sum of 1e308": ("profiles.json", base_huge_residual),
    "base: counts and sums x 1000": ("profiles.json", base_sessions_inflated),
    "base: 5 sessions old, store_key set to now, journal deleted": (
        "profiles.json",
        base_replayed_with_current_key,
    ),
    "base: seal deleted": ("profiles.json", base_seal_deleted),
    "base: truncated to half": ("profiles.json", base_truncated),
    "base: another store's, store_key set to this one's": (
        "profiles.json",
        base_copied_from_other_store,
    ),
    "base: 100,000 '['": ("profiles.json", base_deeply_nested),
    "base: a symlink to another store's": ("profiles.json", base_symlink_to_other),
    "journal: honest judge's residual sums / 100": ("profiles.log", journal_noise_shrunk),
    "journal: last line from another store, keys patched": (
        "profiles.log",
        journal_line_copied_from_other_store,
    ),
    "journal: a line's seal deleted": ("profiles.log", journal_seal_deleted),
    "journal: last line truncated (newline kept)": ("profiles.log", journal_line_truncated),
    "journal: a line of 100,000 '['": ("profiles.log", journal_deeply_nested_line),
    "journal: a session's line deleted, keys re-chained": (
        "profiles.log",
        journal_session_skipped,
    ),
    "adjustments: generous judge's score sums x 10": (
        "adjustments.json",
        adjustments_scores_shifted,
    ),
    "adjustments: forged from fabricated sessions (one judge +24.4)": (
        "adjustments.json",
        adjustments_forged_from_fabricated_sessions,
    ),
    "adjustments: counts and sums x 1000": ("adjustments.json", adjustments_counts_inflated),
    "adjustments: 5 sessions old, store_key set to now": (
        "adjustments.json",
        adjustments_replayed_with_current_key,
    ),
    "adjustments: seal deleted": ("adjustments.json", adjustments_seal_deleted),
    "adjustments: truncated to half": ("adjustments.json", adjustments_truncated),
    "adjustments: another store's, store_key set to this one's": (
        "adjustments.json",
        adjustments_copied_from_other_store,
    ),
    "adjustments: a sum of 1e308": ("adjustments.json", adjustments_huge_sum),
    "adjustments: 100,000 '['": ("adjustments.json", adjustments_deeply_nested),
}


@dataclass(frozen=True)
class Outcome:
    edit: str
    file: str
    equal: bool
    detail: str


def _describe(honest: Verdict, got: Verdict) -> str:
    if got.equals(honest):
        return "all equal"
    changes = []
    labels = ("harsh", "generous", "self-preferring", "risk", "flags", "noise from")
    for label, mine, theirs in zip(labels, honest.names, got.names, strict=True):
        if mine != theirs:
            changes.append(f"{label} {mine!r} -> {theirs!r}")
    if honest.leader != got.leader:
        changes.append(f"leader {honest.leader} -> {got.leader}")
    moved = sum(
        1
        for mine, theirs in zip(honest.numbers, got.numbers, strict=False)
        if (mine is None) != (theirs is None)
        or (
            mine is not None
            and theirs is not None
            and not math.isclose(mine, theirs, rel_tol=RELATIVE, abs_tol=1e-12)
        )
    )
    changes.append(f"{moved} number(s) moved")
    return "; ".join(changes)


def run_edits(stores: Stores, names: list[str] | None = None) -> tuple[Verdict, list[Outcome]]:
    """The untouched verdict, then each edit's outcome (files restored after each)."""
    honest = verdict(stores)
    outcomes = []
    for name in names or list(EDITS):
        file, edit = EDITS[name]
        _restore(stores.now)
        edit(stores)
        try:
            got = verdict(stores)
            outcomes.append(Outcome(name, file, got.equals(honest), _describe(honest, got)))
        except Exception as error:  # noqa: BLE001 - the code before the fix raised here
            outcomes.append(Outcome(name, file, False, f"raised {type(error).__name__}"))
        finally:
            _restore(stores.now)
    return honest, outcomes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--members", type=int, default=4)
    parser.add_argument("--sessions", type=int, default=30)
    parser.add_argument("--seed", type=int, default=37)
    args = parser.parse_args()
    directory = Path(tempfile.mkdtemp(prefix="summary-tamper-"))
    try:
        stores = build_stores(directory, args.members, args.sessions, args.seed)
        honest, outcomes = run_edits(stores)
        print(
            f"{args.members} members, {args.sessions} sessions; untouched: harsh "
            f"{list(honest.names[0])}, generous {list(honest.names[1])}, risk "
            f"{honest.names[3]}, leader {honest.leader}"
        )
        print("| Edit (records untouched) | File | Verdicts |")
        print("|---|---|---|")
        for outcome in outcomes:
            print(f"| {outcome.edit} | `{outcome.file}` | {outcome.detail} |")
        print(f"equal: {sum(o.equal for o in outcomes)} of {len(outcomes)}")
    finally:
        shutil.rmtree(directory, ignore_errors=True)


if __name__ == "__main__":
    main()
