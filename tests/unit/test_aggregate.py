"""The aggregator's rules, driven by events directly (no wire format involved)."""

from __future__ import annotations

import logging
from typing import Literal

import msgspec
import pytest

import maas_stream as ms
from maas_stream import events as ev
from tests.conftest import parts


def run(events: list[ev.Event], *, protocol: str = "test") -> ms.Response:
    agg = ms.Aggregator(protocol)
    for event in events:
        agg.feed(event)
    return agg.finish()


def call(
    id: str,
    name: str = "f",
    arguments: str = "",
    kind: Literal["function", "custom", "server", "mcp"] = "function",
) -> ms.ToolCallPart:
    return ms.ToolCallPart(id=id, name=name, arguments=arguments, kind=kind)


def test_same_key_new_id_starts_a_new_call() -> None:
    response = run(
        [
            ev.PartStart(message=0, part=0, value=call("a")),
            ev.ArgumentsDelta(message=0, part=0, delta="{}"),
            ev.PartStart(message=0, part=0, value=call("b")),
            ev.ArgumentsDelta(message=0, part=0, delta='{"x":1}'),
            ev.ResponseDone(),
        ]
    )
    first, second = parts(response.messages[0])
    assert first == msgspec.structs.replace(call("a", arguments="{}"), status="completed")
    assert second == msgspec.structs.replace(call("b", arguments='{"x":1}'), status="completed")


def test_repeated_id_on_a_later_fragment_continues_the_call() -> None:
    response = run(
        [
            ev.PartStart(message=0, part=0, value=call("a", name="")),
            ev.ArgumentsDelta(message=0, part=0, delta='{"q"'),
            ev.PartStart(message=0, part=0, value=call("a", name="search")),
            ev.ArgumentsDelta(message=0, part=0, delta=":1}"),
            ev.ResponseDone(),
        ]
    )
    (only,) = parts(response.messages[0])
    assert only == ms.ToolCallPart(id="a", name="search", arguments='{"q":1}', status="completed")


def test_a_new_name_without_id_is_a_new_call() -> None:
    response = run(
        [
            ev.PartStart(message=0, part=0, value=call("", name="one")),
            ev.PartStart(message=0, part=0, value=call("", name="two")),
            ev.ResponseDone(),
        ]
    )
    first, second = parts(response.messages[0])
    assert isinstance(first, ms.ToolCallPart)
    assert isinstance(second, ms.ToolCallPart)
    assert (first.name, second.name) == ("one", "two")
    assert first.id != second.id  # synthesized, unique
    assert first.id
    assert second.id


def test_start_value_is_kept_only_without_deltas() -> None:
    response = run(
        [
            ev.PartStart(message=0, part=0, value=call("a", arguments="{}")),
            ev.PartDone(message=0, part=0),
            ev.PartStart(message=0, part=1, value=call("b", arguments="{}")),
            ev.ArgumentsDelta(message=0, part=1, delta='{"k":'),
            ev.ArgumentsDelta(message=0, part=1, delta=""),  # empty delta: a no-op
            ev.ArgumentsDelta(message=0, part=1, delta="2}"),
            ev.PartDone(message=0, part=1),
            ev.ResponseDone(),
        ]
    )
    a, b = parts(response.messages[0])
    assert isinstance(a, ms.ToolCallPart)
    assert isinstance(b, ms.ToolCallPart)
    assert (a.arguments, b.arguments) == ("{}", '{"k":2}')


def test_done_value_wins_and_a_disagreement_is_reported(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="maas_stream"):
        response = run(
            [
                ev.PartStart(message=0, part=0, value=call("a")),
                ev.ArgumentsDelta(message=0, part=0, delta='{"x":1'),
                ev.PartDone(message=0, part=0, value=call("a", arguments='{"x":10}')),
                ev.PartStart(message=0, part=1, value=call("b")),
                ev.PartDone(message=0, part=1, value=call("b", arguments='{"only":"done"}')),
                ev.ResponseDone(),
            ]
        )
    a, b = parts(response.messages[0])
    assert isinstance(a, ms.ToolCallPart)
    assert isinstance(b, ms.ToolCallPart)
    assert (a.arguments, b.arguments) == ('{"x":10}', '{"only":"done"}')
    assert response.warnings is not None
    assert len(response.warnings) == 1
    assert "tool call a" in response.warnings[0]
    assert "differ" in caplog.text


