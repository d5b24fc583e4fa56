"""The ``llm-council`` command table: each command's module and its one-line summary.

Read by :mod:`llm_council.cli.app` (the fast top-level ``--help``) and by
:mod:`llm_council.cli.command_group` (the typer application), which therefore do not
import each other.
"""

from __future__ import annotations

from typing import NamedTuple


class CommandEntry(NamedTuple):
    """Where a command lives and the summary ``llm-council --help`` shows for it."""

    module: str
    summary: str


ROOT_HELP = "Ask a council of LLMs, audit how its judges grade, and calibrate LLM judges."

# To add a command: its module defines ``register(app)``; add one line here.
COMMANDS: dict[str, CommandEntry] = {
    "ask": CommandEntry(
        "llm_council.cli.ask",
        "Ask the council a question: answers, anonymized peer review, and a synthesis.",
    ),
    "bias-report": CommandEntry(
        "llm_council.cli.bias_report",
        "Pool the bias-audit records of every session: reviewer profiles, biases, leaderboard.",
    ),
    "bias-watch": CommandEntry(
        "llm_council.cli.bias_watch",
        "Each reviewer's bias status, valid however often you look (exit 1: confirmed).",
    ),
    "bias-import": CommandEntry(
        "llm_council.cli.bias_import",
        "Convert the reference council's bias records (schema 1.x) into the bias-audit store.",
    ),
    "bias-compact": CommandEntry(
        "llm_council.cli.bias_compact",
        "Compact the bias-audit store into Parquet partitioned by date (idempotent).",
    ),
    "store-migrate": CommandEntry(
        "llm_council.cli.store_admin",
        "Create or migrate the PostgreSQL store's schema (once, as a role that may create tables).",
    ),
    "store-rebuild": CommandEntry(
        "llm_council.cli.store_admin",
        "Rebuild the PostgreSQL store's reviewer profiles and monitor from its records (import).",
    ),
    "store-copy": CommandEntry(
        "llm_council.cli.store_admin",
        "Copy a JSONL bias-audit store into a PostgreSQL store (idempotent: re-run to resume).",
    ),
    "calibrate": CommandEntry(
        "llm_council.cli.calibrate",
        "Position-swap calibration of an LLM judge (live with --model, else replay of verdicts).",
    ),
    "convert": CommandEntry(
        "llm_council.cli.convert",
        "Convert a judgment log to our replay pairs JSONL (then: llm-council calibrate OUT).",
    ),
    "probe": CommandEntry(
        "llm_council.cli.calibrate",
        "Bias probes: perturb one answer or the question (CALM biases, prompt injection).",
    ),
    "label-ui": CommandEntry(
        "llm_council.cli.calibrate",
        "Serve a local page (127.0.0.1 only) to label pairs A / B / tie, saving each label.",
    ),
    "label-plan": CommandEntry(
        "llm_council.cli.label_plan",
        "How many more human labels reach a target interval width; the order to label in.",
    ),
    "mcp": CommandEntry(
        "llm_council.cli.mcp_server",
        "Serve the council, its bias audit and judge calibration as MCP tools (stdio).",
    ),
    "export-openai-evals": CommandEntry(
        "llm_council.cli.calibrate",
        "Write the pairs as an OpenAI Evals dataset with a model-graded eval spec.",
    ),
}
