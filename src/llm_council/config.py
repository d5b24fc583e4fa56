"""Council configuration: who sits on the council, who chairs, how hard to retry.

Resolution order for :func:`load_council_config`: an explicit path, then
``LLM_COUNCIL_CONFIG``, then (when an API key is set) the real council built from the
providers whose keys are present, then the embedded simulated council. Errors name the
file and the field, and quote the bad value.
"""

from __future__ import annotations

import hashlib
import json
import os
import tomllib
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from llm_council.bias_checks import CHECK_KINDS, DEFAULT_CHECK_WEIGHTS
from llm_council.call_pricing import ModelPrice
from llm_council.errors import ConfigError
from llm_council.infra.config_files import default_config_file
from llm_council.providers.calling import RetryPolicy
from llm_council.providers.registry import split_spec

SelfReviewPolicy = Literal["exclude_at_aggregation", "recuse"]
#: which stage-2 aggregate the chairman is shown (ADR 0046)
Aggregation = Literal["raw", "debiased"]

DEFAULT_SESSION_DEADLINE_S = 300.0
#: the largest council accepted (docs/reliability.md, issue 26): every reviewer reads every
#: answer, so stage 2 grows with the square of the size and the audit's reviewer-noise
#: model with its sixth power; 32 answers at the default cap already fill a 1M-token context
MAX_COUNCIL_MEMBERS = 32
DEFAULT_MAX_ANSWER_CHARS = 100_000
#: the answer cap every config hash implied before the cap was hashed: a config with this
#: cap hashes as it always did (a fixed number, NOT the default, which may change)
LEGACY_HASH_MAX_ANSWER_CHARS = 100_000
# Environment overrides of the config fields above (a service sets them per deployment).
LIMIT_ENV: dict[str, tuple[str, type[int] | type[float]]] = {
    "session_deadline_s": ("LLM_COUNCIL_SESSION_DEADLINE_S", float),
    "max_answer_chars": ("LLM_COUNCIL_MAX_ANSWER_CHARS", int),
    "bias_check_probability": ("LLM_COUNCIL_BIAS_CHECK_PROBABILITY", float),
    "review_orders": ("LLM_COUNCIL_REVIEW_ORDERS", int),
}
#: the environment override of ``aggregation`` (ADR 0046)
AGGREGATION_ENV = "LLM_COUNCIL_AGGREGATION"
#: the default mix of live bias-check kinds (ADR 0024): equal weights, identity opt-in
DEFAULT_BIAS_CHECK_KINDS: dict[str, float] = dict(DEFAULT_CHECK_WEIGHTS)


class CouncilMember(BaseModel):
    """A council seat: a unique ``name`` filled by the model behind ``spec``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(min_length=1)
    spec: str
    options: dict[str, Any] = Field(default_factory=dict)

    @field_validator("spec")
    @classmethod
    def _spec_has_provider(cls, spec: str) -> str:
        split_spec(spec)
        return spec


def _check_member_score_scale(member: CouncilMember, scale: tuple[float, float]) -> None:
    """A member whose grammar spells the scores out (``structured_output = "json_object"``,
    the default with ``local_model``; ADR 0041) must spell out the council's scale."""
    options = member.options
    wanted = options.get("structured_output")
    if wanted != "json_object" and not (wanted is None and "local_model" in options):
        return
    member_scale = options.get("score_scale", [1, 10])
    if not isinstance(member_scale, list | tuple) or [*member_scale] != [*scale]:
        raise ValueError(
            f"member {member.name!r}: option score_scale {member_scale!r} is not the "
            f"council's score_scale {[*scale]!r}; set score_scale = [{scale[0]:g}, {scale[1]:g}] "
            "in its options"
        )