def test_thinking_blocks_are_never_merged_and_signatures_replace() -> None:
    response = run(
        [
            ev.PartStart(message=0, part=0, value=ms.ReasoningPart(text="")),
            ev.ReasoningDelta(message=0, part=0, text="one"),
            ev.SignatureDelta(message=0, part=0, signature="s1-partial"),
            ev.SignatureDelta(message=0, part=0, signature="s1"),
            ev.PartDone(message=0, part=0),
            ev.PartStart(message=0, part=1, value=ms.ReasoningPart(text="")),
            ev.ReasoningDelta(message=0, part=1, text="two"),
            ev.SignatureDelta(message=0, part=1, signature="s2"),
            ev.PartDone(message=0, part=1),
            ev.ResponseDone(),
        ]
    )
    assert response.messages[0].content == [
        ms.ReasoningPart(text="one", signature="s1"),
        ms.ReasoningPart(text="two", signature="s2"),
    ]


def test_summaries_by_index() -> None:
    response = run(
        [
            ev.SummaryDelta(message=0, part="r", index=1, text="second"),
            ev.SummaryDelta(message=0, part="r", index=0, text="fir"),
            ev.SummaryDelta(message=0, part="r", index=0, text="st"),
            ev.ResponseDone(),
        ]
    )
    assert response.messages[0].content == [ms.ReasoningPart(summary=["first", "second"])]


def test_usage_is_assigned_never_added_and_unknown_stays_none() -> None:
    response = run(
        [
            ev.UsageUpdate(usage=ms.Usage(input_tokens=10, output_tokens=1, raw={"a": 1})),
            ev.UsageUpdate(usage=ms.Usage(output_tokens=30, raw={"b": 2})),
            ev.UsageUpdate(usage=ms.Usage(output_tokens=42)),
            ev.ResponseDone(),
        ]
    )
    assert response.usage == ms.Usage(input_tokens=10, output_tokens=42, raw={"a": 1, "b": 2})
    assert response.usage.cache_read_tokens is None


def test_a_cut_stream_is_incomplete_with_content_kept() -> None:
    response = run(
        [
            ev.ResponseStart(protocol="test", id="r1", model="m"),
            ev.TextDelta(message=0, part="t", text="Hello"),
            ev.PartStart(message=0, part=1, value=call("c1")),
            ev.ArgumentsDelta(message=0, part=1, delta='{"a"'),
        ]
    )
    assert response.status == "incomplete"
    (message,) = response.messages
    assert message.status == "incomplete"
    text, cut = parts(message)
    assert text == ms.TextPart(text="Hello")
    assert cut == ms.ToolCallPart(id="c1", name="f", arguments='{"a"', status="incomplete")


def test_length_finish_leaves_open_calls_incomplete() -> None:
    response = run(
        [
            ev.PartStart(message=0, part=0, value=call("c1")),
            ev.ArgumentsDelta(message=0, part=0, delta='{"a"'),
            ev.MessageDone(message=0, finish_reason="length", provider_finish_reason="max_tokens"),
            ev.ResponseDone(),
        ]
    )
    assert response.status == "incomplete"
    assert response.finish_reason == "length"
    (cut,) = parts(response.messages[0])
    assert isinstance(cut, ms.ToolCallPart)
    assert cut.status == "incomplete"


def test_an_in_band_error_fails_the_response_and_keeps_content() -> None:
    error = ms.StreamError(type="overloaded_error", message="Overloaded")
    response = run(
        [
            ev.TextDelta(message=0, part=0, text="partial"),
            ev.StreamErrorEvent(error=error),
        ]
    )
    assert (response.status, response.finish_reason, response.error) == ("failed", "error", error)
    assert response.messages[0].content == [ms.TextPart(text="partial")]
    assert response.messages[0].status == "incomplete"


def test_unknown_types_are_kept_and_counted() -> None:
    agg = ms.Aggregator("test")
    agg.feed(ev.ResponseStart(protocol="test", model="m1"))
    agg.feed(
        ev.UnknownEvent(provider_type="future_block", raw={"type": "future_block", "x": 1}, message=0, part=3)
    )
    agg.feed(ev.UnknownEvent(provider_type="future_event", raw={"type": "future_event"}))
    agg.feed(ev.UnknownEvent(provider_type="future_event", raw={"type": "future_event", "n": 2}))
    agg.feed(ev.ResponseDone())
    response = agg.finish()
    assert response.unknown == {"future_block": 1, "future_event": 2}
    assert response.messages[0].content == [
        ms.UnknownPart(provider_type="future_block", raw={"type": "future_block", "x": 1})
    ]
    assert response.unknown_events is not None
    assert [u.raw for u in response.unknown_events] == [
        {"type": "future_event"},
        {"type": "future_event", "n": 2},
    ]
    assert agg.unknown_counts == {("test", "m1", "future_block"): 1, ("test", "m1", "future_event"): 2}


