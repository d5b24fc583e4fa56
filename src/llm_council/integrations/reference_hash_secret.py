"""The reference design's query-hash key: ``LLM_COUNCIL_HASH_SECRET``, else a private file.

As the reference council since 0.53: without a configured secret, a random 64-hex key is
created once, with mode 0600 and ``O_EXCL``, at ``LLM_COUNCIL_HASH_SECRET_FILE`` (default:
``hash_secret`` beside the reference's store, ``~/.llm-council/``) and reused, so a
RESEARCH hash groups the same query across sessions and nobody without the file can
confirm a guessed query (a published default key would let anyone). A file that another
user owns, that others can read or write, a symlink, or a key shorter than 16 characters
is refused, never replaced; hashing is then skipped (None) with a warning: a lost
grouping key is better than a known one.
"""

from __future__ import annotations

import logging
import os
import secrets
import stat
from pathlib import Path

logger = logging.getLogger("llm_council.bias_persistence")

SECRET_VARIABLE = "LLM_COUNCIL_HASH_SECRET"
SECRET_FILE_VARIABLE = "LLM_COUNCIL_HASH_SECRET_FILE"
MIN_KEY_LENGTH = 16
DEFAULT_SECRET_FILE = Path.home() / ".llm-council" / "hash_secret"


class UnsafeSecretFile(Exception):
    """The key file exists but cannot be trusted (owner, mode, type or length)."""


def secret_file_path() -> Path:
    """``LLM_COUNCIL_HASH_SECRET_FILE``, else ``~/.llm-council/hash_secret``."""
    override = os.environ.get(SECRET_FILE_VARIABLE, "").strip()
    return Path(override).expanduser() if override else DEFAULT_SECRET_FILE


def read_private_secret(path: Path) -> str:
    """The key in ``path`` ("" when there is no file); checks run on the open descriptor."""
    try:
        descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except FileNotFoundError:
        return ""
    except OSError as error:  # ELOOP for a symlink, EACCES, ...
        raise UnsafeSecretFile(f"{path}: cannot be opened safely ({error.strerror})") from None
    with os.fdopen(descriptor, "r", encoding="utf-8") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise UnsafeSecretFile(f"{path}: not a regular file")
        if info.st_mode & 0o077:
            raise UnsafeSecretFile(f"{path}: others may read or write it (mode must be 0600)")
        if hasattr(os, "getuid") and info.st_uid != os.getuid():
            raise UnsafeSecretFile(f"{path}: owned by another user")
        key = handle.read().strip()
    if key and len(key) < MIN_KEY_LENGTH:
        raise UnsafeSecretFile(f"{path}: the key is shorter than {MIN_KEY_LENGTH} characters")
    return key


def _create_secret(path: Path) -> str:
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    if path.is_file() and not path.is_symlink() and path.stat().st_size == 0:
        path.unlink()  # an empty file left by an interrupted create
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    key = secrets.token_hex(32)
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        handle.write(key + "\n")
    return key


def resolve_hash_secret() -> str | None:
    """The key for a RESEARCH query hash, or None (logged) when none can be trusted."""
    configured = os.environ.get(SECRET_VARIABLE, "").strip()
    if configured:
        if len(configured) < MIN_KEY_LENGTH:
            logger.warning(
                "query hash skipped: %s is shorter than %d characters",
                SECRET_VARIABLE,
                MIN_KEY_LENGTH,
            )
            return None
        return configured
    path = secret_file_path()
    try:
        existing = read_private_secret(path)
        if existing:
            return existing
        try:
            return _create_secret(path)
        except FileExistsError:  # another process created it between our read and create
            return read_private_secret(path) or None
    except UnsafeSecretFile as refused:
        logger.warning("query hash skipped: %s", refused)
    except OSError as error:
        logger.warning("query hash skipped: cannot create %s (%s)", path, error.strerror)
    return None
