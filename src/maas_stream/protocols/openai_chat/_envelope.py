"""The Chat Completions request envelope: every request field around ``messages``, both ways.

Read (a Chat client's body → :class:`~maas_stream._envelope.Envelope`, each field's path in
``env.sources``) and written (an envelope of any protocol → a Chat upstream body, with what
Chat cannot carry reported as :class:`~maas_stream._envelope.Unread`). Field names are the
``openai`` SDK's ``CompletionCreateParams``; docs/requests/openai-chat.md is the table, with the
judgment calls and the provider docs they rest on:

* ``tools``: ``function`` tools (with ``strict``) and ``custom`` tools (free-form input, with a
  ``grammar`` format); the deprecated ``functions`` list is read as function tools.
  ``web_search_options`` is Chat's one built-in tool (category ``web_search``): another
  protocol's web search is written as it, any other built-in is reported.
* ``tool_choice`` (``auto``/``none``/``required``, a named function or custom tool,
  ``allowed_tools``) and the deprecated ``function_call``; ``parallel_tool_calls``.
* ``reasoning_effort`` ↔ :class:`~maas_stream._envelope.Reasoning` (a budget becomes an effort
  through ``budget_effort`` only); Chat returns no reasoning summaries and no encrypted
  reasoning, so those requests are reported.
* ``response_format`` (``text``/``json_object``/``json_schema``), ``stop``, ``n``, ``seed``,
  the penalties, ``store``, ``metadata``, ``safety_identifier``/``user``, ``service_tier`` and
  ``stream_options.include_usage`` (the client's wish goes to the stream encoder: the upstream
  is always asked for usage).
* The rest (``logit_bias``, ``logprobs``, ``modalities``, ``audio``, ``prediction``,
  ``verbosity``, ``prompt_cache_key``...) travels natively, back to Chat only; the ones whose
  loss changes the answer are :data:`AFFECTS_OUTPUT`.

It must not convert the conversation (``messages`` is the history codec's) or do IO.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final, cast, get_args

from ..._envelope import (
    Envelope,
    EnvelopeCodec,
    FunctionTool,
    NativeTool,
    OutputFormat,
    Reasoning,
    ReasoningEffort,
    ToolChoice,
    Unread,
    budget_effort,
    other_tool,
)
from .._names import OPENAI_CHAT as NAME

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping

__all__ = ["AFFECTS_OUTPUT", "ENVELOPE", "MAX_STOP", "encoder_options"]

MAX_STOP: Final = 4
"""The most stop sequences Chat takes (API reference, ``stop``: "Up to 4 sequences")."""

AFFECTS_OUTPUT: Final = frozenset(
    {
        "logit_bias",
        "modalities",
        "audio",
        "verbosity",
        "moderation",
        "prediction",
        "reasoning",
        # Canonical fields travel natively only when their value could not be read.
        "tool_choice",
        "function_call",
        "functions",
        "reasoning_effort",
        "response_format",
        "stop",
        "n",
    }
)
"""Chat's own fields (no canonical counterpart) whose loss changes the answer: token bans and
boosts, audio output, answer length, moderation blocking, a predicted output (the answer may
differ), OpenRouter's ``reasoning`` object, and the answer-changing fields whose value this
codec could not read."""

_EFFORTS: Final = frozenset(get_args(ReasoningEffort))
_WEB_SEARCH: Final = "web_search_options"
_TIERS: Final = frozenset({"auto", "default", "flex", "scale", "priority", "fast"})
_TIER_MAP: Final = {"standard_only": "default", "standard": "default"}
"""Other providers' service tiers with a Chat equivalent (Anthropic ``standard_only``)."""

# ---------------------------------------------------------------------- tools


def _read_tool(tool: Mapping[str, Any]) -> tuple[list[FunctionTool | NativeTool], list[str]]:
    kind = tool.get("type")
    if kind == "function":
        fn = tool.get("function")
        if not isinstance(fn, dict):
            return [], ["function tool without a function object"]
        return [FunctionTool.of(fn, "parameters")], []
    if kind == "custom":
        custom = tool.get("custom")
        if not isinstance(custom, dict) or not isinstance(custom.get("name"), str):
            return [], ["custom tool without a named custom object"]
        description = custom.get("description")
        return [
            FunctionTool(
                custom["name"],
                description if isinstance(description, str) else None,
                kind="custom",
                format=custom.get("format"),
            )
        ], []
    return [], [other_tool(kind)]


def _write_tools(tools: list[FunctionTool], native: list[NativeTool], lost: list[Unread]) -> list[Any]:
    # Built-in tools are not ``tools[]`` entries in Chat: the write hook puts web search in
    # ``web_search_options`` and reports the rest.
    out: list[Any] = []
    for i, tool in enumerate(tools):
        if tool.cache_control is not None:
            lost.append(
                Unread(
                    "cache_control of a tool (Chat has no cache breakpoints)",
                    f"tools[{i}]",
                    "tools.cache_control",
                )
            )
        out.append(_custom(tool) if tool.kind == "custom" else _function(tool))
    return out


