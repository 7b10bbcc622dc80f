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
                "provider": "test",  # the decoding protocol: the replay rule's origin
            }
        ],
        "usage": {"input_tokens": 1, "cache_read_tokens": 0},
    }


# --------------------------------------------------------- rules that hold for every protocol


def emitted(events: list[ev.Event]) -> list[ev.Event]:
    agg = ms.Aggregator("test", emit=True)
    return agg.feed_all(events) + agg.finish_events()


def test_a_warning_reaches_the_snapshot_when_it_happens() -> None:
    agg = ms.Aggregator("test", emit=True)
    agg.feed(ev.TextDelta(message=0, part=0, text="a"))
    assert agg.snapshot().warnings is None
    out = agg.feed(ev.StreamWarning(text="sequence gap after 3"))
    assert out == [ev.StreamWarning(text="sequence gap after 3")]  # handed on to encoders
    assert agg.snapshot().warnings == ["sequence gap after 3"]  # before the stream ends
    agg.feed(ev.ResponseDone())
    agg.feed(ev.StreamWarning(text="late"))  # still accepted after the end
    assert agg.finish().warnings == ["sequence gap after 3", "late"]


def _closed_call_then(cancel: ev.Cancelled) -> ms.Response:
    return run(
        [
            ev.PartStart(message="m", part="k", value=call("c1")),
            ev.ArgumentsDelta(message="m", part="k", delta="{}"),
            ev.PartDone(message="m", part="k"),
            ev.PartStart(message="m", part="t", value=ms.TextPart(text="kept")),
            cancel,
            ev.MessageDone(message="m", finish_reason="stop"),
            ev.ResponseDone(finish_reason="stop"),
        ]
    )


@pytest.mark.parametrize(
    "cancel",
    [
        pytest.param(ev.Cancelled(call_id="c1", reason="turn_detected"), id="by-call-id"),
        pytest.param(ev.Cancelled(message="m", part="k"), id="by-keys"),
    ],
)
def test_a_cancelled_call_is_incomplete_even_after_it_closed(cancel: ev.Cancelled) -> None:
    response = _closed_call_then(cancel)
    cancelled, text = parts(response.messages[0])
    assert isinstance(cancelled, ms.ToolCallPart)
    assert cancelled.status == "incomplete"
    assert text == ms.TextPart(text="kept")
    # Nobody runs a cancelled call, so it does not turn "stop" into "tool_calls".
    assert response.messages[0].finish_reason == "stop"
    assert response.finish_reason == "stop"


@pytest.mark.parametrize(
    "cancel",
    [
        pytest.param(ev.Cancelled(call_id="c1"), id="by-call-id"),
        pytest.param(ev.Cancelled(message="m", part="k"), id="by-keys"),
    ],
)
def test_a_cancelled_part_makes_its_open_message_incomplete(cancel: ev.Cancelled) -> None:
    assert _closed_call_then(cancel).messages[0].status == "incomplete"


def test_a_cancelled_part_in_a_closed_message_makes_it_incomplete() -> None:
    response = run(
        [
            ev.PartStart(message=0, part=0, value=call("c1")),
            ev.MessageDone(message=0, finish_reason="stop"),
            ev.Cancelled(call_id="c1"),
            ev.ResponseDone(),
        ]
    )
    (cancelled,) = parts(response.messages[0])
    assert isinstance(cancelled, ms.ToolCallPart)
    assert (cancelled.status, response.messages[0].status) == ("incomplete", "incomplete")


def test_cancelling_a_whole_message_closes_its_parts_incomplete() -> None:
    response = run(
        [
            ev.TextDelta(message=0, part=0, text="half"),
            ev.PartStart(message=0, part=1, value=call("c1")),
            ev.Cancelled(message=0, reason="client_cancelled"),
            ev.ResponseDone(),
        ]
    )
    text, cancelled = parts(response.messages[0])
    assert text == ms.TextPart(text="half")
    assert isinstance(cancelled, ms.ToolCallPart)
    assert (cancelled.status, response.messages[0].status) == ("incomplete", "incomplete")


