"""A local model re-encoded once into a faster llama.cpp type (ADR 0065): made beside its
final name and renamed into place, reused by its stamp, rebuilt when the source or the
copy changed, never written through a symlink, and the shipped file (with a warning) when
it cannot be made.

A fake of llama.cpp's quantize (a child script that writes a marked copy, or fails) stands
in for ``llama_model_quantize``, so these run without the ``local`` extra; the real
re-encoding runs in tests/local_model.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from llm_council.providers import local_model_reencode
from llm_council.providers.local_model_files import LOCAL_MODELS
from llm_council.providers.local_model_reencode import reencoded_model_file

# the fake quantize: counts its runs in a file beside the source, writes "Q8_0:" + source
FAKE_QUANTIZE = """
import sys
from pathlib import Path
source, target, type_name = sys.argv[1:4]
runs = Path(source).with_name("runs")
runs.write_text(runs.read_text() + "x" if runs.exists() else "x")
Path(target).write_bytes(type_name.upper().encode() + b":" + Path(source).read_bytes())
"""
FAILING_QUANTIZE = """
import sys
print("llama_model_quantize: failed to quantize: bad magic", file=sys.stderr)
sys.exit(1)
"""


@pytest.fixture
def source(tmp_path: Path) -> Path:
    path = tmp_path / "wheel" / "Model.Q4_1.gguf"
    path.parent.mkdir()
    path.write_bytes(b"GGUF shipped weights")
    return path


def _runs(source: Path) -> int:
    runs = source.with_name("runs")
    return len(runs.read_text()) if runs.exists() else 0


def test_the_copy_is_made_once_then_reused(source, tmp_path, monkeypatch):
    monkeypatch.setattr(local_model_reencode, "_REENCODE", FAKE_QUANTIZE)
    folder = tmp_path / "models"
    copy = reencoded_model_file(source, "q8_0", folder)
    assert copy.parent == folder and copy.name.endswith("-Model.Q4_1.q8_0.gguf")
    assert copy.read_bytes() == b"Q8_0:GGUF shipped weights"
    stamp = copy.with_name(copy.name + ".verified")
    assert copy.stat().st_mode & 0o777 == stamp.stat().st_mode & 0o777 == 0o644
    assert reencoded_model_file(source, "q8_0", folder) == copy
    assert _runs(source) == 1  # the stamp spared the second run
    # nothing but the copy and its stamp is left in the folder
    assert sorted(p.name for p in folder.iterdir()) == [copy.name, copy.name + ".verified"]


def test_a_changed_source_or_copy_is_made_again(source, tmp_path, monkeypatch):
    monkeypatch.setattr(local_model_reencode, "_REENCODE", FAKE_QUANTIZE)
    folder = tmp_path / "models"
    copy = reencoded_model_file(source, "q8_0", folder)
    copy.write_bytes(b"tampered")  # size and mtime no longer those the stamp records
    assert reencoded_model_file(source, "q8_0", folder).read_bytes().startswith(b"Q8_0:GGUF")
    assert _runs(source) == 2
    source.write_bytes(b"GGUF a new release")  # a reinstalled wheel: a new name
    os.utime(source, ns=(1, 1))
    newer = reencoded_model_file(source, "q8_0", folder)
    assert newer != copy and newer.read_bytes() == b"Q8_0:GGUF a new release"


def test_a_symlink_at_the_copys_name_is_replaced_not_written_through(source, tmp_path, monkeypatch):
    monkeypatch.setattr(local_model_reencode, "_REENCODE", FAKE_QUANTIZE)
    folder = tmp_path / "models"
    folder.mkdir()
    victim = tmp_path / "victim"
    victim.write_bytes(b"not yours")
    name = local_model_reencode.reencoded_file_name(source, "q8_0")
    (folder / name).symlink_to(victim)
    copy = reencoded_model_file(source, "q8_0", folder)
    assert not copy.is_symlink() and copy.read_bytes().startswith(b"Q8_0:")
    assert victim.read_bytes() == b"not yours"


def test_a_failed_copy_serves_the_shipped_file_and_says_why(source, tmp_path, monkeypatch):
    monkeypatch.setattr(local_model_reencode, "_REENCODE", FAILING_QUANTIZE)
    folder = tmp_path / "models"
    with capture_logs() as logs:
        assert reencoded_model_file(source, "q8_0", folder) == source
    (warning,) = [entry for entry in logs if entry["event"] == "local_model_reencode_failed"]
    assert warning["log_level"] == "warning" and "code 1" in warning["reason"]
    assert "bad magic" in warning["reason"]
    assert list(folder.iterdir()) == []  # no temporary file, no half copy


def test_an_unwritable_folder_serves_the_shipped_file(source, tmp_path, monkeypatch):
    monkeypatch.setattr(local_model_reencode, "_REENCODE", FAKE_QUANTIZE)
    not_a_folder = tmp_path / "file"
    not_a_folder.write_text("x")
    with capture_logs() as logs:
        assert reencoded_model_file(source, "q8_0", not_a_folder / "models") == source
    assert [entry["event"] for entry in logs] == ["local_model_reencode_failed"]
    assert _runs(source) == 0


def test_only_known_types_are_made():
    with pytest.raises(ValueError, match="unknown re-encoding type 'q2_k'"):
        reencoded_model_file(Path("/nonexistent"), "q2_k", Path("/nonexistent"))
    # SmolLM2 ships Q4_1 and is served from a Q8_0 copy; Gemma's Q4_K_M runs as shipped
    assert LOCAL_MODELS["smollm2-135m"].reencode_to == "q8_0"
    assert LOCAL_MODELS["gemma3-270m"].reencode_to is None


def test_a_folder_at_the_copys_name_serves_the_shipped_file(source, tmp_path, monkeypatch):
    monkeypatch.setattr(local_model_reencode, "_REENCODE", FAKE_QUANTIZE)
    folder = tmp_path / "models"
    blocker = folder / local_model_reencode.reencoded_file_name(source, "q8_0")
    blocker.mkdir(parents=True)
    with capture_logs() as logs:
        assert reencoded_model_file(source, "q8_0", folder) == source
    assert [entry["event"] for entry in logs] == ["local_model_reencode_failed"]
    assert sorted(p.name for p in folder.iterdir()) == [blocker.name]  # no temporary left
