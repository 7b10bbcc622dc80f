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

Non-streaming bodies are read by the SDKs' response models (:data:`BODIES`), reduced to the
texts per choice and the client calls. This is the only test module that imports the SDKs
(``openai``, ``anthropic``, ``google``): tests reach them through it.
"""

from __future__ import annotations

import functools
import json
import typing
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import anthropic
import anthropic.types
import anthropic.types.beta
import httpx2
import openai
import openai.types.chat
import openai.types.realtime
import openai.types.responses
import pydantic
from google.genai import types as genai
from google.genai._gaos.types.interactions.usage import Usage as InteractionsUsage
from openai.types.responses.response_create_params import ResponseCreateParamsStreaming

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


def parsed(arguments: str | None) -> Any:
    """Tool-call arguments parsed from JSON (``{}`` when empty), or the text when not JSON."""
    try:
        return json.loads(arguments or "{}")
    except json.JSONDecodeError:
        return arguments


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
                seen.calls.append((call.id, call.function.name, parsed(call.function.arguments)))
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
            seen.calls.append((item.call_id, item.name, parsed(item.arguments)))
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


# ------------------------------------------------------------------ non-streaming bodies

Call = tuple[str | None, str, Any]
"""(id or None, name, parsed arguments or the raw input)."""
BodySeen = tuple[dict[int, str], list[Call]]
"""What an SDK's response model carries: text per choice index, and the client calls."""
BETA_BLOCKS = {"mcp_tool_use", "mcp_tool_result", "compaction"}


def seen_chat(body: dict[str, Any]) -> BodySeen:
    """openai ``ChatCompletion``: text and function / custom calls per choice."""
    model = openai.types.chat.ChatCompletion.model_validate(body)
    texts: dict[int, str] = {}
    calls: list[Call] = []
    for choice in model.choices:
        texts[choice.index] = choice.message.content or ""
        legacy = choice.message.function_call
        if legacy is not None:
            calls.append((None, legacy.name, parsed(legacy.arguments)))
        for call in choice.message.tool_calls or ():
            if call.type == "function":
                calls.append((call.id, call.function.name, parsed(call.function.arguments)))
            else:
                calls.append((call.id, call.custom.name, call.custom.input))
    return texts, calls


def seen_responses(body: dict[str, Any]) -> BodySeen:
    """openai ``Response``: output text and function / custom calls."""
    model = openai.types.responses.Response.model_validate(body)
    return responses_output([item.model_dump(exclude_unset=True) for item in model.output])


def responses_output(items: list[dict[str, Any]]) -> BodySeen:
    """Text and client calls of Responses output items (plain dicts, no SDK)."""
    text: list[str] = []
    calls: list[Call] = []
    for item in items:
        if item["type"] == "message":
            text += [c["text"] for c in item["content"] if c["type"] == "output_text"]
        elif item["type"] == "function_call":
            calls.append((item["call_id"], item["name"], parsed(item["arguments"])))
        elif item["type"] == "custom_tool_call":
            calls.append((item["call_id"], item["name"], item["input"]))
        elif item["type"] in BUILT_IN_CALLS and _client_executed(item):
            name, field = BUILT_IN_CALLS[item["type"]]
            args = item.get(field)
            if args is None and item["type"] == "computer_call":
                args = {"actions": item.get("actions")}
            call_id = item.get("call_id") or item["id"]
            calls.append((call_id, name, args))
    return {0: "".join(text)}, calls


BUILT_IN_CALLS = {
    "apply_patch_call": ("apply_patch", "operation"),
    "shell_call": ("shell", "action"),
    "local_shell_call": ("local_shell", "action"),
    "computer_call": ("computer", "action"),
    "tool_search_call": ("tool_search", "arguments"),
}
"""Responses built-in tool calls the client executes: the tool name, the field of their input."""


def _client_executed(item: dict[str, Any]) -> bool:
    if item["type"] == "tool_search_call":
        return item.get("execution") == "client"
    env = item.get("environment") if item["type"] == "shell_call" else None
    return not isinstance(env, dict) or env.get("type") in (None, "local")


