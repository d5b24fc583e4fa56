"""What ``calibrate`` writes and prints once the pairs are judged: the report files, the
summaries (the steps after the judging, kept out of the command's own function)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import typer

from llm_council.calibration.confidence import MIN_CONFIDENCE_VERDICTS
from llm_council.calibration.confidence_map import ConfidenceMap
from llm_council.calibration.gate import GateDecision
from llm_council.calibration.judge_independence_render import render_independence_text
from llm_council.calibration.sarif_output import calibration_sarif
from llm_council.calibration.session import REPORT_FORMAT
from llm_council.calibration.study_render import render_study_html, render_study_text
from llm_council.calibration.summary import render_summary
from llm_council.errors import ConfigError
from llm_council.infra.atomic_files import (
    write_json_atomically,
    write_text_atomically,
    writes_to_stdout,
)
from llm_council.infra.safe_text import terminal_safe


@dataclass(frozen=True)
class CalibrationStudy:
    """What ``calibrate`` judged: one report per judge, and with a replay of 2+ judges
    their comparison and effective number (None otherwise)."""

    mode: str  # "replay" | "live"
    reports: list[dict[str, Any]]
    comparison: dict[str, Any] | None = None
    independence: dict[str, Any] | None = None


def artifact_uri(pairs_path: Path) -> str:
    """The pairs file as SARIF wants it: relative to the working directory when inside it."""
    resolved = pairs_path.resolve()
    try:
        return resolved.relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return resolved.as_uri()


def save_confidence_map(path: Path, reports: list[dict[str, Any]]) -> None:
    """The isotonic map of the one judge whose verdicts stated a confidence."""
    fitted = [
        (report["judge"], section)
        for report in reports
        if (section := report.get("confidence_calibration")) and section.get("available")
    ]
    if len(fitted) != 1:
        raise ConfigError(
            f"--save-confidence-map needs exactly one judge whose verdicts state a confidence "
            f"on {MIN_CONFIDENCE_VERDICTS}+ labelled verdicts; found {len(fitted)} (use --judge)"
        )
    judge, section = fitted[0]
    points = section["isotonic_map"]
    mapping = ConfidenceMap(tuple(points["x"]), tuple(points["y"]))
    write_json_atomically(path, mapping.as_json(str(judge), section["n_verdicts"]))


def write_study_files(
    study: CalibrationStudy,
    decision: GateDecision,
    pairs_path: Path,
    *,
    output: Path | None,
    sarif: Path | None,
    confidence_map_path: Path | None,
    html: Path | None,
) -> None:
    """The JSON report, the SARIF log, the confidence map and the HTML page, each if asked."""
    if output is not None:
        document = {
            "format": REPORT_FORMAT,
            "mode": study.mode,
            "reports": study.reports,
            "gate": decision.as_json(),
        }
        if study.comparison is not None:
            document["judge_comparison"] = study.comparison
        if study.independence is not None:
            document["effective_judges"] = study.independence
        write_json_atomically(output, document)
    if sarif is not None:
        write_json_atomically(
            sarif, calibration_sarif(study.reports, decision, artifact_uri(pairs_path))
        )
    if confidence_map_path is not None:
        save_confidence_map(confidence_map_path, study.reports)
    if html is not None:
        write_text_atomically(
            html, render_study_html(study.reports, study.comparison, study.independence)
        )


def echo_study(
    study: CalibrationStudy,
    *,
    min_evaluated: float,
    study_keys: tuple[str, ...],
    to_stderr: bool,
) -> None:
    """Each judge's summary, the effective number of judges and the study tables."""
    typer.echo(
        "\n\n".join(
            render_summary(report, min_evaluated=min_evaluated) for report in study.reports
        ),
        err=to_stderr,
    )
    if study.independence is not None:
        typer.echo("\n" + render_independence_text(study.independence), err=to_stderr)
    if study_keys:
        typer.echo("\n" + render_study_text(study.reports, study.comparison), err=to_stderr)
        if "judge" in study_keys and study.comparison is None:
            only = terminal_safe(str(study.reports[0]["judge"]))
            typer.echo(f"--by judge: one judge ({only}), nothing to compare", err=to_stderr)


def report_study(
    study: CalibrationStudy,
    decision: GateDecision,
    pairs_path: Path,
    *,
    output: Path | None,
    sarif: Path | None,
    confidence_map_path: Path | None,
    html: Path | None,
    min_evaluated: float,
    study_keys: tuple[str, ...],
) -> None:
    """Write the files asked for, then print the summaries (to stderr when a file is stdout)."""
    write_study_files(
        study,
        decision,
        pairs_path,
        output=output,
        sarif=sarif,
        confidence_map_path=confidence_map_path,
        html=html,
    )
    # `--output -` or `--sarif -`: the JSON owns stdout, the summary goes to stderr
    to_stderr = any(writes_to_stdout(path) for path in (output, sarif, confidence_map_path))
    echo_study(study, min_evaluated=min_evaluated, study_keys=study_keys, to_stderr=to_stderr)