def test_cancelling_an_unknown_call_is_a_warning() -> None:
    response = run([ev.Cancelled(call_id="never"), ev.ResponseDone()])
    assert response.warnings is not None
    assert "never" in response.warnings[0]


@pytest.mark.parametrize(
    ("kind", "expected"),
    [("function", "tool_calls"), ("custom", "tool_calls"), ("server", "stop"), ("mcp", "stop")],
)
def test_stop_with_a_client_call_finishes_tool_calls(
    kind: Literal["function", "custom", "server", "mcp"], expected: str
) -> None:
    events: list[ev.Event] = [
        ev.PartStart(message=0, part=0, value=call("c1", kind=kind)),
        ev.ArgumentsDelta(message=0, part=0, delta="{}"),
        ev.MessageDone(message=0, finish_reason="stop", provider_finish_reason="end_turn"),
        ev.ResponseDone(finish_reason="stop", provider_finish_reason="end_turn"),
    ]
    response = run(events)
    assert (response.messages[0].finish_reason, response.finish_reason) == (expected, expected)
    assert response.provider_finish_reason == "end_turn"  # the provider's word is kept as is
    done = [e for e in emitted(events) if isinstance(e, ev.MessageDone | ev.ResponseDone)]
    assert [e.finish_reason for e in done] == [expected, expected]  # encoders see the same


def test_stop_with_a_client_call_finishes_tool_calls_without_a_message_done() -> None:
    response = run([ev.PartStart(message=0, part=0, value=call("c1")), ev.ResponseDone(finish_reason="stop")])
    assert response.finish_reason == "tool_calls"


def test_other_finish_reasons_are_not_rewritten() -> None:
    response = run(
        [
            ev.PartStart(message=0, part=0, value=call("c1")),
            ev.MessageDone(message=0, finish_reason="length"),
            ev.ResponseDone(finish_reason="length"),
        ]
    )
    assert (response.messages[0].finish_reason, response.finish_reason) == ("length", "length")


def _content_of(events: list[ev.Event]) -> list[tuple[str, int, int, str]]:
    """(kind, message, part, content) of every start and content delta, in order."""
    out: list[tuple[str, int, int, str]] = []
    for e in events:
        if not isinstance(
            e,
            ev.PartStart
            | ev.PartDone
            | ev.TextDelta
            | ev.RefusalDelta
            | ev.ReasoningDelta
            | ev.ArgumentsDelta,
        ):
            continue
        assert isinstance(e.message, int)  # emitted events carry canonical (integer) keys
        assert isinstance(e.part, int)
        if isinstance(e, ev.PartStart):
            value = e.value
            content = getattr(value, "arguments" if isinstance(value, ms.ToolCallPart) else "text", None)
            out.append(("start", e.message, e.part, content or ""))
        elif isinstance(e, ev.ArgumentsDelta):
            out.append(("ArgumentsDelta", e.message, e.part, e.delta))
        elif isinstance(e, ev.PartDone):
            out.append(("done", e.message, e.part, ""))
        else:
            out.append((type(e).__name__, e.message, e.part, e.text))
    return out