def seen_anthropic(body: dict[str, Any]) -> BodySeen:
    """anthropic ``Message`` (``BetaMessage`` with MCP/compaction blocks): text and tool_use."""
    kinds = {b["type"] for b in body["content"]}
    # MCP blocks exist only under the MCP beta: the SDK models them in BetaMessage.
    cls: Any = anthropic.types.beta.BetaMessage if kinds & BETA_BLOCKS else anthropic.types.Message
    model = cls.model_validate(body)
    text = "".join(b.text for b in model.content if b.type == "text")
    calls: list[Call] = [(b.id, b.name, b.input) for b in model.content if b.type == "tool_use"]
    return {0: text}, calls


def seen_gemini(body: dict[str, Any]) -> BodySeen:
    """google-genai ``GenerateContentResponse``: text and function calls per candidate."""
    model = genai.GenerateContentResponse.model_validate(body)
    texts: dict[int, str] = {}
    calls: list[Call] = []
    for i, cand in enumerate(model.candidates or ()):
        index = cand.index if cand.index is not None else i
        parts = cand.content.parts or [] if cand.content is not None else []
        texts[index] = "".join(p.text for p in parts if p.text is not None and not p.thought)
        for p in parts:
            if p.function_call is not None:
                calls.append((p.function_call.id, p.function_call.name or "", p.function_call.args or {}))
    return texts, calls


BODIES: dict[str, Callable[[dict[str, Any]], BodySeen]] = {
    "openai-chat": seen_chat,
    "openai-responses": seen_responses,
    "anthropic": seen_anthropic,
    "gemini": seen_gemini,
}
"""SDK response-model reader per protocol with a non-streaming body."""


CLIENT_ENTRIES = {"text", "tool_use", "thinking", "message", "function_call", "custom_tool_call"}


def _fits(adapter: pydantic.TypeAdapter[Any], value: Any) -> bool:
    try:
        adapter.validate_python(value)
    except pydantic.ValidationError:
        return False
    return True


def pruned(body: dict[str, Any], target: str) -> dict[str, Any]:
    """A same-protocol body less what the installed SDK has no model for yet (verbatim provider
    blocks, items, parts or usage keys newer than the SDK). Nothing the client acts on may go."""
    body = dict(body)
    if target == "anthropic":
        beta = {b["type"] for b in body["content"]} & BETA_BLOCKS
        block: pydantic.TypeAdapter[Any] = pydantic.TypeAdapter(
            anthropic.types.beta.BetaContentBlock if beta else anthropic.types.ContentBlock
        )
        kept = [b for b in body["content"] if _fits(block, b)]
        assert all(b["type"] not in CLIENT_ENTRIES for b in body["content"] if b not in kept)
        body["content"] = kept
        usage = body["usage"]
        body["usage"] = {"input_tokens": usage["input_tokens"], "output_tokens": usage["output_tokens"]}
    elif target == "openai-responses":
        item = pydantic.TypeAdapter(openai.types.responses.ResponseOutputItem)
        kept = [i for i in body["output"] if _fits(item, i)]
        assert all(i["type"] not in CLIENT_ENTRIES for i in body["output"] if i not in kept)
        body["output"] = kept
    elif target == "gemini":
        part = pydantic.TypeAdapter(genai.Part)
        candidates = []
        for cand in body["candidates"]:
            parts = cand["content"]["parts"]
            kept = [p for p in parts if _fits(part, p)]
            assert all("text" not in p and "functionCall" not in p for p in parts if p not in kept)
            candidates.append({**cand, "content": {**cand["content"], "parts": kept}})
        body["candidates"] = candidates
        if "usageMetadata" in body:
            fields = genai.GenerateContentResponseUsageMetadata.model_fields
            known = {f.alias or n for n, f in fields.items()} | set(fields)
            body["usageMetadata"] = {k: v for k, v in body["usageMetadata"].items() if k in known}
    return body


# ---------------------------------------------------------------------- request bodies


def _read_all(value: Any) -> Any:
    """A validated value with every lazily read iterable (pydantic reads ``Iterable`` fields
    lazily) read into a list, so that validation errors surface and values compare."""
    if isinstance(value, dict):
        return {k: _read_all(v) for k, v in value.items()}
    if isinstance(value, list | tuple) or (hasattr(value, "__next__") and not isinstance(value, str | bytes)):
        return [_read_all(v) for v in value]
    return value


