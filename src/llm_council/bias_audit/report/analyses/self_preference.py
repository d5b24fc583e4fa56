"""Per-reviewer self-preference: the bonus a reviewer gives its own answer.

The adjusted estimate is the joint model's self-review term (:mod:`.joint`), which holds
leniency, position and differential verbosity fixed; the raw one is the paired contrast
per session. Moved out of :mod:`.reviewers` (ADR 0077) so the section can be made
incremental on its own.
"""

from __future__ import annotations

from collections.abc import Sequence

import duckdb
import numpy as np

from llm_council.bias_audit.report.estimates import Interval, JointEffect, SelfPreference
from llm_council.bias_audit.report.load.tables import fixed_slot_pairs
from llm_council.stats.inference.pooling import mean_interval_from_moments
from llm_council.stats.numerics.distribution_functions import t_two_sided_p


def _t_p_value(estimate: float, standard_error: float, df: int) -> float:
    """Two-sided Student-t p of ``estimate / standard_error`` (NaN where it is no test)."""
    if not (df > 0 and standard_error > 0 and np.isfinite(estimate / standard_error)):
        return float("nan")
    return float(t_two_sided_p(estimate / standard_error, df))


def self_preferences(
    connection: duckdb.DuckDBPyConnection,
    joint_effects: Sequence[JointEffect],
    n_joint_sessions: int = 0,
) -> list[SelfPreference]:
    """Each self-reviewing reviewer's bonus to its own answer.

    ``adjusted.p_value`` is the two-sided t test of the joint model's term with
    ``n_joint_sessions - 1`` degrees of freedom, the same t its interval uses (NaN
    without ``n_joint_sessions``).

    ``raw`` is the simple paired contrast per session (own score minus the others' mean on
    its answer; t interval over sessions): it still contains the reviewer's leniency and,
    since an author's own answer has its own typical length, its taste for length.
    ``adjusted`` is the joint model's per-reviewer self-review term, which holds leniency,
    position and differential verbosity fixed; ``detected`` reads the adjusted interval,
    except where the reviewer saw its own answer at one slot in every session
    (:func:`fixed_slot_pairs`): there it is ``confounded_with_slot`` and never detected.
    """
    adjusted_by_reviewer = {
        effect.term: Interval(
            effect.estimate,
            effect.ci_low,
            effect.ci_high,
            _t_p_value(effect.estimate, effect.standard_error, n_joint_sessions - 1),
        )
        for effect in joint_effects
        if effect.group == "self_review"
    }
    rows = connection.execute(
        """SELECT reviewer, count(deviation), avg(deviation), stddev_samp(deviation),
                  min(model)
           FROM scored WHERE is_self
           GROUP BY reviewer ORDER BY reviewer"""
    ).fetchall()
    fixed = fixed_slot_pairs(connection)
    nan = float("nan")
    results = []
    for reviewer, n_sessions, mean_raw, sd_raw, own_model in rows:
        raw = Interval.from_estimate(
            mean_interval_from_moments(
                nan if mean_raw is None else mean_raw, nan if sd_raw is None else sd_raw, n_sessions
            )
        )
        adjusted = adjusted_by_reviewer.get(reviewer, Interval(nan, nan, nan))
        fixed_slot = fixed.get((reviewer, own_model))
        results.append(
            SelfPreference(
                reviewer=reviewer,
                n_sessions=int(n_sessions),
                adjusted=adjusted,
                raw=raw,
                detected=adjusted.excludes_zero() and fixed_slot is None,
                confounded_with_slot=fixed_slot is not None,
                fixed_slot=fixed_slot,
            )
        )
    return results