def _function(tool: FunctionTool) -> dict[str, Any]:
    decl = tool.declaration("parameters")
    if tool.strict is not None:
        decl["strict"] = tool.strict
    return {"type": "function", "function": decl}


def _custom(tool: FunctionTool) -> dict[str, Any]:
    custom: dict[str, Any] = {"name": tool.name}
    if tool.description is not None:
        custom["description"] = tool.description
    fmt = _grammar(tool.format)
    if fmt is not None:
        custom["format"] = fmt
    return {"type": "custom", "custom": custom}


def _grammar(fmt: Any) -> Any:
    """A custom tool's format in Chat's shape.

    Responses writes a grammar flat (``{"type": "grammar", "syntax", "definition"}``), Chat
    nests it under ``grammar``.
    """
    if isinstance(fmt, dict) and fmt.get("type") == "grammar" and "grammar" not in fmt:
        return {
            "type": "grammar",
            "grammar": {"syntax": fmt.get("syntax"), "definition": fmt.get("definition")},
        }
    return fmt


def _read_functions(body: Mapping[str, Any], env: Envelope) -> list[str]:
    """The deprecated ``functions`` / ``function_call`` pair, as tools and a tool choice.

    Each is read only when its successor (``tools`` / ``tool_choice``) is absent; otherwise it
    travels natively (back to Chat as it is, reported elsewhere).
    """
    consumed: list[str] = []
    functions = body.get("functions")
    if isinstance(functions, list) and "tools" not in body:
        consumed.append("functions")
        env.sources["tools"] = "functions"
        for i, fn in enumerate(functions):
            if isinstance(fn, dict) and isinstance(fn.get("name"), str):
                env.tools.append(FunctionTool.of(fn, "parameters"))
            else:
                env.dropped.append(
                    Unread("a function that is not a named object", f"functions[{i}]", "functions", True)
                )
    call = body.get("function_call")
    if "function_call" in body and "tool_choice" not in body:
        consumed.append("function_call")
        if call in ("auto", "none"):
            env.tool_choice = ToolChoice(call)
        elif isinstance(call, dict) and isinstance(call.get("name"), str):
            env.tool_choice = ToolChoice("required", (call["name"],))
        else:
            env.dropped.append(Unread("an unreadable function_call", "function_call", "function_call", True))
        env.sources["tool_choice"] = "function_call"
    return consumed


def _read_web_search(body: Mapping[str, Any], env: Envelope) -> list[str]:
    options = body.get(_WEB_SEARCH)
    if not isinstance(options, dict):
        return []
    env.native_tools.append(NativeTool(NAME, dict(options), "web_search"))
    env.sources["native_tools"] = _WEB_SEARCH
    return [_WEB_SEARCH]


def _write_native_tools(body: dict[str, Any], env: Envelope, lost: list[Unread]) -> None:
    for tool in env.native_tools:
        if tool.category != "web_search":
            lost.append(
                Unread(f"built-in tool {tool.category} (Chat has only web search)", field="native_tools")
            )
        elif _WEB_SEARCH in body:
            lost.append(Unread("a second web search tool (Chat takes one)", field="native_tools"))
        else:
            body[_WEB_SEARCH] = _web_search(tool, lost)


_LOCATION: Final = ("city", "country", "region", "timezone")


def _web_search(tool: NativeTool, lost: list[Unread]) -> dict[str, Any]:
    """Another protocol's web search as ``web_search_options`` (context size and location carry)."""
    if tool.protocol == NAME:
        return dict(tool.decl)
    options: dict[str, Any] = {}
    for key, value in tool.decl.items():
        if key == "search_context_size":
            options[key] = value
        elif key == "user_location" and isinstance(value, dict):
            place = value.get("approximate", value)
            approximate = {k: place[k] for k in _LOCATION if isinstance(place, dict) and k in place}
            options[key] = {"type": "approximate", "approximate": approximate}
        elif key not in ("type", "name") and value not in (None, {}, []):
            lost.append(
                Unread(f"web search setting {key} (Chat's web search has none)", field="native_tools")
            )
    return options


# ---------------------------------------------------------------------- tool choice


def _read_tool_choice(raw: Any) -> ToolChoice | None:
    if raw in ("auto", "none", "required"):
        return ToolChoice(raw)
    if not isinstance(raw, dict):
        return None
    kind = raw.get("type")
    if kind in ("function", "custom"):
        inner = raw.get(kind)
        name = inner.get("name") if isinstance(inner, dict) else None
        return ToolChoice("required", (name,)) if isinstance(name, str) else None
    if kind == "allowed_tools" and isinstance(raw.get("allowed_tools"), dict):
        allowed = raw["allowed_tools"]
        mode = allowed.get("mode")
        names = [_tool_name(t) for t in allowed.get("tools") or ()]
        if mode in ("auto", "required") and names and all(names):
            return ToolChoice(mode, tuple(n for n in names if n))
    return None