def chat_request(body: dict[str, Any]) -> Any:
    """A Chat request body as openai's ``CompletionCreateParams`` reads it.

    Returns what the SDK type keeps (keys it does not know are left out, so comparing the
    result with ``body`` finds them); raises ``pydantic.ValidationError`` for a value the type
    refuses.
    """
    streaming = body.get("stream") is True
    if streaming not in _CHAT_REQUEST:
        params = openai.types.chat.completion_create_params
        kind: Any = (
            params.CompletionCreateParamsStreaming if streaming else params.CompletionCreateParamsNonStreaming
        )
        _CHAT_REQUEST[streaming] = pydantic.TypeAdapter(kind)
    # The adapter must outlive the lazy iterators it returns (pydantic-core panics otherwise).
    return _read_all(_CHAT_REQUEST[streaming].validate_python(body))


_CHAT_REQUEST: dict[bool, pydantic.TypeAdapter[Any]] = {}


def responses_request(body: dict[str, Any]) -> Any:
    """A streaming Responses request body as openai's ``ResponseCreateParamsStreaming`` keeps it.

    Keys the SDK type does not declare are left out (a TypedDict ignores them), so the result
    equals ``body`` only when every key, at every depth, is one the SDK knows.

    Raises:
        pydantic.ValidationError: The body does not fit the SDK's request type.
    """
    return _read_all(_responses_request().validate_python(body))


@functools.cache
def _responses_request() -> pydantic.TypeAdapter[Any]:
    return pydantic.TypeAdapter(ResponseCreateParamsStreaming)


# ------------------------------------------------------------------ usage, as the SDKs report it


@dataclass(frozen=True)
class UsageSeen:
    """The token counts an SDK reports, restated in the canonical meaning (docs/usage.md).

    Each reader below applies the target's own documented arithmetic to the SDK's model (not
    maas-stream's): Anthropic's ``input_tokens`` leaves its cache reads and writes out; Gemini,
    Live and Interactions count the tool-use prompt and the thoughts apart; OpenAI's counts
    already include their details. A count the target has no field for is ``None``.
    """

    input: int | None
    output: int | None
    total: int | None
    cached: int | None = None
    cache_write: int | None = None
    reasoning: int | None = None


def _plus(*counts: int | None) -> int | None:
    known = [c for c in counts if c is not None]
    return sum(known) if known else None


def usage_chat(u: Any) -> UsageSeen:
    """openai ``CompletionUsage``: the prompt includes the cached tokens, the completion the reasoning."""
    pd, cd = u.prompt_tokens_details, u.completion_tokens_details
    return UsageSeen(
        u.prompt_tokens,
        u.completion_tokens,
        u.total_tokens,
        cached=pd.cached_tokens if pd else None,
        cache_write=pd.cache_write_tokens if pd else None,
        reasoning=cd.reasoning_tokens if cd else None,
    )


def usage_responses(u: Any) -> UsageSeen:
    """openai ``ResponseUsage``: input includes the cached tokens, output the reasoning."""
    return UsageSeen(
        u.input_tokens,
        u.output_tokens,
        u.total_tokens,
        cached=u.input_tokens_details.cached_tokens,
        cache_write=u.input_tokens_details.cache_write_tokens,
        reasoning=u.output_tokens_details.reasoning_tokens,
    )


def usage_anthropic(u: Any) -> UsageSeen:
    """anthropic ``Usage``: ``input_tokens`` leaves out the cache reads and writes; no total.

    With ``iterations`` (BetaUsage: compaction, advisor calls) the top-level counts cover the
    message iterations only and every iteration is billed: the counts are the sums over them.
    """
    details = getattr(u, "output_tokens_details", None)  # not in every SDK model (BetaUsage)
    steps = getattr(u, "iterations", None) or [u]
    prompt = output = read = write = None
    for step in steps:
        read = _plus(read, step.cache_read_input_tokens)
        write = _plus(write, step.cache_creation_input_tokens)
        prompt = _plus(
            prompt, step.input_tokens, step.cache_read_input_tokens, step.cache_creation_input_tokens
        )
        output = _plus(output, step.output_tokens)
    return UsageSeen(
        prompt,
        output,
        _plus(prompt, output),
        cached=read,
        cache_write=write,
        reasoning=details.thinking_tokens if details else None,
    )


