"""The rank-council generator draws what its docstring says (so tests built on it mean something)."""

from __future__ import annotations

import pytest

from generators.rank_council import RankCouncilSpec, generate_sessions


def test_fixed_order_is_karpathys_shape() -> None:
    sessions = generate_sessions(RankCouncilSpec(n_members=4, order="fixed"), 5, seed=1)
    for session in sessions:
        assert [entry["model"] for entry in session.stage1] == RankCouncilSpec().members()
        maps = list(session.label_to_model.values())
        assert all(m == maps[0] for m in maps)
        assert list(maps[0]) == ["Response A", "Response B", "Response C", "Response D"]
        assert list(maps[0].values()) == RankCouncilSpec().members()
        for review in session.stage2:
            assert sorted(review["parsed_ranking"]) == list(maps[0])
            assert "FINAL RANKING:" in review["ranking"]


@pytest.mark.parametrize(("order", "shared"), [("session", True), ("reviewer", False)])
def test_shuffled_orders(order: str, shared: bool) -> None:
    sessions = generate_sessions(RankCouncilSpec(n_members=5, order=order), 20, seed=2)
    per_session = [s.shared_label_to_model() is not None for s in sessions]
    assert all(per_session) if shared else not any(per_session)
    firsts = {s.shared_label_to_model()["Response A"] for s in sessions if shared}
    assert len(firsts) > 1 or not shared  # the shared order changes between sessions


@pytest.mark.parametrize("judge", ["first", "last"])
def test_deterministic_judges_always_place_response_a(judge: str) -> None:
    spec = RankCouncilSpec(n_members=4, order="reviewer", judges=[judge] + ["honest"] * 3)
    for session in generate_sessions(spec, 30, seed=3):
        ranking = session.stage2[0]["parsed_ranking"]
        assert ranking[0 if judge == "first" else -1] == "Response A"


def test_mostly_first_is_about_ninety_percent_plus_chance() -> None:
    spec = RankCouncilSpec(n_members=4, order="reviewer", judges=["mostly_first"] + ["honest"] * 3)
    sessions = generate_sessions(spec, 400, seed=4)
    share = sum(s.stage2[0]["parsed_ranking"][0] == "Response A" for s in sessions) / 400
    assert 0.88 < share < 0.97  # 0.9 + 0.1 / 4 = 0.925


def test_rank_points_truncation_missing_reviews_and_integer_scores() -> None:
    spec = RankCouncilSpec(n_members=4, truncate_rate=1.0, missing_review_rate=1.0)
    for session in generate_sessions(spec, 10, seed=5):
        assert len(session.stage2) == 3
        for points in session.points.values():
            assert sorted(points.values()) == [2.0, 3.0, 4.0]  # last place left unranked
        records = session.records()
        assert len(records) == 16 and sum(r["score_value"] is None for r in records) == 7
    scored = generate_sessions(RankCouncilSpec(n_members=5, scores=True), 30, seed=6)
    values = [v for s in scored for points in s.points.values() for v in points.values()]
    assert all(v == int(v) and 1 <= v <= 10 for v in values)
    assert len(set(values)) < len(values)  # ties
