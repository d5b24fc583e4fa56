"""What a session's design cannot separate, and what the audit then does not claim.

Two limits of the data, not of the statistics (issue 23, ADR 0040):

- **Rank points** (a ranking converted to N, N-1, ..., 1: karpathy's council, the
  reference drop-in): every full ranking has the same mean and spread, so leniency is
  not tested; position and self-preference still are.
- **One identical display order** for every reviewer: a reviewer's own answer sat at one
  slot, so if the council always shows that order, preferring the answer and preferring
  the slot give the same scores; self-preference is estimated but not flagged nor
  counted as tested.
"""

from __future__ import annotations

import numpy as np

from llm_council.bias_audit.session.score_table import UNKNOWN_POSITION, ScoreTable
from llm_council.stats.ranking.rank_points import table_is_rank_points


def is_rank_only(table: ScoreTable) -> bool:
    """Are the session's scores rank points (rankings only, ADR 0040)? A reviewer's number
    of shown answers is its known display positions, else every candidate."""
    known = (table.positions != UNKNOWN_POSITION).sum(axis=1)
    n_shown = np.where(known > 0, known, len(table.candidates))
    return table_is_rank_points(table.scores, n_shown)


#: ``indicator_only["leniency"]`` for rank points: offsets estimated, nothing tested
RANK_ONLY_LENIENCY_NOTE = (
    "not tested: the scores are rank points (rankings only), and every reviewer who "
    "ranks all N answers gives the same points N..1, so a reviewer's level and spread "
    "are fixed by N; ranks still identify position and self-preference"
)


def has_one_shared_order(table: ScoreTable) -> bool:
    """Did two or more reviewers see the answers in one identical display order (every
    answer at the same known slot for every reviewer that was shown it)?"""
    known = table.positions != UNKNOWN_POSITION
    if np.count_nonzero(known.any(axis=1)) < 2:
        return False
    lowest = np.where(known, table.positions, np.iinfo(np.intp).max).min(axis=0)
    highest = np.where(known, table.positions, -1).max(axis=0)
    seen = known.any(axis=0)
    return bool(np.all(lowest[seen] == highest[seen]))


#: ``indicator_only["confounded_with_slot"]``: one shared order, self-preference not flagged
CONFOUNDED_WITH_SLOT_NOTE = (
    "self_preference: every reviewer saw one identical display order, so a reviewer's "
    "own answer sat at one slot; if the council always shows this order, preferring "
    "its own answer and preferring that slot give the same scores. Self-preference "
    "is estimated, but not flagged and not counted as tested; shuffle the order per "
    "reviewer to separate them"
)
