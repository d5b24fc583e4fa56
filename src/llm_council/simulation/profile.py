"""A simulated council member: how it answers and, as a judge, exactly which biases it has.

Every bias parameter defaults to zero, so a profile with nothing set is an unbiased
judge whose expected score is the answer's latent quality, whatever its position or
length. The bias audit is validated against these known, configured biases.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

#: lengths are centred here so verbosity sensitivity does not also shift the mean score
REFERENCE_ANSWER_WORDS = 200.0


class SimulatedProfile(BaseModel):
    """Answer style and judge biases of one simulated member."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    # answer style
    answer_mean_words: float = Field(200.0, gt=0, description="median answer length in words")
    answer_length_sigma: float = Field(0.5, ge=0, description="sd of log(words) across answers")
    quality_mean: float = Field(6.5, description="mean latent quality on the 1-10 scale")
    quality_sd: float = Field(1.0, ge=0, description="sd of latent quality across answers")
    answer_style: float = Field(
        0.0,
        ge=0,
        description="how strongly its answers prefer their own sentences (0 = every member "
        "draws from the same sentences uniformly): a lexical style that varies by member",
    )
    # judge biases (all zero = unbiased)
    leniency: float = Field(0.0, description="points added to every score it gives")
    noise_sd: float = Field(0.0, ge=0, description="sd of Gaussian noise on each score")
    position_effects: tuple[float, ...] = Field(
        (), description="points added to the answer shown at display slot i (missing slots: 0)"
    )
    verbosity: float = Field(
        0.0, description="points per unit of log(words / 200): >0 favours long answers"
    )
    self_preference: float = Field(0.0, description="points added when it scores its own answer")
    self_recognition: float = Field(
        0.0,
        description="points added to an answer signed with its own model name "
        "(the identity bias check's signature)",
    )
    # susceptibility to the CALM and injection probes (calibration.calm_probes): points the
    # pairwise judge adds to the answer a cue favours; all zero = an unbiased judge
    bandwagon: float = Field(
        0.0, description="points added to the answer a note says most reviewers preferred"
    )
    sentiment: float = Field(
        0.0, description="points added to an answer carrying the emotional-tone sentence"
    )
    compassion: float = Field(
        0.0, description="points added to the answer attributed to a well-known model"
    )
    fallacy_oversight: float = Field(
        0.0, description="points added to an answer carrying the fallacious argument"
    )
    refinement: float = Field(
        0.0, description="points added to the answer called a refined version of the other"
    )
    injection: float = Field(
        0.0, description="points added to an answer carrying a prompt-injection payload"
    )
    favours: dict[str, float] = Field(
        default_factory=dict,
        description="points added when it scores the answer of the named member (favouritism); "
        "applied by the record-store simulator (bias_audit.simulated_records)",
    )
    anchoring: float = Field(
        0.0,
        ge=0.0,
        lt=1.0,
        description="pull toward the mean of its earlier scores in the same review: "
        "score_i += anchoring * (mean(score_0..i-1) - score_i); record-store simulator only",
    )
    style_mimicry: float = Field(
        0.0,
        description="points per unit of similarity (0..1) between the scored answer and its "
        "own answer in the same session, centred at 1/2 (style mimicry); the live judge "
        "uses the lexical similarity to its own answer when that answer is shown to it",
    )
    leniency_drift_per_week: float = Field(
        0.0,
        description="points its leniency moves per week of session time (drift); "
        "record-store simulator only",
    )
    # reasoning and parse behaviour (ADR 0027), all off by default
    rationale_mean_chars: float | None = Field(
        None,
        gt=0,
        description="median characters of its review rationale (log-normal across reviews); "
        "None: a one-line rationale",
    )
    rationale_length_sigma: float = Field(
        0.5, ge=0, description="sd of log(rationale chars) across its reviews"
    )
    reasoning_bias: float = Field(
        0.0,
        description="points added to every score of a review per doubling of its rationale "
        "over rationale_mean_chars (reasoning-chain bias; needs rationale_mean_chars)",
    )
    rank_mismatch_probability: float = Field(
        0.0,
        ge=0.0,
        le=1.0,
        description="chance that a review's ranking swaps one adjacent pair against its scores",
    )
    abstention_probability: float = Field(
        0.0, ge=0.0, le=1.0, description="chance that it declines to judge a review"
    )
    score_decimals: int = Field(
        0, ge=0, le=3, description="scores are rounded to this many decimals"
    )
    # operational behaviour, for demos, benchmarks and fault tests
    latency_s: float = Field(0.0, ge=0, description="seconds each call sleeps")
    fail_tasks: tuple[str, ...] = Field(
        (), description="tasks that fail permanently: answer, review, synthesize, pairwise_judge"
    )

    @property
    def probe_susceptible(self) -> bool:
        """Whether any CALM or injection susceptibility is set."""
        return any(
            (
                self.bandwagon,
                self.sentiment,
                self.compassion,
                self.fallacy_oversight,
                self.refinement,
                self.injection,
            )
        )

    def position_effect(self, display_index: int) -> float:
        if display_index < len(self.position_effects):
            return self.position_effects[display_index]
        return 0.0
