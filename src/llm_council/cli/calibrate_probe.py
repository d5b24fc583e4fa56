"""The ``probe`` command: bias probes of a judge, live or with verdicts made elsewhere."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from llm_council.calibration.gate import GateThresholds, decide_gate
from llm_council.calibration.offline_probes import (
    offline_probe_run,
    read_verdicts,
    write_calls,
)
from llm_council.calibration.pairs import Pair, read_pairs
from llm_council.calibration.probes import ALL_PROBE_NAMES, PROBE_NAMES, parse_probe_names
from llm_council.calibration.sarif_output import calibration_sarif
from llm_council.calibration.session import REPORT_FORMAT, run_live
from llm_council.calibration.summary import render_summary
from llm_council.cli.calibrate_judging import JudgeCallOptions, call_progress
from llm_council.cli.calibrate_options import OptionsOption, SarifOption
from llm_council.cli.calibrate_outputs import artifact_uri
from llm_council.errors import ConfigError
from llm_council.infra.atomic_files import write_json_atomically, writes_to_stdout


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
        call = JudgeCallOptions(
            model=model,
            option=tuple(option or ()),
            output=output,
            cache=cache,
            no_cache=no_cache,
            repetitions=1,
            concurrency=concurrency,
            seed=seed,
            temperature=None,
        )
        settings = call.live_settings(pairs_path)
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
