"""query_hash: null by default, HMAC-SHA256 under the user's secret when opted in."""

from __future__ import annotations

import pytest

from llm_council.bias_audit.records.query_hash import hmac_query_hash, query_hash_from_env
from llm_council.errors import ConfigError

# Pinned with an independent implementation:
#   printf '%s' "How do I reduce tail latency?" | openssl dgst -sha256 -hmac "s3cret-salt"
LATENCY_QUERY_DIGEST = "aa0e129f8b41bd7839751345c1ac8cedc314c7325c570015ed349e4537615d5a"
#   printf '%s' "naïve café ☕" | openssl dgst -sha256 -hmac "clé"   (UTF-8 query and key)
UNICODE_DIGEST = "16ebffc03659355c1af1fac93fb5411aea9e3f0bbe6f92e6e61fe2f97bf3ad3a"


def test_hmac_matches_openssl() -> None:
    assert hmac_query_hash("How do I reduce tail latency?", "s3cret-salt") == (
        f"hmac-sha256:{LATENCY_QUERY_DIGEST}"
    )
    assert hmac_query_hash("naïve café ☕", "clé") == f"hmac-sha256:{UNICODE_DIGEST}"


def test_off_by_default() -> None:
    assert query_hash_from_env("anything", {}) is None
    assert query_hash_from_env("anything", {"LLM_COUNCIL_HASH_SECRET": "x"}) is None
    assert query_hash_from_env("anything", {"LLM_COUNCIL_QUERY_HASH": "false"}) is None


def test_on_uses_the_secret() -> None:
    env = {"LLM_COUNCIL_QUERY_HASH": "TRUE", "LLM_COUNCIL_HASH_SECRET": "s3cret-salt"}
    assert query_hash_from_env("How do I reduce tail latency?", env) == (
        f"hmac-sha256:{LATENCY_QUERY_DIGEST}"
    )


@pytest.mark.parametrize("secret", [None, ""])
def test_on_without_secret_refuses(secret: str | None) -> None:
    env = {"LLM_COUNCIL_QUERY_HASH": "true"}
    if secret is not None:
        env["LLM_COUNCIL_HASH_SECRET"] = secret
    with pytest.raises(ConfigError, match="LLM_COUNCIL_HASH_SECRET"):
        query_hash_from_env("q", env)


def test_bad_switch_value_is_quoted_and_secret_never_shown() -> None:
    env = {"LLM_COUNCIL_QUERY_HASH": "maybe", "LLM_COUNCIL_HASH_SECRET": "TOPSECRET-123"}
    with pytest.raises(ConfigError) as raised:
        query_hash_from_env("q", env)
    assert "LLM_COUNCIL_QUERY_HASH='maybe'" in str(raised.value)
    assert "TOPSECRET-123" not in str(raised.value)