def _tool_name(tool: Any) -> str | None:
    kind = tool.get("type") if isinstance(tool, dict) else None
    if not isinstance(tool, dict) or not isinstance(kind, str):
        return None
    inner = tool.get(kind)
    name = inner.get("name") if isinstance(inner, dict) else tool.get("name")
    return name if isinstance(name, str) else None


def _write_tool_choice(body: dict[str, Any], env: Envelope, lost: list[Unread]) -> None:
    choice = env.tool_choice
    if choice is None:
        return
    if not body.get("tools"):
        # OpenAI refuses ``tool_choice`` without ``tools``; with no tools it means nothing.
        lost.append(Unread(f"request field {env.source('tool_choice')} (no tools to choose from)"))
        return
    kinds = {t.name: t.kind for t in env.tools}
    if choice.mode == "validated":
        # Gemini VALIDATED: may call, calls schema-checked. Chat's nearest is ``auto``.
        lost.append(Unread("tool choice mode validated (Chat has auto, none, required)", field="tool_choice"))
        body["tool_choice"] = "auto"
    elif choice.mode == "none" or not choice.names:
        body["tool_choice"] = choice.mode
    elif choice.mode == "required" and len(choice.names) == 1:
        kind = kinds.get(choice.names[0], "function")
        body["tool_choice"] = {"type": kind, kind: {"name": choice.names[0]}}
    else:
        tools = [
            {"type": kinds.get(n, "function"), kinds.get(n, "function"): {"name": n}} for n in choice.names
        ]
        body["tool_choice"] = {
            "type": "allowed_tools",
            "allowed_tools": {"mode": choice.mode, "tools": tools},
        }


# ---------------------------------------------------------------------- reasoning, output


def _read_reasoning(raw: Any) -> Reasoning | None:
    # ``max`` (newest models) has no canonical level above ``xhigh``.
    name = "xhigh" if raw == "max" else raw
    if not isinstance(name, str) or name not in _EFFORTS:
        return None
    effort = cast("ReasoningEffort", name)  # checked against the Literal's values above
    return Reasoning(enabled=effort != "none", effort=effort)


def _write_reasoning(body: dict[str, Any], env: Envelope, lost: list[Unread]) -> None:
    r = env.reasoning
    if r is None:
        return
    effort: ReasoningEffort | None = r.effort
    if effort is None and r.budget_tokens is not None:
        effort = budget_effort(r.budget_tokens)
    if r.enabled is False:
        effort = "none"
    if effort is not None:
        body["reasoning_effort"] = effort
    # Chat returns no reasoning to the client (OpenAI "Reasoning models": summaries and
    # encrypted reasoning are Responses features); the answer itself is unchanged.
    if r.summary is not None and effort != "none":
        lost.append(Unread("reasoning summaries (Chat returns no reasoning text)", field="reasoning.summary"))
    if r.include_encrypted:
        what = "encrypted reasoning (Chat returns none)"
        lost.append(Unread(what, field="reasoning.include_encrypted"))


def _read_output(raw: Any) -> OutputFormat | None:
    if not isinstance(raw, dict):
        return None
    kind = raw.get("type")
    if kind in ("text", "json_object"):
        return OutputFormat(kind)
    spec = raw.get("json_schema")
    if kind != "json_schema" or not isinstance(spec, dict):
        return None
    name, description, strict = spec.get("name"), spec.get("description"), spec.get("strict")
    return OutputFormat(
        "json_schema",
        spec.get("schema"),
        name if isinstance(name, str) else None,
        description if isinstance(description, str) else None,
        strict if isinstance(strict, bool) else None,
    )


def _write_output(out: OutputFormat) -> dict[str, Any]:
    if out.type != "json_schema":
        return {"type": out.type}
    # ``name`` is required by Chat; a schema named nowhere gets a neutral one.
    spec: dict[str, Any] = {"name": out.name or "response"}
    if out.description is not None:
        spec["description"] = out.description
    if out.schema is not None:
        spec["schema"] = out.schema
    if out.strict is not None:
        spec["strict"] = out.strict
    return {"type": "json_schema", "json_schema": spec}


# ---------------------------------------------------------------------- the hooks


