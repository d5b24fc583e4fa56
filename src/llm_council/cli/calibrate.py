"""Judge calibration commands: ``calibrate``, ``probe``, ``label-ui``, ``export-openai-evals``."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer

from llm_council.calibration.bias_check import bias_check_probability
from llm_council.calibration.confidence_map import (
    read_confidence_map,
    with_mapped_confidences,
)
from llm_council.calibration.gate import (
    DEFAULT_MIN_EVALUATED,
    GateThresholds,
    decide_gate,
    parse_fail_under,
)
from llm_council.calibration.importers import load_pairs_any
from llm_council.calibration.judge_independence import judge_independence_from_pairs
from llm_council.calibration.offline_probes import (
    offline_probe_run,
    read_verdicts,
    write_calls,
)
from llm_council.calibration.pairs import Pair, read_pairs
from llm_council.calibration.probes import ALL_PROBE_NAMES, PROBE_NAMES, parse_probe_names
from llm_council.calibration.report import DEFAULT_HUMAN_KAPPA_THRESHOLD
from llm_council.calibration.sarif_output import calibration_sarif
from llm_council.calibration.session import (
    REPORT_FORMAT,
    LiveSettings,
    default_cache_path,
    judges_in,
    replay_study,
    run_live,
)
from llm_council.calibration.study import DEFAULT_MIN_SUBSET_N, parse_by
from llm_council.calibration.summary import render_summary
from llm_council.cli.calibrate_options import (
    DEFAULT_PROBES,
    BaselineOption,
    BiasCheckOption,
    ByOption,
    CanaryOption,
    ConfidenceMapOption,
    DriftAlphaOption,
    FailUnderOption,
    HtmlOption,
    HumanThresholdOption,
    JudgeFamilyOption,
    JudgeOption,
    LiveCacheOption,
    LiveConcurrencyOption,
    MinEvaluatedOption,
    MinSubsetOption,
    NoCacheOption,
    PairsArgument,
    ProbesOption,
    RepetitionsOption,
    ReportOutputOption,
    SaveConfidenceMapOption,
    SeedOption,
    TemperatureOption,
)
from llm_council.cli.calibrate_outputs import (
    CalibrationStudy,
    artifact_uri,
    report_study,
)
from llm_council.cli.canary_run import run_canary
from llm_council.cli.convert import HumanOption, InputFormatOption, MapOption
from llm_council.errors import ConfigError
from llm_council.infra.atomic_files import (
    output_kind,
    write_json_atomically,
    writes_to_stdout,
)

ModelOption = Annotated[
    str | None, typer.Option("--model", "-m", help="judge spec, e.g. openai:gpt-4o")
]
OptionsOption = Annotated[
    list[str] | None,
    typer.Option("--option", "-o", help="provider option KEY=VALUE (VALUE parsed as JSON)"),
]


def parse_options(items: list[str] | None) -> dict[str, Any]:
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


def _live_settings(
    pairs_path: Path,
    *,
    model: str,
    option: list[str] | None,
    output: Path | None,
    cache: Path | None,
    no_cache: bool,
    repetitions: int,
    concurrency: int,
    seed: int,
    temperature: float | None,
) -> LiveSettings:
    if repetitions < 1 or concurrency < 1:
        raise ConfigError(
            f"--repetitions and --concurrency must be >= 1, got {repetitions} and {concurrency}"
        )
    # the call cache sits beside a report file; a streamed report (-, /dev/stdout, a FIFO)
    # has no "beside", so its cache goes to the user cache directory
    beside = output if output is not None and output_kind(output)[0] == "file" else None
    cache_path = None if no_cache else (cache or default_cache_path(pairs_path, model, beside))
    return LiveSettings(
        spec=model,
        options=parse_options(option),
        repetitions=repetitions,
        concurrency=concurrency,
        seed=seed,
        temperature=temperature,
        cache_path=cache_path,
    )


SarifOption = Annotated[
    Path | None,
    typer.Option(
        "--sarif", help="also write the gate and checklist as SARIF 2.1.0 (code scanning)"
    ),
]


def _replay_study(
    pairs: list[Pair],
    pairs_path: Path,
    *,
    judge: str | None,
    human_threshold: float,
    judge_family: str | None,
    study_keys: tuple[str, ...],
    min_subset_n: int,
) -> CalibrationStudy:
    """The recorded verdicts' reports; with every judge, their comparison and independence."""
    reports, comparison = replay_study(
        pairs,
        path=str(pairs_path),
        only_judge=judge,
        human_threshold=human_threshold,
        judge_family=judge_family,
        by=study_keys,
        min_subset_n=min_subset_n,
    )
    # effective number of judges: replay of 2+ judges only
    independence = judge_independence_from_pairs(pairs, judges_in(pairs)) if judge is None else None
    return CalibrationStudy("replay", reports, comparison, independence)


