"""What each model call of a session cost in USD, from a maintained price table.

Prices come from a config override for the exact member spec
(``[council.prices."openai:gpt-5.5"]`` with ``input_usd_per_mtok`` and
``output_usd_per_mtok``, for private or negotiated prices), else from the ``genai-prices``
package (MIT; Pydantic's maintained table of public list prices, bundled with the
package, so pricing never calls the network; ``pip install 'llm-council[prices]'``). A
call is **unpriced**, never 0, when its model is in neither, when the table is not
installed, or when its provider reported no token counts; every unpriced call is listed
with its reason, and a total is marked incomplete when any call is unpriced.

USD = (input_tokens * p_in + output_tokens * p_out) / 10**6, with the per-million-token
prices (``genai-prices`` also applies its own tiers
and cached-token prices when the model has them).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from functools import lru_cache
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from llm_council.errors import ProviderError

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
        return None, "the price table is not installed: pip install 'llm-council[prices]'"
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
    stopped_by_budget: list[dict[str, str]] = field(default_factory=list)

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

    def over_budget(self) -> bool:
        """The priced spend has reached ``max_cost_usd`` (never, without a budget)."""
        return self.max_cost_usd is not None and self.total.usd >= Decimal(str(self.max_cost_usd))

    def stop(self, stage: str, member: str, provider: str) -> BudgetExceededError:
        """Record a call not sent for the budget; the error its review is marked with."""
        spent = float(self.total.usd)
        reason = (
            f"not sent: the session's priced spend ${spent:.6f} reached "
            f"max_cost_usd ${self.max_cost_usd:g}"
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
