"""What the fuzzer found, one regression test each: the smallest input and the error it now
deserves (before the fix each ended in the exception named in the test's docstring)."""

from __future__ import annotations

from typing import Any

import pytest

import maas_stream as ms
from tests.fuzz.harness import Deep

DEEP_OBJ = Deep(1000, True).value()
DEEP_LIST = Deep(1000, False).value()
CALL = {"id": "call_A", "type": "function", "function": {"name": "f", "arguments": "{}"}}


def _chat(*messages: dict[str, Any]) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": "hi"}, *messages]}


# ------------------------------------------------------------------------------ openai-chat


def test_chat_tool_call_id_nested_1000_deep() -> None:
    """RecursionError at openai_chat/_history.py _message (``str()`` of the id)."""
    body = _chat(
        {"role": "assistant", "tool_calls": [CALL]},
        {"role": "tool", "tool_call_id": DEEP_OBJ, "content": "x"},
    )
    (*_, tool) = ms.to_canonical(body, "openai-chat")
    assert tool.tool_call_id == ""
    assert any("tool message without a tool_call_id" in f for f in ms.validate(body, "openai-chat"))


@pytest.mark.parametrize("calls", [1, "x", {"a": 1}])
def test_chat_tool_calls_not_a_list(calls: object) -> None:
    """TypeError at openai_chat/_history.py _message and validate (iterating an int)."""
    body = _chat({"role": "assistant", "content": "ok", "tool_calls": calls})
    assert ms.to_canonical(body, "openai-chat")[-1].content == "ok"
    assert ms.validate(body, "openai-chat") == ["messages[1]: tool_calls must be a list"]


@pytest.mark.parametrize("kind", [["text"], {"a": 1}, DEEP_LIST])
def test_chat_part_type_not_a_string(kind: object) -> None:
    """TypeError (unhashable list) / RecursionError (repr) at openai_chat/_history.py _check_content."""
    body = _chat({"role": "user", "content": [{"type": kind, "text": "x"}]})
    (fault,) = ms.validate(body, "openai-chat")
    assert "is not allowed in a user message" in fault
    assert len(fault) < 200


def test_chat_text_part_without_text_converted_to_chat() -> None:
    """KeyError 'text' at openai_chat/_history.py _collapse (an unknown {"type": "text"} part)."""
    messages = [ms.Message(role="user", content=[ms.UnknownPart(provider_type="text", raw={"type": "text"})])]
    assert ms.from_canonical(messages, "openai-chat") == {
        "messages": [{"role": "user", "content": [{"type": "text"}]}]
    }


def test_chat_part_type_nested_1000_deep() -> None:
    """RecursionError at openai_chat/_history.py _part (``str()`` of the type) → ValidationError."""
    body = _chat({"role": "user", "content": [{"type": DEEP_OBJ}]})
    with pytest.raises(ms.ValidationError, match="nested too deep"):
        ms.to_canonical(body, "openai-chat")


def test_chat_body_with_a_lone_surrogate() -> None:
    """UnicodeEncodeError at openai_chat/_body.py decode_response: msgspec writes its error
    message about a mistyped value that is a str with a lone surrogate."""
    message = {"role": "assistant", "content": None, "tool_calls": ["\ud800"]}
    body = {
        "id": "c",
        "object": "chat.completion",
        "choices": [{"index": 0, "finish_reason": "stop", "message": message}],
    }
    with pytest.raises(ms.RemoteProtocolError):
        ms.decode_response(body, "openai-chat")


def test_chat_annotation_type_nested_1000_deep() -> None:
    """RecursionError at openai_chat/_map.py citation_from_annotation (``str()`` of the type)."""
    message = {"role": "assistant", "content": "x", "annotations": [{"type": DEEP_OBJ}]}
    body = {
        "id": "c",
        "object": "chat.completion",
        "choices": [{"index": 0, "finish_reason": "stop", "message": message}],
    }
    (message_out,) = ms.decode_response(body, "openai-chat").messages
    assert isinstance(message_out.content, list)
    (text,) = message_out.content
    assert isinstance(text, ms.TextPart)
    assert [c.kind for c in text.annotations or ()] == ["unknown"]


# -------------------------------------------------------------------------- openai-realtime


def test_realtime_item_type_nested_1000_deep() -> None:
    """RecursionError at openai_realtime/_history.py to_canonical (``str()`` of the type)."""
    body = {"items": [{"type": DEEP_OBJ}]}
    (message,) = ms.to_canonical(body, "openai-realtime")
    assert message.type == "object"
    assert ms.validate(body, "openai-realtime") == []


