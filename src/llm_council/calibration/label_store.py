"""Where human labels go: one JSONL line per labelled pair, durable the moment it is given.

Each line is the pair in the input format plus ``human_label`` (in the ORIGINAL labels)
and ``label_meta`` (which answer was shown on the left, the optional reason, the time),
so the output file is itself a pairs file ``calibrate`` can read. Lines are appended with
one ``write`` followed by flush + fsync: killing the server loses nothing already
confirmed; restarting skips the pairs already labelled.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import warnings
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from llm_council.calibration.pairs import Pair, Winner, pair_to_record
from llm_council.errors import InputError
from llm_council.infra.input_files import read_input_bytes, read_input_text

Side = Literal["left", "right", "tie"]


def left_side(pair_id: str, seed: int) -> Literal["a", "b"]:
    """Which original answer is shown on the left: a fair coin fixed by (seed, pair id)."""
    return "a" if hashlib.sha256(f"{seed}\x00{pair_id}".encode()).digest()[0] % 2 == 0 else "b"


def side_to_original(side: Side, left: Literal["a", "b"]) -> Winner:
    if side == "tie":
        return "tie"
    right: Literal["a", "b"] = "b" if left == "a" else "a"
    return left if side == "left" else right


class LabelStore:
    """The pairs to label, the labels given so far, and the append-only output file."""

    def __init__(self, pairs: Sequence[Pair], output: Path, seed: int = 0) -> None:
        self.pairs = list(pairs)
        self.output = output
        self.seed = seed
        self._lock = threading.Lock()
        self.labelled: set[str] = self._read_done()

    def _read_done(self) -> set[str]:
        if not self.output.exists():
            return set()
        self._repair_torn_tail()
        done = set()
        lines = read_input_text(self.output).split("\n")  # regular, bounded (issue 37 A.10)
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                done.add(str(json.loads(line)["id"]))
            except (json.JSONDecodeError, RecursionError, KeyError, TypeError):
                raise InputError(
                    "not a labels line (remove or fix it to resume)",
                    path=str(self.output),
                    line=number,
                ) from None
        return done

    def _repair_torn_tail(self) -> None:
        """Cut off a last line torn by a killed writer, once, keeping it in ``<output>.torn``.

        A torn line has no trailing newline and is not a JSON object. Its label was never
        confirmed to the labeller (the write did not finish), so it is not a label; moving
        it aside means the next append starts on a clean line and every later reader
        (this store on any restart, ``calibrate``) sees a well-formed file.
        """
        content = read_input_bytes(self.output)  # a FIFO or /dev/zero: one line, no hang
        if not content or content.endswith(b"\n"):
            return
        cut = content.rfind(b"\n") + 1
        fragment = content[cut:]
        try:
            json.loads(fragment.decode("utf-8"))
            return  # a complete last line that only lacks its newline: _append adds it
        except (ValueError, RecursionError):
            pass
        line_number = content.count(b"\n") + 1
        torn_copy = self.output.with_name(self.output.name + ".torn")
        with torn_copy.open("ab") as handle:
            handle.write(fragment + b"\n")
            handle.flush()
            os.fsync(handle.fileno())
        with self.output.open("r+b") as handle:
            handle.truncate(cut)
            handle.flush()
            os.fsync(handle.fileno())
        warnings.warn(
            f"{self.output}:{line_number}: removed a torn last line (a label whose write was "
            f"interrupted, never confirmed); kept in {torn_copy}",
            stacklevel=3,
        )

    def next_pair(self) -> Pair | None:
        with self._lock:
            return next((p for p in self.pairs if p.pair_id not in self.labelled), None)

    def progress(self) -> dict[str, int]:
        with self._lock:
            known = {p.pair_id for p in self.pairs}
            return {"labelled": len(self.labelled & known), "total": len(self.pairs)}

    def record(self, pair_id: str, side: Side, reason: str) -> dict[str, Any]:
        """Save one label durably; labelling a pair twice keeps the first label."""
        with self._lock:
            pair = next((p for p in self.pairs if p.pair_id == pair_id), None)
            if pair is None:
                raise KeyError(pair_id)
            if pair_id in self.labelled:
                return {"saved": False, "reason": "already labelled"}
            left = left_side(pair_id, self.seed)
            record = pair_to_record(pair, with_judgments=True)
            record["human_label"] = side_to_original(side, left)
            record["label_meta"] = {
                "shown_left": left,
                "choice": side,
                "reason": reason,
                "labelled_at": datetime.now(UTC).isoformat(timespec="seconds"),
            }
            self.output.parent.mkdir(parents=True, exist_ok=True)
            self._append(json.dumps(record, ensure_ascii=False) + "\n")
            self.labelled.add(pair_id)
            return {"saved": True, "human_label": record["human_label"]}

    def _append(self, line: str) -> None:
        needs_newline = False
        if self.output.exists() and self.output.stat().st_size > 0:
            with self.output.open("rb") as handle:
                handle.seek(-1, os.SEEK_END)
                needs_newline = handle.read(1) != b"\n"
        with self.output.open("a", encoding="utf-8") as handle:
            handle.write(("\n" if needs_newline else "") + line)
            handle.flush()
            os.fsync(handle.fileno())
