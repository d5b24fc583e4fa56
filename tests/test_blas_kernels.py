"""The test session runs OpenBLAS's Haswell kernels, the ones the golden files were saved
with (ADR 0095)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import threadpoolctl

import blas_kernels


def test_the_session_runs_the_pinned_kernels() -> None:
    if blas_kernels.PINNED != blas_kernels.CORE_TYPE:
        pytest.skip("this CPU has no AVX2/FMA: OpenBLAS keeps its own kernels")
    import numpy as np

    np.ones((2, 2)) @ np.ones((2, 2))  # OpenBLAS loaded
    architectures = {
        info.get("architecture")
        for info in threadpoolctl.threadpool_info()
        if info.get("internal_api") == "openblas"
    }
    assert architectures == {"Haswell"}


def test_the_pin_follows_the_cpu_flags(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cpuinfo = tmp_path / "cpuinfo"
    monkeypatch.setenv("OPENBLAS_CORETYPE", "SkylakeX")
    cpuinfo.write_text("flags\t\t: fpu sse2 avx avx2 fma avx512f\n", encoding="ascii")
    assert blas_kernels.pin_openblas_kernels(str(cpuinfo)) == "Haswell"
    assert os.environ["OPENBLAS_CORETYPE"] == "Haswell"
    monkeypatch.setenv("OPENBLAS_CORETYPE", "ARMV8")
    cpuinfo.write_text("Features\t: fp asimd evtstrm aes\n", encoding="ascii")
    assert blas_kernels.pin_openblas_kernels(str(cpuinfo)) == "ARMV8"  # left alone
    monkeypatch.delenv("OPENBLAS_CORETYPE")
    assert blas_kernels.pin_openblas_kernels(str(tmp_path / "missing")) is None
