"""Whether an estimated effect reaches a minimum effect (a floor), decided past rounding.

The session audit names a reviewer only when its effect is at least a floor in points
(``reviewer_offset_floor``, ``self_preference_floor``: 1.0 by default). Judges give integer
scores, so an offset or a self-preference is often a small fraction exactly: 1.0 in exact
arithmetic, computed as 0.9999999999999998 on one machine and 1.0000000000000013 on another
(the BLAS and SIMD kernels numpy and LAPACK pick differ by CPU). A plain ``>=`` then decided
the session's risk by rounding: the same seeded session read a leniency gate p-value of 1.0
on one machine and 0.52 on the other. An estimate within :data:`FLOOR_TOLERANCE` (relative
to the floor, absolute below 1 point) of the floor counts as reaching it, which is what the
rule means in exact arithmetic; a real effect that close to the floor is the floor.
"""

from __future__ import annotations

#: how far below the floor an estimate may fall by rounding and still reach it: far above
#: the 1e-15..1e-12 a least-squares fit of a few hundred scores drifts between machines,
#: far below any effect a user would read as different from the floor
FLOOR_TOLERANCE = 1e-9


def reaches_floor(effect: float, floor: float) -> bool:
    """``effect >= floor``, counting an ``effect`` within :data:`FLOOR_TOLERANCE` x
    max(1, |floor|) below ``floor`` as reaching it (a NaN effect never does)."""
    return effect >= floor - FLOOR_TOLERANCE * max(1.0, abs(floor))


__all__ = ["FLOOR_TOLERANCE", "reaches_floor"]
