"""One ``calibrate`` or ``probe`` run: live (call the judge) or replay (recorded verdicts).

Keeps the CLI thin: the command parses options, this module does the work and returns
the JSON-ready report, which the CLI writes with
:func:`llm_council.infra.atomic_files.write_json_atomically` (nothing half-written).
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import platformdirs

from llm_council.calibration.bias_check import select_pairs_for_bias_check
from llm_council.calibration.call_cache import CallCache
from llm_council.calibration.canary import judge_fingerprint
from llm_council.calibration.judge_prompt import judge_prompt_hash
from llm_council.calibration.pairs import Pair, distinct_questions
from llm_council.calibration.probes import PROBE_NAMES, probe_call_count, run_probes
from llm_council.calibration.report import (
    DEFAULT_HUMAN_KAPPA_THRESHOLD,
    ReportOptions,
    compute_report,
    outcomes_from_judgments,
)
from llm_council.calibration.runner import (
    CallResult,
    JudgeRunner,
    judge_key,
    outcomes_from_results,
    position_swap_calls,
)
from llm_council.calibration.study import (
    DEFAULT_MIN_SUBSET_N,
    compare_judges,
    other_judges_verdicts,
    subset_tables,
)
from llm_council.errors import InputError
from llm_council.providers.registry import create_provider, split_spec

REPORT_FORMAT = "llm-council-calibration/1"


@dataclass(frozen=True)
class LiveSettings:
    """How to call the judge in a live run."""

    spec: str
    options: Mapping[str, Any] = field(default_factory=dict)
    repetitions: int = 1
    concurrency: int = 8
    seed: int = 0
    temperature: float | None = None
    cache_path: Path | None = None


def default_cache_path(pairs_path: Path, spec: str, output: Path | None) -> Path:
    """Beside the report when there is one, else in the user cache directory."""
    if output is not None:
        return output.with_name(output.name + ".calls.jsonl")
    digest = hashlib.sha256(f"{pairs_path.resolve()}\x00{spec}".encode()).hexdigest()[:16]
    return Path(platformdirs.user_cache_dir("llm-council")) / "calibrate" / f"{digest}.jsonl"


def judges_in(pairs: Sequence[Pair]) -> list[str]:
    return sorted({pair.judge for pair in pairs if pair.judge is not None and pair.judgments})


def replay_reports(
    pairs: Sequence[Pair],
    *,
    path: str,
    only_judge: str | None = None,
    human_threshold: float = DEFAULT_HUMAN_KAPPA_THRESHOLD,
    judge_family: str | None = None,
    by: Sequence[str] = (),
    min_subset_n: int = DEFAULT_MIN_SUBSET_N,
) -> list[dict[str, Any]]:
    """One report per judge found in the records (no model calls)."""
    return replay_study(
        pairs,
        path=path,
        only_judge=only_judge,
        human_threshold=human_threshold,
        judge_family=judge_family,
        by=by,
        min_subset_n=min_subset_n,
    )[0]


def replay_study(
    pairs: Sequence[Pair],
    *,
    path: str,
    only_judge: str | None = None,
    human_threshold: float = DEFAULT_HUMAN_KAPPA_THRESHOLD,
    judge_family: str | None = None,
    by: Sequence[str] = (),
    min_subset_n: int = DEFAULT_MIN_SUBSET_N,
) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    """Reports per judge, each with its ``subsets`` under ``by``, and the judge comparison
    (``--by judge`` with two or more judges; else None).

    In a multi-judge file every judge's self-preference is also measured against the other
    judges' verdicts on the same pairs.
    """
    all_judges = judges_in(pairs)
    if not all_judges:
        raise InputError(
            "no recorded 'judgments' to replay; pass --model SPEC to judge the pairs live",
            path=path,
        )
    judges = all_judges
    if only_judge is not None:
        if only_judge not in all_judges:
            # repr escapes control and bidi characters: names from the file print safely
            raise InputError(
                f"judge {only_judge!r} not in the records; found: "
                f"{', '.join(repr(judge) for judge in all_judges)}",
                path=path,
            )
        judges = [only_judge]
    # a record with no judge at all is unevaluated for every judge; outcomes are built
    # for EVERY judge, so --judge X keeps the other judges as X's self-preference baseline
    outcomes = {
        judge: outcomes_from_judgments([p for p in pairs if p.judge in (judge, None)])
        for judge in all_judges
    }
    options = {
        judge: ReportOptions(
            judge=judge,
            human_kappa_threshold=human_threshold,
            judge_family=judge_family,
            other_judges=other_judges_verdicts(outcomes, judge),
        )
        for judge in judges
    }
    reports = []
    for judge in judges:
        report = compute_report(outcomes[judge], options[judge])
        if by:
            report["subsets"] = subset_tables(outcomes[judge], options[judge], by, min_subset_n)
        reports.append(report)
    comparison = None
    if "judge" in by and len(judges) > 1:
        compared = {judge: outcomes[judge] for judge in judges}
        comparison = compare_judges(compared, options, min_n=min_subset_n)
    return reports, comparison


async def live_report(
    pairs: Sequence[Pair],
    settings: LiveSettings,
    *,
    human_threshold: float = DEFAULT_HUMAN_KAPPA_THRESHOLD,
    judge_family: str | None = None,
    bias_check_probability: float = 0.0,
    probes: Sequence[str] = PROBE_NAMES,
    on_call_done: Callable[[CallResult], None] | None = None,
    on_total: Callable[[int], None] | None = None,
    source: str = "<pairs>",
    by: Sequence[str] = (),
    min_subset_n: int = DEFAULT_MIN_SUBSET_N,
) -> dict[str, Any]:
    """Judge every pair in both orders (and probes on the sampled pairs), then report."""
    _, model_name = split_spec(settings.spec)
    # a replay file lists each id once per judge: a live run judges each id once (issue 10.8)
    pairs = distinct_questions(pairs, path=source)
    provider = create_provider(settings.spec, settings.options)
    cache = CallCache(settings.cache_path)
    runner = JudgeRunner(
        provider,
        judge_key(settings.spec, settings.options),
        cache,
        concurrency=settings.concurrency,
        seed=settings.seed,
        temperature=settings.temperature,
        on_call_done=on_call_done,
    )
    checked = select_pairs_for_bias_check(pairs, bias_check_probability, settings.seed)
    probe_calls = sum(probe_call_count(name) for name in probes) * len(checked)
    if on_total is not None:
        on_total(2 * settings.repetitions * len(pairs) + probe_calls)
    try:
        results = await runner.run(position_swap_calls(pairs, settings.repetitions))
        probe_summaries = await run_probes(runner, checked, probes, model_name) if checked else None
    finally:
        cache.close()
        await provider.aclose()
    extra: dict[str, Any] = {
        "model_calls": runner.calls_made,
        "cached_calls": runner.calls_from_checkpoint,
        "reused_calls_in_run": runner.calls_reused_in_run,
        "cache": str(settings.cache_path) if settings.cache_path else None,
        # what identifies this judge set-up across runs (a provider update behind the same
        # model id shows in calibrate --canary, not here)
        "fingerprint": judge_fingerprint(
            settings.spec,
            settings.options,
            settings.temperature,
            prompt_sha256=judge_prompt_hash(),
            scale=("a", "tie", "b"),
        ),
    }
    if probe_summaries is not None:
        extra["probes"] = probe_summaries
        extra["bias_check_pairs"] = len(checked)
    options = ReportOptions(
        judge=settings.spec,
        human_kappa_threshold=human_threshold,
        judge_family=judge_family,
        extra=extra,
    )
    outcomes = outcomes_from_results(pairs, results)
    report = compute_report(outcomes, options)
    if by:
        report["subsets"] = subset_tables(outcomes, options, by, min_subset_n)
    return report


def run_live(pairs: Sequence[Pair], settings: LiveSettings, **kwargs: Any) -> dict[str, Any]:
    return asyncio.run(live_report(pairs, settings, **kwargs))


def untrusted_judges(reports: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        r for r in reports if r["human_agreement"]["pairs"] and not r["human_agreement"]["trusted"]
    ]
