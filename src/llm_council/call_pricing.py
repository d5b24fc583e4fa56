"""What each model call of a session cost in USD, from a maintained price table.

Prices come from a config override for the exact member spec
(``[council.prices."openai:gpt-5.5"]`` with ``input_usd_per_mtok`` and
``output_usd_per_mtok``, for private or negotiated prices), else from the ``genai-prices``
package (MIT; Pydantic's maintained table of public list prices, bundled with the
package, so pricing never calls the network; ``pip install -e '.[prices]'`` in the checkout). A
call is **unpriced**, never 0, when its model is in neither, when the table is not
installed, or when its provider reported no token counts; every unpriced call is listed
with its reason, and a total is marked incomplete when any call is unpriced.

USD = (input_tokens * p_in + output_tokens * p_out) / 10**6, with the per-million-token
prices (``genai-prices`` also applies its own tiers
and cached-token prices when the model has them).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from functools import lru_cache
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from llm_council.errors import ConfigError, ProviderError
from llm_council.infra.install_hints import extra_install_hint

#: characters per token when a review's prompt is priced before it is sent: below the ~4
#: of English text, so the reservation errs high (code and other scripts run denser)
CHARS_PER_TOKEN = 3

#: our provider prefix -> the table's provider id
TABLE_PROVIDER = {"openai": "openai", "anthropic": "anthropic", "google": "google"}


class ModelPrice(BaseModel):
    """A price override for one member spec, in USD per million tokens."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    input_usd_per_mtok: float = Field(ge=0, allow_inf_nan=False)
    output_usd_per_mtok: float = Field(ge=0, allow_inf_nan=False)


class BudgetExceededError(ProviderError):
    """A review not sent: the session's priced spend reached ``max_cost_usd``."""


@lru_cache(maxsize=1)
def _table() -> Any:
    try:
        import genai_prices
    except ImportError:
        return None
    return genai_prices