def _read(body: Mapping[str, Any], env: Envelope) -> Iterable[str]:
    consumed: list[str] = []

    def take(name: str, value: Any, canonical: str) -> None:
        if value is not None:
            setattr(env, canonical, value)
            env.sources[canonical] = name
            consumed.append(name)

    options = body.get("stream_options")
    if isinstance(options, dict) and isinstance(options.get("include_usage"), bool):
        env.include_usage = options["include_usage"]
        env.sources["include_usage"] = "stream_options.include_usage"
    consumed += _read_functions(body, env)
    consumed += _read_web_search(body, env)
    # Each field read only when present (a reader gives ``None`` for an absent one anyway).
    for name, read, canonical in _SETTINGS:
        if name in body:
            take(name, read(body[name]), canonical)
    metadata = body.get("metadata")
    if isinstance(metadata, dict) and all(isinstance(v, str) for v in metadata.values()):
        take("metadata", dict(metadata), "metadata")
    if "safety_identifier" in body or "user" in body:
        # ``safety_identifier`` replaces ``user`` for abuse monitoring (API reference); when
        # both are given, ``user`` (now a prompt-cache hint) travels natively.
        user = "safety_identifier" if isinstance(body.get("safety_identifier"), str) else "user"
        take(user, body.get(user) if isinstance(body.get(user), str) else None, "user")
    tier = body.get("service_tier")
    if isinstance(tier, str):
        take("service_tier", tier, "service_tier")
    return consumed


def _read_stop(stop: Any) -> list[str] | None:
    return [stop] if isinstance(stop, str) else _strings(stop)


def _write(body: dict[str, Any], env: Envelope, lost: list[Unread]) -> Iterable[str]:
    _write_native_tools(body, env, lost)
    _write_tool_choice(body, env, lost)
    if env.parallel_tool_calls is not None:
        if body.get("tools"):
            body["parallel_tool_calls"] = env.parallel_tool_calls
        else:  # refused by OpenAI without tools, and meaningless
            lost.append(Unread(f"request field {env.source('parallel_tool_calls')} (no tools to call)"))
    _write_reasoning(body, env, lost)
    if env.output is not None:
        body["response_format"] = _write_output(env.output)
    if env.stop:
        body["stop"] = env.stop[:MAX_STOP]
        if len(env.stop) > MAX_STOP:
            what = f"stop sequences past the first {MAX_STOP} (Chat takes {MAX_STOP})"
            lost.append(Unread(what, env.source("stop"), "stop"))
    for name in ("n", "seed", "presence_penalty", "frequency_penalty", "store", "metadata"):
        value = getattr(env, name)
        if value is not None:
            body[name] = value
    if env.user is not None:
        body["safety_identifier"] = env.user
    tier = env.service_tier
    if tier is not None:
        tier = _TIER_MAP.get(tier, tier)
        if tier in _TIERS:
            body["service_tier"] = tier
        else:
            lost.append(
                Unread(f"service tier {tier!r} (Chat has {', '.join(sorted(_TIERS))})", field="service_tier")
            )
    # ``include_usage`` is no upstream field: the upstream is always asked for usage
    # (``fixed``); the client's wish is the encoder's.
    return (
        "tool_choice",
        "parallel_tool_calls",
        "reasoning",
        "output",
        "stop",
        "n",
        "seed",
        "presence_penalty",
        "frequency_penalty",
        "store",
        "metadata",
        "user",
        "service_tier",
    )


def _bool(value: Any) -> bool | None:
    return value if isinstance(value, bool) else None


def _int(value: Any) -> int | None:
    return value if type(value) is int else None


def _float(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _strings(value: Any) -> list[str] | None:
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        return list(value)
    return None


_SETTINGS: tuple[tuple[str, Callable[[Any], Any], str], ...] = (
    ("tool_choice", _read_tool_choice, "tool_choice"),
    ("parallel_tool_calls", _bool, "parallel_tool_calls"),
    ("reasoning_effort", _read_reasoning, "reasoning"),
    ("response_format", _read_output, "output"),
    ("stop", _read_stop, "stop"),
    ("n", _int, "n"),
    ("seed", _int, "seed"),
    ("presence_penalty", _float, "presence_penalty"),
    ("frequency_penalty", _float, "frequency_penalty"),
    ("store", _bool, "store"),
)
"""The body fields read by one function each, in reading order: (field, reader, canonical field)."""


def encoder_options(env: Envelope) -> dict[str, Any]:
    """Stream encoder options honouring the client's request: the usage chunk only when asked."""
    return {"include_usage": env.include_usage is True}


ENVELOPE = EnvelopeCodec(
    protocol=NAME,
    conversation=frozenset({"messages"}),
    read_tool=_read_tool,
    write_tools=_write_tools,
    max_tokens=("max_completion_tokens", "max_tokens"),
    # Without it the stream carries no usage.
    fixed={"stream_options": {"include_usage": True}},
    read_hook=_read,
    write_hook=_write,
    affects_output=AFFECTS_OUTPUT,
)
"""Where a Chat Completions request keeps its envelope."""
