"""Score/rank mismatch pair counts (parse_outcomes._counts_per_review) against hand counts."""

from __future__ import annotations

import numpy as np

from llm_council.bias_audit.report.parse_outcomes import _counts_per_review


def test_pairs_are_counted_within_each_review_by_hand() -> None:
    # review 1, rows in any order: (rank, score) = (2, 1), (1, 3), (3, 2)
    #   ranks 1<2: scores 3>1, agrees;  1<3: 3>2, agrees;  2<3: 1<2, discordant
    #   -> 3 comparable, 1 discordant
    # review 2: (1, 5), (1, 4), (2, 5), (3, 4)
    #   tied ranks (1, 1) and tied scores (1 vs 2: 5 = 5; 2 vs 4: 4 = 4) are not comparable;
    #   rank 1 (score 5) < 3 (score 4): agrees; rank 1 (4) < 2 (5): discordant;
    #   rank 2 (5) < 3 (4): agrees -> 3 comparable, 1 discordant
    # review 3: a single row -> no pair
    new_review = np.array([True, False, False, True, False, False, False, True])
    rank = np.array([2, 1, 3, 1, 1, 2, 3, 1])
    score = np.array([1.0, 3.0, 2.0, 5.0, 4.0, 5.0, 4.0, 2.0])
    discordant, comparable = _counts_per_review(new_review, rank, score)
    assert comparable.tolist() == [3, 3, 0]
    assert discordant.tolist() == [1, 1, 0]


def test_a_better_ranked_lower_score_is_discordant_in_either_row_order() -> None:
    for rank, score in (([1, 2], [1.0, 2.0]), ([2, 1], [2.0, 1.0])):
        discordant, comparable = _counts_per_review(
            np.array([True, False]), np.array(rank), np.array(score)
        )
        assert (discordant.tolist(), comparable.tolist()) == ([1], [1])