def _live_study(
    pairs: list[Pair],
    pairs_path: Path,
    settings: LiveSettings,
    *,
    human_threshold: float,
    judge_family: str | None,
    bias_check: bool,
    probes: str,
    study_keys: tuple[str, ...],
    min_subset_n: int,
) -> CalibrationStudy:
    """The judge's report from calling it on every pair in both orders (with a progress bar)."""
    probability = 1.0 if bias_check else bias_check_probability()
    with call_progress(f"judging {len(pairs)} pairs") as (on_total, on_done):
        report = run_live(
            pairs,
            settings,
            human_threshold=human_threshold,
            judge_family=judge_family,
            bias_check_probability=probability,
            probes=parse_probe_names(probes),
            on_call_done=on_done,
            on_total=on_total,
            source=str(pairs_path),
            by=study_keys,
            min_subset_n=min_subset_n,
        )
    return CalibrationStudy("live", [report])


def _judge_pairs(
    pairs: list[Pair],
    pairs_path: Path,
    *,
    model: str | None,
    option: list[str] | None,
    output: Path | None,
    cache: Path | None,
    no_cache: bool,
    repetitions: int,
    concurrency: int,
    seed: int,
    temperature: float | None,
    judge: str | None,
    human_threshold: float,
    judge_family: str | None,
    bias_check: bool,
    probes: str,
    study_keys: tuple[str, ...],
    min_subset_n: int,
) -> CalibrationStudy:
    """Replay the recorded verdicts without ``--model``, else call the judge live."""
    if model is None:
        return _replay_study(
            pairs,
            pairs_path,
            judge=judge,
            human_threshold=human_threshold,
            judge_family=judge_family,
            study_keys=study_keys,
            min_subset_n=min_subset_n,
        )
    settings = _live_settings(
        pairs_path,
        model=model,
        option=option,
        output=output,
        cache=cache,
        no_cache=no_cache,
        repetitions=repetitions,
        concurrency=concurrency,
        seed=seed,
        temperature=temperature,
    )
    return _live_study(
        pairs,
        pairs_path,
        settings,
        human_threshold=human_threshold,
        judge_family=judge_family,
        bias_check=bias_check,
        probes=probes,
        study_keys=study_keys,
        min_subset_n=min_subset_n,
    )