def usage_google(u: Any) -> UsageSeen:
    """google-genai ``GenerateContentResponseUsageMetadata`` / Live ``UsageMetadata``: the prompt
    leaves out the tool-use prompt, the answer (candidates / response) leaves out the thoughts."""
    answer = getattr(u, "candidates_token_count", None)
    if answer is None:
        answer = getattr(u, "response_token_count", None)
    return UsageSeen(
        _plus(u.prompt_token_count, u.tool_use_prompt_token_count),
        _plus(answer, u.thoughts_token_count),
        u.total_token_count,
        cached=u.cached_content_token_count,
        reasoning=u.thoughts_token_count,
    )


def usage_interactions(u: Any) -> UsageSeen:
    """google-genai Interactions ``Usage``: as Gemini, with ``total_*`` names."""
    return UsageSeen(
        _plus(u.total_input_tokens, u.total_tool_use_tokens),
        _plus(u.total_output_tokens, u.total_thought_tokens),
        u.total_tokens,
        cached=u.total_cached_tokens,
        reasoning=u.total_thought_tokens,
    )


def usage_realtime(u: Any) -> UsageSeen:
    """openai ``RealtimeResponseUsage``: input includes the cached tokens; no reasoning count."""
    details = u.input_token_details
    return UsageSeen(
        u.input_tokens, u.output_tokens, u.total_tokens, cached=details.cached_tokens if details else None
    )


def _sse_data(data: bytes) -> list[Any]:
    return [
        json.loads(line[5:])
        for line in data.decode().splitlines()
        if line.startswith("data:") and line[5:].strip() != "[DONE]"
    ]


def _ws_server(data: bytes) -> list[Any]:
    return [r["msg"] for r in map(json.loads, data.decode().splitlines()) if r.get("dir") == "server"]


def _stream_usage_chat(data: bytes) -> UsageSeen | None:
    _BODY[0] = data
    with _client("openai").chat.completions.stream(
        model="m", messages=[{"role": "user", "content": "x"}]
    ) as stream:
        try:
            for _ in stream:
                pass
        except openai.APIError:
            pass
        try:
            usage = stream.current_completion_snapshot.usage
        except AssertionError:  # no chunk at all
            return None
    return usage_chat(usage) if usage is not None else None


def _stream_usage_anthropic(data: bytes) -> UsageSeen | None:
    _BODY[0] = data
    with _client("anthropic").messages.stream(
        model="claude-x", max_tokens=64, messages=[{"role": "user", "content": "hi"}]
    ) as stream:
        try:
            for _ in stream:
                pass
        except anthropic.APIError:
            pass
        snapshot = stream.current_message_snapshot
    return usage_anthropic(snapshot.usage)


def _stream_usage_responses(data: bytes) -> UsageSeen | None:
    _BODY[0] = data
    final: Any = None
    try:
        with _client("openai").responses.stream(model="m", input="hi") as stream:
            for event in stream:
                if event.type in ("response.completed", "response.incomplete", "response.failed"):
                    final = event.response
    except (openai.APIError, RuntimeError):
        pass
    return usage_responses(final.usage) if final is not None and final.usage is not None else None


def _stream_usage_gemini(data: bytes) -> UsageSeen | None:
    usage = gemini_oracle(data).usage
    return usage_google(usage) if usage is not None else None


def _stream_usage_interactions(data: bytes) -> UsageSeen | None:
    found = None
    for event in _sse_data(data):
        if event.get("event_type") == "interaction.completed":
            usage = event["interaction"].get("usage")
            if usage is not None:
                found = usage_interactions(InteractionsUsage.model_validate(usage))
    return found


def _stream_usage_live(data: bytes) -> UsageSeen | None:
    found = None
    for msg in _ws_server(data):
        usage = genai.LiveServerMessage.model_validate(msg).usage_metadata
        if usage is not None:
            found = usage_google(usage)
    return found


