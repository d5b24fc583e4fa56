"""Pin OpenBLAS's kernels for the test session to ``Haswell``, before numpy loads it
(imported by conftest.py ahead of every module that uses numpy).

The session audit's golden files (``tests/data/audit_golden``) hold results to 1e-12. The
kernels OpenBLAS picks depend on the CPU (``SkylakeX`` on an Intel CPU with AVX-512,
``Haswell`` on AMD's), and their summation orders move a least-squares fit by up to about
1e-11 relative, enough to flip a decision that sits exactly on a threshold in exact
arithmetic (integer scores make ties). The files were saved, and the suite passes, with
the ``Haswell`` kernels, which every x86-64 CPU with AVX2 and FMA runs, and which this
project's machines already set (``OPENBLAS_CORETYPE=Haswell`` in their environment). On
a CPU without them (another architecture) OpenBLAS keeps its own choice.
"""

from __future__ import annotations

import os

#: the instruction sets OpenBLAS's Haswell kernels need
HASWELL_FLAGS = ("avx2", "fma")
CORE_TYPE = "Haswell"


def pin_openblas_kernels(cpuinfo: str = "/proc/cpuinfo") -> str | None:
    """Set ``OPENBLAS_CORETYPE=Haswell`` when the CPU runs those kernels (whatever was set
    before: the golden files were computed with them); returns the core type in force
    (``None``: OpenBLAS chooses)."""
    try:
        with open(cpuinfo, encoding="ascii", errors="replace") as handle:
            flags = set(handle.read().split())
    except OSError:
        return os.environ.get("OPENBLAS_CORETYPE")
    if all(flag in flags for flag in HASWELL_FLAGS):
        os.environ["OPENBLAS_CORETYPE"] = CORE_TYPE
    return os.environ.get("OPENBLAS_CORETYPE")


PINNED = pin_openblas_kernels()