def table_version() -> str | None:
    """The installed ``genai-prices`` version, or None when it is not installed."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("genai-prices")
    except PackageNotFoundError:
        return None


def price_usd(
    spec: str,
    input_tokens: int | None,
    output_tokens: int | None,
    overrides: Mapping[str, ModelPrice],
) -> tuple[Decimal | None, str | None]:
    """``(USD, None)`` for one call, or ``(None, why it is unpriced)``."""
    if input_tokens is None or output_tokens is None:
        return None, "the provider reported no token counts"
    override = overrides.get(spec)
    if override is not None:
        cost = (
            Decimal(input_tokens) * Decimal(str(override.input_usd_per_mtok))
            + Decimal(output_tokens) * Decimal(str(override.output_usd_per_mtok))
        ) / Decimal(1_000_000)
        return cost, None
    provider, _, model = spec.partition(":")
    table_provider = TABLE_PROVIDER.get(provider)
    if table_provider is None:
        return None, f"no public price for provider {provider!r}: add [council.prices]"
    table = _table()
    if table is None:
        return None, "the price table is not installed: " + extra_install_hint("prices")
    usage = table.Usage(input_tokens=input_tokens, output_tokens=output_tokens)
    try:
        calculation = table.calc_price(usage, model, provider_id=table_provider)
    except LookupError:
        return None, f"{model!r} is not in the price table: add [council.prices]"
    return Decimal(calculation.total_price), None


def unpriced_reason(spec: str, overrides: Mapping[str, ModelPrice]) -> str | None:
    """Why calls of ``spec`` cannot be priced (None when they can), asked before any call."""
    return price_usd(spec, 0, 0, overrides)[1]


@dataclass
class _Tally:
    usd: Decimal = Decimal(0)
    calls: int = 0
    unpriced_calls: int = 0

    def as_json(self) -> dict[str, Any]:
        priced = self.calls - self.unpriced_calls
        return {
            "usd": float(self.usd) if priced else None,  # None: "unpriced", never 0
            "calls": self.calls,
            "unpriced_calls": self.unpriced_calls,
        }


@dataclass
class SessionCosts:
    """The priced calls of one session, by stage and by member; what the budget reads."""

    overrides: Mapping[str, ModelPrice] = field(default_factory=dict)
    max_cost_usd: float | None = None
    total: _Tally = field(default_factory=_Tally)
    by_stage: dict[str, _Tally] = field(default_factory=lambda: defaultdict(_Tally))
    by_member: dict[str, _Tally] = field(default_factory=lambda: defaultdict(_Tally))
    unpriced: list[dict[str, str]] = field(default_factory=list)
    reserved: Decimal = Decimal(0)  # the most the reviews in flight may still cost
    stopped_by_budget: list[dict[str, str]] = field(default_factory=list)

    @classmethod
    def for_members(
        cls,
        specs: Sequence[str],
        overrides: Mapping[str, ModelPrice],
        max_cost_usd: float | None,
    ) -> SessionCosts:
        """A session's tally; with a budget every spec must be priced (an unpriced call
        would spend without counting), else a ConfigError naming the first that is not."""
        if max_cost_usd is not None:
            for spec in specs:
                reason = unpriced_reason(spec, overrides)
                if reason is not None:
                    raise ConfigError(
                        f"max_cost_usd needs a price for every member: {spec!r}: {reason}"
                    )
        return cls(overrides=overrides, max_cost_usd=max_cost_usd)

    def add(self, stage: str, member: str, spec: str, usage: Any) -> None:
        """Count one finished call (``usage``: its token counts, or None without a reply)."""
        cost, reason = price_usd(
            spec,
            getattr(usage, "input_tokens", None),
            getattr(usage, "output_tokens", None),
            self.overrides,
        )
        for tally in (self.total, self.by_stage[stage], self.by_member[member]):
            tally.calls += 1
            if cost is None:
                tally.unpriced_calls += 1
            else:
                tally.usd += cost
        if reason is not None:
            self.unpriced.append({"stage": stage, "member": member, "spec": spec, "why": reason})

    def reserve(self, spec: str, prompt_chars: int, max_output_tokens: int) -> Decimal | None:
        """Hold the most a call may cost before it is sent; None when it does not fit.

        The reservation is the call's prompt at :data:`CHARS_PER_TOKEN` characters a token
        plus its whole ``max_tokens`` of output; it fits when the spend so far, the
        reservations of the calls in flight and this one stay within ``max_cost_usd``.
        Without a budget every call fits (and nothing is held).
        """
        if self.max_cost_usd is None:
            return Decimal(0)
        estimate, _ = price_usd(
            spec, -(-prompt_chars // CHARS_PER_TOKEN), max_output_tokens, self.overrides
        )
        held = estimate if estimate is not None else Decimal(0)
        if self.total.usd + self.reserved + held > Decimal(str(self.max_cost_usd)):
            return None
        self.reserved += held
        return held

    def release(self, held: Decimal) -> None:
        """The call finished (its real cost is in :meth:`add`): drop its reservation."""
        self.reserved -= held

    def stop(self, stage: str, member: str, provider: str) -> BudgetExceededError:
        """Record a call not sent for the budget; the error its review is marked with."""
        committed = float(self.total.usd + self.reserved)
        reason = (
            f"not sent: the spend so far and the reviews in flight (${committed:.6f}) plus "
            f"this review's most (its prompt and max_tokens) pass max_cost_usd "
            f"${self.max_cost_usd:g}"
        )
        self.stopped_by_budget.append({"stage": stage, "member": member, "why": reason})
        return BudgetExceededError(reason, provider=provider)

    def as_metadata(self) -> dict[str, Any]:
        """``metadata["cost_usd"]``: totals, by stage and member, unpriced calls, budget."""
        return {
            **self.total.as_json(),
            "complete": self.total.unpriced_calls == 0,
            "by_stage": {stage: t.as_json() for stage, t in sorted(self.by_stage.items())},
            "by_member": {member: t.as_json() for member, t in sorted(self.by_member.items())},
            "unpriced": self.unpriced,
            "max_cost_usd": self.max_cost_usd,
            "reviews_stopped_by_budget": self.stopped_by_budget,
            "price_table": f"genai-prices {table_version()}" if table_version() else None,
        }