def _stream_usage_realtime(data: bytes) -> UsageSeen | None:
    found = None
    for msg in _ws_server(data):
        if msg.get("type") == "response.done":
            usage = openai.types.realtime.ResponseDoneEvent.model_validate(msg).response.usage
            if usage is not None:
                found = usage_realtime(usage)
    return found


STREAM_USAGE: dict[str, Callable[[bytes], UsageSeen | None]] = {
    "openai-chat": _stream_usage_chat,
    "anthropic": _stream_usage_anthropic,
    "openai-responses": _stream_usage_responses,
    "gemini": _stream_usage_gemini,
    "google-interactions": _stream_usage_interactions,
    "google-live": _stream_usage_live,
    "openai-realtime": _stream_usage_realtime,
}
"""Per target: the last usage the official SDK reports for a stream (its streaming client for
the SSE protocols, its server-event models for Interactions, Live and Realtime)."""


def _body_usage_anthropic(body: dict[str, Any]) -> UsageSeen | None:
    usage = dict(body["usage"])
    usage.pop("server_tool_use", None)  # no token count; newer keys than the installed SDK's
    return usage_anthropic(anthropic.types.beta.BetaUsage.model_validate(usage))


def _body_usage_gemini(body: dict[str, Any]) -> UsageSeen | None:
    usage = body.get("usageMetadata")
    if usage is None:
        return None
    fields = genai.GenerateContentResponseUsageMetadata.model_fields
    known = {f.alias or n for n, f in fields.items()} | set(fields)
    model = genai.GenerateContentResponseUsageMetadata.model_validate(
        {k: v for k, v in usage.items() if k in known}
    )
    return usage_google(model)


BODY_USAGE: dict[str, Callable[[dict[str, Any]], UsageSeen | None]] = {
    "openai-chat": lambda b: _maybe(openai.types.chat.ChatCompletion.model_validate(b).usage, usage_chat),
    "openai-responses": lambda b: _maybe(
        openai.types.responses.Response.model_validate(b).usage, usage_responses
    ),
    "anthropic": _body_usage_anthropic,
    "gemini": _body_usage_gemini,
}
"""Per target with a non-streaming body: the usage its SDK model reports (the usage object
alone for Anthropic and Gemini, less the keys newer than the installed SDK, as ``pruned``)."""


def _maybe(usage: Any, read: Callable[[Any], UsageSeen]) -> UsageSeen | None:
    return None if usage is None else read(usage)


# ------------------------------------------------------------------ request bodies (anthropic)

ANTHROPIC_SAMPLING = {"temperature": float, "top_p": float, "top_k": int}
"""Messages sampling fields PROTOCOLS.md §3.8 documents that the installed SDK (2.16) no longer
declares: checked here by type, as the SDK cannot."""

_ANTHROPIC_PARAMS = (
    anthropic.types.message_create_params.MessageCreateParamsStreaming,
    anthropic.types.beta.message_create_params.MessageCreateParamsStreaming,
)


def anthropic_request(body: dict[str, Any]) -> list[str]:
    """What the installed anthropic SDK's request types refuse in a streaming Messages body.

    The body is validated in pydantic strict mode against the GA ``MessageCreateParamsStreaming``
    (the beta one when it uses beta-only fields), and what the SDK keeps must equal the body: a
    key the SDK does not declare, at any depth, is refused (a TypedDict would ignore it). The
    sampling fields of :data:`ANTHROPIC_SAMPLING` are checked by type. ``[]`` when nothing is
    refused.
    """
    faults: list[str] = []
    for key, kind in ANTHROPIC_SAMPLING.items():
        value = body.get(key, kind())
        if isinstance(value, bool) or not isinstance(value, (int, float) if kind is float else kind):
            faults.append(f"{key}: not a {kind.__name__}")
    rest = {k: v for k, v in body.items() if k not in ANTHROPIC_SAMPLING}
    ga, beta = _ANTHROPIC_PARAMS
    params = ga if set(rest) <= _typed_keys(ga) else beta
    try:
        kept = _read_all(_adapter(params).validate_python(rest, strict=True))
    except pydantic.ValidationError as e:
        return faults + [f"{'.'.join(map(str, err['loc']))}: {err['msg']}" for err in e.errors()]
    return faults + [f"{path}: not declared by the SDK" for path in _unkept(rest, kept, "")]


