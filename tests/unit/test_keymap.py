"""``KeyMap``: the aggregator's small map (one entry inline, a dict from the second)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from maas_stream._holders import KeyMap

keys = st.one_of(
    st.integers(-3, 3),
    st.sampled_from(["content", "call", "reasoning"]),
    st.tuples(st.just("r"), st.integers(0, 2)),
)


@given(st.lists(st.tuples(keys, st.integers()), max_size=12), st.lists(keys, max_size=6))
def test_keymap_answers_as_a_dict_does(writes: list[tuple[object, int]], reads: list[object]) -> None:
    small: KeyMap[int] = KeyMap()
    plain: dict[object, int] = {}
    for key, value in writes:
        small[key] = value
        plain[key] = value
    for key in [k for k, _ in writes] + reads:
        assert small.get(key) == plain.get(key)
    assert small.values() == list(plain.values())
    assert small.keys() == list(plain)


def test_an_empty_keymap_holds_nothing() -> None:
    small: KeyMap[str] = KeyMap()
    assert small.get(0) is None
    assert small.values() == []
    small[0] = "a"
    small[0] = "b"  # the same key again stays inline
    assert (small.get(0), small.get(1), small.values()) == ("b", None, ["b"])
    small[1] = "c"
    assert (small.get(0), small.get(1), small.values()) == ("b", "c", ["b", "c"])