def calibrate_command(
    pairs_path: PairsArgument = None,
    model: ModelOption = None,
    option: OptionsOption = None,
    output: ReportOutputOption = None,
    repetitions: RepetitionsOption = 1,
    concurrency: LiveConcurrencyOption = 8,
    cache: LiveCacheOption = None,
    no_cache: NoCacheOption = False,
    seed: SeedOption = 0,
    temperature: TemperatureOption = None,
    human_threshold: HumanThresholdOption = DEFAULT_HUMAN_KAPPA_THRESHOLD,
    judge: JudgeOption = None,
    judge_family: JudgeFamilyOption = None,
    bias_check: BiasCheckOption = False,
    probes: ProbesOption = DEFAULT_PROBES,
    fail_under: FailUnderOption = None,
    min_evaluated: MinEvaluatedOption = DEFAULT_MIN_EVALUATED,
    by: ByOption = None,
    min_subset_n: MinSubsetOption = DEFAULT_MIN_SUBSET_N,
    html: HtmlOption = None,
    input_format: InputFormatOption = "ours",
    mapping: MapOption = None,
    human: HumanOption = None,
    sarif: SarifOption = None,
    save_confidence_map: SaveConfidenceMapOption = None,
    confidence_map: ConfidenceMapOption = None,
    canary: CanaryOption = None,
    baseline: BaselineOption = None,
    drift_alpha: DriftAlphaOption = 0.05,
) -> None:
    """Position-swap calibration of an LLM judge (live with --model, else replay of verdicts).

    With --canary FILE: re-score a frozen canary set and test the shift from --baseline.
    """
    if canary is not None:
        run_canary(
            canary,
            model=model,
            options=parse_options(option),
            temperature=temperature,
            repetitions=repetitions,
            concurrency=concurrency,
            seed=seed,
            baselines=baseline or [],
            alpha=drift_alpha,
            output=output,
        )
        return
    if pairs_path is None:
        raise ConfigError("calibrate needs a pairs file (or --canary FILE)")
    thresholds = GateThresholds(
        fail_under=parse_fail_under(fail_under),
        min_evaluated=min_evaluated,
        human_kappa=human_threshold,
    )
    study_keys = parse_by(by or [])
    if min_subset_n < 1:
        raise ConfigError(f"--min-subset-n must be >= 1, got {min_subset_n}")
    pairs = load_pairs_any(pairs_path, input_format, mapping or [], human, live=model is not None)
    if confidence_map is not None:
        pairs = with_mapped_confidences(pairs, read_confidence_map(confidence_map))
    study = _judge_pairs(
        pairs,
        pairs_path,
        model=model,
        option=option,
        output=output,
        cache=cache,
        no_cache=no_cache,
        repetitions=repetitions,
        concurrency=concurrency,
        seed=seed,
        temperature=temperature,
        judge=judge,
        human_threshold=human_threshold,
        judge_family=judge_family,
        bias_check=bias_check,
        probes=probes,
        study_keys=study_keys,
        min_subset_n=min_subset_n,
    )
    # one decision gives both the JSON verdict and the exit status (issue 28)
    decision = decide_gate(study.reports, thresholds)
    report_study(
        study,
        decision,
        pairs_path,
        output=output,
        sarif=sarif,
        confidence_map_path=save_confidence_map,
        html=html,
        min_evaluated=thresholds.min_evaluated,
        study_keys=study_keys,
    )
    decision.raise_if_failed()


def probe_command(
    pairs_path: Annotated[Path, typer.Argument(help="pairs JSONL")],
    model: Annotated[
        str | None,
        typer.Option("--model", "-m", help="judge spec, e.g. openai:gpt-4o (live)"),
    ] = None,
    probes: Annotated[
        str, typer.Option(help=f"comma-separated probes of: {', '.join(ALL_PROBE_NAMES)}")
    ] = ",".join(PROBE_NAMES),
    option: OptionsOption = None,
    output: Annotated[
        Path | None, typer.Option("--output", help="write the JSON report here")
    ] = None,
    concurrency: Annotated[int, typer.Option(help="concurrent judge calls")] = 8,
    cache: Annotated[Path | None, typer.Option(help="call cache/checkpoint JSONL")] = None,
    no_cache: Annotated[bool, typer.Option("--no-cache")] = False,
    seed: Annotated[int, typer.Option()] = 0,
    sarif: SarifOption = None,
    emit: Annotated[
        Path | None,
        typer.Option(help="offline: write the comparisons still to judge to DIR/calls.jsonl"),
    ] = None,
    replay: Annotated[
        Path | None,
        typer.Option(help="offline: verdicts made elsewhere (JSONL of call_id and winner)"),
    ] = None,
    judge_name: Annotated[
        str, typer.Option(help="offline: the judge's name (report, identity probe)")
    ] = "offline-judge",
) -> None:
    """Bias probes: perturb one answer or the question (CALM biases, prompt injection).

    Default probes: authority, format, padding, identity, distraction. Also available:
    bandwagon, sentiment, compassion, fallacy, refinement, injection (docs/calibration.md).
    Without --model: --emit DIR writes the comparisons for a judge run elsewhere, --replay
    FILE scores its verdicts.
    """
    names = parse_probe_names(probes)
    pairs = read_pairs(pairs_path)
    if model is None:
        report = _offline_probe_report(
            pairs_path, pairs, names=names, emit=emit, replay=replay, judge_name=judge_name
        )
        if report is None:
            return
    else:
        if emit is not None or replay is not None:
            raise ConfigError("--emit and --replay are for a judge run elsewhere: drop --model")
        settings = _live_settings(
            pairs_path,
            model=model,
            option=option,
            output=output,
            cache=cache,
            no_cache=no_cache,
            repetitions=1,
            concurrency=concurrency,
            seed=seed,
            temperature=None,
        )
        with call_progress(f"probing {len(pairs)} pairs") as (on_total, on_done):
            report = run_live(
                pairs,
                settings,
                bias_check_probability=1.0,
                probes=names,
                on_call_done=on_done,
                on_total=on_total,
            )
    if output is not None:
        write_json_atomically(
            output, {"format": REPORT_FORMAT, "mode": "probe", "reports": [report]}
        )
    if sarif is not None:
        decision = decide_gate([report], GateThresholds(min_evaluated=0.0))
        write_json_atomically(
            sarif, calibration_sarif([report], decision, artifact_uri(pairs_path))
        )
    typer.echo(render_summary(report), err=writes_to_stdout(output) or writes_to_stdout(sarif))


