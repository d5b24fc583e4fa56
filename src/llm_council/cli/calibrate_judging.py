"""How ``calibrate`` and ``probe`` get their verdicts: the recorded ones, or a judge called live.

The command-line options of a live judge travel as one frozen :class:`JudgeCallOptions`
(``calibrate`` and ``probe`` build it the same way), and what the report computes from the
verdicts as one :class:`StudyOptions`.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from llm_council.calibration.bias_check import bias_check_probability
from llm_council.calibration.judge_independence import judge_independence_from_pairs
from llm_council.calibration.pairs import Pair
from llm_council.calibration.probes import parse_probe_names
from llm_council.calibration.session import (
    LiveSettings,
    default_cache_path,
    judges_in,
    replay_study,
    run_live,
)
from llm_council.cli.calibrate_outputs import CalibrationStudy
from llm_council.errors import ConfigError
from llm_council.infra.atomic_files import output_kind


def parse_options(items: Sequence[str] | None) -> dict[str, Any]:
    """``["noise_sd=0.5", "position_effects=[1.0]"]`` -> dict; a bare string stays a string."""
    options: dict[str, Any] = {}
    for item in items or []:
        key, sep, raw = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"invalid --option '{item}': expected KEY=VALUE")
        try:
            options[key.strip()] = json.loads(raw)
        except json.JSONDecodeError:
            options[key.strip()] = raw
    return options


def progress_enabled() -> bool:
    """Progress bars only for a person watching: a TTY and not CI."""
    return sys.stderr.isatty() and os.environ.get("CI", "").lower() not in ("true", "1")


@contextmanager
def call_progress(description: str) -> Iterator[tuple[Any, Any]]:
    """``(on_total, on_call_done)`` callbacks driving a rich progress bar (no-ops when off)."""
    if not progress_enabled():
        yield (lambda total: None, lambda result: None)
        return
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
    )

    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        transient=True,
        console=Console(file=sys.stderr),
    ) as progress:
        task = progress.add_task(description, total=None)
        yield (
            lambda total: progress.update(task, total=total),
            lambda result: progress.advance(task),
        )


@dataclass(frozen=True)
class JudgeCallOptions:
    """How to call a live judge, as given on the command line (``--model``, ``-o``, ...)."""

    model: str
    option: tuple[str, ...] = ()  # the -o KEY=VALUE items, parsed by :func:`parse_options`
    output: Path | None = None
    cache: Path | None = None
    no_cache: bool = False
    repetitions: int = 1
    concurrency: int = 8
    seed: int = 0
    temperature: float | None = None

    def live_settings(self, pairs_path: Path) -> LiveSettings:
        """The runner's settings; refuses counts below 1 and places the call cache."""
        if self.repetitions < 1 or self.concurrency < 1:
            raise ConfigError(
                "--repetitions and --concurrency must be >= 1, got "
                f"{self.repetitions} and {self.concurrency}"
            )
        # the call cache sits beside a report file; a streamed report (-, /dev/stdout, a
        # FIFO) has no "beside", so its cache goes to the user cache directory
        output = self.output
        beside = output if output is not None and output_kind(output)[0] == "file" else None
        cache_path = (
            None
            if self.no_cache
            else (self.cache or default_cache_path(pairs_path, self.model, beside))
        )
        return LiveSettings(
            spec=self.model,
            options=parse_options(self.option),
            repetitions=self.repetitions,
            concurrency=self.concurrency,
            seed=self.seed,
            temperature=self.temperature,
            cache_path=cache_path,
        )


@dataclass(frozen=True)
class StudyOptions:
    """What ``calibrate`` computes from the verdicts, whichever way they were obtained."""

    human_threshold: float
    judge: str | None
    judge_family: str | None
    bias_check: bool
    probes: str
    study_keys: tuple[str, ...]
    min_subset_n: int


def judge_pairs(
    pairs: list[Pair], pairs_path: Path, call: JudgeCallOptions | None, study: StudyOptions
) -> CalibrationStudy:
    """Replay the recorded verdicts without a judge to call (``call`` None), else call it."""
    if call is None:
        return _replay_study(pairs, pairs_path, study)
    return _live_study(pairs, pairs_path, call.live_settings(pairs_path), study)


def _replay_study(pairs: list[Pair], pairs_path: Path, study: StudyOptions) -> CalibrationStudy:
    """The recorded verdicts' reports; with every judge, their comparison and independence."""
    reports, comparison = replay_study(
        pairs,
        path=str(pairs_path),
        only_judge=study.judge,
        human_threshold=study.human_threshold,
        judge_family=study.judge_family,
        by=study.study_keys,
        min_subset_n=study.min_subset_n,
    )
    # effective number of judges: replay of 2+ judges only
    independence = (
        judge_independence_from_pairs(pairs, judges_in(pairs)) if study.judge is None else None
    )
    return CalibrationStudy("replay", reports, comparison, independence)


def _live_study(
    pairs: list[Pair], pairs_path: Path, settings: LiveSettings, study: StudyOptions
) -> CalibrationStudy:
    """The judge's report from calling it on every pair in both orders (with a progress bar)."""
    probability = 1.0 if study.bias_check else bias_check_probability()
    with call_progress(f"judging {len(pairs)} pairs") as (on_total, on_done):
        report = run_live(
            pairs,
            settings,
            human_threshold=study.human_threshold,
            judge_family=study.judge_family,
            bias_check_probability=probability,
            probes=parse_probe_names(study.probes),
            on_call_done=on_done,
            on_total=on_total,
            source=str(pairs_path),
            by=study.study_keys,
            min_subset_n=study.min_subset_n,
        )
    return CalibrationStudy("live", [report])
