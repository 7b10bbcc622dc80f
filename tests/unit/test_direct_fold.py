"""The direct fold gives what the event path gives: same responses, same errors, same partials.

``ms.aggregate`` (and ``StreamAggregator(emit=False)``) fold common deltas straight into the
aggregator's part buffers (``protocols/_base.py``), SSE and session (JSON-lines) decoders alike;
the event path is ``decoder.feed`` then ``Aggregator.consume``. Every recording, every corpus
stream and the benchmarks' synthetic streams are folded both ways, whole, in network-sized chunks
and byte by byte, and compared.
"""

from __future__ import annotations

import importlib
import json
import sys
from typing import TYPE_CHECKING, Any

import pytest

import maas_stream as ms
from maas_stream._aggregate import Aggregator
from maas_stream._registry import get_protocol
from tests.conftest import ROOT, corpus, params, recordings

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

SSE = ["openai-chat", "openai-responses", "anthropic", "gemini", "google-interactions"]
SESSION = ["openai-realtime", "google-live"]
DIRECT = [*SSE, *SESSION]
"""The protocols whose decoders fold common frames directly (``direct``): all of them."""


def by_events(protocol: str, chunks: list[bytes]) -> ms.Response:
    """The event path: every frame decoded to events, every event applied."""
    decoder = get_protocol(protocol).decoder()
    agg = Aggregator(protocol)
    for chunk in chunks:
        agg.consume(decoder.feed(chunk))
    agg.consume(decoder.finish())
    return agg.finish()


def outcome(run: Callable[[], ms.Response]) -> tuple[str, Any]:
    """A response, or the error's type, frame and partial response."""
    try:
        return ("ok", run())
    except ms.ProtocolError as exc:
        partial = getattr(exc, "partial", None)
        return (type(exc).__name__, partial)


def assert_same(protocol: str, data: bytes, size: int) -> None:
    chunks = [data[i : i + size] for i in range(0, len(data), size)] or [b""]
    want = outcome(lambda: by_events(protocol, chunks))
    got = outcome(lambda: ms.aggregate(chunks, protocol=protocol))
    assert got[0] == want[0]
    if want[0] == "ok":
        assert got[1] == want[1]
    else:
        # The event path attaches no partial here; the direct one the response before the fault.
        assert got[1] is not None


def _streams() -> list[object]:
    out: list[object] = []
    for protocol in DIRECT:
        for p in params(recordings(protocol) + corpus(protocol)):
            out.append(pytest.param(protocol, p.values[0], id=p.id, marks=p.marks))  # type: ignore[attr-defined]
    return out


@pytest.mark.parametrize(("protocol", "path"), _streams())
@pytest.mark.parametrize("size", [1, 7, 4096, 1 << 30])
def test_every_stream_folds_the_same_both_ways(protocol: str, path: Path, size: int) -> None:
    assert_same(protocol, path.read_bytes(), size)


def _bench(name: str) -> Any:
    folder = str(ROOT / "benchmarks")
    if folder not in sys.path:
        sys.path.insert(0, folder)
    return importlib.import_module(name)


def _interactions(n: int) -> bytes:
    """An Interactions stream: a text step of ``n`` deltas, then a call whose arguments stream."""
    created = {"interaction": {"id": "i", "status": "in_progress", "model": "g"}}
    frames: list[dict[str, Any]] = [
        {"event_type": "interaction.created", **created},
        {"event_type": "step.start", "index": 0, "step": {"type": "model_output"}},
        *[
            {"event_type": "step.delta", "index": 0, "delta": {"type": "text", "text": f"w{i} "}}
            for i in range(n)
        ],
        {"event_type": "step.stop", "index": 0},
        {"event_type": "step.start", "index": 1, "step": {"id": "c", "type": "function_call", "name": "f"}},
        *[
            {"event_type": "step.delta", "index": 1, "delta": {"type": "arguments_delta", "arguments": p}}
            for p in ['{"a": "', *(f"x{i}" for i in range(n)), '"}']
        ],
        {"event_type": "step.stop", "index": 1},
        {"event_type": "interaction.completed", "interaction": {"id": "i", "status": "requires_action"}},
    ]
    return b"".join(
        b"event: " + f["event_type"].encode() + b"\ndata: " + json.dumps(f).encode() + b"\n\n" for f in frames
    )


SYNTH: dict[str, Callable[[], bytes]] = {
    "google-interactions": lambda: _interactions(250),
    "openai-chat": lambda: _bench("bench_openai_chat").synth_stream(500),
    "openai-responses": lambda: _bench("bench_openai_responses").synthesize(500),
    "anthropic": lambda: _bench("bench_anthropic").synth(200, 200)[0],
    "gemini": lambda: _bench("bench_gemini").synth(500),
    "openai-realtime": lambda: _bench("bench_realtime").realtime_stream(600),
    "google-live": lambda: _bench("bench_realtime").live_stream(600),
}


@pytest.mark.parametrize("protocol", sorted(SYNTH))
@pytest.mark.parametrize("size", [1, 4096])
def test_benchmark_streams_fold_the_same_both_ways(protocol: str, size: int) -> None:
    data = SYNTH[protocol]()
    assert_same(protocol, data, size)
    assert ms.aggregate(data, protocol=protocol).status in ("completed", "incomplete")


