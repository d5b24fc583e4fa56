from __future__ import annotations

from llm_council.aggregate import aggregate_reviews
from llm_council.anonymize import assign_labels
from llm_council.results import CandidateScore, Review


def _review(reviewer: str, ranking: list[str], scores: dict[str, float | None]) -> Review:
    labels = assign_labels(list(scores), reviewer, 0)
    candidates = tuple(
        CandidateScore(
            candidate=a.model,
            label=label,
            display_index=a.display_index,
            score=scores[a.model],
            rank=ranking.index(a.model) + 1 if a.model in ranking else None,
            is_self_review=a.model == reviewer,
        )
        for label, a in labels.items()
    )
    return Review(
        reviewer=reviewer,
        label_to_model=labels,
        candidates=candidates,
        ranking=tuple(ranking),
        parse_status="json",
    )


def test_self_votes_are_excluded_and_the_rest_re_ranked() -> None:
    reviews = [
        # x puts itself first; without it: y=1, z=2
        _review("x", ["x", "y", "z"], {"x": 10, "y": 8, "z": 4}),
        # y: without itself, z=1, x=2
        _review("y", ["y", "z", "x"], {"x": 5, "y": 9, "z": 7}),
        # z: without itself, x=1, y=2
        _review("z", ["x", "z", "y"], {"x": 9, "y": None, "z": 8}),
    ]
    standings = {s.model: s for s in aggregate_reviews(reviews, ["x", "y", "z"])}
    # x: ranks 2 (by y), 1 (by z) -> 1.5; scores 5, 9 -> 7.0
    assert standings["x"].mean_rank == 1.5 and standings["x"].mean_score == 7.0
    # y: ranks 1 (by x), 2 (by z) -> 1.5; scores 8 and a missing one -> 8.0 from 1 vote (missing is not 0)
    assert (
        standings["y"].mean_rank == 1.5
        and standings["y"].mean_score == 8.0
        and standings["y"].score_votes == 1
    )
    # z: ranks 2, 1 -> 1.5; scores 4, 7 -> 5.5
    assert standings["z"].mean_rank == 1.5 and standings["z"].mean_score == 5.5
    assert all(s.excluded_self_votes == 1 for s in standings.values())
    # all tied on mean rank: ordered by mean score y (8.0) > x (7.0) > z (5.5)
    assert [s.model for s in sorted(standings.values(), key=lambda s: s.place)] == ["y", "x", "z"]
    assert "ordered by mean score" in (standings["y"].tie_note or "")
    # Borda: each vote gives k - rank with k = 2 others: x gets 0 + 1 = 1
    assert standings["x"].borda_points == 1.0


def test_unparsed_reviews_add_nothing_and_unranked_members_go_last() -> None:
    failed = Review(reviewer="x", label_to_model={}, parse_status="unparseable")
    standings = aggregate_reviews([failed, _review("y", ["x"], {"x": 6, "y": None})], ["x", "y"])
    assert [s.model for s in standings] == ["x", "y"]
    assert standings[1].mean_rank is None and standings[1].rank_votes == 0
