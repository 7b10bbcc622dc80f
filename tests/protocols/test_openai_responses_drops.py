"""OpenAI Responses: structured drops, the replay rule, and content that arrives only as deltas.

* What Responses cannot carry is recorded once per kind and ``what``, with a kind that says what
  it was, no provider id in ``what`` (ids go to ``where``), and the same records from the stream
  encoder, the body encoder and (for input) the history codec.
* Encrypted reasoning is replayed only to Responses (``protocols/_replay.py``).
* The stream encoder resends no final value: the aggregator emits a ``.done``-only remainder as a
  delta, and the encoder writes what it receives.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

import maas_stream as ms
from maas_stream import events as ev
from maas_stream.protocols.openai_responses import StreamEncoder, encode_response, from_canonical
from tests.conftest import RECORDINGS

PROTO = "openai-responses"
SECRET = "private chain of thought 7f3a"


def events_of(data: bytes) -> list[dict[str, Any]]:
    return [
        json.loads(line[5:])
        for block in data.decode("utf-8").split("\n\n")
        for line in block.splitlines()
        if line.startswith("data:")
    ]


def sse(*payloads: dict[str, Any]) -> bytes:
    return b"".join(
        b"event: " + str(p["type"]).encode() + b"\ndata: " + json.dumps(p).encode() + b"\n\n"
        for p in payloads
    )


def chat(*deltas: dict[str, Any], finish: str = "stop") -> bytes:
    base = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "m"}
    chunks = [{**base, "choices": [{"index": 0, "delta": d, "finish_reason": None}]} for d in deltas]
    chunks.append({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
    return b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks) + b"data: [DONE]\n\n"


FOREIGN = ms.Response(
    protocol="anthropic",
    status="completed",
    finish_reason="stop",
    messages=[
        ms.Message(role="user", content="question"),
        ms.Message(
            role="assistant",
            content=[
                ms.ReasoningPart(text=SECRET, signature="sig-anthropic"),
                ms.ReasoningPart(redacted=True, data="opaque-redacted"),
                ms.ToolCallPart(id="srvtoolu_9", name="web_search", arguments="{}", kind="server"),
                ms.ImagePart(url="https://x/y.png"),
                ms.CodePart(code="print(1)"),
                ms.UnknownPart(provider_type="future_block", raw={"type": "future_block"}),
                ms.TextPart(text="answer"),
                ms.ToolCallPart(id="toolu_1", name="f", arguments='{"a": 1}'),
            ],
        ),
        ms.Message(role="assistant", content=[ms.TextPart(text="other choice")], choice_index=1),
    ],
)

WANT_KINDS = {
    "message": 2,  # the user message and the second choice
    "reasoning": 1,
    "signature": 1,
    "encrypted_reasoning": 1,
    "server_call": 1,
    "media": 1,
    "code": 1,
    "unknown": 1,
}


def stream_of(resp: ms.Response) -> list[ev.Event]:
    """The events an emitting aggregator hands an encoder for ``resp`` (content as deltas)."""
    out: list[ev.Event] = [ev.ResponseStart(protocol=resp.protocol, id="r1", model="m")]
    for m, msg in enumerate(resp.messages):
        out.append(ev.MessageStart(message=m, role=msg.role, choice_index=msg.choice_index))
        for p, part in enumerate(
            msg.content if isinstance(msg.content, list) else [ms.TextPart(text=msg.content)]
        ):
            if isinstance(part, ms.ReasoningPart):
                out.append(ev.PartStart(message=m, part=p, value=ms.ReasoningPart()))
                if part.text:
                    out.append(ev.ReasoningDelta(message=m, part=p, text=part.text))
                if part.signature:
                    out.append(ev.SignatureDelta(message=m, part=p, signature=part.signature))
            elif isinstance(part, ms.TextPart):
                out.append(ev.PartStart(message=m, part=p, value=ms.TextPart(text="")))
                out.append(ev.TextDelta(message=m, part=p, text=part.text))
            elif isinstance(part, ms.ToolCallPart):
                out.append(
                    ev.PartStart(
                        message=m,
                        part=p,
                        value=ms.ToolCallPart(id=part.id, name=part.name, arguments="", kind=part.kind),
                    )
                )
                out.append(ev.ArgumentsDelta(message=m, part=p, delta=part.arguments))
            else:
                out.append(ev.PartStart(message=m, part=p, value=part))
            out.append(ev.PartDone(message=m, part=p, value=part))
        out.append(ev.MessageDone(message=m, status="completed", value=msg))
    out.append(ev.ResponseDone(status="completed", finish_reason="tool_calls"))
    return out


def test_stream_and_body_record_the_same_drops_with_fitting_kinds() -> None:
    enc = StreamEncoder()
    out = b"".join(enc.encode(e) for e in stream_of(FOREIGN)) + enc.finish()
    log = ms.DropLog(PROTO, "anthropic")
    body = encode_response(FOREIGN, drops=log)
    for records in (enc.lossy, log.records):
        kinds: dict[str, int] = {}
        for r in records:
            kinds[r.kind] = kinds.get(r.kind, 0) + r.count
        assert kinds == WANT_KINDS
        assert all(r.target == PROTO and r.source == "anthropic" for r in records)
        for r in records:
            assert "toolu" not in r.what
            assert "srvtoolu_9" not in r.what
        (server,) = [r for r in records if r.kind == "server_call"]
        assert server.where == ("srvtoolu_9",)  # the id goes to where, never to what
        assert "'web_search'" in server.what
    assert [(r.kind, r.what) for r in enc.lossy] == [(r.kind, r.what) for r in log.records]
    for wire in (out, json.dumps(body).encode()):
        assert SECRET.encode() not in wire
        assert b"opaque-redacted" not in wire
        assert b"sig-anthropic" not in wire
        assert b"other choice" not in wire
        assert b"question" not in wire
    final = events_of(out)[-1]["response"]
    assert (
        [i["type"] for i in final["output"]]
        == [i["type"] for i in body["output"]]
        == ["message", "function_call"]
    )


def test_drop_records_count_and_do_not_grow_with_ids() -> None:
    calls: list[ms.Part] = [
        ms.ToolCallPart(id=f"srv_{i}", name="web_search", arguments="{}", kind="server") for i in range(50)
    ]
    resp = ms.Response(
        protocol="gemini", status="completed", messages=[ms.Message(role="assistant", content=calls)]
    )
    log = ms.DropLog(PROTO, "gemini")
    encode_response(resp, drops=log)
    (record,) = log.records
    assert (record.kind, record.count, len(record.where)) == ("server_call", 50, 8)


def test_history_drops_and_replays_reasoning_by_its_origin() -> None:
    mine = ms.ReasoningPart(id="rs_1", summary=["s"], encrypted_content="ENC")
    messages = [
        ms.Message(role="user", content="q"),
        ms.Message(role="assistant", content=[mine], type="reasoning", provider=PROTO),
        ms.Message(role="assistant", content=[mine]),  # origin unknown: as good as foreign
        ms.Message(
            role="assistant", content=[ms.ReasoningPart(text=SECRET, signature="sig")], provider="anthropic"
        ),
        ms.Message(
            role="assistant",
            content=[ms.ToolCallPart(id="srv_1", name="web_search", arguments="{}", kind="server")],
        ),
        ms.Message(role="tool", content=[ms.ToolResultPart(tool_call_id="c1", content="r", is_error=True)]),
    ]
    log = ms.DropLog(PROTO)
    body = from_canonical(messages, drops=log)
    reasoning = [i for i in body["input"] if i.get("type") == "reasoning"]
    assert reasoning == [
        {
            "type": "reasoning",
            "id": "rs_1",
            "summary": [{"type": "summary_text", "text": "s"}],
            "encrypted_content": "ENC",
        }
    ]
    assert SECRET not in json.dumps(body)
    kinds = {r.kind: r.where for r in log.records}
    assert kinds == {
        "encrypted_reasoning": ("messages[2]",),
        "reasoning": ("messages[2]", "messages[3]"),
        "signature": ("messages[3]",),
        "server_call": ("srv_1",),
        "tool_result": ("c1",),
    }


def test_history_round_trip_replays_its_own_reasoning() -> None:
    body = {"input": [{"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "ENC"}]}
    msgs = ms.to_canonical(body, PROTO)
    assert {m.provider for m in msgs} == {PROTO}
    lossy: list[ms.Dropped] = []
    assert ms.from_canonical(msgs, PROTO, lossy=lossy) == body
    assert lossy == []


def test_aggregated_stream_messages_replay_as_history() -> None:
    data = (RECORDINGS / PROTO / "reasoning_text_parallel_calls.sse").read_bytes()
    resp = ms.aggregate(data, protocol=PROTO)
    lossy: list[ms.Dropped] = []
    body = ms.from_canonical(resp.messages, PROTO, lossy=lossy)
    (item,) = [i for i in body["input"] if i.get("type") == "reasoning"]
    assert item["encrypted_content"]
    assert lossy == []


# ---------------------------------------------------------------------- content only as deltas


def test_done_only_text_and_arguments_are_written_as_deltas() -> None:
    created = {"type": "response.created", "sequence_number": 0, "response": {"id": "r", "model": "m"}}
    data = sse(
        created,
        {
            "type": "response.output_item.added",
            "sequence_number": 1,
            "output_index": 0,
            "item": {"type": "message", "id": "msg_1", "role": "assistant", "content": []},
        },
        {
            "type": "response.content_part.added",
            "sequence_number": 2,
            "output_index": 0,
            "content_index": 0,
            "part": {"type": "output_text", "text": ""},
        },
        {
            "type": "response.output_text.delta",
            "sequence_number": 3,
            "output_index": 0,
            "content_index": 0,
            "delta": "Hel",
        },
        {
            "type": "response.content_part.done",
            "sequence_number": 4,
            "output_index": 0,
            "content_index": 0,
            "part": {"type": "output_text", "text": "Hello there", "annotations": []},
        },
        {
            "type": "response.output_item.done",
            "sequence_number": 5,
            "output_index": 0,
            "item": {
                "type": "message",
                "id": "msg_1",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": "Hello there", "annotations": []}],
            },
        },
        {
            "type": "response.output_item.added",
            "sequence_number": 6,
            "output_index": 1,
            "item": {"type": "function_call", "id": "fc_1", "call_id": "c1", "name": "f", "arguments": ""},
        },
        {
            "type": "response.output_item.done",
            "sequence_number": 7,
            "output_index": 1,
            "item": {
                "type": "function_call",
                "id": "fc_1",
                "call_id": "c1",
                "name": "f",
                "arguments": '{"a":1}',
                "status": "completed",
            },
        },
        {
            "type": "response.completed",
            "sequence_number": 8,
            "response": {"id": "r", "model": "m", "status": "completed", "output": []},
        },
    )
    for target in (PROTO, "openai-chat"):
        out = ms.convert(data, to=target, protocol=PROTO)
        again = ms.aggregate(out)
        assert [p.text for m in again.messages for p in m.content if isinstance(p, ms.TextPart)] == [
            "Hello there"
        ]
    out = ms.convert(data, to=PROTO, protocol=PROTO)
    deltas = [e["delta"] for e in events_of(out) if e["type"] == "response.output_text.delta"]
    assert deltas == ["Hel", "lo there"]
    args = [e["delta"] for e in events_of(out) if e["type"] == "response.function_call_arguments.delta"]
    assert args == ['{"a":1}']


def test_text_that_goes_on_after_a_call_is_not_lost() -> None:
    data = chat(
        {"role": "assistant", "content": "Before "},
        {
            "tool_calls": [
                {"index": 0, "id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
            ]
        },
        {"content": "after."},
        finish="tool_calls",
    )
    conv = ms.StreamConverter(PROTO, protocol="openai-chat")
    out = conv.feed(data) + conv.finish()
    assert conv.lossy == []
    items = [e["item"] for e in events_of(out) if e["type"] == "response.output_item.done"]
    assert [
        (i["type"], i.get("content", [{}])[0].get("text") if i["type"] == "message" else i["call_id"])
        for i in items
    ] == [
        ("message", "Before "),
        ("function_call", "call_1"),
        ("message", "after."),
    ]
    body = encode_response(ms.aggregate(data, protocol="openai-chat"))
    text = "".join(c["text"] for i in body["output"] if i["type"] == "message" for c in i["content"])
    assert text == "Before after."  # the same text as the stream, in one item


def test_summary_index_costs_what_was_received_not_its_value() -> None:
    enc = StreamEncoder()
    events: list[ev.Event] = [
        ev.ResponseStart(protocol=PROTO, id="r", model="m"),
        ev.MessageStart(message=0, type="reasoning", id="rs_1"),
        ev.PartStart(message=0, part=0, value=ms.ReasoningPart(id="rs_1")),
        ev.SummaryDelta(message=0, part=0, index=10**15, text="far"),
        ev.SummaryDelta(message=0, part=0, index=3, text="near"),
    ]
    out = b"".join(enc.encode(e) for e in events)
    added = [
        e["summary_index"] for e in events_of(out) if e["type"] == "response.reasoning_summary_part.added"
    ]
    assert added == [0, 1]  # dense on the wire, whatever the source's numbering
    texts = [
        (e["summary_index"], e["delta"])
        for e in events_of(out)
        if e["type"] == "response.reasoning_summary_text.delta"
    ]
    assert texts == [(0, "far"), (1, "near")]


@pytest.mark.parametrize("index", [10**15, 2**62])
def test_output_and_content_indexes_are_keys(index: int) -> None:
    created = {"type": "response.created", "sequence_number": 0, "response": {"id": "r"}}
    delta = {
        "type": "response.output_text.delta",
        "sequence_number": 1,
        "output_index": index,
        "content_index": index,
        "delta": "x",
    }
    resp = ms.aggregate(sse(created, delta), protocol=PROTO)
    assert [p.text for m in resp.messages for p in m.content if isinstance(p, ms.TextPart)] == ["x"]


def test_summary_given_only_at_done_travels_in_the_item() -> None:
    # The aggregator emits .done-only text, refusals and arguments as deltas, not summaries: the
    # encoder resends nothing, and the summary reaches the client in output_item.done.
    item = {"type": "reasoning", "id": "rs_1", "summary": []}
    done = {**item, "summary": [{"type": "summary_text", "text": "only at done"}], "encrypted_content": "E"}
    data = sse(
        {"type": "response.created", "sequence_number": 0, "response": {"id": "r"}},
        {"type": "response.output_item.added", "sequence_number": 1, "output_index": 0, "item": item},
        {"type": "response.output_item.done", "sequence_number": 2, "output_index": 0, "item": done},
        {
            "type": "response.completed",
            "sequence_number": 3,
            "response": {"id": "r", "status": "completed", "output": [done]},
        },
    )
    out = ms.convert(data, to=PROTO, protocol=PROTO)
    assert not any(e["type"].startswith("response.reasoning_summary") for e in events_of(out))
    (final,) = [e["item"] for e in events_of(out) if e["type"] == "response.output_item.done"]
    assert final["summary"] == done["summary"]
    assert ms.aggregate(out, protocol=PROTO).messages == ms.aggregate(data, protocol=PROTO).messages
