"""``ms.decode_response``: a non-streaming body reads back as the stream of the same answer.

For every SSE recording and corpus stream and every protocol with a body, the body written by
``encode_response`` and read by ``decode_response`` agrees with the target's stream
(``convert``) aggregated: status, finish reason (the one "client calls end a turn" rule applies
to both), text and client calls. Session sources (several responses on one connection) are
another issue's and are left out.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import pytest

import maas_stream as ms
from tests.conftest import corpus, recordings

if TYPE_CHECKING:
    from pathlib import Path

BODY_PROTOCOLS = ("openai-chat", "openai-responses", "anthropic", "gemini", "google-interactions")
SSE = ("openai-chat", "openai-responses", "anthropic", "gemini", "google-interactions")


CUT_CALL = (
    "a call the source cut (incomplete) cannot be marked so in this target: the body drops it or"
    " sends '{}', the stream sends the partial arguments as a finished call"
)
KNOWN: dict[tuple[str, str], str] = {
    ("openai-chat/audio_output.sse", "openai-chat"): (
        "a Chat source with no finish reason (audio): the body must write one ('stop'), the"
        " stream writes none"
    ),
    ("gemini/two_candidates.sse", "openai-chat"): (
        "candidate 1 holds a call, candidate 0 does not: the body's response-level finish"
        " follows any choice's call, the stream's follows choice 0"
    ),
    ("anthropic/max_tokens_cut_tool.sse", "google-interactions"): CUT_CALL,
    ("anthropic/max_tokens_partial_tool_json.sse", "google-interactions"): CUT_CALL,
    ("gemini/array_args_missing_terminal_call.sse", "anthropic"): CUT_CALL,
    ("gemini/array_args_missing_terminal_call.sse", "google-interactions"): CUT_CALL,
}
"""Pairs that still disagree, with why (strict: a fix makes the test say so)."""


def answered(path: Path) -> bool:
    """Whether the stream is an answer a non-streaming body can hold.

    A failed or cut answer is not a body: non-streaming, the bridge answers it with an error
    status in the client's error shape (docs/serve.md).
    """
    response = ms.aggregate(path.read_bytes())
    return not (
        response.status == "failed" or (response.status == "incomplete" and response.finish_reason is None)
    )


def sources() -> list[Any]:
    out: list[Any] = []
    for protocol in SSE:
        for path in recordings(protocol) + corpus(protocol):
            if not answered(path):
                continue
            for target in BODY_PROTOCOLS:
                reason = KNOWN.get((f"{protocol}/{path.name}", target))
                marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
                out.append(pytest.param(path, target, id=f"{protocol}/{path.name}->{target}", marks=marks))
    return out


def _parsed(arguments: str) -> Any:
    try:
        return json.loads(arguments)
    except ValueError:
        return arguments


def view(resp: ms.Response) -> dict[str, Any]:
    texts: list[str] = []
    calls: list[tuple[str, Any]] = []
    for msg in resp.messages:
        if msg.role not in ("assistant", "model") or isinstance(msg.content, str):
            continue
        for part in msg.content:
            if isinstance(part, ms.TextPart):
                texts.append(part.text)
            elif (
                isinstance(part, ms.ToolCallPart)
                and part.kind in ("function", "custom")
                and part.status != "incomplete"
            ):
                calls.append((part.name, _parsed(part.arguments)))
    return {"status": resp.status, "finish": resp.finish_reason, "text": "".join(texts), "calls": calls}


@pytest.mark.parametrize(("path", "target"), sources())
def test_decoded_body_agrees_with_the_aggregated_stream(path: Path, target: str) -> None:
    data = path.read_bytes()
    response = ms.aggregate(data)
    body = ms.encode_response(response, target)
    from_body = ms.decode_response(body, target)
    from_stream = ms.aggregate(ms.convert(data, to=target, fail_closed=False), protocol=target)
    assert view(from_body) == view(from_stream)


def test_the_finish_rule_applies_to_bodies() -> None:
    body = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 0,
        "model": "m",
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
                    ],
                },
                "finish_reason": "stop",  # some compatible servers say stop with calls
            }
        ],
    }
    resp = ms.decode_response(body, "openai-chat")
    assert resp.finish_reason == "tool_calls"
    assert resp.messages[0].finish_reason == "tool_calls"
    assert resp.messages[0].provider == "openai-chat"


def test_websocket_protocols_have_no_body_to_decode() -> None:
    with pytest.raises(ms.LocalProtocolError, match="no non-streaming"):
        ms.decode_response({}, "google-live")