class CouncilConfig(BaseModel):
    """Everything that shapes a session except the query and the seed."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    members: tuple[CouncilMember, ...]
    chairman: CouncilMember
    self_review: SelfReviewPolicy = "exclude_at_aggregation"
    score_scale: tuple[float, float] = (1.0, 10.0)
    max_concurrency: int = Field(16, ge=1)
    retry: RetryPolicy = RetryPolicy()
    # Wall-clock bound on stages 1-3 together: calls still running then are given up and
    # their members degraded, so a hanging or trickling provider cannot hold a session.
    session_deadline_s: float = Field(DEFAULT_SESSION_DEADLINE_S, gt=0, allow_inf_nan=False)
    # Longer answers are cut before reviewers and the chairman see them (metadata says so).
    max_answer_chars: int = Field(DEFAULT_MAX_ANSWER_CHARS, ge=1)
    # Live bias checks (ADR 0024): each (session, reviewer) gets one extra review with this
    # probability (0 = off), its kind drawn with these relative weights.
    bias_check_probability: float = Field(0.0, ge=0, le=1, allow_inf_nan=False)
    bias_check_kinds: dict[str, float] = Field(
        default_factory=lambda: dict(DEFAULT_BIAS_CHECK_KINDS)
    )
    # ADR 0046: "debiased" shows the chairman the aggregate with each reviewer's known
    # leniency, slot effects and length slope removed (a middleware supplies them, e.g. the
    # bias audit from its store); ``review_orders = 2`` has each reviewer review twice, the
    # second time in the reverse display order, and averages its two verdicts.
    aggregation: Aggregation = "raw"
    review_orders: int = Field(1, ge=1, le=2)
    # ADR 0058: each call priced in USD (``prices`` overrides the public table per member
    # spec); past ``max_cost_usd`` of priced spend no further review is sent (it is
    # recorded missing, with the reason). Neither enters config_hash: they decide whether
    # a call is sent, not what a reviewer sees.
    max_cost_usd: float | None = Field(None, gt=0, allow_inf_nan=False)
    prices: dict[str, ModelPrice] = Field(default_factory=dict)

    @field_validator("bias_check_kinds")
    @classmethod
    def _known_check_kinds(cls, kinds: dict[str, float]) -> dict[str, float]:
        for kind, weight in kinds.items():
            if kind not in CHECK_KINDS:
                raise ValueError(
                    f"unknown bias check kind {kind!r} (known: {', '.join(CHECK_KINDS)})"
                )
            if not (weight >= 0 and weight != float("inf")):
                raise ValueError(f"bias check weight of {kind!r} must be >= 0, got {weight!r}")
        if not any(weight > 0 for weight in kinds.values()):
            raise ValueError(f"bias_check_kinds needs a positive weight, got {kinds!r}")
        return kinds

    @model_validator(mode="after")
    def _check(self) -> CouncilConfig:
        if len(self.members) < 2:
            raise ValueError(f"a council needs at least 2 members, got {len(self.members)}")
        if len(self.members) > MAX_COUNCIL_MEMBERS:
            raise ValueError(
                f"a council has at most {MAX_COUNCIL_MEMBERS} members, got {len(self.members)}"
            )
        names = [m.name for m in self.members]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(f"member names must be unique; repeated: {', '.join(duplicates)}")
        low, high = self.score_scale
        if not low < high:
            raise ValueError(
                f"score_scale must be [low, high] with low < high, got {list(self.score_scale)}"
            )
        for member in self.members:
            _check_member_score_scale(member, self.score_scale)
        return self

    def config_hash(self) -> str:
        """A stable fingerprint of what makes sessions comparable (no secrets in it).

        It covers every setting that changes what a reviewer is shown or how its verdict
        reads: the members (name, spec, options), the chairman, ``self_review`` (recusal
        hides the reviewer's own answer), ``score_scale`` and ``max_answer_chars`` (answers
        are cut before reviewers see them). Limits that only decide whether a call finishes
        (``session_deadline_s``, ``max_concurrency``, ``retry``) and the live bias checks
        (extra requests kept out of the ranking) are left out, and so is ``aggregation`` (it
        changes what the chairman sees, not the reviews); ``review_orders`` enters when it is
        not 1 (each reviewer then also sees the reverse order). ``max_answer_chars`` enters
        only when it is not :data:`LEGACY_HASH_MAX_ANSWER_CHARS`, the value every earlier
        hash implied, so stores written before it was hashed keep matching.
        """
        canonical: dict[str, Any] = {
            "members": [[m.name, m.spec, m.options] for m in self.members],
            "chairman": [self.chairman.name, self.chairman.spec],
            "self_review": self.self_review,
            "score_scale": list(self.score_scale),
        }
        if self.max_answer_chars != LEGACY_HASH_MAX_ANSWER_CHARS:
            canonical["max_answer_chars"] = self.max_answer_chars
        if self.review_orders != 1:  # a second review in another order: not comparable
            canonical["review_orders"] = self.review_orders
        digest = hashlib.sha256(
            json.dumps(canonical, sort_keys=True, default=str).encode()
        ).hexdigest()
        return f"sha256:{digest[:16]}"


API_KEY_ENV = {
    "openai": ("OPENAI_API_KEY",),
    "anthropic": ("ANTHROPIC_API_KEY",),
    "google": ("GOOGLE_API_KEY", "GEMINI_API_KEY"),
}


def _read_toml(path: Path | resources.abc.Traversable, shown_as: str) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"config file not found: {shown_as}") from None
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"{shown_as}: invalid TOML: {error}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{shown_as}: not UTF-8 text") from None


def _validation_message(error: ValidationError, shown_as: str) -> str:
    first = error.errors()[0]
    field = ".".join(str(part) for part in first["loc"]) or "(top level)"
    extra = f" (and {error.error_count() - 1} more)" if error.error_count() > 1 else ""
    value = first.get("input")
    quoted = f" (got {value!r})" if value is not None and not isinstance(value, dict | list) else ""
    return f"{shown_as}: field '{field}': {first['msg']}{quoted}{extra}"


def council_config_from_mapping(document: dict[str, Any], shown_as: str) -> CouncilConfig:
    council = document.get("council")
    if not isinstance(council, dict):
        raise ConfigError(f"{shown_as}: missing [council] table")
    fields = dict(council)
    if "retry" in document:
        retry = document["retry"]
        if not isinstance(retry, dict):
            raise ConfigError(f"{shown_as}: [retry] must be a table, got {retry!r}")
        try:
            fields["retry"] = RetryPolicy(**retry)
        except (TypeError, ValueError) as error:  # unknown key; a bad value (its key named)
            raise ConfigError(f"{shown_as}: [retry] {error}") from None
    try:
        return CouncilConfig.model_validate(fields)
    except ValidationError as error:
        raise ConfigError(_validation_message(error, shown_as)) from None
    except ConfigError as error:
        raise ConfigError(f"{shown_as}: {error}") from None


def _real_council(document: dict[str, Any], environ: dict[str, str]) -> CouncilConfig | None:
    members: list[CouncilMember] = []
    for provider, table in document.get("providers", {}).items():
        if any(environ.get(var) for var in table.get("env", API_KEY_ENV.get(provider, ()))):
            members += [
                CouncilMember(name=model, spec=f"{provider}:{model}") for model in table["models"]
            ]
    if not members:
        return None
    council = dict(document.get("council", {}))
    council["members"] = members
    council["chairman"] = CouncilMember(name=f"chairman ({members[0].name})", spec=members[0].spec)
    return CouncilConfig.model_validate(council)


def with_limit_overrides(config: CouncilConfig, environ: Mapping[str, str]) -> CouncilConfig:
    """``config`` with ``session_deadline_s`` / ``max_answer_chars`` /
    ``bias_check_probability`` / ``review_orders`` taken from the environment where
    :data:`LIMIT_ENV`'s variables are set, and ``aggregation`` from
    :data:`AGGREGATION_ENV`; a bad value is a :class:`ConfigError`."""
    for field, (variable, number_type) in LIMIT_ENV.items():
        raw = environ.get(variable, "").strip()
        if not raw:
            continue
        try:
            config = CouncilConfig.model_validate({**dict(config), field: number_type(raw)})
        except ValueError as error:  # int("x") or pydantic's ValidationError (a ValueError)
            reason = (
                error.errors()[0]["msg"]
                if isinstance(error, ValidationError)
                else f"not {'an integer' if number_type is int else 'a number'}"
            )
            raise ConfigError(f"{variable}: {reason} (got {raw!r})") from None
    return with_aggregation_override(config, environ)


def with_aggregation_override(config: CouncilConfig, environ: Mapping[str, str]) -> CouncilConfig:
    """``config`` with ``aggregation`` from ``LLM_COUNCIL_AGGREGATION`` when it is set."""
    raw = environ.get(AGGREGATION_ENV, "").strip()
    if not raw:
        return config
    if raw.lower() not in ("raw", "debiased"):
        raise ConfigError(f"{AGGREGATION_ENV}: must be 'raw' or 'debiased' (got {raw!r})")
    return config.model_copy(update={"aggregation": raw.lower()})


def load_council_config(
    path: str | Path | None = None, *, environ: dict[str, str] | None = None
) -> CouncilConfig:
    """Load the council to run (see module docstring for the resolution order), then apply
    the environment's limit overrides (:func:`with_limit_overrides`)."""
    env = dict(os.environ if environ is None else environ)
    return with_limit_overrides(_load_council_config(path, env), env)


def _load_council_config(path: str | Path | None, env: dict[str, str]) -> CouncilConfig:
    chosen = path or env.get("LLM_COUNCIL_CONFIG")
    if chosen:
        file = Path(chosen)
        return council_config_from_mapping(_read_toml(file, str(file)), str(file))
    real = _real_council(
        _read_toml(default_config_file("real_council.toml"), "real_council.toml"), env
    )
    if real is not None:
        return real
    embedded = default_config_file("council.toml")
    return council_config_from_mapping(
        _read_toml(embedded, "config/council.toml"), "config/council.toml"
    )
