from __future__ import annotations

from collections import Counter

from hypothesis import given
from hypothesis import strategies as st

from llm_council.anonymize import assign_labels, derive_position_mapping
from llm_council.prompts import display_index_for, label_for

member_names = st.lists(st.text(min_size=1, max_size=12), min_size=1, max_size=30, unique=True)


@given(candidates=member_names, reviewer=st.text(max_size=12), seed=st.integers(0, 2**63))
def test_label_map_is_a_bijection_and_letters_follow_display_order(
    candidates: list[str], reviewer: str, seed: int
) -> None:
    label_to_model = assign_labels(candidates, reviewer, seed)
    assert sorted(a.model for a in label_to_model.values()) == sorted(candidates)
    assert sorted(a.display_index for a in label_to_model.values()) == list(range(len(candidates)))
    for label, assignment in label_to_model.items():
        assert label == label_for(assignment.display_index)
        assert display_index_for(label) == assignment.display_index
    # dict order is display order
    assert [a.display_index for a in label_to_model.values()] == list(range(len(candidates)))


@given(candidates=member_names, reviewer=st.text(max_size=12), seed=st.integers(0, 2**63))
def test_assignment_is_deterministic_and_position_mapping_inverts_it(
    candidates: list[str], reviewer: str, seed: int
) -> None:
    first = assign_labels(candidates, reviewer, seed)
    assert first == assign_labels(candidates, reviewer, seed)
    positions = derive_position_mapping({label: a.model_dump() for label, a in first.items()})
    assert positions == {a.model: a.display_index for a in first.values()}


def test_legacy_label_map_takes_position_from_the_letter() -> None:
    assert derive_position_mapping(
        {"Response A": "m1", "Response C": "m3", "Response B": "m2"}
    ) == {"m1": 0, "m2": 1, "m3": 2}


def test_labels_past_z_continue_with_two_letters() -> None:
    assert [label_for(i) for i in (0, 25, 26, 27, 51, 52)] == [
        "Response A",
        "Response Z",
        "Response AA",
        "Response AB",
        "Response AZ",
        "Response BA",
    ]
    assert all(display_index_for(label_for(i)) == i for i in range(800))


def test_each_reviewer_gets_its_own_order_and_slots_are_uniform() -> None:
    candidates = ["m0", "m1", "m2", "m3", "m4"]
    first_slot = Counter()
    same_order = 0
    sessions = 2000
    for seed in range(sessions):
        order_a = [a.model for a in assign_labels(candidates, "reviewer-a", seed).values()]
        order_b = [a.model for a in assign_labels(candidates, "reviewer-b", seed).values()]
        same_order += order_a == order_b
        first_slot[order_a[0]] += 1
    # independent shuffles agree with probability 1/5! = 1/120, i.e. ~17 of 2000
    assert same_order < 50
    # each model is first with p = 0.2: 400 expected, sd = sqrt(2000*0.2*0.8) = 17.9; allow 5 sd
    assert all(abs(count - 400) < 90 for count in first_slot.values())


def test_shared_label_assignments_equal_fresh_ones_and_cannot_be_changed() -> None:
    import pydantic
    import pytest

    from llm_council.results import LabelAssignment

    first = assign_labels(["m0", "m1", "m2"], "m0", 7)
    again = assign_labels(["m0", "m1", "m2"], "m0", 7)
    assert first == again and all(first[label] is again[label] for label in first)
    assert first == {
        label: LabelAssignment(model=a.model, display_index=a.display_index)
        for label, a in first.items()
    }
    with pytest.raises(pydantic.ValidationError):
        first["Response A"].model = "m9"  # type: ignore[misc]