def test_realtime_output_nested_1000_deep() -> None:
    """RecursionError at openai_realtime/_items.py result_from_item (JSON of the output)."""
    body = {"items": [{"type": "function_call_output", "call_id": "c", "output": DEEP_OBJ}]}
    with pytest.raises(ms.ValidationError, match="nested too deep"):
        ms.to_canonical(body, "openai-realtime")
    assert ms.validate(body, "openai-realtime") == ["a value is nested too deep to read"]


def test_realtime_unknown_item_type_that_is_an_object() -> None:
    (message,) = ms.to_canonical({"items": [{"type": {"a": 1}}]}, "openai-realtime")
    assert message.type == "object"


# ---------------------------------------------------------------------- google-interactions


@pytest.mark.parametrize(
    "step",
    [
        {"type": "function_call", "id": "c", "name": "f", "arguments": DEEP_OBJ},
        {"type": "function_result", "call_id": "c", "result": DEEP_LIST},
        {"type": "function_call", "id": "c", "name": "f", "arguments": {"q": "\ud800"}},
        {"type": "user_input", "content": "\ud800"},
    ],
    ids=["deep-arguments", "deep-result", "surrogate-arguments", "surrogate-mistyped"],
)
def test_interactions_step_that_cannot_be_read(step: dict[str, Any]) -> None:
    """RecursionError / UnicodeEncodeError at google_interactions/_steps.py arguments_text,
    message_from_step and _content.py result_content → ValidationError."""
    body = {"input": [{"type": "user_input", "content": [{"type": "text", "text": "hi"}]}, step]}
    with pytest.raises(ms.ValidationError):
        ms.to_canonical(body, "google-interactions")
    assert ms.validate(body, "google-interactions")


def test_interactions_body_with_a_lone_surrogate() -> None:
    """UnicodeEncodeError at google_interactions/_body.py decode_response (msgspec.convert)."""
    with pytest.raises(ms.RemoteProtocolError):
        ms.decode_response(
            {"id": "i", "status": "completed", "steps": [], "usage": "\ud800"}, "google-interactions"
        )


def test_arguments_with_a_lone_surrogate_converted_to_interactions_and_live() -> None:
    """UnicodeEncodeError at google_interactions/_steps.py arguments_object and
    google_live/_parts.py function_call / function_response (msgspec.json.decode of the text)."""
    messages = [
        ms.Message(role="user", content="hi"),
        ms.Message(
            role="assistant", content=[ms.ToolCallPart(id="c", name="f", arguments='{"q": "\ud800"}')]
        ),
        ms.Message(role="tool", content=[ms.ToolResultPart(tool_call_id="c", content='"\ud800"')]),
    ]
    for target in ("google-interactions", "google-live"):
        assert ms.from_canonical(messages, target)


# ------------------------------------------- finds at the entry points (regressions)

SURROGATE = "\ud800"
USER = {"role": "user", "content": "hi"}


def _call_message(arguments: str) -> list[ms.Message]:
    return [ms.Message(role="assistant", content=[ms.ToolCallPart(id="c", name="f", arguments=arguments)])]


def _tool_use(value: object) -> dict[str, Any]:
    block = {"type": "tool_use", "id": "t", "name": "f", "input": value}
    return {"messages": [USER, {"role": "assistant", "content": [block]}]}