def _unkept(sent: Any, kept: Any, path: str) -> list[str]:
    # The paths of ``sent`` that validation left out of ``kept``. JSON schemas are free-form
    # (the SDK's ``InputSchema`` / ``JSONOutputFormatParam.schema`` take any ``Dict[str, object]``).
    if path.endswith(("input_schema.", "schema.")):
        return []
    if isinstance(sent, dict) and isinstance(kept, dict):
        return [
            p
            for k, v in sent.items()
            for p in ([f"{path}{k}"] if k not in kept else _unkept(v, kept[k], f"{path}{k}."))
        ]
    if isinstance(sent, list) and isinstance(kept, list) and len(sent) == len(kept):
        return [
            p for i, (s, k) in enumerate(zip(sent, kept, strict=True)) for p in _unkept(s, k, f"{path}{i}.")
        ]
    return [] if sent == kept else [path.rstrip(".") or "(body)"]


@functools.cache
def _adapter(kind: Any) -> pydantic.TypeAdapter[Any]:
    return pydantic.TypeAdapter(kind)


@functools.cache
def _typed_keys(kind: Any) -> frozenset[str]:
    return frozenset(typing.get_type_hints(kind))


# ------------------------------------------------------------------ realtime client and server messages


def _extra_fields(value: Any, path: str = "") -> list[str]:
    """Fields an openai model kept as extras (openai models accept unknown fields silently)."""
    if isinstance(value, pydantic.BaseModel):
        found = [f"{path}{k}" for k in (value.model_extra or {})]
        for name in type(value).model_fields:
            found += _extra_fields(getattr(value, name), f"{path}{name}.")
        return found
    if isinstance(value, list):
        return [f for i, v in enumerate(value) for f in _extra_fields(v, f"{path}{i}.")]
    return []


def _strict(kind: Any, event: dict[str, Any]) -> Any:
    model = _adapter(kind).validate_python(event)
    extra = _extra_fields(model)
    if extra:
        raise AssertionError(f"fields the openai SDK does not know: {extra} in {event}")
    return model


def realtime_client_event(event: dict[str, Any]) -> Any:
    """The openai SDK's GA ``RealtimeClientEvent`` union reading one client event (raises if invalid
    or if it holds a field the SDK does not know)."""
    return _strict(openai.types.realtime.RealtimeClientEvent, event)


def realtime_beta_client_event(event: dict[str, Any]) -> Any:
    """The openai SDK's beta ``RealtimeClientEvent`` union reading one client event (strictly)."""
    import openai.types.beta.realtime as beta

    return _strict(beta.RealtimeClientEvent, event)


def realtime_server_event(event: dict[str, Any]) -> Any:
    """The openai SDK's GA ``RealtimeServerEvent`` union reading one server event (strictly)."""
    return _strict(openai.types.realtime.RealtimeServerEvent, event)


def realtime_beta_server_event(event: dict[str, Any]) -> Any:
    """The openai SDK's beta ``RealtimeServerEvent`` union reading one server event (strictly)."""
    import openai.types.beta.realtime as beta

    return _strict(beta.RealtimeServerEvent, event)


def live_client_message(message: dict[str, Any]) -> Any:
    """google-genai reading one Live client message (raises if invalid; unknown fields are refused).

    ``LiveClientMessage`` has no ``setup.realtimeInputConfig`` although the SDK writes it there
    (``_live_converters._LiveConnectConfig_to_mldev``): a setup is also read whole as the
    ``LiveConnectConfig`` it comes from (which has every setup field but ``model``).
    """
    setup = message.get("setup")
    if isinstance(setup, dict):
        genai.LiveConnectConfig.model_validate({k: v for k, v in setup.items() if k != "model"})
        message = {"setup": {k: v for k, v in setup.items() if k != "realtimeInputConfig"}}
    return genai.LiveClientMessage.model_validate(message)


def live_server_message(message: dict[str, Any]) -> Any:
    """google-genai reading one Live server message (raises if invalid)."""
    return genai.LiveServerMessage.model_validate(message)
