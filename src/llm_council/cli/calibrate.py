"""Judge calibration commands: ``calibrate``, ``probe``, ``label-ui``, ``export-openai-evals``."""

from __future__ import annotations

import typer

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
from llm_council.calibration.report import DEFAULT_HUMAN_KAPPA_THRESHOLD
from llm_council.calibration.study import DEFAULT_MIN_SUBSET_N, parse_by
from llm_council.cli.calibrate_judging import (
    JudgeCallOptions,
    StudyOptions,
    call_progress,
    judge_pairs,
    parse_options,
    progress_enabled,
)
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
    ModelOption,
    NoCacheOption,
    OptionsOption,
    PairsArgument,
    ProbesOption,
    RepetitionsOption,
    ReportOutputOption,
    SarifOption,
    SaveConfidenceMapOption,
    SeedOption,
    TemperatureOption,
)
from llm_council.cli.calibrate_outputs import report_study
from llm_council.cli.calibrate_pair_tools import export_openai_evals_command, label_ui_command
from llm_council.cli.calibrate_probe import probe_command
from llm_council.cli.canary_run import run_canary
from llm_council.cli.convert import HumanOption, InputFormatOption, MapOption
from llm_council.errors import ConfigError

# the judge-call helpers moved to calibrate_judging; still importable from here
__all__ = [
    "calibrate_command",
    "call_progress",
    "export_openai_evals_command",
    "label_ui_command",
    "parse_options",
    "probe_command",
    "progress_enabled",
    "register",
]


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
    call = None
    if model is not None:
        call = JudgeCallOptions(
            model=model,
            option=tuple(option or ()),
            output=output,
            cache=cache,
            no_cache=no_cache,
            repetitions=repetitions,
            concurrency=concurrency,
            seed=seed,
            temperature=temperature,
        )
    study_options = StudyOptions(
        human_threshold=human_threshold,
        judge=judge,
        judge_family=judge_family,
        bias_check=bias_check,
        probes=probes,
        study_keys=study_keys,
        min_subset_n=min_subset_n,
    )
    study = judge_pairs(pairs, pairs_path, call, study_options)
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


def register(app: typer.Typer) -> None:
    app.command("calibrate")(calibrate_command)
    app.command("probe")(probe_command)
    app.command("label-ui")(label_ui_command)
    app.command("export-openai-evals")(export_openai_evals_command)
