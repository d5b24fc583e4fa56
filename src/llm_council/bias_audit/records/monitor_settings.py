"""The anytime monitor's settings: explicit values, else the environment's, else the defaults.

``LLM_COUNCIL_MONITOR_DELTA0`` (points, default 0.5) and ``LLM_COUNCIL_MONITOR_ALPHA``
(default 0.05). Its own module so that a PostgreSQL writer, which folds with them, needs
nothing of :mod:`.monitor_update` (which reads a PostgreSQL store through the writer's
modules: an import circle otherwise).
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping

from llm_council.errors import ConfigError
from llm_council.stats.monitor.anytime_monitor import MonitorSettings

DELTA0_VARIABLE = "LLM_COUNCIL_MONITOR_DELTA0"
ALPHA_VARIABLE = "LLM_COUNCIL_MONITOR_ALPHA"


def _number(environ: Mapping[str, str], name: str, default: float) -> float:
    text = environ.get(name, "").strip()
    if not text:
        return default
    try:
        value = float(text)
    except ValueError:
        raise ConfigError(f"{name}={text!r} is not a number") from None
    if not math.isfinite(value):
        raise ConfigError(f"{name}={text!r} is not a finite number")
    return value


def monitor_settings(
    environ: Mapping[str, str] | None = None,
    *,
    delta0: float | None = None,
    alpha: float | None = None,
) -> MonitorSettings:
    """The settings: explicit values, else the environment's, else the defaults; a bad
    value is one :class:`ConfigError` naming it."""
    env = os.environ if environ is None else environ
    defaults = MonitorSettings()
    chosen_delta0 = _number(env, DELTA0_VARIABLE, defaults.delta0) if delta0 is None else delta0
    chosen_alpha = _number(env, ALPHA_VARIABLE, defaults.alpha) if alpha is None else alpha
    try:
        return MonitorSettings(delta0=chosen_delta0, alpha=chosen_alpha)
    except ValueError as error:
        raise ConfigError(str(error)) from None


__all__ = ["ALPHA_VARIABLE", "DELTA0_VARIABLE", "monitor_settings"]
