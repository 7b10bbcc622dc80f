"""OpenAI Chat Completions: decoder and aggregate against the openai SDK, encoder accepted by it,
history codec and validation."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import httpx2
import msgspec
import openai
import pytest

import maas_stream as ms
from maas_stream import events as ev
from maas_stream.protocols import openai_chat
from tests.conftest import RECORDINGS, need_corpus, params, parts, recordings

if TYPE_CHECKING:
    from pathlib import Path

PROTOCOL = "openai-chat"
FINISH = {"stop": "stop", "length": "length", "tool_calls": "tool_calls", "function_call": "tool_calls"}
HERE = RECORDINGS / PROTOCOL


def sdk_stream(data: bytes) -> tuple[Any, Exception | None]:
    """Run the openai SDK's own `chat.completions.stream()` over these bytes.

    Returns the SDK's final completion (or its last snapshot when it raised) and the exception.
    """

    def handler(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=data)

    client = openai.OpenAI(
        api_key="test",
        base_url="http://127.0.0.1:9/v1",
        http_client=httpx2.Client(transport=httpx2.MockTransport(handler)),
        max_retries=0,
    )
    with client.chat.completions.stream(model="m", messages=[{"role": "user", "content": "x"}]) as stream:
        try:
            for _ in stream:
                pass
            return stream.get_final_completion(), None
        except openai.LengthFinishReasonError:
            return stream.current_completion_snapshot, None  # it refuses to *parse* a cut answer
        except openai.APIError as exc:
            return stream.current_completion_snapshot, exc
        except RuntimeError as exc:  # the SDK's accumulator itself breaks on some real streams
            return None, exc


def naive_content(data: bytes) -> dict[int, str]:
    """Independent oracle: concatenate `delta.content` per choice with plain json parsing."""
    out: dict[int, str] = {}
    for line in data.decode().splitlines():
        if line.startswith("data: {"):
            for choice in json.loads(line[6:]).get("choices") or ():
                out[choice["index"]] = out.get(choice["index"], "") + (
                    (choice.get("delta") or {}).get("content") or ""
                )
    return out


def texts(message: ms.Message, kind: type[Any]) -> str | None:
    found = [p.text for p in message.content if isinstance(p, kind)]
    return "".join(found) if found else None


def calls(message: ms.Message) -> list[tuple[str, str, str]]:
    return [(p.id, p.name, p.arguments) for p in message.content if isinstance(p, ms.ToolCallPart)]


def assert_matches_sdk(ours: ms.Response, completion: Any) -> None:
    by_choice = {m.choice_index or 0: m for m in ours.messages}
    assert sorted(by_choice) == sorted(c.index for c in completion.choices)
    for choice in completion.choices:
        message = by_choice[choice.index]
        assert texts(message, ms.TextPart) == (choice.message.content or None)
        assert texts(message, ms.RefusalPart) == (choice.message.refusal or None)
        sdk_calls = [(c.id, c.function.name, c.function.arguments) for c in choice.message.tool_calls or ()]
        legacy = getattr(choice.message, "function_call", None)
        if legacy is not None:
            sdk_calls.append(("", legacy.name, legacy.arguments))
        ours_calls = calls(message)
        if legacy is not None:  # legacy calls have no id on the wire; ours is synthesized
            ours_calls = [("", n, a) if i.startswith("call_maas_") else (i, n, a) for i, n, a in ours_calls]
        assert ours_calls == sdk_calls
        if choice.finish_reason is not None:
            assert message.finish_reason == FINISH.get(choice.finish_reason, "other")
    if completion.usage is not None:
        assert ours.usage is not None
        assert ours.usage.input_tokens == completion.usage.prompt_tokens
        assert ours.usage.output_tokens == completion.usage.completion_tokens


# --------------------------------------------------------------------- corpus and recordings vs the SDK


@pytest.mark.parametrize("path", need_corpus(PROTOCOL))
def test_corpus_aggregate_matches_sdk(path: Path) -> None:
    data = path.read_bytes()
    ours = ms.aggregate(data, protocol=PROTOCOL)
    completion, error = sdk_stream(data)
    if completion is None:
        # The SDK crashed (it cannot merge OpenRouter's index-less `annotations` list): we must
        # not. Check against plain JSON parsing instead.
        assert ours.status == "completed"
        assert {m.choice_index: texts(m, ms.TextPart) for m in ours.messages} == naive_content(data)
        return
    assert_matches_sdk(ours, completion)
    if error is not None:
        # The SDK raises on an in-band error; we keep everything and report it.
        assert ours.status == "failed"
        assert ours.error is not None
        assert ours.error.message is not None
        assert ours.error.message in str(error)
    else:
        assert ours.error is None
        assert ours.status in ("completed", "incomplete")


SDK_MERGES_OR_MISREPORTS = {"same_index_new_id.sse", "cut_mid_arguments.sse", "legacy_function_call.sse"}


@pytest.mark.parametrize(
    "path", params([p for p in recordings(PROTOCOL) if p.name not in SDK_MERGES_OR_MISREPORTS])
)
def test_recordings_aggregate_matches_sdk(path: Path) -> None:
    data = path.read_bytes()
    ours = ms.aggregate(data)
    completion, error = sdk_stream(data)
    assert_matches_sdk(ours, completion)
    assert (error is not None) == (ours.status == "failed")


def test_same_index_new_id_is_two_calls_where_the_sdk_merges_them() -> None:
    data = (HERE / "same_index_new_id.sse").read_bytes()
    (message,) = ms.aggregate(data).messages
    assert calls(message) == [("call_A", "lookup", '{"q":"a"}'), ("call_B", "lookup", '{"q":"b"}')]
    completion, _ = sdk_stream(data)
    # The SDK's accumulator keys by index only, so it concatenates the two calls into one.
    (sdk_call,) = completion.choices[0].message.tool_calls
    assert sdk_call.function.arguments == '{"q":"a"}{"q":"b"}'


def test_interleaved_fragments_of_three_calls_assemble() -> None:
    (message,) = ms.aggregate((HERE / "interleaved_three_calls.sse").read_bytes()).messages
    assert calls(message) == [
        ("call_1", "a", '{"x":1}'),
        ("call_2", "b", '{"y":2}'),
        ("call_3", "c", '{"z":3}'),
    ]


def test_cut_mid_arguments_is_incomplete_never_completed() -> None:
    response = ms.aggregate((HERE / "cut_mid_arguments.sse").read_bytes())
    assert response.status == "incomplete"
    (message,) = response.messages
    assert message.status == "incomplete"
    text, call = parts(message)
    assert text == ms.TextPart(text="Let me look.")
    assert isinstance(call, ms.ToolCallPart)
    assert (call.status, call.arguments) == ("incomplete", '{"query":"weath')


def test_legacy_function_call() -> None:
    response = ms.aggregate((HERE / "legacy_function_call.sse").read_bytes())
    (call,) = parts(response.messages[0])
    assert isinstance(call, ms.ToolCallPart)
    assert (call.name, call.arguments, call.status) == ("get_time", '{"tz":"UTC"}', "completed")
    assert response.finish_reason == "tool_calls"
    assert response.provider_finish_reason == "function_call"


def test_audio_fragments_concatenate_and_expires_at_replaces() -> None:
    response = ms.aggregate((HERE / "audio_output.sse").read_bytes())
    (audio,) = parts(response.messages[0])
    assert audio == ms.AudioPart(
        data="UklGRgAAAA", transcript="Hello!", id="audio_abc", expires_at=1767229200
    )
    assert response.status == "completed"  # [DONE] arrived; audio streams may omit finish_reason


def test_two_choices_finish_separately() -> None:
    response = ms.aggregate((HERE / "two_choices_usage.sse").read_bytes())
    first, second = response.messages
    assert (first.choice_index, texts(first, ms.TextPart), first.finish_reason) == (0, "Red.", "stop")
    assert (second.choice_index, texts(second, ms.TextPart), second.finish_reason) == (
        1,
        "Blue apple",
        "length",
    )
    assert second.status == "incomplete"
    assert response.usage == ms.Usage(
        input_tokens=10,
        output_tokens=5,
        total_tokens=15,
        raw={"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    )


def test_reasoning_content_is_a_reasoning_part() -> None:
    response = ms.aggregate((HERE / "reasoning_content_compat.sse").read_bytes())
    reasoning, text = parts(response.messages[0])
    assert reasoning == ms.ReasoningPart(text="Two plus two is four.", origin_field="reasoning_content")
    assert text == ms.TextPart(text="4")
    assert response.usage is not None
    assert response.usage.reasoning_tokens == 6


def test_reasoning_details_keep_signature_and_encrypted_blocks_apart() -> None:
    response = ms.aggregate((HERE / "reasoning_details_signature.sse").read_bytes())
    thinking, encrypted, text = parts(response.messages[0])
    # `reasoning` and `reasoning_details` carry the same text; it is counted once.
    assert thinking == ms.ReasoningPart(
        text="Think hard.",
        signature="c2lnbmF0dXJlLW9wYXF1ZQ==",
        format="anthropic-claude-v1",
        origin_field="reasoning_details",
    )
    assert isinstance(encrypted, ms.ReasoningPart)
    assert (encrypted.data, encrypted.redacted, encrypted.text) == ("ZW5jcnlwdGVk", True, None)
    assert text == ms.TextPart(text="Done.")


@pytest.mark.parametrize(
    ("name", "kind"), [("error_in_chunk.sse", "server_error"), ("event_error_frame.sse", "rate_limit_error")]
)
def test_in_band_errors_keep_content(name: str, kind: str) -> None:
    response = ms.aggregate((HERE / name).read_bytes())
    assert response.status == "failed"
    assert response.finish_reason == "error"
    assert response.error is not None
    assert response.error.type == kind
    assert texts(response.messages[0], ms.TextPart) in ("Partial answer", "Hi")


def test_annotations_become_citations_on_the_text() -> None:
    response = ms.aggregate((HERE / "annotations_url_citation.sse").read_bytes())
    (text,) = parts(response.messages[0])
    assert isinstance(text, ms.TextPart)
    assert text.text == "See the source."
    assert text.annotations is not None
    (citation,) = text.annotations
    assert (citation.kind, citation.url, citation.title, citation.start, citation.end) == (
        "url_citation",
        "https://example.org/a",
        "Example A",
        0,
        9,
    )


def test_logprobs_are_kept_on_the_part() -> None:
    response = ms.aggregate((HERE / "refusal_with_logprobs.sse").read_bytes())
    (refusal,) = parts(response.messages[0])
    assert isinstance(refusal, ms.RefusalPart)
    assert refusal.logprobs is not None
    assert [lp["token"] for lp in refusal.logprobs] == ["I can't", " help with that."]


def test_argumentless_call_keeps_what_the_provider_sent() -> None:
    response = ms.aggregate((HERE / "tool_call_no_arguments.sse").read_bytes())
    (call,) = parts(response.messages[0])
    assert isinstance(call, ms.ToolCallPart)
    assert (call.id, call.arguments, call.status) == ("call_now", "", "completed")


def test_framing_edge_cases_decode() -> None:
    response = ms.aggregate((HERE / "framing_crlf_comments_bom.sse").read_bytes())
    assert texts(response.messages[0], ms.TextPart) == "Hé là"
    assert response.status == "completed"


def test_unknown_chunk_extensions_are_kept_and_counted() -> None:
    chunk = {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m", "choices": []}
    data = (
        b"data: " + json.dumps({**chunk, "prompt_filter_results": [{"prompt_index": 0}]}).encode() + b"\n\n"
        b"data: "
        + json.dumps({**chunk, "choices": [{"index": 0, "delta": {"content": "x"}}]}).encode()
        + b"\n\n"
        b"data: [DONE]\n\n"
    )
    response = ms.aggregate(data)
    assert response.unknown == {"prompt_filter_results": 1}
    assert response.unknown_events is not None
    assert response.unknown_events[0].raw["prompt_filter_results"] == [{"prompt_index": 0}]


def test_data_after_done_is_a_protocol_error_naming_the_frame() -> None:
    with pytest.raises(ms.RemoteProtocolError) as info:
        ms.aggregate(b"data: [DONE]\n\ndata: {}\n\n", protocol=PROTOCOL)
    assert info.value.frame == 2


def test_invalid_json_names_the_frame_and_keeps_the_partial_result() -> None:
    good = (HERE / "readme_text_then_parallel_tools.sse").read_bytes().split(b"\n\n")
    data = b"\n\n".join(good[:3]) + b"\n\ndata: {not json\n\n"
    with pytest.raises(ms.RemoteProtocolError) as info:
        ms.aggregate(data, protocol=PROTOCOL)
    assert info.value.frame == 4
    assert "frame 4" in str(info.value)
    assert info.value.partial is not None
    assert texts(info.value.partial.messages[0], ms.TextPart) == "Checking both cities now."


def test_wrong_shape_is_a_protocol_error() -> None:
    with pytest.raises(ms.RemoteProtocolError, match="invalid openai-chat frame"):
        ms.aggregate(b'data: {"choices": 3}\n\n', protocol=PROTOCOL)


# --------------------------------------------------------------------- encoder accepted by the SDK


@pytest.mark.parametrize("path", [*params(recordings(PROTOCOL)), *need_corpus(PROTOCOL)])
def test_encoder_output_is_accepted_by_the_sdk(path: Path) -> None:
    data = path.read_bytes()
    original = ms.aggregate(data)
    converted = ms.convert(data, to=PROTOCOL)
    again = ms.aggregate(converted)
    # Same protocol: lossless, byte-for-byte canonical equality.
    assert msgspec.to_builtins(again) == msgspec.to_builtins(original)
    if original.status == "incomplete" and original.finish_reason is None:
        assert b"[DONE]" not in converted  # a cut source stays cut
        return
    completion, error = sdk_stream(converted)
    if completion is None:
        assert original.unknown == {}
        assert path.name == "compat_openrouter_annotations.sse"
        return
    assert (error is not None) == (original.status == "failed")
    if path.name not in SDK_MERGES_OR_MISREPORTS:
        assert_matches_sdk(original, completion)


def test_first_output_frame_is_written_before_the_second_input_frame() -> None:
    frames = (HERE / "readme_text_then_parallel_tools.sse").read_bytes().split(b"\n\n")
    conv = ms.StreamConverter(PROTOCOL)
    assert b'"role":"assistant"' in conv.feed(frames[0] + b"\n\n")
    assert b"Checking both " in conv.feed(frames[1] + b"\n\n")


def foreign_events() -> list[ev.Event]:
    return [
        ev.ResponseStart(protocol="anthropic", id="msg_1", model="claude"),
        ev.MessageStart(message=0, role="assistant"),
        ev.PartStart(message=0, part=0, value=ms.ReasoningPart(text="")),
        ev.ReasoningDelta(message=0, part=0, text="secret thoughts"),
        ev.SignatureDelta(message=0, part=0, signature="sig"),
        ev.PartDone(message=0, part=0),
        ev.PartStart(
            message=0,
            part=1,
            value=ms.ToolCallPart(id="srv_1", name="web_search", arguments="", kind="server"),
        ),
        ev.ArgumentsDelta(message=0, part=1, delta='{"q":"x"}'),
        ev.PartDone(message=0, part=1),
        ev.PartStart(message=0, part=2, value=ms.TextPart(text="")),
        ev.TextDelta(message=0, part=2, text="Answer."),
        ev.PartDone(message=0, part=2),
        ev.PartStart(message=0, part=3, value=ms.ToolCallPart(id="toolu_1", name="f", arguments="")),
        ev.PartDone(message=0, part=3, value=ms.ToolCallPart(id="toolu_1", name="f", arguments="{}")),
        ev.MessageDone(message=0, finish_reason="tool_calls"),
        ev.UsageUpdate(usage=ms.Usage(input_tokens=3, output_tokens=4)),
        ev.ResponseDone(finish_reason="tool_calls"),
    ]


def emitted(events: list[ev.Event], protocol: str = "anthropic") -> list[ev.Event]:
    """The events as the aggregator hands them to an encoder (content only as deltas)."""
    agg = ms.Aggregator(protocol, emit=True)
    return [out for e in events for out in agg.feed(e)]


def encode_all(encoder: openai_chat.StreamEncoder, events: list[ev.Event]) -> bytes:
    return b"".join(encoder.encode(e) for e in events) + encoder.finish()


def test_foreign_thinking_and_server_calls_are_dropped_and_reported_never_text() -> None:
    encoder = openai_chat.StreamEncoder()
    data = encode_all(encoder, emitted(foreign_events()))
    assert b"secret thoughts" not in data
    assert b"web_search" not in data
    assert b"sig" not in data.replace(b"signature", b"")
    kinds = {r.kind: str(r) for r in encoder.lossy}
    assert kinds == {
        "reasoning": "reasoning (Chat Completions carries no reasoning)",
        "signature": "reasoning signature (Chat Completions cannot carry it)",
        "server_call": "server tool call 'web_search' (Chat has no server-side tools) [srv_1]",
    }
    assert all("srv_1" not in r.what for r in encoder.lossy)  # ids go to `where`, never `what`
    assert {r.source for r in encoder.lossy} == {"anthropic"}
    completion, error = sdk_stream(data)
    assert error is None
    choice = completion.choices[0]
    assert choice.message.content == "Answer."
    # A final value with no deltas ("{}" from Anthropic's start) reaches the client: the
    # aggregator sends it as an arguments delta; the encoder has no "rest of the value" logic.
    assert [(c.id, c.function.arguments) for c in choice.message.tool_calls] == [("toolu_1", "{}")]
    assert choice.finish_reason == "tool_calls"
    assert completion.usage is not None
    assert completion.usage.total_tokens == 7


def test_encoder_sends_only_deltas_never_the_rest_of_a_final_value() -> None:
    # Fed directly (no aggregator), a final value that no delta carried is not re-sent: the
    # remainder is the aggregator's job, once, for every encoder.
    data = encode_all(openai_chat.StreamEncoder(), foreign_events())
    completion, _ = sdk_stream(data)
    assert [(c.id, c.function.arguments) for c in completion.choices[0].message.tool_calls] == [
        ("toolu_1", "")
    ]


def test_dropped_reasoning_is_reported_even_when_its_end_carries_no_value() -> None:
    encoder = openai_chat.StreamEncoder()
    encode_all(encoder, foreign_events())  # PartDone(value=None) for the thinking block
    assert "reasoning" in {r.kind for r in encoder.lossy}


def test_reasoning_can_be_sent_in_a_compatible_field_on_request() -> None:
    encoder = openai_chat.StreamEncoder(reasoning="reasoning_content")
    data = encode_all(encoder, emitted(foreign_events()))
    response = ms.aggregate(data)
    assert response.messages[0].content[0] == ms.ReasoningPart(
        text="secret thoughts", origin_field="reasoning_content"
    )
    # The text has a place; Anthropic's signature has none (it replays only to Anthropic).
    assert b"sig" not in data.replace(b"signature", b"")
    assert [r.kind for r in encoder.lossy] == ["signature", "server_call"]


def test_foreign_signature_is_not_replayed_even_in_reasoning_details() -> None:
    encoder = openai_chat.StreamEncoder(reasoning="reasoning_details")
    data = encode_all(encoder, emitted(foreign_events()))
    part = ms.aggregate(data).messages[0].content[0]
    assert isinstance(part, ms.ReasoningPart)
    assert part.text == "secret thoughts"
    assert part.signature is None
    assert "signature" in [r.kind for r in encoder.lossy]


# --------------------------------------------------------------------- history codec and validation

BODY: dict[str, Any] = {
    "model": "gpt-5.1",
    "messages": [
        {"role": "developer", "content": "Be brief."},
        {"role": "system", "content": [{"type": "text", "text": "System text."}]},
        {
            "role": "user",
            "name": "ada",
            "content": [
                {"type": "text", "text": "Look:"},
                {"type": "image_url", "image_url": {"url": "https://example.org/cat.png", "detail": "low"}},
                {"type": "input_audio", "input_audio": {"data": "AAAA", "format": "wav"}},
                {"type": "file", "file": {"file_id": "file-1", "filename": "a.pdf"}},
            ],
        },
        {
            "role": "assistant",
            "content": "Checking.",
            "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "a", "arguments": "{}"}},
                {"id": "call_2", "type": "custom", "custom": {"name": "b", "input": "raw text"}},
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "one"},
        {"role": "tool", "tool_call_id": "call_2", "content": [{"type": "text", "text": "two"}]},
        {"role": "assistant", "content": None, "refusal": "No."},
        {"role": "assistant", "content": None, "function_call": {"name": "legacy", "arguments": "{}"}},
        {"role": "function", "name": "legacy", "content": "done"},
    ],
}


def test_history_round_trip_keeps_every_role_and_part() -> None:
    messages = ms.to_canonical(BODY, PROTOCOL)
    assert [m.role for m in messages] == [
        "developer",
        "system",
        "user",
        "assistant",
        "tool",
        "tool",
        "assistant",
        "assistant",
        "function",
    ]
    user = messages[2]
    assert isinstance(user.content, list)
    assert [p.__struct_config__.tag for p in user.content] == ["text", "image", "audio", "file"]
    tool = messages[4]
    assert tool.tool_call_id == "call_1"
    assert tool.content == [ms.ToolResultPart(tool_call_id="call_1", content="one")]
    back = ms.from_canonical(messages, PROTOCOL)
    assert back["messages"][2:] == BODY["messages"][2:]
    assert back["messages"][0] == BODY["messages"][0]
    assert back["messages"][1] == {"role": "system", "content": "System text."}
    assert ms.validate(back, PROTOCOL) == []


def test_history_splits_a_multi_result_message_results_first() -> None:
    # An Anthropic-style user message: two tool results, then text.
    messages = [
        ms.Message(
            role="assistant",
            content=[
                ms.ToolCallPart(id="t1", name="a", arguments="{}"),
                ms.ToolCallPart(id="t2", name="b", arguments="{}"),
            ],
        ),
        ms.Message(
            role="user",
            content=[
                ms.ToolResultPart(tool_call_id="t1", content="r1"),
                ms.ToolResultPart(tool_call_id="t2", content=[ms.TextPart(text="r2")], is_error=True),
                ms.TextPart(text="and then?"),
            ],
        ),
    ]
    lossy: list[ms.Dropped] = []
    body = ms.from_canonical(messages, PROTOCOL, lossy=lossy)
    assert [m["role"] for m in body["messages"]] == ["assistant", "tool", "tool", "user"]
    assert [m.get("tool_call_id") for m in body["messages"][1:3]] == ["t1", "t2"]
    assert body["messages"][3]["content"] == "and then?"
    assert any("is_error" in line for line in map(str, lossy))
    assert ms.validate(body, PROTOCOL) == []


def test_history_drops_reasoning_and_server_calls_with_a_report() -> None:
    messages = [
        ms.Message(
            role="assistant",
            content=[
                ms.ReasoningPart(text="hidden", signature="s"),
                ms.ToolCallPart(id="srv", name="web_search", arguments="{}", kind="server"),
                ms.TextPart(text="Hi"),
            ],
        )
    ]
    lossy: list[ms.Dropped] = []
    body = ms.from_canonical(messages, PROTOCOL, lossy=lossy)
    assert body == {"messages": [{"role": "assistant", "content": "Hi"}]}
    assert [(r.kind, r.where) for r in lossy] == [
        ("reasoning", ("messages[0]",)),
        ("signature", ("messages[0]",)),
        ("server_call", ("messages[0]",)),
    ]
    assert all("srv" not in r.what for r in lossy)


@pytest.mark.parametrize(
    ("messages", "fault"),
    [
        pytest.param(
            [
                {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function"}]},
                {"role": "user", "content": "hi"},
            ],
            "messages[0]: tool call 'c1' has no tool message answering it",
            id="unanswered",
        ),
        pytest.param(
            [{"role": "tool", "tool_call_id": "cX", "content": "x"}],
            "messages[0]: tool_call_id 'cX' answers no tool call of the preceding assistant message",
            id="orphan-result",
        ),
        pytest.param(
            [
                {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function"}]},
                {"role": "tool", "tool_call_id": "c1", "content": "x"},
                {"role": "tool", "tool_call_id": "c1", "content": "y"},
            ],
            "messages[2]: tool_call_id 'c1' is answered twice",
            id="answered-twice",
        ),
        pytest.param(
            [{"role": "tool", "content": "x"}], "messages[0]: tool message without a tool_call_id", id="no-id"
        ),
        pytest.param(
            [{"role": "system", "content": [{"type": "image_url", "image_url": {"url": "u"}}]}],
            "messages[0].content[0]: part type 'image_url' is not allowed in a system message",
            id="bad-part",
        ),
        pytest.param(
            [{"role": "robot", "content": "x"}], "messages[0]: not a message with a known role", id="role"
        ),
        pytest.param(
            [{"role": "assistant", "content": None}],
            "messages[0]: assistant message with neither content nor tool calls",
            id="empty-assistant",
        ),
    ],
)
def test_validate_names_message_and_id(messages: list[dict[str, Any]], fault: str) -> None:
    assert fault in ms.validate({"messages": messages}, PROTOCOL)


def test_to_canonical_rejects_what_is_not_a_chat_body() -> None:
    with pytest.raises(ms.ValidationError):
        ms.to_canonical({"input": "hi"}, PROTOCOL)
    with pytest.raises(ms.ValidationError):
        ms.to_canonical([{"role": "robot"}], PROTOCOL)


def test_encoder_from_a_session_keeps_user_content_out_and_streams_each_response() -> None:
    """A Live session: the user's transcript is not the model's audio; each turn is its own stream."""
    data = (RECORDINGS / "google-live" / "transcripts_code_grounding_two_turns.jsonl").read_bytes()
    conv = ms.StreamConverter("openai-chat", protocol="google-live")
    out = conv.feed(data) + conv.finish()
    assert b"two to the tenth" not in out  # a session event (input transcript), in no response
    assert len(conv.streams) == 2
    assert b"It is 1024." in conv.streams[0]
    assert b"You're welcome." in conv.streams[1]
    assert out == conv.streams[0]  # one Chat stream holds one response: the second is listed
    assert [r.what for r in conv.lossy if r.kind == "message"] == [
        "a further response of the session (one stream holds one response; each is in"
        " StreamConverter.streams and ms.convert_session)"
    ]


def test_history_reads_and_writes_calls_with_the_body_mapping() -> None:
    messages = ms.to_canonical(BODY, PROTOCOL)
    legacy = messages[7].content
    assert legacy == [ms.ToolCallPart(id="", name="legacy", arguments="{}", item_id="function_call")]
    # The aggregate of a legacy stream (synthesized id, same marker) goes back to the same channel.
    streamed = ms.aggregate((HERE / "legacy_function_call.sse").read_bytes()).messages
    body = openai_chat.from_canonical(streamed)
    assert body["messages"][0]["function_call"] == {"name": "get_time", "arguments": '{"tz":"UTC"}'}
    assert "tool_calls" not in body["messages"][0]


def test_history_drops_are_records_with_kinds_and_places() -> None:
    messages = [
        ms.Message(
            role="user",
            content=[
                ms.ToolResultPart(tool_call_id="t1", content=[ms.ImagePart(file_id="f")], is_error=True),
                ms.ImagePart(file_id="file-1"),
                ms.CodePart(code="print(1)"),
            ],
        )
    ]
    drops = ms.DropLog(PROTOCOL, "anthropic")
    openai_chat.from_canonical(messages, drops=drops)
    # The tool result's image would move to a user message, but by file id Chat has no place
    # for it anywhere: the same media drop as the user's own image (counted twice).
    assert [(r.kind, r.where, r.count) for r in drops.records] == [
        ("media", ("messages[0]",), 2),
        ("tool_result", ("messages[0]",), 1),
        ("code", ("messages[0]",), 1),
    ]
    assert all("t1" not in r.what and "file-1" not in r.what for r in drops.records)
    assert {r.source for r in drops.records} == {"anthropic"}


def test_encoders_share_no_state_and_a_fresh_one_holds_no_rare_maps() -> None:
    # The rare per-stream maps start as one shared read-only mapping (nothing per idle stream):
    # streams encoded one after another by two encoders give the same bytes, whatever the first
    # wrote (tool calls, annotations, several choices, reasoning details, legacy calls).
    streams = []
    for path in recordings(PROTOCOL):
        agg = ms.StreamAggregator(PROTOCOL, emit=True)
        streams.append(agg.feed(path.read_bytes()) + agg.finish_events())
    first = [encode_all(openai_chat.StreamEncoder(reasoning="reasoning_details"), s) for s in streams]
    second = [encode_all(openai_chat.StreamEncoder(reasoning="reasoning_details"), s) for s in streams]
    assert first == second
    assert any(b'"tool_calls"' in data for data in first)
    assert any(b'"annotations"' in data for data in first)
    assert any(b'"index":1' in data for data in first)
    fresh = openai_chat.StreamEncoder()
    rare = (fresh._tools, fresh._held, fresh._finish, fresh._explicit, fresh._choices, fresh._skipped)
    assert all(state is rare[0] and not state for state in rare)


def test_a_plain_assistant_turn_reads_as_its_text_and_any_other_field_as_parts() -> None:
    from maas_stream.protocols.openai_chat._history import to_canonical

    (plain,) = to_canonical([{"role": "assistant", "content": "hi", "name": "bob"}])
    assert plain == ms.Message(role="assistant", content="hi", name="bob", provider="openai-chat")
    (full,) = to_canonical([{"role": "assistant", "content": "hi", "refusal": "no"}])
    assert full.content == [ms.TextPart(text="hi"), ms.RefusalPart(text="no")]
    (reasoned,) = to_canonical([{"role": "assistant", "content": "hi", "reasoning_content": "r"}])
    assert isinstance(reasoned.content, list)
    assert reasoned.content[-1] == ms.TextPart(text="hi")