class Counting(ms.StreamAggregator):
    """Counts the events applied the normal way."""

    applied = 0

    def consume(self, events: list[Any]) -> None:
        self.applied += len(events)
        super().consume(events)


@pytest.mark.parametrize("protocol", DIRECT)
def test_the_direct_protocols_fold_directly(protocol: str) -> None:
    """The fast path is taken: most deltas reach their part without any event being applied."""
    data = SYNTH[protocol]()
    agg = Counting(protocol)
    agg.feed(data)
    assert agg.finish() == ms.aggregate(data, protocol=protocol)
    frames = data.count(b"\n") if protocol in SESSION else data.count(b"data:")
    assert 0 < agg.applied < frames // 4  # the synthetic streams are mostly text, arguments and audio deltas


def _chat(*chunks: dict[str, Any]) -> bytes:
    base = {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "m"}
    frames = [b"data: " + json.dumps({**base, **c}).encode() + b"\n\n" for c in chunks]
    return b"".join(frames) + b"data: [DONE]\n\n"


def _choice(delta: dict[str, Any], index: int = 0, finish: str | None = None) -> dict[str, Any]:
    return {"choices": [{"index": index, "delta": delta, "finish_reason": finish}]}


def _call(index: int, args: str, **fields: Any) -> dict[str, Any]:
    return _choice(
        {"tool_calls": [{"index": index, "function": {"arguments": args, **fields.pop("fn", {})}, **fields}]}
    )


