"""Measure what the bias audit finds on the local judge (docs/local-council.md, ADR 0041).

    python tests/local_model/measure_local_judge.py --sessions 12 --pairs 10 --out /tmp/local

Needs the ``local`` extra. Runs ``--sessions`` audited sessions of
``config/local_council.toml`` with a live bias check for every reviewer (reshuffle, repeat
or padding, ADR 0024), then ``bias-report`` over their records, then ``calibrate`` (both
orders, two repetitions) and ``probe --probes padding`` of the same model as a pairwise
judge on the ``--pairs`` shortest PRD Vicuna80 pairs. Prints the figures with their
intervals and writes every report under ``--out``. Nothing here is a test: the numbers
are whatever the model does.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import csv
import io
import json
import os
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

from llm_council import run_full_council
from llm_council.cli.app import main
from llm_council.config import load_council_config

REPO = Path(__file__).resolve().parents[2]
CONFIG = REPO / "config" / "local_council.toml"
PRD_PAIRS = REPO / "tests" / "data" / "prd_vicuna80" / "replay_gpt4_claude_q1-8.jsonl"
QUERIES = (
    "Why is the sky blue?",
    "How do I make a good cup of tea?",
    "What is a prime number?",
    "How can I sleep better?",
    "Why do leaves change colour in autumn?",
    "What is the difference between weather and climate?",
    "How does a bicycle stay upright?",
    "Why should I drink water?",
    "What causes rain?",
    "How do vaccines work?",
    "What is photosynthesis?",
    "How do I learn a new language?",
    "Why is exercise good for you?",
    "What is gravity?",
    "How does a computer store data?",
    "Why do we have seasons?",
)
JUDGE = ["--model", "openai:smollm2-135m", "-o", "local_model=smollm2-135m"]
JUDGE_SETTINGS = ["-o", "max_tokens=96", "-o", "temperature=0"]


def run_cli(*args: str) -> tuple[int, str]:
    out = io.StringIO()
    code = 0
    with contextlib.redirect_stdout(out):
        try:
            main(list(args))
        except SystemExit as exited:
            code = int(exited.code or 0)
    return code, out.getvalue()


def run_sessions(
    count: int, store: Path, check_kinds: dict[str, float] | None = None, first_seed: int = 100
) -> dict[str, object]:
    os.environ["LLM_COUNCIL_BIAS_STORE"] = str(store)
    os.environ["LLM_COUNCIL_BIAS_AUDIT"] = "true"
    update: dict[str, object] = {"bias_check_probability": 1.0}
    if check_kinds:
        update["bias_check_kinds"] = check_kinds
    config = load_council_config(CONFIG).model_copy(update=update)
    wall_s: list[float] = []
    statuses: Counter[str] = Counter()
    channels: Counter[str] = Counter()
    ties = 0
    reviews = 0
    reasons: Counter[str] = Counter()
    for index in range(count):
        query = QUERIES[index % len(QUERIES)]
        started = time.perf_counter()
        result = asyncio.run(run_full_council(query, config=config, seed=first_seed + index))
        wall_s.append(time.perf_counter() - started)
        for review in result.stage2:
            reviews += 1
            statuses[review.parse_status] += 1
            channels[str(review.verdict_channel)] += 1
            ties += review.ok and not review.ranking
            if not review.ok:
                reasons[str(review.parse_error or review.error)[:120]] += 1
        print(f"session {index + 1}/{count}: {wall_s[-1]:.1f} s", file=sys.stderr)
    return {
        "sessions": count,
        "session_wall_s": {
            "median": round(statistics.median(wall_s), 1),
            "min": round(min(wall_s), 1),
            "max": round(max(wall_s), 1),
        },
        "counted_reviews": reviews,
        "parse_status": dict(statuses),
        "verdict_channel": dict(channels),
        "parsed_with_tied_scores": ties,
        "failed_review_reasons": dict(reasons),
    }


def report_rows(store: Path, out: Path) -> list[dict[str, str]]:
    code, text = run_cli("bias-report", "--store", str(store), "--format", "csv")
    (out / "bias_report.csv").write_text(text)
    if code != 0:
        raise SystemExit(f"bias-report exited {code}")
    wanted = ("position", "check", "causal", "slot", "repeat", "padding", "parse")
    return [
        row
        for row in csv.DictReader(io.StringIO(text))
        if any(word in (row["section"] + row["metric"]).lower() for word in wanted)
    ]


def prd_subset(count: int, out: Path) -> Path:
    pairs = [json.loads(line) for line in PRD_PAIRS.read_text().splitlines() if line.strip()]
    # one line per pair and PRD reviewer: keep each pair once, judged live (no replay)
    unique = {p["id"]: p for p in reversed(pairs)}
    pairs = [
        {key: value for key, value in p.items() if key not in ("judge", "judgments")}
        for p in unique.values()
    ]
    pairs.sort(key=lambda p: len(p["response_a"]) + len(p["response_b"]) + len(p["prompt"]))
    path = out / "prd_pairs.jsonl"
    path.write_text("".join(json.dumps(p) + "\n" for p in pairs[:count]))
    return path


def main_measure() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=12)
    parser.add_argument("--pairs", type=int, default=10)
    parser.add_argument("--out", type=Path, default=Path("local_judge_measurements"))
    parser.add_argument(
        "--parts", default="council,judge", help="council (sessions), judge (calibrate, probe)"
    )
    parser.add_argument(
        "--check-kinds", default="", help="live check kinds, e.g. repeat,padding (default: all)"
    )
    parser.add_argument(
        "--append", action="store_true", help="add sessions to --out's store (new seeds)"
    )
    args = parser.parse_args()
    parts = set(args.parts.split(","))
    args.out.mkdir(parents=True, exist_ok=True)
    summary: dict[str, object] = {}
    if "council" in parts:
        store = args.out / "records.jsonl"
        first_seed = 100
        if args.append:
            first_seed = 1000
        else:
            store.unlink(missing_ok=True)
        kinds = {kind: 1.0 for kind in args.check_kinds.split(",") if kind} or None
        summary["council"] = run_sessions(args.sessions, store, kinds, first_seed)
        summary["bias_report_rows"] = report_rows(store, args.out)
        (args.out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    if "judge" in parts:
        summary.update(measure_judge(args.pairs, args.out))
    (args.out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    print(json.dumps(summary, indent=2))


def measure_judge(pair_count: int, out: Path) -> dict[str, object]:
    """``calibrate`` (two repetitions) and ``probe --probes padding`` on the PRD subset."""
    summary: dict[str, object] = {}
    pairs = prd_subset(pair_count, out)
    started = time.perf_counter()
    code, text = run_cli(
        "calibrate", str(pairs), *JUDGE, *JUDGE_SETTINGS, "--repetitions", "2",
        "--no-cache", "--concurrency", "1", "--output", str(out / "calibration.json"),
    )  # fmt: skip
    summary["calibrate"] = {"exit": code, "wall_s": round(time.perf_counter() - started, 1)}
    (out / "calibration.txt").write_text(text)
    started = time.perf_counter()
    code, text = run_cli(
        "probe", str(pairs), *JUDGE, *JUDGE_SETTINGS, "--probes", "padding",
        "--no-cache", "--concurrency", "1", "--output", str(out / "probe.json"),
    )  # fmt: skip
    summary["probe"] = {"exit": code, "wall_s": round(time.perf_counter() - started, 1)}
    (out / "probe.txt").write_text(text)
    return summary


if __name__ == "__main__":
    main_measure()
