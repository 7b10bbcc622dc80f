"""The small shapes an idle stream holds instead of containers of its own read as the containers did."""

from __future__ import annotations

from maas_stream.protocols._base import model_name
from maas_stream.protocols.openai_chat._map import response_raw
from maas_stream.protocols.openai_responses._items_write import message_item
from maas_stream.protocols.openai_responses._output import (
    NO_CONTENT,
    REBUILT,
    Item,
    Output,
    appended,
    members,
    replaced,
)


def test_created_only_raw_is_a_dict_of_its_own() -> None:
    a, b = response_raw(1, None, None), response_raw(2, None, None)
    assert type(a) is dict
    assert a == {"created": 1}
    a["system_fingerprint"] = "fp"
    assert a == {"created": 1, "system_fingerprint": "fp"}
    assert b == {"created": 2}
    assert response_raw(3, "fp", None) == {"created": 3, "system_fingerprint": "fp"}


def test_model_name_shares_one_string() -> None:
    first = model_name("".join(["gpt-", "shared"]))
    again = model_name("".join(["gpt-", "shared"]))
    assert first == "gpt-shared"
    assert again is first
    assert model_name("") == ""
    assert model_name(None) is None


def test_appended_bare_then_list() -> None:
    assert members(NO_CONTENT) == ()
    one = appended(NO_CONTENT, "a")
    assert one == "a"  # the first is held bare
    assert members(one) == ("a",)
    assert len(NO_CONTENT) == 0
    two = appended(one, "b")
    assert two == ["a", "b"]
    assert appended(two, "c") is two
    assert members(two) == ["a", "b", "c"]


def test_replaced_bare_and_in_a_list() -> None:
    assert replaced("a", 0, {"x": 1}) == {"x": 1}
    two = ["a", "b"]
    assert replaced(two, 1, "c") is two
    assert two == ["a", "c"]


def test_one_item_of_one_part_is_held_bare() -> None:
    out = Output()
    item = Item(-1, "message", None)
    out.open(item, message_item(None, "in_progress", NO_CONTENT))
    assert out.items is item
    second = Item(-1, "message", None)
    out.open(second, message_item(None, "in_progress", NO_CONTENT))
    assert members(out.items) == [item, second]
    assert second.index == 1


def test_open_message_body_rebuilt_when_read() -> None:
    out = Output()
    item = Item(-1, "message", None)
    out.open(item, message_item(None, "in_progress", NO_CONTENT))
    kept = item.body
    item.body = REBUILT
    assert out.output() == [kept]
    assert list(out.output()[0]) == ["type", "id", "role", "status", "content"]