def test_emit_mode_sends_a_whole_part_as_an_empty_start_and_one_delta() -> None:
    out = emitted(
        [
            ev.PartStart(message=0, part="t", value=ms.TextPart(text="whole text")),
            ev.PartStart(message=0, part="r", value=ms.ReasoningPart(text="thought")),
            ev.PartStart(message=0, part="x", value=ms.RefusalPart(text="no")),
            ev.PartStart(message=0, part="c", value=call("c1", arguments='{"a":1}')),
            ev.ResponseDone(),
        ]
    )
    assert _content_of(out) == [
        ("start", 0, 0, ""),
        ("TextDelta", 0, 0, "whole text"),
        ("start", 0, 1, ""),
        ("ReasoningDelta", 0, 1, "thought"),
        ("start", 0, 2, ""),
        ("RefusalDelta", 0, 2, "no"),
        ("start", 0, 3, ""),
        # A call's start arguments follow as a delta at the latest right before its PartDone.
        ("done", 0, 0, ""),
        ("done", 0, 1, ""),
        ("done", 0, 2, ""),
        ("ArgumentsDelta", 0, 3, '{"a":1}'),
        ("done", 0, 3, ""),
    ]


def test_emit_mode_sends_a_done_only_remainder_as_a_delta_before_part_done() -> None:
    out = emitted(
        [
            ev.PartStart(message=0, part=0, value=ms.TextPart(text="")),
            ev.TextDelta(message=0, part=0, text="Hel"),
            ev.PartDone(message=0, part=0, value=ms.TextPart(text="Hello")),
            ev.PartStart(message=0, part=1, value=call("c1")),
            ev.ArgumentsDelta(message=0, part=1, delta='{"x":'),
            ev.PartDone(message=0, part=1, value=call("c1", arguments='{"x":1}')),
            ev.PartStart(message=0, part=2, value=call("c2")),
            ev.PartDone(message=0, part=2, value=call("c2", arguments='{"only":"done"}')),
            ev.ResponseDone(),
        ]
    )
    assert _content_of(out) == [
        ("start", 0, 0, ""),
        ("TextDelta", 0, 0, "Hel"),
        ("TextDelta", 0, 0, "lo"),
        ("done", 0, 0, ""),
        ("start", 0, 1, ""),
        ("ArgumentsDelta", 0, 1, '{"x":'),
        ("ArgumentsDelta", 0, 1, "1}"),
        ("done", 0, 1, ""),
        ("start", 0, 2, ""),
        ("ArgumentsDelta", 0, 2, '{"only":"done"}'),
        ("done", 0, 2, ""),
    ]
    # PartDone still carries the final value, for metadata.
    dones = [e for e in out if isinstance(e, ev.PartDone)]
    assert [getattr(d.value, "status", None) for d in dones] == [None, "completed", "completed"]


def _break_text_handler(monkeypatch: pytest.MonkeyPatch) -> None:
    from maas_stream._emit import EmittingAggregator

    def broken(agg: object, event: object, out: object) -> None:
        raise KeyError("bug on purpose")

    # The handler tables of both the plain and the emitting aggregator.
    key: type[object] = ev.TextDelta
    for cls in (ms.Aggregator, EmittingAggregator):
        handlers: dict[type[object], object] = cls._handlers  # type: ignore[assignment]
        monkeypatch.setitem(handlers, key, broken)


CHAT_TEXT = (
    b'data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"hi"}}]}\n\n'
)


def test_a_bug_in_the_aggregator_surfaces_as_itself_from_aggregate(monkeypatch: pytest.MonkeyPatch) -> None:
    _break_text_handler(monkeypatch)
    with pytest.raises(KeyError, match="bug on purpose"):
        ms.aggregate(CHAT_TEXT, protocol="openai-chat")


@pytest.mark.parametrize("emit", [False, True])
def test_a_bug_in_the_aggregator_surfaces_as_itself_from_feed(
    monkeypatch: pytest.MonkeyPatch, emit: bool
) -> None:
    _break_text_handler(monkeypatch)
    agg = ms.StreamAggregator("openai-chat", emit=emit)
    with pytest.raises(KeyError, match="bug on purpose") as info:
        agg.feed(CHAT_TEXT)
    assert not isinstance(info.value, ms.MaasStreamError)
    conv = ms.StreamConverter("anthropic", protocol="openai-chat")
    with pytest.raises(KeyError, match="bug on purpose"):
        conv.feed(CHAT_TEXT)
