"""The identity memo of the session audit's repeated work (ADR 0075)."""

from __future__ import annotations

import gc
import threading
import weakref

import numpy as np
import pytest

from llm_council.stats.numerics.identity_memo import IdentityMemo


class _Key:
    """A plain object; two of them are never the same key, whatever they hold."""


def test_a_value_is_computed_once_per_object_and_extra_key() -> None:
    memo: IdentityMemo[int] = IdentityMemo(4)
    calls: list[str] = []
    first, second = _Key(), _Key()

    def compute(label: str, value: int) -> int:
        calls.append(label)
        return value

    assert memo.get((first,), "x", lambda: compute("first x", 1)) == 1
    assert memo.get((first,), "x", lambda: compute("again", 99)) == 1
    assert memo.get((first,), "y", lambda: compute("first y", 2)) == 2
    assert memo.get((second,), "x", lambda: compute("second x", 3)) == 3
    assert calls == ["first x", "first y", "second x"]


def test_equal_contents_are_not_the_same_key() -> None:
    """Keys are identities: an equal array elsewhere is computed afresh."""
    memo: IdentityMemo[float] = IdentityMemo(4)
    left, right = np.arange(3.0), np.arange(3.0)
    assert memo.get((left,), None, lambda: 1.0) == 1.0
    assert memo.get((right,), None, lambda: 2.0) == 2.0


def test_only_the_last_entries_are_kept_and_their_objects_stay_alive() -> None:
    memo: IdentityMemo[int] = IdentityMemo(2)
    keys = [_Key() for _ in range(3)]
    for index, key in enumerate(keys):
        memo.get((key,), None, lambda index=index: index)
    # the oldest was dropped: asked again, it is computed again
    assert memo.get((keys[0],), None, lambda: 10) == 10
    # a kept object cannot be collected, so its id cannot be reused by a new object
    kept = _Key()
    reference = weakref.ref(kept)
    memo.get((kept,), None, lambda: 5)
    del kept
    gc.collect()
    assert reference() is not None
    memo.clear()
    gc.collect()
    assert reference() is None


def test_a_memo_needs_room_for_one_entry() -> None:
    with pytest.raises(ValueError, match="size >= 1, got 0"):
        IdentityMemo(0)


def test_threads_get_one_value_each_and_no_error() -> None:
    memo: IdentityMemo[int] = IdentityMemo(3)
    keys = [_Key() for _ in range(8)]
    errors: list[BaseException] = []

    def work(offset: int) -> None:
        try:
            for round_index in range(300):
                key_index = (round_index + offset) % len(keys)
                value = memo.get((keys[key_index],), None, lambda k=key_index: k)
                assert value == key_index
        except BaseException as error:  # noqa: BLE001 - reported below
            errors.append(error)

    threads = [threading.Thread(target=work, args=(offset,)) for offset in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
