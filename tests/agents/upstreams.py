"""Scripted fake providers for the agent-CLI tests, written from PROTOCOLS.md (§1, §2, §3, §4).

Each fake speaks one upstream protocol's streaming wire format over the loopback server of
``tests/io/loopback.py``. It plays a two-turn tool loop: a request that carries no tool result
is answered with one call of the tool the test chose (:class:`ToolCall`); a request that carries
a tool result is answered with final text. A request without tools (a CLI's side request: a
title, a quota probe, a next-speaker check) is answered with short text. In ``cut`` mode the first
tool-loop answer sends a little text and then drops the connection without ending the chunked
body: a provider dying mid-stream.

This module owns the wire frames and the reading of tool results out of request bodies; it must
not import maas_stream (the fake is the provider, independent of the code under test).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable

    from tests.io.loopback import Conn

FINAL_TEXT = "AGENT-LOOP-DONE: the file says what the test wrote."
"""The final answer the fake gives once it has seen the tool result; the CLI must print it."""

SIDE_TEXT = "ok"
"""The answer to a request without tools."""

CUT_TEXT = "Reading the fi"
"""What a dying upstream sends before it drops the connection."""


@dataclass(frozen=True)
class ToolCall:
    """The call the fake makes on turn 1: a tool the CLI declared, and its arguments."""

    name: str
    arguments: dict[str, Any]


@dataclass
class Exchange:
    """One request the fake received, and what it answered."""

    path: str
    body: dict[str, Any]
    answer: str
    """``"tool_call"``, ``"final"``, ``"side"`` or ``"cut"``."""
    tool_results: list[str]
    """The text of every tool result the request carried (protocol-specific reading)."""


@dataclass
class FakeProvider:
    """A scripted provider of one protocol; :meth:`script` answers each loopback connection."""

    protocol: str
    call: ToolCall
    cut: bool = False
    exchanges: list[Exchange] = field(default_factory=list)

    def decide(self, body: dict[str, Any]) -> tuple[str, list[str]]:
        """What to answer ``body`` with, and the tool results it carries."""
        results = TOOL_RESULTS[self.protocol](body)
        if not _declares(self.protocol, body, self.call.name):
            return "side", results
        if self.cut:
            return "cut", results
        return ("final" if results else "tool_call"), results

    async def script(self, conn: Conn) -> None:
        """Answer one request (a loopback ``Script``)."""
        body = json.loads(conn.request.body or b"{}")
        answer, results = self.decide(body)
        self.exchanges.append(Exchange(conn.request.target, body, answer, results))
        frames = FRAMES[self.protocol]
        await conn.start()
        if answer == "cut":
            for frame in frames.text(CUT_TEXT, final=False):
                await conn.send(frame)
            return  # the connection closes with the chunked body unfinished
        out = (
            frames.tool_call(self.call)
            if answer == "tool_call"
            else frames.text(FINAL_TEXT if answer == "final" else SIDE_TEXT, final=True)
        )
        for frame in out:
            await conn.send(frame)
        await conn.end()


def _sse(data: Any, event: str | None = None) -> bytes:
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {json.dumps(data, separators=(',', ':'))}\n\n".encode()


# ----------------------------------------------------------------------- OpenAI Chat (§1)


class _Chat:
    """``chat.completion.chunk`` frames, then a usage chunk and ``[DONE]`` (PROTOCOLS.md §1.2, §1.6)."""

    @staticmethod
    def _chunk(delta: dict[str, Any] | None, finish: str | None = None) -> bytes:
        choices = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}]
        chunk: dict[str, Any] = {
            "id": "chatcmpl-fake",
            "object": "chat.completion.chunk",
            "created": 1700000000,
            "model": "fake-model",
            "choices": choices,
        }
        if delta is None:
            chunk["usage"] = {"prompt_tokens": 20, "completion_tokens": 8, "total_tokens": 28}
        return _sse(chunk)

    def text(self, text: str, *, final: bool) -> list[bytes]:
        half = len(text) // 2
        out = [
            self._chunk({"role": "assistant", "content": ""}),
            self._chunk({"content": text[:half]}),
            self._chunk({"content": text[half:]}),
        ]
        if final:
            out += [self._chunk({}, "stop"), self._chunk(None), b"data: [DONE]\n\n"]
        return out

    def tool_call(self, call: ToolCall) -> list[bytes]:
        args = json.dumps(call.arguments)
        half = len(args) // 2
        start = {
            "index": 0,
            "id": "call_fake1",
            "type": "function",
            "function": {"name": call.name, "arguments": ""},
        }
        return [
            self._chunk({"role": "assistant", "content": None, "tool_calls": [start]}),
            self._chunk({"tool_calls": [{"index": 0, "function": {"arguments": args[:half]}}]}),
            self._chunk({"tool_calls": [{"index": 0, "function": {"arguments": args[half:]}}]}),
            self._chunk({}, "tool_calls"),
            self._chunk(None),
            b"data: [DONE]\n\n",
        ]


def _chat_results(body: dict[str, Any]) -> list[str]:
    out = []
    for message in body.get("messages", []):
        if message.get("role") == "tool":
            content = message.get("content")
            out.append(content if isinstance(content, str) else json.dumps(content))
    return out


# ----------------------------------------------------------------------- OpenAI Responses (§2)


class _Responses:
    """Responses events from ``response.created`` to ``response.completed`` (PROTOCOLS.md §2.3, §2.10)."""

    def __init__(self) -> None:
        self.seq = 0

    def _event(self, kind: str, **data: Any) -> bytes:
        self.seq += 1  # sequence numbers start at 0
        return _sse({"type": kind, "sequence_number": self.seq - 1, **data}, kind)

    @staticmethod
    def _response(status: str, output: list[dict[str, Any]]) -> dict[str, Any]:
        response: dict[str, Any] = {
            "id": "resp_fake",
            "object": "response",
            "created_at": 1700000000,
            "status": status,
            "model": "fake-model",
            "output": output,
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
        }
        if status == "completed":
            response["usage"] = {
                "input_tokens": 20,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": 8,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": 28,
            }
        return response

    def text(self, text: str, *, final: bool) -> list[bytes]:
        self.seq = 0
        item = {
            "id": "msg_fake",
            "type": "message",
            "status": "in_progress",
            "role": "assistant",
            "content": [],
        }
        part = {"type": "output_text", "text": "", "annotations": []}
        ids = {"item_id": "msg_fake", "output_index": 0, "content_index": 0}
        half = len(text) // 2
        out = [
            self._event("response.created", response=self._response("in_progress", [])),
            self._event("response.in_progress", response=self._response("in_progress", [])),
            self._event("response.output_item.added", output_index=0, item=item),
            self._event("response.content_part.added", part=part, **ids),
            self._event("response.output_text.delta", delta=text[:half], logprobs=[], **ids),
            self._event("response.output_text.delta", delta=text[half:], logprobs=[], **ids),
        ]
        if final:
            done_part = {"type": "output_text", "text": text, "annotations": []}
            done_item = {**item, "status": "completed", "content": [done_part]}
            out += [
                self._event("response.output_text.done", text=text, logprobs=[], **ids),
                self._event("response.content_part.done", part=done_part, **ids),
                self._event("response.output_item.done", output_index=0, item=done_item),
                self._event("response.completed", response=self._response("completed", [done_item])),
            ]
        return out

    def tool_call(self, call: ToolCall) -> list[bytes]:
        self.seq = 0
        args = json.dumps(call.arguments)
        half = len(args) // 2
        item = {
            "id": "fc_fake",
            "type": "function_call",
            "status": "in_progress",
            "call_id": "call_fake1",
            "name": call.name,
            "arguments": "",
        }
        done_item = {**item, "status": "completed", "arguments": args}
        ids = {"item_id": "fc_fake", "output_index": 0}
        return [
            self._event("response.created", response=self._response("in_progress", [])),
            self._event("response.output_item.added", output_index=0, item=item),
            self._event("response.function_call_arguments.delta", delta=args[:half], **ids),
            self._event("response.function_call_arguments.delta", delta=args[half:], **ids),
            self._event("response.function_call_arguments.done", arguments=args, **ids),
            self._event("response.output_item.done", output_index=0, item=done_item),
            self._event("response.completed", response=self._response("completed", [done_item])),
        ]


def _responses_results(body: dict[str, Any]) -> list[str]:
    items = body.get("input", [])
    if not isinstance(items, list):
        return []
    out = []
    for item in items:
        if isinstance(item, dict) and item.get("type") == "function_call_output":
            output = item.get("output")
            out.append(output if isinstance(output, str) else json.dumps(output))
    return out


# ----------------------------------------------------------------------- Anthropic Messages (§3)


class _Anthropic:
    """``message_start`` .. ``message_stop`` with one content block (PROTOCOLS.md §3.1, §3.10)."""

    @staticmethod
    def _start() -> bytes:
        message: dict[str, Any] = {
            "id": "msg_fake",
            "type": "message",
            "role": "assistant",
            "model": "fake-model",
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": 20, "output_tokens": 1},
        }
        return _sse({"type": "message_start", "message": message}, "message_start")

    @staticmethod
    def _end(stop_reason: str) -> list[bytes]:
        return [
            _sse({"type": "content_block_stop", "index": 0}, "content_block_stop"),
            _sse(
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                    "usage": {"output_tokens": 8},
                },
                "message_delta",
            ),
            _sse({"type": "message_stop"}, "message_stop"),
        ]

    def text(self, text: str, *, final: bool) -> list[bytes]:
        half = len(text) // 2
        block = {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}
        out = [self._start(), _sse(block, "content_block_start")]
        for piece in (text[:half], text[half:]):
            delta = {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": piece},
            }
            out.append(_sse(delta, "content_block_delta"))
        return out + (self._end("end_turn") if final else [])

    def tool_call(self, call: ToolCall) -> list[bytes]:
        args = json.dumps(call.arguments)
        half = len(args) // 2
        use = {"type": "tool_use", "id": "toolu_fake1", "name": call.name, "input": {}}
        out = [
            self._start(),
            _sse({"type": "content_block_start", "index": 0, "content_block": use}, "content_block_start"),
        ]
        for piece in (args[:half], args[half:]):
            delta = {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "input_json_delta", "partial_json": piece},
            }
            out.append(_sse(delta, "content_block_delta"))
        return out + self._end("tool_use")


def _anthropic_results(body: dict[str, Any]) -> list[str]:
    out = []
    message: dict[str, Any]
    for message in body.get("messages", []):
        content = message.get("content")
        if message.get("role") != "user" or not isinstance(content, list):
            continue
        for block in content:
            if block.get("type") == "tool_result":
                inner = block.get("content")
                out.append(inner if isinstance(inner, str) else json.dumps(inner))
    return out


# ----------------------------------------------------------------------- Gemini (§4)


class _Gemini:
    """``GenerateContentResponse`` chunks over ``alt=sse`` (PROTOCOLS.md §4.3, §4.7, §4.10)."""

    @staticmethod
    def _chunk(parts: list[dict[str, Any]], finish: bool) -> bytes:
        candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
        chunk: dict[str, Any] = {
            "candidates": [candidate],
            "modelVersion": "fake-model",
            "responseId": "fake",
        }
        if finish:
            candidate["finishReason"] = "STOP"
            chunk["usageMetadata"] = {
                "promptTokenCount": 20,
                "candidatesTokenCount": 8,
                "totalTokenCount": 28,
            }
        return _sse(chunk)

    def text(self, text: str, *, final: bool) -> list[bytes]:
        half = len(text) // 2
        return [self._chunk([{"text": text[:half]}], False), self._chunk([{"text": text[half:]}], final)]

    def tool_call(self, call: ToolCall) -> list[bytes]:
        return [self._chunk([{"functionCall": {"name": call.name, "args": call.arguments}}], True)]


def _gemini_results(body: dict[str, Any]) -> list[str]:
    return [
        json.dumps(part["functionResponse"].get("response"))
        for content in body.get("contents", [])
        for part in content.get("parts", [])
        if "functionResponse" in part
    ]


# ----------------------------------------------------------------------- tables


def _tool_names(protocol: str, body: dict[str, Any]) -> set[str]:
    names: set[str] = set()
    for tool in body.get("tools", []) or []:
        if protocol == "gemini":
            names.update(d.get("name", "") for d in tool.get("functionDeclarations", []))
        elif protocol == "openai-chat":
            names.add(tool.get("function", {}).get("name", ""))
        else:
            names.add(tool.get("name", ""))
    return names


def _declares(protocol: str, body: dict[str, Any], name: str) -> bool:
    return name in _tool_names(protocol, body)


FRAMES: dict[str, Any] = {
    "openai-chat": _Chat(),
    "openai-responses": _Responses(),
    "anthropic": _Anthropic(),
    "gemini": _Gemini(),
}
"""Each protocol's frame writer: ``text(text, final=...)`` and ``tool_call(call)``."""

TOOL_RESULTS: dict[str, Callable[[dict[str, Any]], list[str]]] = {
    "openai-chat": _chat_results,
    "openai-responses": _responses_results,
    "anthropic": _anthropic_results,
    "gemini": _gemini_results,
}
"""Each protocol's reading of the tool results a request carries."""

PATHS: dict[str, str] = {
    "openai-chat": "/v1/chat/completions",
    "openai-responses": "/v1/responses",
    "anthropic": "/v1/messages",
    "gemini": "/v1beta/models/{model}:streamGenerateContent?alt=sse",
}
"""Each protocol's streaming endpoint on the fake (the bridge's ``HTTPUpstream`` URL)."""
