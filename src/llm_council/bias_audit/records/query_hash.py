"""The optional ``query_hash`` of a record: HMAC-SHA256 of the query under the user's secret.

Off by default (``query_hash`` is null). ``LLM_COUNCIL_QUERY_HASH=true`` turns it on and
then ``LLM_COUNCIL_HASH_SECRET`` must be set: a plain or default-keyed hash of a short
query can be reversed by guessing, a keyed one cannot without the key. There is no
built-in secret. The value is tagged with its algorithm (``hmac-sha256:<hex>``) so a
future change of algorithm is visible in the records. The secret never appears in
errors or logs.
"""

from __future__ import annotations

import hashlib
import hmac
import os
from collections.abc import Mapping

from llm_council.errors import ConfigError

HASH_SWITCH_VARIABLE = "LLM_COUNCIL_QUERY_HASH"
HASH_SECRET_VARIABLE = "LLM_COUNCIL_HASH_SECRET"
HASH_ALGORITHM_TAG = "hmac-sha256"

_TRUE_VALUES = frozenset({"true", "1", "yes", "on"})
_FALSE_VALUES = frozenset({"false", "0", "no", "off", ""})


def env_flag(variable: str, environ: Mapping[str, str]) -> bool:
    """Read a boolean switch; anything but a known true/false word is a ConfigError."""
    raw = environ.get(variable, "")
    value = raw.strip().lower()
    if value in _TRUE_VALUES:
        return True
    if value in _FALSE_VALUES:
        return False
    raise ConfigError(f"{variable}={raw!r} is not a boolean: use true/false, 1/0 or yes/no")


def hmac_query_hash(query: str, secret: str) -> str:
    """``hmac-sha256:`` + hex HMAC-SHA256 of the UTF-8 query under the UTF-8 secret (RFC 2104)."""
    digest = hmac.new(secret.encode("utf-8"), query.encode("utf-8"), hashlib.sha256).hexdigest()
    return f"{HASH_ALGORITHM_TAG}:{digest}"


def query_hash_from_env(query: str, environ: Mapping[str, str] | None = None) -> str | None:
    """The record's ``query_hash`` under the current environment: null unless opted in."""
    env = os.environ if environ is None else environ
    if not env_flag(HASH_SWITCH_VARIABLE, env):
        return None
    secret = env.get(HASH_SECRET_VARIABLE, "")
    if not secret:
        raise ConfigError(
            f"{HASH_SWITCH_VARIABLE}=true needs a secret salt in {HASH_SECRET_VARIABLE} "
            "(there is no built-in default); set it, or unset "
            f"{HASH_SWITCH_VARIABLE} to store no query hash"
        )
    return hmac_query_hash(query, secret)
