"""The ``calibrate`` and ``probe`` options as typer annotations, so signatures read as lists."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from llm_council.calibration.gate import METRICS
from llm_council.calibration.probes import PROBE_NAMES

#: the bias check's default probes: every probe of the position-swap study
DEFAULT_PROBES = ",".join(PROBE_NAMES)

PairsArgument = Annotated[
    Path | None, typer.Argument(help="pairs JSONL (with 'judgments' to replay)")
]
ReportOutputOption = Annotated[
    Path | None, typer.Option("--output", help="write the JSON report here")
]
RepetitionsOption = Annotated[int, typer.Option(help="judgments per pair and order (live)")]
LiveConcurrencyOption = Annotated[int, typer.Option(help="concurrent judge calls (live)")]
LiveCacheOption = Annotated[Path | None, typer.Option(help="call cache/checkpoint JSONL (live)")]
NoCacheOption = Annotated[
    bool, typer.Option("--no-cache", help="do not read or write a call cache")
]
SeedOption = Annotated[int, typer.Option(help="seed for sampling and bias-check selection")]
TemperatureOption = Annotated[float | None, typer.Option(help="judge sampling temperature")]
HumanThresholdOption = Annotated[
    float, typer.Option(help="minimum kappa with human labels to trust the judge")
]
JudgeOption = Annotated[str | None, typer.Option(help="replay only this judge's records")]
JudgeFamilyOption = Annotated[str | None, typer.Option(help="override the judge's model family")]
BiasCheckOption = Annotated[
    bool, typer.Option("--bias-check", help="run the bias probes on every pair")
]
ProbesOption = Annotated[str, typer.Option(help="probes for the bias check")]
FailUnderOption = Annotated[
    str | None,
    typer.Option(
        help="exit 4 when a metric is below its floor, e.g. kappa=0.6,agreement=0.85"
        f" (metrics: {', '.join(METRICS)})"
    ),
]
MinEvaluatedOption = Annotated[
    float,
    typer.Option(help="exit 5 unless this share of pairs was judged in both orders"),
]
ByOption = Annotated[
    list[str] | None,
    typer.Option(
        "--by",
        help="study mode: every figure per subset (repeatable):"
        " pair_type, subset_tags, model_pair, judge, metadata.NAME",
    ),
]
MinSubsetOption = Annotated[
    int, typer.Option(help="subsets with fewer evaluated pairs are marked too small")
]
HtmlOption = Annotated[
    Path | None, typer.Option("--html", help="write the study tables as an HTML page")
]
SaveConfidenceMapOption = Annotated[
    Path | None,
    typer.Option(help="write the isotonic map of the judge's stated confidence (JSON)"),
]
ConfidenceMapOption = Annotated[
    Path | None,
    typer.Option(help="apply a saved confidence map to the verdicts' confidences first"),
]
CanaryOption = Annotated[
    Path | None,
    typer.Option(help="re-score this frozen canary set (JSONL: id, question, response)"),
]
BaselineOption = Annotated[
    list[Path] | None,
    typer.Option(help="an earlier --canary output to compare with (repeatable)"),
]
DriftAlphaOption = Annotated[
    float, typer.Option(help="--canary: the drift test's level (exit 6 below it)")
]
ModelOption = Annotated[
    str | None, typer.Option("--model", "-m", help="judge spec, e.g. openai:gpt-4o")
]
OptionsOption = Annotated[
    list[str] | None,
    typer.Option("--option", "-o", help="provider option KEY=VALUE (VALUE parsed as JSON)"),
]
SarifOption = Annotated[
    Path | None,
    typer.Option(
        "--sarif", help="also write the gate and checklist as SARIF 2.1.0 (code scanning)"
    ),
]