def test_snapshot_is_a_prefix_and_does_not_change_state() -> None:
    agg = ms.Aggregator("test")
    agg.feed(ev.TextDelta(message=0, part=0, text="Hel"))
    agg.feed(ev.PartStart(message=0, part=1, value=call("c")))
    agg.feed(ev.ArgumentsDelta(message=0, part=1, delta='{"a":'))
    first = agg.snapshot()
    assert first == agg.snapshot()
    assert first.status == "in_progress"
    agg.feed(ev.TextDelta(message=0, part=0, text="lo"))
    agg.feed(ev.ArgumentsDelta(message=0, part=1, delta="1}"))
    agg.feed(ev.ResponseDone())
    final = agg.finish()
    text0, call0 = parts(first.messages[0])
    text1, call1 = parts(final.messages[0])
    assert isinstance(text0, ms.TextPart)
    assert isinstance(text1, ms.TextPart)
    assert isinstance(call0, ms.ToolCallPart)
    assert isinstance(call1, ms.ToolCallPart)
    assert text1.text.startswith(text0.text)
    assert call1.arguments.startswith(call0.arguments)


def test_deltas_after_the_end_are_a_remote_error_then_every_call_is_misuse() -> None:
    agg = ms.Aggregator("test")
    agg.feed(ev.ResponseDone())
    agg.feed(ev.UsageUpdate(usage=ms.Usage(output_tokens=1)))  # usage may still follow
    with pytest.raises(ms.RemoteProtocolError) as info:
        agg.feed(ev.TextDelta(message=0, part=0, text="late"))
    assert info.value.state == "DONE"
    assert agg.state is ms.AggregatorState.ERROR
    with pytest.raises(ms.LocalProtocolError):
        agg.feed(ev.ResponseDone())
    with pytest.raises(ms.LocalProtocolError):
        agg.finish()


def test_finish_twice_is_misuse() -> None:
    agg = ms.Aggregator("test")
    agg.finish()
    with pytest.raises(ms.LocalProtocolError):
        agg.finish()
    with pytest.raises(ms.LocalProtocolError):
        agg.feed(ev.ResponseDone())


def test_emit_mode_hands_on_canonical_keys_with_implied_starts_and_ends() -> None:
    agg = ms.Aggregator("test", emit=True)
    out: list[ev.Event] = []
    out += agg.feed(ev.TextDelta(message="choice-x", part="content", text="hi"))
    out += agg.feed(ev.PartStart(message="choice-x", part=7, value=call("c")))
    out += agg.feed(ev.ResponseDone(finish_reason="tool_calls"))
    kinds = [type(e).__name__ for e in out]
    assert kinds == [
        "MessageStart",
        "PartStart",
        "TextDelta",
        "PartStart",
        "PartDone",
        "PartDone",
        "MessageDone",
        "ResponseDone",
    ]
    keyed = [(e.message, e.part) for e in out if isinstance(e, ev.PartStart | ev.PartDone | ev.TextDelta)]
    assert set(keyed) == {(0, 0), (0, 1)}


def test_message_done_value_is_kept() -> None:
    value = ms.Message(
        role="assistant", type="compaction", id="cmp_1", provider_raw={"encrypted_content": "x"}
    )
    response = run([ev.MessageDone(message=0, value=value), ev.ResponseDone()])
    assert response.messages[0].type == "compaction"
    assert response.messages[0].provider_raw == {"encrypted_content": "x"}


def test_response_json_uses_the_contract_names() -> None:
    response = run(
        [
            ev.ResponseStart(protocol="test", id="r", model="m"),
            ev.MessageStart(message=0, role="assistant", choice_index=0),
            ev.TextDelta(message=0, part=0, text="x"),
            ev.MessageDone(message=0, finish_reason="stop", provider_finish_reason="end"),
            ev.UsageUpdate(usage=ms.Usage(input_tokens=1, cache_read_tokens=0)),
            ev.ResponseDone(),
        ]
    )
    data = msgspec.json.decode(msgspec.json.encode(response))
    assert data == {
        "protocol": "test",
        "status": "completed",
        "id": "r",
        "model": "m",
        "finish_reason": "stop",
        "provider_finish_reason": "end",
        "messages": [
            {
                "role": "assistant",
                "content": [{"type": "text", "text": "x"}],
                "status": "completed",
                "choice_index": 0,
                "finish_reason": "stop",
            }
        ],
        "usage": {"input_tokens": 1, "cache_read_tokens": 0},
    }
