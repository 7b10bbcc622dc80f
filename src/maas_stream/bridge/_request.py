"""The bridge's request side: route → client protocol, request envelope, provider-shaped error bodies.

The conversation itself (``messages``, ``input``, ``contents``, ``system``...) is converted by
:func:`maas_stream.convert_history`; this module only moves the few envelope fields a provider
needs to answer at all (the model, the streaming switch, the output-token limit, the sampling
temperature and ``top_p``, and plain function-tool declarations) and reports every other
top-level field as not forwarded. It also writes the error bodies each client SDK understands.

It must not convert conversations or streams (that is the library's job) and does no IO.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Final

__all__ = [
    "CONVERSATION_FIELDS",
    "Envelope",
    "Route",
    "build_body",
    "error_body",
    "match_route",
    "read_envelope",
]

CHAT: Final = "openai-chat"
RESPONSES: Final = "openai-responses"
ANTHROPIC: Final = "anthropic"
GEMINI: Final = "gemini"
INTERACTIONS: Final = "google-interactions"

CONVERSATION_FIELDS: Final[dict[str, frozenset[str]]] = {
    CHAT: frozenset({"messages"}),
    RESPONSES: frozenset({"input", "instructions"}),
    ANTHROPIC: frozenset({"messages", "system"}),
    GEMINI: frozenset({"contents", "systemInstruction", "system_instruction"}),
    INTERACTIONS: frozenset({"input"}),
}
"""Top-level fields that :func:`maas_stream.convert_history` reads (or writes) per protocol."""

# Fields read into the envelope (so they are not reported as dropped), per client protocol.
_ENVELOPE_FIELDS: Final[dict[str, frozenset[str]]] = {
    CHAT: frozenset(
        {
            "model",
            "stream",
            "stream_options",
            "max_tokens",
            "max_completion_tokens",
            "temperature",
            "top_p",
            "tools",
        }
    ),
    RESPONSES: frozenset({"model", "stream", "max_output_tokens", "temperature", "top_p", "tools"}),
    ANTHROPIC: frozenset({"model", "stream", "max_tokens", "temperature", "top_p", "tools"}),
    GEMINI: frozenset({"model", "generationConfig", "generation_config", "tools"}),
}

ANTHROPIC_DEFAULT_MAX_TOKENS: Final = 4096
"""Anthropic requires ``max_tokens``; used when the client's request names no limit."""


@dataclass(frozen=True)
class Route:
    """What a request path asks for."""

    protocol: str
    """The client's protocol."""
    stream: bool | None
    """``True``/``False`` when the path decides it (Gemini), ``None`` when the body does."""
    model: str | None = None
    """The model named in the path (Gemini)."""


_GEMINI_PATH: Final = re.compile(
    r"^/(?:v1beta|v1|v1alpha)/models/([^/:]+):(streamGenerateContent|generateContent)$"
)
_PATHS: Final[dict[str, str]] = {
    "/v1/chat/completions": CHAT,
    "/chat/completions": CHAT,
    "/v1/responses": RESPONSES,
    "/responses": RESPONSES,
    "/v1/messages": ANTHROPIC,
}


def match_route(path: str) -> Route | None:
    """The client protocol a request path belongs to, or ``None`` for an unknown path."""
    protocol = _PATHS.get(path.rstrip("/"))
    if protocol is not None:
        return Route(protocol, None)
    m = _GEMINI_PATH.match(path)
    if m is not None:
        return Route(GEMINI, m.group(2) == "streamGenerateContent", m.group(1))
    return None


@dataclass
class FunctionTool:
    """A client-declared function tool (the only kind the bridge carries across protocols)."""

    name: str
    description: str | None
    parameters: Any


@dataclass
class Envelope:
    """The request fields besides the conversation that the bridge carries to the upstream."""

    model: str | None = None
    stream: bool = False
    max_tokens: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    tools: list[FunctionTool] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
    """What of the client's request is not forwarded (field names, non-function tools)."""


def _tools(protocol: str, raw: Any, env: Envelope) -> None:
    if not isinstance(raw, list):
        return
    for i, tool in enumerate(raw):
        if not isinstance(tool, dict):
            continue
        if protocol == GEMINI:
            decls = tool.get("functionDeclarations", tool.get("function_declarations"))
            for d in decls if isinstance(decls, list) else []:
                params = d.get("parametersJsonSchema", d.get("parameters_json_schema", d.get("parameters")))
                env.tools.append(FunctionTool(d.get("name", ""), d.get("description"), params))
            others = sorted(k for k in tool if k not in ("functionDeclarations", "function_declarations"))
            env.dropped.extend(f"tools[{i}].{k} (not a function declaration)" for k in others)
            continue
        kind = tool.get("type")
        if protocol == CHAT and kind == "function" and isinstance(tool.get("function"), dict):
            fn = tool["function"]
            env.tools.append(FunctionTool(fn.get("name", ""), fn.get("description"), fn.get("parameters")))
        elif protocol == RESPONSES and kind == "function":
            env.tools.append(
                FunctionTool(tool.get("name", ""), tool.get("description"), tool.get("parameters"))
            )
        elif protocol == ANTHROPIC and kind in (None, "custom") and "input_schema" in tool:
            env.tools.append(
                FunctionTool(tool.get("name", ""), tool.get("description"), tool["input_schema"])
            )
        else:
            env.dropped.append(f"tools[{i}] of type {kind!r} (only function tools are carried)")