def _offline_probe_report(
    pairs_path: Path,
    pairs: list[Pair],
    *,
    names: tuple[str, ...],
    emit: Path | None,
    replay: Path | None,
    judge_name: str,
) -> dict[str, Any] | None:
    """The report from verdicts made elsewhere, or ``None`` after writing what to judge."""
    if emit is None and replay is None:
        raise ConfigError("probe needs --model (live), or --emit DIR / --replay FILE (offline)")
    verdicts = read_verdicts(replay) if replay is not None else {}
    run = offline_probe_run(pairs, names, verdicts, judge=judge_name, source=str(pairs_path))
    if run.report is not None:
        return run.report
    if emit is None:
        raise ConfigError(
            f"{len(run.missing)} comparison(s) have no verdict in {replay}: run with"
            " --emit DIR to write them, judge them, and add their verdicts"
        )
    written = write_calls(emit, run.missing)
    typer.echo(
        f"{len(run.missing)} comparison(s) to judge written to {written}"
        f" ({run.verdicts_used} verdict(s) used); answer each with"
        ' {"call_id": ..., "winner": "first"|"second"|"tie"}, then run again with'
        " --replay VERDICTS (and --emit DIR: the authority and CALM probes need a second"
        " round)"
    )
    return None


def label_ui_command(
    pairs_path: Annotated[Path, typer.Argument(help="pairs JSONL to label")],
    output: Annotated[Path, typer.Option("--output", help="labels are appended here (JSONL)")],
    port: Annotated[int, typer.Option(help="port on 127.0.0.1 (0 = any free port)")] = 8765,
    seed: Annotated[int, typer.Option(help="seed for randomizing which answer is shown left")] = 0,
    order: Annotated[
        Path | None,
        typer.Option("--order", help="show pairs in this label-plan order file's order first"),
    ] = None,
) -> None:
    """Serve a local page (127.0.0.1 only) to label pairs A / B / tie, saving each label."""
    from llm_council.calibration.label_plan_file import apply_label_order, read_label_order
    from llm_council.calibration.label_ui import serve_forever

    pairs = read_pairs(pairs_path)
    if order is not None:
        pairs = apply_label_order(pairs, read_label_order(order), str(order))
    serve_forever(pairs, output, port=port, seed=seed)


def export_openai_evals_command(
    pairs_path: Annotated[Path, typer.Argument(help="pairs JSONL")],
    out: Annotated[
        Path, typer.Option("--out", help="directory for samples.jsonl and the eval YAML")
    ],
    eval_name: Annotated[
        str, typer.Option(help="name of the eval in the registry YAML")
    ] = "llm-council-pairwise",
) -> None:
    """Write the pairs as an OpenAI Evals dataset with a model-graded eval spec."""
    from llm_council.calibration.evals_export import export_openai_evals

    if writes_to_stdout(out):  # '-' made a directory named '-'
        raise ConfigError("--out names a directory for several files; '-' (stdout) is not one")
    written = export_openai_evals(read_pairs(pairs_path), out, eval_name=eval_name)
    typer.echo("\n".join(f"wrote {path}" for path in written))


def register(app: typer.Typer) -> None:
    app.command("calibrate")(calibrate_command)
    app.command("probe")(probe_command)
    app.command("label-ui")(label_ui_command)
    app.command("export-openai-evals")(export_openai_evals_command)