CHAT_CASES = {
    "a new call at a used index closes the old one": _chat(
        _choice({"role": "assistant", "content": ""}),
        _call(0, "", id="a", type="function", fn={"name": "f"}),
        _call(0, '{"x":'),
        _call(0, "1}"),
        _call(0, "", id="b", type="function", fn={"name": "g"}),
        _call(0, '{"y":'),
        _call(0, "2}"),
        _choice({}, finish="tool_calls"),
    ),
    "text and a call's arguments interleaved in one choice": _chat(
        _choice({"role": "assistant", "content": ""}),
        _call(0, "", id="a", type="function", fn={"name": "f"}),
        *[c for i in range(40) for c in (_call(0, f"{i},"), _choice({"content": f"t{i} "}))],
        _call(1, "", id="b", type="function", fn={"name": "g"}),
        *[c for i in range(40) for c in (_call(1, f"{i};"), _call(0, f"{i}."), _choice({"content": "u"}))],
        _choice({}, finish="tool_calls"),
    ),
    "two choices interleaved": _chat(
        _choice({"role": "assistant", "content": ""}, 0),
        _choice({"role": "assistant", "content": ""}, 1),
        *[_choice({"content": f"a{i}"}, i % 2) for i in range(200)],
        _choice({}, 0, "stop"),
        _choice({"content": "late"}, 1),
        _choice({}, 1, "length"),
    ),
    "text before the choice is announced": _chat(
        _choice({"content": "x"}),
        _choice({"content": "y"}),
        _choice({"content": "z"}, finish="stop"),
    ),
    "reasoning and refusal between texts": _chat(
        _choice({"role": "assistant"}),
        _choice({"content": "a"}),
        _choice({"reasoning_content": "think"}),
        _choice({"content": "b"}),
        _choice({"refusal": "no"}),
        _choice({"content": "c"}),
        _choice({}, finish="stop"),
    ),
    "data after [DONE]": _chat(_choice({"content": "a"}), _choice({}, finish="stop"))
    + b'data: {"choices":[{"index":0,"delta":{"content":"b"}}]}\n\n',
    "a malformed frame mid-stream": _chat(_choice({"content": "a"}), _choice({"content": "b"}))[:-14]
    + b"data: {nope\n\n"
    + b'data: {"choices":[{"index":0,"delta":{"content":"c"}}]}\n\n',
    "a chunk that is not an object": _chat(_choice({"content": "a"}), _choice({"content": "b"}))[:-14]
    + b'data: {"choices":[{"index":0,"delta":{"content":5}}]}\n\n',
    "a mistyped field no delta reads": _chat(_choice({"content": "a"}), _choice({"content": "b"}))[:-14]
    + b'data: {"model":5,"choices":[{"index":0,"delta":{"content":"c"}}]}\n\n',
    "args for a call never started": _chat(
        _choice({"role": "assistant"}), _call(3, '{"a":'), _call(3, "1}"), _choice({}, finish="tool_calls")
    ),
    # The fold's struct reads these fields only as null (a value sends the frame the normal way):
    # each between texts of one run, which the fold appends to its part without a lookup.
    "fields the fold reads only as null, mid-run": _chat(
        _choice({"role": "assistant", "content": ""}),
        *[_choice({"content": f"t{i} "}) for i in range(70)],
        _choice({"content": "a", "annotations": [{"type": "url_citation", "url_citation": {"url": "u"}}]}),
        _choice({"content": "b", "refusal": ""}),
        _choice({"content": "c", "audio": {"id": "x", "transcript": "hi"}}),
        _choice({"content": "d", "function_call": {"name": "f", "arguments": ""}}),
        _choice({"content": "e", "reasoning_details": []}),
        {"choices": [{"index": 0, "delta": {"content": "f"}, "logprobs": {"content": []}}]},
        {**_choice({"content": "g"}), "error": {}},
        {**_choice({"content": "h"}), "prompt_filter_results": []},
        {**_choice({"content": "i"}), "moderation": {}},
        {**_choice({"content": "j"}), "usage": {}},
        *[_choice({"content": f"u{i} "}) for i in range(70)],
        _choice({}, finish="stop"),
    ),
    "usage and an error frame": _chat(
        _choice({"role": "assistant"}),
        _choice({"content": "a"}),
        {"choices": [], "usage": {"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3}},
        _choice({"content": "b"}),
    )
    + b'event: error\ndata: {"error": {"message": "boom"}}\n\n',
}


@pytest.mark.parametrize("name", sorted(CHAT_CASES))
@pytest.mark.parametrize("size", [1, 5, 4096])
def test_chat_edge_cases_fold_the_same_both_ways(name: str, size: int) -> None:
    assert_same("openai-chat", CHAT_CASES[name], size)


def test_an_emitting_aggregator_never_folds_directly() -> None:
    """With ``emit=True`` every delta is handed on, so nothing may bypass the events."""
    data = SYNTH["openai-chat"]()
    agg = ms.StreamAggregator("openai-chat", emit=True)
    events = [e for e in agg.feed(data) if isinstance(e, ms.events.TextDelta)]
    assert len(events) == 250
    assert agg.finish() == ms.aggregate(data, protocol="openai-chat")


def _sse(frames: list[dict[str, Any]], named: bool = True) -> bytes:
    out = b""
    for f in frames:
        head = b"event: " + f["type"].encode() + b"\n" if named else b""
        out += head + b"data: " + json.dumps(f).encode() + b"\n\n"
    return out


def _responses(*deltas: dict[str, Any], numbered: bool = True) -> bytes:
    item = {"id": "m", "type": "message", "role": "assistant", "content": []}
    frames: list[dict[str, Any]] = [
        {"type": "response.created", "response": {"id": "r", "status": "in_progress", "output": []}},
        {"type": "response.output_item.added", "output_index": 0, "item": item},
        {
            "type": "response.content_part.added",
            "output_index": 0,
            "content_index": 0,
            "part": {"type": "output_text", "text": ""},
        },
        *deltas,
        {"type": "response.completed", "response": {"id": "r", "status": "completed", "output": []}},
    ]
    if numbered:
        frames = [{**f, "sequence_number": i} for i, f in enumerate(frames)]
    return _sse(frames)


def _text(delta: Any, **fields: Any) -> dict[str, Any]:
    return {
        "type": "response.output_text.delta",
        "output_index": 0,
        "content_index": 0,
        "delta": delta,
        **fields,
    }


RESPONSES_CASES = {
    "plain": _responses(*[_text(f"t{i} ") for i in range(100)]),
    "unnumbered": _responses(*[_text(f"t{i} ") for i in range(100)], numbered=False),
    "a replayed head and a gap": _responses(*[_text(f"t{i} ") for i in range(20)])
    .replace(b'"sequence_number": 7}', b'"sequence_number": 4}')
    .replace(b'"sequence_number": 12}', b'"sequence_number": 15}'),
    "logprobs, a non-text delta, another content index": _responses(
        _text("a"), _text("b", logprobs=[{"token": "b"}]), _text(5), _text("c", content_index=1), _text("d")
    ),
    "a mistyped field no delta reads": _responses(_text("a"), _text("b", text=[])),
    "arguments of a call never added": _responses(
        {"type": "response.function_call_arguments.delta", "output_index": 3, "delta": '{"a":'},
        {"type": "response.function_call_arguments.delta", "output_index": 3, "delta": "1}"},
    ),
}


def _summary(delta: Any, index: Any = 0, output_index: int = 1) -> dict[str, Any]:
    return {
        "type": "response.reasoning_summary_text.delta",
        "output_index": output_index,
        "summary_index": index,
        "delta": delta,
    }


def _summary_part(index: int) -> dict[str, Any]:
    return {
        "type": "response.reasoning_summary_part.added",
        "output_index": 1,
        "summary_index": index,
        "part": {"type": "summary_text", "text": ""},
    }


_REASONING = {
    "type": "response.output_item.added",
    "output_index": 1,
    "item": {"id": "rs", "type": "reasoning", "summary": [{"type": "summary_text", "text": "base "}]},
}

RESPONSES_CASES |= {
    "summary deltas, a normal frame, more deltas": _responses(
        _REASONING,
        _summary_part(0),
        *[_summary(f"s{i} ") for i in range(40)],
        _text("between"),
        *[_summary(f"u{i} ") for i in range(40)],
        _summary_part(1),
        *[_summary(f"v{i} ", index=1) for i in range(40)],
        *[_summary(f"w{i} ", index=0) for i in range(5)],
    ),
    "summary deltas before any part event": _responses(
        _REASONING, *[_summary(f"s{i} ") for i in range(10)], _summary("x", index=3), _summary("y", index=3)
    ),
    "empty, mistyped and unnumbered-index summary deltas": _responses(
        _REASONING,
        _summary("a"),
        _summary(""),
        _summary("b", index=2),
        _summary("", index=4),
        _summary(7),
        _summary("c", index=None),
        _summary("d"),
    ),
    "a summary delta for an item never added": _responses(
        _summary("a", output_index=5), _summary("b", output_index=5)
    ),
    "a negative summary index mid-stream": _responses(
        _REASONING, _summary("a"), _summary("b"), _summary("c", index=-1), _summary("d")
    ),
}


@pytest.mark.parametrize("name", sorted(RESPONSES_CASES))
@pytest.mark.parametrize("size", [1, 4096])
def test_responses_edge_cases_fold_the_same_both_ways(name: str, size: int) -> None:
    assert_same("openai-responses", RESPONSES_CASES[name], size)


def _steps(*middle: dict[str, Any]) -> bytes:
    """An Interactions stream: a thought step (index 0) open around ``middle``, then the end."""
    created = {"interaction": {"id": "i", "status": "in_progress", "model": "g"}}
    frames: list[dict[str, Any]] = [
        {"event_type": "interaction.created", **created},
        {"event_type": "step.start", "index": 0, "step": {"type": "thought"}},
        *middle,
        {"event_type": "step.stop", "index": 0},
        {"event_type": "interaction.completed", "interaction": {"id": "i", "status": "completed"}},
    ]
    return b"".join(
        b"event: " + f["event_type"].encode() + b"\ndata: " + json.dumps(f).encode() + b"\n\n" for f in frames
    )


def _thought(text: Any, index: Any = 0, kind: str = "text") -> dict[str, Any]:
    content = {"type": kind, "text": text}
    return {
        "event_type": "step.delta",
        "index": index,
        "delta": {"type": "thought_summary", "content": content},
    }


_SIGNATURE = {
    "event_type": "step.delta",
    "index": 0,
    "delta": {"type": "thought_signature", "signature": "c2ln"},
}
_CALL = {"event_type": "step.start", "index": 1, "step": {"id": "c", "type": "function_call", "name": "f"}}

INTERACTIONS_CASES = {
    "summary deltas, a normal frame, more deltas": _steps(
        *[_thought(f"t{i} ") for i in range(40)], _SIGNATURE, *[_thought(f"u{i} ") for i in range(40)]
    ),
    "empty, mistyped and non-text summaries": _steps(
        _thought("a"), _thought(""), _thought("b"), _thought(3), _thought("c", kind="image"), _thought("d")
    ),
    "summaries of a call step, and of a step never started": _steps(
        _CALL,
        *[_thought(f"c{i} ", index=1) for i in range(10)],
        {"event_type": "step.stop", "index": 1},
        *[_thought(f"n{i} ", index=2) for i in range(10)],
    ),
    "a summary delta without an index mid-stream": _steps(
        *[_thought(f"t{i} ") for i in range(10)], _thought("x", index=None), _thought("y")
    ),
}


@pytest.mark.parametrize("name", sorted(INTERACTIONS_CASES))
@pytest.mark.parametrize("size", [1, 4096])
def test_interactions_edge_cases_fold_the_same_both_ways(name: str, size: int) -> None:
    assert_same("google-interactions", INTERACTIONS_CASES[name], size)


@pytest.mark.parametrize(
    ("protocol", "data"),
    [
        ("google-interactions", INTERACTIONS_CASES["summary deltas, a normal frame, more deltas"]),
        ("openai-responses", RESPONSES_CASES["summary deltas, a normal frame, more deltas"]),
    ],
)
def test_summary_deltas_fold_directly(protocol: str, data: bytes) -> None:
    """After the first of a run, a part's summary deltas reach it without an event applied."""
    agg = Counting(protocol)
    agg.feed(data)
    assert agg.finish() == ms.aggregate(data, protocol=protocol)
    assert 0 < agg.applied < 20  # of ~80-170 summary deltas


def _gemini(*parts: Any, finish: bool = True) -> bytes:
    """A Gemini stream: one chunk per item (a part, or a whole chunk given as a dict with "chunk")."""
    frames = []
    for i, item in enumerate(parts):
        if isinstance(item, dict) and "chunk" in item:
            body = item["chunk"]
        else:
            cand: dict[str, Any] = {"content": {"role": "model", "parts": [item]}, "index": 0}
            body = {"candidates": [cand], "usageMetadata": {"totalTokenCount": i}, "responseId": "r"}
        frames.append(body)
    if finish:
        frames.append(
            {"candidates": [{"content": {"role": "model", "parts": [{"text": ""}]}, "finishReason": "STOP"}]}
        )
    return b"".join(b"data: " + json.dumps(f).encode() + b"\r\n\r\n" for f in frames)


def _said(text: str, thought: bool = False, **more: Any) -> dict[str, Any]:
    return {"text": text, **({"thought": True} if thought else {}), **more}


_FC = {"functionCall": {"name": "f", "args": {"a": 1}}}

GEMINI_CASES = {
    "thought and text runs switching": _gemini(
        *[_said(f"p{i} ", thought=(i // 3) % 2 == 0) for i in range(30)]
    ),
    "signed text parts, empty ones, a call between runs": _gemini(
        _said("a", thought=True),
        _said("b", thought=True, thoughtSignature="c2ln"),
        _said("c", thought=True, thoughtSignature="c2ln"),
        _said(""),
        _said("d"),
        _said("", thought=True),
        _FC,
        _said("e"),
        _said("f", thought=True),
        _said("g"),
    ),
    "a streamed call, then text": _gemini(
        _said("a"),
        {
            "functionCall": {
                "name": "f",
                "partialArgs": [{"jsonPath": "$.a", "stringValue": "x"}],
                "willContinue": True,
            }
        },
        _said("b", thought=True),
        _said("c"),
    ),
    "calls back to back, signed, streamed over chunks": _gemini(
        _FC,
        {**_FC, "thoughtSignature": "c2ln"},
        _said("a"),
        {
            "functionCall": {
                "name": "g",
                "partialArgs": [{"jsonPath": "$.a", "stringValue": "x"}],
                "willContinue": True,
            }
        },
        {"functionCall": {"partialArgs": [{"jsonPath": "$.a", "stringValue": "y"}], "willContinue": True}},
        {"functionCall": {"partialArgs": [{"jsonPath": "$.b", "numberValue": 2}], "willContinue": True}},
        {"functionCall": {}},
        _FC,
        _said("b", thought=True),
    ),
    "a switch with candidate fields, then an error": _gemini(
        _said("a"),
        {
            "chunk": {
                "candidates": [
                    {"content": {"parts": [_said("b", thought=True)]}, "index": 0, "tokenCount": 3}
                ]
            }
        },
        _said("c"),
        {"chunk": {"error": {"code": 500, "message": "boom", "status": "INTERNAL"}}},
        finish=False,
    ),
    "a second candidate switching runs": _gemini(
        _said("a"),
        {"chunk": {"candidates": [{"content": {"parts": [_said("x", thought=True)]}, "index": 1}]}},
        {"chunk": {"candidates": [{"content": {"parts": [_said("y")]}, "index": 1}]}},
        _said("b", thought=True),
        {"chunk": {"candidates": [{"content": {"parts": [_said("z", thought=True)]}, "index": 1}]}},
    ),
}


@pytest.mark.parametrize("name", sorted(GEMINI_CASES))
@pytest.mark.parametrize("size", [1, 4096])
def test_gemini_edge_cases_fold_the_same_both_ways(name: str, size: int) -> None:
    assert_same("gemini", GEMINI_CASES[name], size)


def _anthropic(*middle: dict[str, Any]) -> bytes:
    start = {"type": "message_start", "message": {"id": "m", "model": "c", "content": [], "usage": {}}}
    return _sse([start, *middle, {"type": "message_stop"}])


def _block(index: int, block: dict[str, Any]) -> dict[str, Any]:
    return {"type": "content_block_start", "index": index, "content_block": block}


def _delta(index: int, **delta: Any) -> dict[str, Any]:
    return {"type": "content_block_delta", "index": index, "delta": delta}


ANTHROPIC_CASES = {
    "deltas on an unknown block and before a block": _anthropic(
        _block(0, {"type": "mystery"}),
        _delta(0, type="text_delta", text="x"),
        _delta(1, type="text_delta", text="early"),
        _block(1, {"type": "text", "text": ""}),
        _delta(1, type="text_delta", text="y"),
        _delta(1, type="signature_delta", signature="s"),
        _delta(1, type="text_delta", text=""),
    ),
    "thinking, text and tool input": _anthropic(
        _block(0, {"type": "thinking", "thinking": "", "signature": ""}),
        *[_delta(0, type="thinking_delta", thinking=f"t{i}") for i in range(70)],
        {"type": "content_block_stop", "index": 0},
        _block(1, {"type": "tool_use", "id": "t", "name": "f", "input": {}}),
        *[_delta(1, type="input_json_delta", partial_json=p) for p in ['{"a"', ": 1", "}"]],
        {"type": "content_block_stop", "index": 1},
        _delta(1, type="input_json_delta", partial_json="late"),
    ),
}


@pytest.mark.parametrize("name", sorted(ANTHROPIC_CASES))
@pytest.mark.parametrize("size", [1, 4096])
def test_anthropic_edge_cases_fold_the_same_both_ways(name: str, size: int) -> None:
    assert_same("anthropic", ANTHROPIC_CASES[name], size)


# ---------------------------------------------------------------- session (JSON-lines) decoders


def _lines(*frames: tuple[str, Any]) -> bytes:
    return b"".join(
        json.dumps({"dir": d, "msg": m}, separators=(",", ":")).encode() + b"\n" for d, m in frames
    )


def _rt(kind: str, delta: Any, item_id: str = "m", index: int = 0, **fields: Any) -> tuple[str, Any]:
    return (
        "server",
        {
            "type": f"response.{kind}.delta",
            "item_id": item_id,
            "content_index": index,
            "delta": delta,
            **fields,
        },
    )


def _realtime(*middle: tuple[str, Any]) -> bytes:
    item = {"id": "m", "type": "message", "role": "assistant", "content": []}
    call = {"id": "f", "type": "function_call", "name": "g", "call_id": "c", "arguments": ""}
    return _lines(
        ("server", {"type": "session.created", "session": {"model": "gpt-realtime"}}),
        ("server", {"type": "response.created", "response": {"id": "r", "status": "in_progress"}}),
        ("server", {"type": "response.output_item.added", "item": item}),
        (
            "server",
            {
                "type": "response.content_part.added",
                "item_id": "m",
                "content_index": 0,
                "part": {"type": "text"},
            },
        ),
        (
            "server",
            {
                "type": "response.content_part.added",
                "item_id": "m",
                "content_index": 1,
                "part": {"type": "audio"},
            },
        ),
        ("server", {"type": "response.output_item.added", "item": call}),
        *middle,
        ("server", {"type": "response.done", "response": {"id": "r", "status": "completed", "output": []}}),
    )


REALTIME_CASES = {
    "text, audio, transcript and arguments": _realtime(
        *[_rt("output_text", f"t{i} ") for i in range(70)],
        *[_rt("output_audio", "AAAA" if i % 3 else "AQI=", index=1) for i in range(30)],
        *[_rt("output_audio_transcript", f"s{i} ", index=1) for i in range(70)],
        *[
            ("server", {"type": "response.function_call_arguments.delta", "item_id": "f", "delta": p})
            for p in ['{"a"', ":1}"]
        ],
    ),
    "beta names, an empty delta and a null one": _realtime(
        _rt("text", "a"),
        _rt("text", ""),
        _rt("text", None),
        _rt("audio", "AQI=", index=1),
        _rt("audio_transcript", "b", index=1),
    ),
    "deltas for a part or an item never added": _realtime(
        _rt("output_text", "x", index=5), _rt("output_text", "y", item_id="nope"), _rt("output_text", "z")
    ),
    "a client line and a session line between deltas": _realtime(
        _rt("output_text", "a"),
        ("client", {"type": "input_audio_buffer.append", "audio": "AAAA"}),
        _rt("output_text", "b"),
        ("server", {"type": "rate_limits.updated", "rate_limits": []}),
        _rt("output_text", "c"),
    ),
    "deltas after the part and the item are done": _realtime(
        _rt("output_text", "a"),
        ("server", {"type": "response.content_part.done", "item_id": "m", "content_index": 0, "part": {}}),
        _rt("output_text", "late"),
        (
            "server",
            {"type": "response.output_item.done", "item": {"id": "m", "type": "message", "content": []}},
        ),
        _rt("output_text", "later"),
    ),
    "a delta before anything else": _lines(_rt("output_text", "first"), _rt("output_text", "second")),
    "a mistyped field no delta reads": _realtime(
        _rt("output_text", "a"), _rt("output_text", "b", item={"x": 1}, call_id=5)
    ),
    "a mistyped delta": _realtime(_rt("output_text", "a"), _rt("output_text", 5)),
    "a line that is no JSON": _realtime(_rt("output_text", "a"))
    + b"{nope\n"
    + _lines(_rt("output_text", "b")),
}


@pytest.mark.parametrize("name", sorted(REALTIME_CASES))
@pytest.mark.parametrize("size", [1, 7, 4096])
def test_realtime_edge_cases_fold_the_same_both_ways(name: str, size: int) -> None:
    assert_same("openai-realtime", REALTIME_CASES[name], size)


def _live(*parts: Any, transcript: str | None = None, **more: Any) -> tuple[str, Any]:
    content: dict[str, Any] = {"modelTurn": {"parts": list(parts)}} if parts else {}
    if transcript is not None:
        content["outputTranscription"] = {"text": transcript}
    return ("server", {"serverContent": content, **more})


AUDIO = {"inlineData": {"mimeType": "audio/pcm;rate=24000", "data": "AAAA"}}
PADDED = {"inlineData": {"mimeType": "audio/pcm;rate=24000", "data": "AQI="}}


def _opened(*middle: tuple[str, Any]) -> bytes:
    """A session's start and ``middle``, with no turn end (more lines may follow as bytes)."""
    return _lines(
        ("client", {"setup": {"model": "models/gemini-live"}}), ("server", {"setupComplete": {}}), *middle
    )


def _session(*middle: tuple[str, Any]) -> bytes:
    return _lines(
        ("client", {"setup": {"model": "models/gemini-live"}}),
        ("server", {"setupComplete": {}}),
        *middle,
        ("server", {"serverContent": {"turnComplete": True}}),
    )


LIVE_CASES = {
    "text, thought, audio and transcript": _session(
        _live({"text": "plan", "thought": True}),
        *[_live({"text": f"p{i} ", "thought": True}) for i in range(40)],
        *[_live({"text": f"w{i} "}) for i in range(70)],
        *[_live(AUDIO if i % 4 else PADDED) for i in range(30)],
        *[_live(transcript=f"s{i} ") for i in range(70)],
    ),
    "a transcript before the audio and audio of another kind": _session(
        _live(transcript="early"),
        _live({"inlineData": {"mimeType": "image/png", "data": "AAAA"}}),
        _live(AUDIO),
        _live({"inlineData": {"mimeType": "audio/pcm", "data": ""}}),
        _live({"inlineData": {"mimeType": "audio/pcm"}}),
        _live(AUDIO, transcript="both"),
        _live(transcript=""),
    ),
    "text and thought alternating, signatures, empty text": _session(
        _live({"text": "a"}),
        _live({"text": "b", "thought": True}),
        _live({"text": "c", "thought": True}),
        _live({"text": "d", "thought": True, "thoughtSignature": "c2ln"}),
        _live({"text": "e", "thought": True}),
        _live({"text": "f"}),
        _live({"text": ""}),
        _live({"text": "g", "thought": False}),
        _live({"text": "h"}, {"text": "i"}),
        _live({"text": "j"}),
    ),
    "text lines written otherwise": _session(_live({"text": "a"}))
    + b'{"dir": "server", "msg": {"serverContent": {"modelTurn": {"parts": [{"text": "b"}]}}}}\n'
    + b'{"dir":"server","msg":{"serverContent":{"modelTurn":{"parts":[{"text": "c" }]}}}}\n'
    + b'{"dir":"server","msg":{"serverContent":{"modelTurn":{"parts":[{"text":"d","thought":true}]}}}}\n'
    + b'{"dir":"server","msg":{"serverContent":{"modelTurn":{"parts":[{"text":"e"},{"text":"f"}]}}}}\n'
    + b'{"dir":"server","msg":{"serverContent":{"modelTurn":{"parts":[{"text":"g"}]}}}}\r\n'
    + b'{"dir":"server","msg":{"serverContent":{"modelTurn":{"parts":[{"text":"\\u00e9\\n"}]}}}}\n'
    + _lines(_live({"text": "h"})),
    "turn ends, usage, a tool call and a client answer between deltas": _session(
        _live({"text": "a"}),
        _live({"text": "b"}, usageMetadata={"totalTokenCount": 3}),
        _live({"text": "c"}),
        ("server", {"toolCall": {"functionCalls": [{"id": "c1", "name": "f", "args": {}}]}}),
        _live({"text": "d"}),
        ("client", {"toolResponse": {"functionResponses": [{"id": "c1", "name": "f", "response": {}}]}}),
        _live({"text": "e"}),
        _live({"text": "f"}, turnComplete=True),
        _live({"text": "g"}),
        ("server", {"serverContent": {"interrupted": True}}),
        _live({"text": "h"}),
        ("server", {"serverContent": {"generationComplete": True}}),
        _live({"text": "i"}),
        ("server", {"serverContent": {"inputTranscription": {"text": "hi"}}}),
        _live({"text": "j"}),
        ("server", {"serverContent": {"modelTurn": {"parts": [{"text": "k"}]}, "unknownKey": 1}}),
    ),
    "text before any turn or setup": _lines(_live({"text": "first"}), _live({"text": "second"})),
    "a mistyped field beside the text": _session(_live({"text": "a"}), _live({"text": "b"}, usageMetadata=5)),
    "a mistyped text": _session(_live({"text": "a"}), _live({"text": 5})),
    "a text line cut short": _session(_live({"text": "a"}))
    + b'{"dir":"server","msg":{"serverContent":{"modelTurn":{"parts":[{"text":"b}]}}}}\n',
    # Runs of common lines (decoded in one call, ``google_live._decode``): a bad or odd line
    # inside a run gives the event path's error and partial result, or its fold.
    "a bad string inside a text run": _opened(*[_live({"text": f"w{i} "}) for i in range(5)])
    + b'{"dir":"server","msg":{"serverContent":{"modelTurn":{"parts":[{"text":"\\x"}]}}}}\n'
    + _lines(*[_live({"text": f"v{i} "}) for i in range(5)]),
    "two strings in one text line of a run": _opened(*[_live({"text": f"w{i} "}) for i in range(3)])
    + b'{"dir":"server","msg":{"serverContent":{"modelTurn":{"parts":[{"text":"a","b"}]}}}}\n'
    + _lines(_live({"text": "c"})),
    "an empty text inside a text run": _opened(
        *[_live({"text": f"w{i} "}) for i in range(3)], _live({"text": ""}), _live({"text": "x"})
    ),
    "a mistyped audio chunk inside an audio run": _opened(
        _live({"text": "a"}),
        *[_live(AUDIO, transcript=None) for _ in range(3)],
        _live({"inlineData": {"mimeType": "audio/pcm", "data": 5}}),
        _live(AUDIO),
    ),
    "odd audio values inside audio runs": _opened(
        _live(AUDIO),
        _live(transcript="a"),
        _live({"inlineData": {"mimeType": None, "data": "AAAA"}}),
        _live(AUDIO),
        _live({"inlineData": {"mimeType": "image/png", "data": "AAAA"}}),
        _live(transcript="b"),
        _live(AUDIO),
        _live(transcript=""),
        _live(AUDIO),
        _live({"inlineData": {"mimeType": "audio/pcm", "data": "AAAA", "displayName": "x"}}),
        _live(transcript="c"),
    )
    + b'{"dir":"server","msg":{"serverContent":{"modelTurn":{"parts":[{"inlineData":'
    + b'{"mimeType":"audio/pcm","data":"AAAA","data":"BBBB"}}]}}}}\n'
    + b'{"dir":"server","msg":{"serverContent":{"modelTurn":{"parts":[{"inlineData":'
    + b'{"mimeType":"audio/pcm","data":"AAAA"},{"text":"x"}}]}}}}\n'
    + _lines(_live(AUDIO), _live(transcript="d")),
    "runs that open their part": _opened(
        *[_live(transcript=f"s{i} ") for i in range(4)],
        *[_live(AUDIO) for _ in range(3)],
        *[_live({"text": f"w{i} "}) for i in range(4)],
        _live({"text": "t", "thought": True}),
        *[_live({"text": f"v{i} "}) for i in range(4)],
        *[_live(AUDIO) for _ in range(3)],
    ),
    "a run cut by a bad line": _opened(*[_live({"text": f"w{i} "}) for i in range(4)])
    + b'{"dir":"server","msg":{"serverContent":{"modelTurn":{"parts":[{"text":"b}]}}}}\n'
    + _lines(*[_live(AUDIO) for _ in range(3)]),
}


@pytest.mark.parametrize("name", sorted(LIVE_CASES))
@pytest.mark.parametrize("size", [1, 7, 4096])
def test_live_edge_cases_fold_the_same_both_ways(name: str, size: int) -> None:
    assert_same("google-live", LIVE_CASES[name], size)


@pytest.mark.parametrize("protocol", SESSION)
def test_a_live_connection_aggregates_what_the_folded_recording_does(protocol: str) -> None:
    """``feed_message`` (one websocket message at a time) takes the event path; the result is the same."""
    data = SYNTH[protocol]()
    agg = ms.StreamAggregator(protocol)
    for text in data.splitlines():
        frame = json.loads(text)
        agg.feed_message(json.dumps(frame["msg"]), direction=frame["dir"])
    assert agg.finish() == ms.aggregate(data, protocol=protocol)


class Lookups(ms.StreamAggregator):
    """Counts the decoder's lookups of a part (``FoldTarget.part_buffers``)."""

    lookups = 0

    def part_buffers(self, message: Any, part: Any) -> Any:
        self.lookups += 1
        return super().part_buffers(message, part)


@pytest.mark.parametrize("protocol", SSE)
def test_a_run_split_over_many_chunks_looks_its_part_up_once_per_run(protocol: str) -> None:
    """The part the last delta went to is kept between chunks (``DirectFold``): one frame a chunk,
    as a slow network delivers them, the run's deltas go in without a lookup each."""
    data = SYNTH[protocol]()
    frames = [frame + b"\n\n" for frame in data.replace(b"\r\n", b"\n").split(b"\n\n") if frame]
    agg = Lookups(protocol)
    for frame in frames:
        agg.feed(frame)
    assert agg.finish() == ms.aggregate(data, protocol=protocol)
    assert 0 < agg.lookups < len(frames) // 20


def test_an_error_and_fail_forget_the_kept_part() -> None:
    """A bad frame, and ``fail()`` (the target changing on its own), forget the part kept between chunks."""
    run = [_choice({"content": f"w{i} "}) for i in range(5)]
    data = _chat(_choice({"role": "assistant", "content": ""}), *run)[: -len(b"data: [DONE]\n\n")]
    agg = ms.StreamAggregator("openai-chat")
    agg.feed(data)
    decoder: Any = agg._decoder
    assert decoder._hot is not None
    with pytest.raises(ms.RemoteProtocolError):
        agg.feed(b"data: {nope\n\n")
    assert decoder._hot is None
    agg = ms.StreamAggregator("openai-chat")
    agg.feed(data)
    agg.fail(ms.StreamError(type="stall", message="upstream stalled"))
    assert agg._decoder._hot is None  # type: ignore[union-attr]
    assert agg.finish().status == "failed"


@pytest.mark.parametrize("size", [1, 7, 1 << 30])
def test_a_later_chunks_envelope_is_not_read_either_way(size: int) -> None:
    """Only the chunk that gives the response its id is read whole; later chunks' ``id``, ``model``,
    ``created``... are skipped, by the events and by the fold alike, as a field neither reads."""
    later = b'data: {"id":5,"model":["x"],"created":"soon","object":1,"choices":[{"index":0,"delta":{"content":"b"}}]}\n\n'
    data = _chat(_choice({"role": "assistant", "content": ""}), _choice({"content": "a"}))[:-14] + later
    assert_same("openai-chat", data, size)
    response = ms.aggregate(data, protocol="openai-chat")
    assert (response.id, response.model, response.messages[0].content[0]) == (
        "c1",
        "m",
        ms.TextPart(text="ab"),
    )
    first = b'data: {"id":5,"choices":[{"index":0,"delta":{"content":"a"}}]}\n\n'
    with pytest.raises(ms.RemoteProtocolError):
        ms.aggregate([first], protocol="openai-chat")
    with pytest.raises(ms.RemoteProtocolError):
        by_events("openai-chat", [first])