FOUND: list[tuple[str, str, Any]] = [
    (
        "anthropic/_history.py to_canonical: TypeError (a list role)",
        "to_canonical",
        lambda: ms.to_canonical({"messages": [{"role": [], "content": "x"}]}, "anthropic"),
    ),
    (
        "anthropic/_history.py validate: TypeError (a list role)",
        "validate",
        lambda: ms.validate({"messages": [{"role": [], "content": "x"}]}, "anthropic"),
    ),
    (
        "anthropic/_blocks.py args_text: RecursionError (tool_use input 1000 deep)",
        "to_canonical",
        lambda: ms.to_canonical(_tool_use(DEEP_OBJ), "anthropic"),
    ),
    (
        "anthropic/_blocks.py args_text: UnicodeEncodeError (lone surrogate in tool_use input)",
        "to_canonical",
        lambda: ms.to_canonical(_tool_use({"q": SURROGATE}), "anthropic"),
    ),
    (
        "anthropic/_writer.py _object_args: UnicodeEncodeError (lone surrogate in arguments)",
        "from_canonical",
        lambda: ms.from_canonical(_call_message(SURROGATE), "anthropic"),
    ),
    (
        "anthropic/_detect.py detect: TypeError (a first frame whose type is a list; no protocol named)",
        "aggregate",
        lambda: ms.aggregate(b'event: content_block_stop\ndata: {"type": [1], "index": 0}\n\n'),
    ),
    (
        "gemini/_wire.py normalize: RecursionError (a part 1000 deep)",
        "to_canonical",
        lambda: ms.to_canonical({"contents": [{"role": "user", "parts": [DEEP_LIST]}]}, "gemini"),
    ),
    (
        "gemini/_wire.py decode_part: UnicodeEncodeError (lone surrogate in text)",
        "to_canonical",
        lambda: ms.to_canonical({"contents": [{"role": "user", "parts": [{"text": SURROGATE}]}]}, "gemini"),
    ),
    (
        "gemini/_body.py decode_response: RecursionError (a part 1000 deep)",
        "decode_response",
        lambda: ms.decode_response(
            {"candidates": [{"content": {"role": "model", "parts": [DEEP_LIST]}}]}, "gemini"
        ),
    ),
    (
        "gemini/_body.py decode_response: UnicodeEncodeError (lone surrogate anywhere)",
        "decode_response",
        lambda: ms.decode_response(
            {"candidates": [{"content": {"role": "model", "parts": []}, "x": SURROGATE}]}, "gemini"
        ),
    ),
    (
        "gemini/_parts.py call_args: UnicodeEncodeError (lone surrogate in arguments)",
        "from_canonical",
        lambda: ms.from_canonical(_call_message(SURROGATE), "gemini"),
    ),
    (
        "gemini/_parts.py as_object: UnicodeEncodeError (lone surrogate in a tool result)",
        "from_canonical",
        lambda: ms.from_canonical(
            [ms.Message(role="tool", content=[ms.ToolResultPart(tool_call_id="c", content=SURROGATE)])],
            "gemini",
        ),
    ),
    (
        "openai_responses/_history.py _item: TypeError (a list type)",
        "to_canonical",
        lambda: ms.to_canonical({"input": [{"type": [], "call_id": "c", "output": "x"}]}, "openai-responses"),
    ),
    (
        "openai_responses/_history.py _check_message: TypeError (a list part type)",
        "validate",
        lambda: ms.validate(
            {"input": [{"role": "assistant", "type": "message", "content": [{"type": ["x"], "text": "t"}]}]},
            "openai-responses",
        ),
    ),
    (
        "openai_responses/_history.py _item: RecursionError (repr of a role 1000 deep)",
        "to_canonical",
        lambda: ms.to_canonical({"input": [{"role": DEEP_OBJ, "content": "x"}]}, "openai-responses"),
    ),
    (
        "openai_responses/_history.py _check_message: RecursionError (repr of a role 1000 deep)",
        "validate",
        lambda: ms.validate({"input": [{"role": DEEP_OBJ, "content": "x"}]}, "openai-responses"),
    ),
    (
        "openai_responses/_items.py item_parts: RecursionError (str of a type 1000 deep)",
        "to_canonical",
        lambda: ms.to_canonical({"input": [{"type": DEEP_OBJ}]}, "openai-responses"),
    ),
    (
        "openai_responses/_items.py _text: RecursionError (arguments 1000 deep)",
        "to_canonical",
        lambda: ms.to_canonical(
            {"input": [{"type": "function_call", "call_id": "c", "name": "f", "arguments": DEEP_OBJ}]},
            "openai-responses",
        ),
    ),
]
_ALLOWED: dict[str, tuple[type[Exception], ...]] = {
    "to_canonical": (ms.ValidationError,),
    "validate": (),
    "from_canonical": (),
    "decode_response": (ms.RemoteProtocolError,),
    "aggregate": (ms.RemoteProtocolError, ms.ProtocolDetectionError),
}


@pytest.mark.parametrize(
    ("entry", "run"),
    [pytest.param(e, r, id=site) for site, e, r in FOUND],
)
def test_entry_point_find(entry: str, run: Any) -> None:
    """Each ends in a result or the error its entry point documents (it crashed at the site)."""
    result: Any = None
    error: Exception | None = None
    try:
        result = run()
    except _ALLOWED[entry] as exc:
        error = exc
    if error is not None:
        assert isinstance(error, ms.MaasStreamError)
        assert str(error)  # a message a person can read
    else:
        assert result is not None