def read_envelope(protocol: str, body: dict[str, Any], route: Route) -> Envelope:
    """Read a client request's envelope fields; list the top-level fields that go nowhere."""
    env = Envelope(model=route.model or _opt(body.get("model"), str))
    if protocol == GEMINI:
        env.stream = bool(route.stream)
        config = body.get("generationConfig", body.get("generation_config"))
        if isinstance(config, dict):
            env.max_tokens = _opt(config.get("maxOutputTokens", config.get("max_output_tokens")), int)
            env.temperature = _opt(config.get("temperature"), float)
            env.top_p = _opt(config.get("topP", config.get("top_p")), float)
            known = {"maxOutputTokens", "max_output_tokens", "temperature", "topP", "top_p"}
            env.dropped.extend(f"generationConfig.{k}" for k in sorted(config) if k not in known)
    else:
        env.stream = body.get("stream") is True
        limit = body.get("max_completion_tokens", body.get("max_tokens", body.get("max_output_tokens")))
        env.max_tokens = _opt(limit, int)
        env.temperature = _opt(body.get("temperature"), float)
        env.top_p = _opt(body.get("top_p"), float)
    _tools(protocol, body.get("tools"), env)
    skip = CONVERSATION_FIELDS.get(protocol, frozenset()) | _ENVELOPE_FIELDS.get(protocol, frozenset())
    env.dropped.extend(sorted(k for k in body if k not in skip))
    return env


def _opt(value: Any, kind: type[Any]) -> Any:
    if isinstance(value, bool) or not isinstance(value, (int, float) if kind is float else kind):
        return None
    return kind(value)


def build_body(protocol: str, conversation: dict[str, Any], env: Envelope) -> dict[str, Any]:
    """The upstream request body: the converted conversation plus the envelope in ``protocol``'s terms."""
    body = dict(conversation)
    if protocol == GEMINI:
        return _gemini_body(body, env)
    if env.model is not None:
        body["model"] = env.model
    body["stream"] = True
    tools = env.tools
    if protocol == CHAT:
        body["stream_options"] = {"include_usage": True}
        if env.max_tokens is not None:
            body["max_completion_tokens"] = env.max_tokens
        if tools:
            body["tools"] = [{"type": "function", "function": _named(t, "parameters")} for t in tools]
    elif protocol == RESPONSES:
        if env.max_tokens is not None:
            body["max_output_tokens"] = env.max_tokens
        if tools:
            body["tools"] = [{"type": "function", **_named(t, "parameters")} for t in tools]
    elif protocol == ANTHROPIC:
        body["max_tokens"] = env.max_tokens if env.max_tokens is not None else ANTHROPIC_DEFAULT_MAX_TOKENS
        if tools:
            body["tools"] = [_named(t, "input_schema") for t in tools]
    if env.temperature is not None:
        body["temperature"] = env.temperature
    if env.top_p is not None:
        body["top_p"] = env.top_p
    return body


def _gemini_body(body: dict[str, Any], env: Envelope) -> dict[str, Any]:
    config: dict[str, Any] = {}
    if env.max_tokens is not None:
        config["maxOutputTokens"] = env.max_tokens
    if env.temperature is not None:
        config["temperature"] = env.temperature
    if env.top_p is not None:
        config["topP"] = env.top_p
    if config:
        body["generationConfig"] = config
    if env.tools:
        body["tools"] = [{"functionDeclarations": [_gemini_tool(t) for t in env.tools]}]
    return body


def _named(tool: FunctionTool, schema_key: str) -> dict[str, Any]:
    out: dict[str, Any] = {"name": tool.name}
    if tool.description is not None:
        out["description"] = tool.description
    out[schema_key] = tool.parameters if tool.parameters is not None else {"type": "object", "properties": {}}
    return out


def _gemini_tool(tool: FunctionTool) -> dict[str, Any]:
    out: dict[str, Any] = {"name": tool.name}
    if tool.description is not None:
        out["description"] = tool.description
    if tool.parameters is not None:
        out["parametersJsonSchema"] = tool.parameters
    return out


# ---------------------------------------------------------------------- error bodies

_OPENAI_TYPES: Final = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    429: "rate_limit_error",
}
_ANTHROPIC_TYPES: Final = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    529: "overloaded_error",
}
_GOOGLE_STATUS: Final = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    405: "INVALID_ARGUMENT",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}


def error_body(protocol: str | None, status: int, message: str) -> dict[str, Any]:
    """An error body shaped the way ``protocol``'s SDK reads it (OpenAI shape for ``None``)."""
    if protocol == ANTHROPIC:
        kind = _ANTHROPIC_TYPES.get(status, "api_error")
        return {"type": "error", "error": {"type": kind, "message": message}}
    if protocol in (GEMINI, INTERACTIONS):
        state = _GOOGLE_STATUS.get(status, "INTERNAL" if status >= 500 else "FAILED_PRECONDITION")
        return {"error": {"code": status, "message": message, "status": state}}
    kind = _OPENAI_TYPES.get(status, "server_error" if status >= 500 else "invalid_request_error")
    return {"error": {"message": message, "type": kind, "param": None, "code": None}}
