"""Official SDK streaming clients as test oracles, one per SSE protocol, behind one shape.

Each oracle feeds bytes to the provider SDK's own streaming client (over an
``httpx2.MockTransport``, no network) and reduces what the SDK reports to a :class:`Seen`: the
text of the first choice / candidate, its client function calls (id, name, arguments parsed
from JSON) and whether the SDK raised or reported an error. The reduction is deliberately
small and does not use maas-stream.

Clients are built once per protocol and reused (the handler reads the bytes to serve from a
module-level slot), which keeps the conversion matrix fast. Tests run one at a time per process,
so that slot is never shared by two requests at once.

A protocol joins the conversion matrix by adding its oracle to :data:`ORACLES`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import anthropic
import httpx2
import openai

from tests.protocols.gemini_oracle import oracle as gemini_oracle

if TYPE_CHECKING:
    from collections.abc import Callable


@dataclass
class Seen:
    """What an SDK made of a stream."""

    text: str = ""
    calls: list[tuple[str | None, str, Any]] = field(default_factory=list)
    """(id or None, name, parsed arguments or the raw text when it is not JSON)."""
    error: Exception | None = None
    finish: str | None = None
    """The provider's finish / stop reason, or ``None`` when the stream did not say."""
    reasoning: str = ""


_BODY: list[bytes] = [b""]


def _handler(request: httpx2.Request) -> httpx2.Response:
    return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=_BODY[0])


_CLIENTS: dict[str, Any] = {}


def _client(name: str) -> Any:
    if name not in _CLIENTS:
        http = httpx2.Client(transport=httpx2.MockTransport(_handler))
        if name == "anthropic":
            _CLIENTS[name] = anthropic.Anthropic(api_key="test", http_client=http, max_retries=0)
        else:
            _CLIENTS[name] = openai.OpenAI(
                api_key="test", base_url="http://127.0.0.1:9/v1", http_client=http, max_retries=0
            )
    return _CLIENTS[name]


def _args(text: str | None) -> Any:
    try:
        return json.loads(text or "{}")
    except json.JSONDecodeError:
        return text


def chat(data: bytes) -> Seen:
    """openai ``chat.completions.stream()``: choice 0 of the final completion (or last snapshot)."""
    _BODY[0] = data
    seen = Seen()
    with _client("openai").chat.completions.stream(
        model="m", messages=[{"role": "user", "content": "x"}]
    ) as stream:
        try:
            for _ in stream:
                pass
            completion = stream.get_final_completion()
        except (openai.LengthFinishReasonError, openai.ContentFilterFinishReasonError):
            completion = stream.current_completion_snapshot  # it refuses to *parse* these
        except AttributeError:
            # Its final *parse* cannot read streamed custom tool calls (a dict where it wants a
            # model); the accumulated snapshot is still what it saw.
            completion = stream.current_completion_snapshot
        except openai.APIError as exc:
            seen.error = exc
            try:
                completion = stream.current_completion_snapshot
            except AssertionError:  # the error came before any chunk
                return seen
    for choice in completion.choices:
        if choice.index != 0:
            continue
        seen.text = choice.message.content or ""
        seen.finish = choice.finish_reason
        for call in choice.message.tool_calls or ():
            if call.type == "function":
                seen.calls.append((call.id, call.function.name, _args(call.function.arguments)))
    return seen


def anthropic_messages(data: bytes) -> Seen:
    """anthropic ``messages.stream()``: the final message; ``event: error`` raises."""
    _BODY[0] = data
    seen = Seen()
    try:
        with _client("anthropic").messages.stream(
            model="claude-x", max_tokens=64, messages=[{"role": "user", "content": "hi"}]
        ) as stream:
            streamed = "".join(stream.text_stream)
            final = stream.get_final_message()
    except anthropic.APIError as exc:
        seen.error = exc
        return seen
    seen.text = "".join(b.text for b in final.content if b.type == "text")
    assert streamed == seen.text
    seen.reasoning = "".join(b.thinking for b in final.content if b.type == "thinking")
    seen.calls = [(b.id, b.name, b.input) for b in final.content if b.type == "tool_use"]
    seen.finish = final.stop_reason
    return seen


def responses(data: bytes) -> Seen:
    """openai ``responses.stream()``: the final response; a stream without one raises."""
    _BODY[0] = data
    seen = Seen()
    final: Any = None
    try:
        with _client("openai").responses.stream(model="m", input="hi") as stream:
            for event in stream:
                if event.type in ("response.completed", "response.incomplete", "response.failed"):
                    final = event.response  # the SDK's own parse of the terminal response
            final = stream.get_final_response()
    except (openai.APIError, RuntimeError) as exc:
        # Without `response.completed` the SDK raises; what it had (the terminal response of
        # `response.incomplete`, else its accumulated snapshot) is still compared.
        seen.error = exc
        if final is None:
            final = getattr(stream._state, "_ResponseStreamState__current_snapshot", None)
    if final is None:
        return seen
    seen.text = "".join(
        c.text
        for item in final.output
        if item.type == "message"
        for c in item.content
        if c.type == "output_text"
    )
    seen.finish = final.status
    for item in final.output:
        if item.type == "function_call":
            seen.calls.append((item.call_id, item.name, _args(item.arguments)))
        elif item.type == "reasoning":
            seen.reasoning += "".join(c.text for c in item.content or ())
    return seen


def gemini(data: bytes) -> Seen:
    """google-genai ``models.generate_content_stream()``: candidate 0."""
    found = gemini_oracle(data)
    seen = Seen(error=found.error)
    cand = found.candidates.get(0)
    if cand is not None:
        seen.text = "".join(cand.text)
        seen.reasoning = "".join(cand.thought)
        seen.finish = cand.finish
        seen.calls = [(c["id"], c["name"], c["args"]) for c in cand.calls]
    return seen


ORACLES: dict[str, Callable[[bytes], Seen]] = {
    "openai-chat": chat,
    "anthropic": anthropic_messages,
    "openai-responses": responses,
    "gemini": gemini,
}
"""SDK oracle per SSE protocol; a registered SSE protocol listed here joins the matrix."""
