"""The Messages request envelope: every ``POST /v1/messages`` field around the conversation.

Read: ``model``, ``stream``, ``max_tokens``, ``temperature``, ``top_p`` (the shared codec),
``top_k``, ``stop_sequences``, ``tools`` (client tools with ``strict`` and ``cache_control``;
server and Anthropic-defined tools as :class:`NativeTool` with a cross-protocol category),
``tool_choice`` (with ``disable_parallel_tool_use``), ``thinking`` and ``output_config``
(reasoning, effort, structured output), ``metadata.user_id`` and ``service_tier``. A field is
read into canonical terms only as far as it is understood: an unknown ``thinking`` or
``tool_choice`` type stays whole in :attr:`Envelope.native`, an unknown key of
``output_config`` or ``metadata`` (and a client tool's ``input_examples``, ``allowed_callers``,
``defer_loading``...) as a nested native path, which goes back where it was for an Anthropic
upstream (the codec merges objects; :func:`_write_tool_extras` puts tool fields back on their
tool) and every other protocol reports. Everything else of the body
(``cache_control``, ``container``, ``mcp_servers``, ``inference_geo``...) is native as a whole.

Written: every canonical field Messages can carry; the judgment calls (effort ↔ budget through
:func:`~maas_stream._envelope.effort_budget` only, the thinking budget below ``max_tokens``,
thinking with a forced tool choice, sampling under thinking, allowed tools, service tiers,
built-in tool versions) are documented in docs/requests/anthropic.md with their provider docs.

It must not convert the conversation (``messages`` and ``system`` are the history codec's) or
do IO.
"""

from __future__ import annotations

import copy
import dataclasses
from typing import TYPE_CHECKING, Any, Final

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
    effort_budget,
)
from .._names import ANTHROPIC as NAME

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

__all__ = ["DEFAULT_MAX_TOKENS", "ENVELOPE", "MIN_THINKING_BUDGET"]

DEFAULT_MAX_TOKENS: Final = 4096
"""Anthropic requires ``max_tokens``; used when the request names no limit and the target
model's own maximum is unknown (``_models``)."""

MIN_THINKING_BUDGET: Final = 1024
"""The smallest ``thinking.budget_tokens`` Anthropic takes (``ThinkingConfigEnabledParam``:
"Must be ≥1024 and less than ``max_tokens``")."""

# --------------------------------------------------------------------------------- tools

_CLIENT_TOOL_KEYS: Final = frozenset(
    {"type", "name", "description", "input_schema", "strict", "cache_control"}
)
"""The client-tool declaration keys :class:`FunctionTool` holds; the others travel natively."""

_CATEGORIES: Final = (
    ("web_search_", "web_search"),
    ("web_fetch_", "url_context"),
    ("code_execution_", "code_execution"),
    ("computer_", "computer_use"),
    ("bash_", "shell"),
    ("text_editor_", "text_editor"),
    ("memory_", "memory"),
    ("tool_search_tool_", "tool_search"),
    ("mcp_toolset", "mcp"),
    ("browser_toolset_", "browser"),
    ("advisor_", "advisor"),
)
"""Versioned tool type prefix → cross-protocol category (the type itself when none matches)."""

_WRITTEN_NATIVE: Final[dict[str, dict[str, str]]] = {
    "web_search": {"type": "web_search_20250305", "name": "web_search"},
    "url_context": {"type": "web_fetch_20250910", "name": "web_fetch"},
    "code_execution": {"type": "code_execution_20250825", "name": "code_execution"},
}
"""Another protocol's built-in tool → the Anthropic server tool that does the same (the oldest
generally available version of each, which every current model takes)."""

_LOCATION_KEYS: Final = ("city", "region", "country", "timezone")


def _category(kind: str) -> str:
    return next((cat for prefix, cat in _CATEGORIES if kind.startswith(prefix)), kind)


def _read_tool(tool: Mapping[str, Any]) -> tuple[list[FunctionTool | NativeTool], list[str]]:
    # Client tools have no type (or "custom") and a schema; the others have a versioned type.
    kind = tool.get("type")
    if kind in (None, "custom"):
        if not isinstance(tool.get("name"), str) or not isinstance(tool.get("input_schema"), dict):
            return [], ["a client tool without a name and an input_schema object"]
        return [FunctionTool.of(tool, "input_schema")], []
    if not isinstance(kind, str):
        return [], [f"tool of type {kind!r}"]
    return [NativeTool(NAME, dict(tool), _category(kind))], []


def _write_tools(tools: list[FunctionTool], native: list[NativeTool], lost: list[Unread]) -> list[Any]:
    out: list[Any] = []
    for t in tools:
        if t.kind == "custom":
            what = f"custom tool {t.name!r} (Anthropic tool input is a JSON object)"
            lost.append(Unread(what, field="tools.custom"))
            continue
        decl = t.declaration("input_schema")
        if t.strict is not None:
            decl["strict"] = t.strict
        if t.cache_control is not None:
            decl["cache_control"] = copy.deepcopy(t.cache_control)
        out.append(decl)
    for n in native:
        mapped = copy.deepcopy(dict(n.decl)) if n.protocol == NAME else _native_tool(n, lost)
        if mapped is not None:
            out.append(mapped)
    return out


def _native_tool(tool: NativeTool, lost: list[Unread]) -> dict[str, Any] | None:
    """Another protocol's built-in tool as the Anthropic server tool doing the same, if any."""
    base = _WRITTEN_NATIVE.get(tool.category)
    if base is None:
        lost.append(Unread(f"built-in tool {tool.category} (no Anthropic equivalent)", field="native_tools"))
        return None
    out: dict[str, Any] = dict(base)
    # A type-tagged declaration (Responses) holds its options at the top; a key-tagged one
    # (Gemini ``{"googleSearch": {...}}``) inside its only key.
    options = dict(tool.decl)
    if "type" in options:
        options.pop("type")
    elif len(options) == 1:
        inner = next(iter(options.values()))
        options = dict(inner) if isinstance(inner, dict) else {}
    if tool.category == "web_search":
        _web_search_options(options, out)
    if tool.category == "code_execution" and options.get("container") in ({"type": "auto"}, "auto"):
        options.pop("container")  # Anthropic starts a fresh container unless told otherwise
    for key in sorted(options):
        what = f"built-in tool {tool.category} option {key} (no Anthropic equivalent)"
        lost.append(Unread(what, field="native_tools.options"))
    return out


def _web_search_options(options: dict[str, Any], out: dict[str, Any]) -> None:
    # Responses ``user_location`` {type: approximate, city, region, country, timezone} has
    # Anthropic's shape; ``filters.allowed_domains`` is Anthropic's ``allowed_domains``.
    location = options.get("user_location")
    if isinstance(location, dict) and location.get("type", "approximate") == "approximate":
        options.pop("user_location")
        kept = {k: location[k] for k in _LOCATION_KEYS if isinstance(location.get(k), str)}
        out["user_location"] = {"type": "approximate", **kept}
    filters = options.get("filters")
    if isinstance(filters, dict) and set(filters) == {"allowed_domains"}:
        options.pop("filters")
        out["allowed_domains"] = list(filters["allowed_domains"])


# --------------------------------------------------------------------------------- read


_EFFORTS: Final[dict[str, ReasoningEffort]] = {
    "low": "low",
    "medium": "medium",
    "high": "high",
    "xhigh": "xhigh",
    # Anthropic's highest level; xhigh is the highest canonical one (and OpenAI's).
    "max": "xhigh",
}

_SERVICE_TIERS: Final = {
    "auto": "auto",
    "standard_only": "standard_only",
    "default": "standard_only",
    "priority": "auto",
}
"""Canonical (Anthropic's or OpenAI's) service tier → Anthropic's. OpenAI ``default`` is
standard capacity; ``priority`` is Anthropic's ``auto`` (priority capacity when available)."""


def _read(body: Mapping[str, Any], env: Envelope) -> Iterable[str]:
    consumed = [
        *_read_settings(body, env),
        *_read_tool_choice(body, env),
        *_read_thinking(body, env),
        *_read_output_config(body, env),
        *_read_metadata(body, env),
    ]
    _read_tool_extras(body.get("tools"), env)
    return consumed


def _read_settings(body: Mapping[str, Any], env: Envelope) -> Iterable[str]:
    top_k = body.get("top_k")
    if isinstance(top_k, int) and not isinstance(top_k, bool):
        env.top_k = top_k
        env.sources["top_k"] = "top_k"
        yield "top_k"
    stop = body.get("stop_sequences")
    if isinstance(stop, list) and all(isinstance(s, str) for s in stop):
        env.stop = list(stop)
        env.sources["stop"] = "stop_sequences"
        yield "stop_sequences"
    tier = body.get("service_tier")
    if isinstance(tier, str):
        env.service_tier = tier
        env.sources["service_tier"] = "service_tier"
        yield "service_tier"


def _read_tool_choice(body: Mapping[str, Any], env: Envelope) -> Iterable[str]:
    raw = body.get("tool_choice")
    if not isinstance(raw, dict) or not set(raw) <= {"type", "name", "disable_parallel_tool_use"}:
        return ()
    disable = raw.get("disable_parallel_tool_use")
    if disable is not None and not isinstance(disable, bool):
        return ()
    name = raw.get("name")
    match raw.get("type"):
        case "auto":
            choice = ToolChoice("auto")
        case "any":
            choice = ToolChoice("required")
        case "none":
            choice = ToolChoice("none")
        case "tool" if isinstance(name, str):
            choice = ToolChoice("required", (name,))
        case _:
            return ()
    env.tool_choice = choice
    env.sources["tool_choice"] = "tool_choice"
    if disable is not None:
        env.parallel_tool_calls = not disable
        env.sources["parallel_tool_calls"] = "tool_choice.disable_parallel_tool_use"
    return ("tool_choice",)


def _read_thinking(body: Mapping[str, Any], env: Envelope) -> Iterable[str]:
    raw = body.get("thinking")
    if not isinstance(raw, dict) or not set(raw) <= {"type", "budget_tokens", "display"}:
        return ()
    budget = raw.get("budget_tokens")
    display = raw.get("display")
    summary = None if display == "omitted" else "auto"
    match raw.get("type"):
        case "enabled" if isinstance(budget, int) and not isinstance(budget, bool):
            reasoning = Reasoning(enabled=True, budget_tokens=budget, summary=summary)
        case "adaptive":
            # Claude decides how much to think: the dynamic budget (Gemini's -1).
            reasoning = Reasoning(enabled=True, budget_tokens=-1, summary=summary)
        case "disabled":
            reasoning = Reasoning(enabled=False)
        case _:  # between_tools, or a type of a newer API: kept whole, refused elsewhere
            return ()
    env.reasoning = reasoning
    env.sources["reasoning"] = "thinking"
    return ("thinking",)


def _read_output_config(body: Mapping[str, Any], env: Envelope) -> Iterable[str]:
    raw = body.get("output_config")
    if not isinstance(raw, dict):
        return ()
    rest = dict(raw)
    effort = rest.get("effort")
    if effort is None or effort in _EFFORTS:
        rest.pop("effort", None)
        if effort is not None:
            env.reasoning = dataclasses.replace(env.reasoning or Reasoning(), effort=_EFFORTS[effort])
            env.sources.setdefault("reasoning", "output_config.effort")
    fmt = rest.get("format")
    if fmt is None or (
        isinstance(fmt, dict) and fmt.get("type") == "json_schema" and set(fmt) <= {"type", "schema"}
    ):
        rest.pop("format", None)
        if fmt is not None:
            env.output = OutputFormat("json_schema", fmt.get("schema"))
            env.sources["output"] = "output_config.format"
    for key, value in rest.items():
        env.native[f"output_config.{key}"] = value
    return ("output_config",)


def _read_metadata(body: Mapping[str, Any], env: Envelope) -> Iterable[str]:
    raw = body.get("metadata")
    if not isinstance(raw, dict):
        return ()
    for key, value in raw.items():
        if key == "user_id" and isinstance(value, str):
            env.user = value
            env.sources["user"] = "metadata.user_id"
        elif not (key == "user_id" and value is None):
            env.native[f"metadata.{key}"] = value
    return ("metadata",)


def _read_tool_extras(raw: Any, env: Envelope) -> None:
    # A client tool's fields without canonical counterpart, by tool name under ``tools.<key>``.
    for tool in raw if isinstance(raw, list) else []:
        if not isinstance(tool, dict) or tool.get("type") not in (None, "custom"):
            continue
        name = tool.get("name")
        for key in sorted(set(tool) - _CLIENT_TOOL_KEYS):
            if isinstance(name, str):
                env.native.setdefault(f"tools.{key}", {})[name] = tool[key]


# --------------------------------------------------------------------------------- write


def _write(body: dict[str, Any], env: Envelope, lost: list[Unread]) -> Iterable[str]:
    handled: list[str] = []
    if env.top_k is not None:
        body["top_k"] = env.top_k
        handled.append("top_k")
    if env.stop is not None:
        body["stop_sequences"] = list(env.stop)
        handled.append("stop")
    handled += _write_tool_choice(body, env, lost)
    handled += _write_reasoning(body, env, lost)
    handled += _write_output(body, env, lost)
    handled += _write_identity(body, env, lost)
    if env.origin == NAME:
        handled += _write_tool_extras(body, env)
    return handled


def _write_tool_choice(body: dict[str, Any], env: Envelope, lost: list[Unread]) -> Iterable[str]:
    choice, parallel = env.tool_choice, env.parallel_tool_calls
    if choice is None and parallel is None:
        return ()
    if not body.get("tools"):
        # Anthropic takes tool_choice only with tools; without tools there is nothing to choose.
        return ("tool_choice", "parallel_tool_calls")
    out: dict[str, Any]
    if choice is None or choice.mode == "auto":
        out = {"type": "auto"}
    elif choice.mode == "none":
        out = {"type": "none"}
    elif choice.mode == "required" and len(choice.names) == 1:
        out = {"type": "tool", "name": choice.names[0]}
    elif choice.mode == "required":
        out = {"type": "any"}
    else:  # validated: Gemini's "may call, schema-checked"
        out = {"type": "auto"}
        lost.append(
            Unread(f"request field {env.source('tool_choice')} (validated mode)", field="tool_choice")
        )
    if choice is not None and choice.names and choice.mode != "none" and out["type"] != "tool":
        what = f"request field {env.source('tool_choice')} (allowed tools {', '.join(choice.names)})"
        lost.append(Unread(what, field="tool_choice"))
    if parallel is not None and out["type"] != "none":
        out["disable_parallel_tool_use"] = not parallel
    body["tool_choice"] = out
    return ("tool_choice", "parallel_tool_calls")


def _write_reasoning(body: dict[str, Any], env: Envelope, lost: list[Unread]) -> Iterable[str]:
    r = env.reasoning
    if r is None:
        return ()
    # include_encrypted needs nothing: Anthropic thinking always comes signed (replayable).
    budget, effort = r.budget_tokens, r.effort
    thinking: dict[str, Any] | None = None
    derived = False  # the budget stands for the effort (effort_budget), which is then not sent
    if r.enabled is False or budget == 0 or (effort == "none" and budget is None):
        thinking = {"type": "disabled"}
    elif budget == -1 or (budget is None and effort is None and (r.enabled or r.summary is not None)):
        thinking = {"type": "adaptive"}
    elif budget is not None or effort is not None:
        derived = budget is None
        wanted = budget if budget is not None else effort_budget(effort or "medium")
        thinking = {"type": "enabled", "budget_tokens": max(wanted, MIN_THINKING_BUDGET)}
    if thinking is None:
        return ("reasoning",)  # only include_encrypted was said
    on = thinking["type"] != "disabled"
    if on and body.get("tool_choice", {}).get("type") in ("any", "tool"):
        what = (
            f"request field {env.source('reasoning')} (Anthropic thinks only with tool_choice auto or none)"
        )
        lost.append(Unread(what, field="reasoning"))
        return ("reasoning",)
    if effort not in (None, "none") and not derived:
        body.setdefault("output_config", {})["effort"] = "low" if effort == "minimal" else effort
    if "budget_tokens" in thinking:
        _fit_limit(body, thinking["budget_tokens"])
    if on and r.summary is not None:
        thinking["display"] = "summarized"
    body["thinking"] = thinking
    if on:
        _fit_sampling(body, env, lost)
    return ("reasoning",)


def _fit_limit(body: dict[str, Any], budget: int) -> None:
    # Thinking counts toward max_tokens and its budget must stay below it: the answer keeps the
    # room the request asked for on top of the budget.
    limit = body.get("max_tokens")
    if isinstance(limit, int) and limit <= budget:
        body["max_tokens"] = budget + limit


def _fit_sampling(body: dict[str, Any], env: Envelope, lost: list[Unread]) -> None:
    # Thinking takes no temperature or top_k change, and top_p only from 0.95 to 1.
    unfit = [
        name
        for name, fits in (
            ("temperature", body.get("temperature", 1) == 1),
            ("top_k", "top_k" not in body),
            ("top_p", body.get("top_p", 1) >= 0.95),
        )
        if not fits
    ]
    for name in unfit:
        del body[name]
        what = f"request field {env.source(name)} (Anthropic thinking does not take it)"
        lost.append(Unread(what, field=name))


def _write_output(body: dict[str, Any], env: Envelope, lost: list[Unread]) -> Iterable[str]:
    out = env.output
    if out is None:
        return ()
    source = env.source("output")
    if out.type == "json_schema" and isinstance(out.schema, dict):
        body.setdefault("output_config", {})["format"] = {"type": "json_schema", "schema": out.schema}
        if out.description is not None:
            lost.append(Unread(f"request field {source} description", field="output.description"))
    elif out.type != "text":
        what = "any JSON object" if out.type == "json_object" else "a schema that is not an object"
        lost.append(Unread(f"request field {source} ({what}: Anthropic needs a JSON schema)", field="output"))
    return ("output",)


def _write_identity(body: dict[str, Any], env: Envelope, lost: list[Unread]) -> Iterable[str]:
    handled: list[str] = []
    if env.user is not None:
        body.setdefault("metadata", {})["user_id"] = env.user
        handled.append("user")
    if env.service_tier is not None:
        tier = _SERVICE_TIERS.get(env.service_tier)
        if tier is None:
            what = f"request field {env.source('service_tier')} ({env.service_tier}: no Anthropic tier)"
            lost.append(Unread(what, field="service_tier"))
        else:
            body["service_tier"] = tier
        handled.append("service_tier")
    if env.store is not None:
        # The Messages API keeps nothing to retrieve later: store false holds as it is.
        if env.store:
            what = f"request field {env.source('store')} (Anthropic keeps no responses to retrieve)"
            lost.append(Unread(what, field="store"))
        handled.append("store")
    return handled


def _write_tool_extras(body: dict[str, Any], env: Envelope) -> Iterable[str]:
    # Back to an Anthropic upstream: a client tool's own fields go back on that tool (the codec
    # merges the other nested native paths, ``output_config.task_budget``, itself).
    for path, value in env.native.items():
        head, _, key = path.partition(".")
        if head != "tools" or not key or not isinstance(value, dict):
            continue
        for decl in body.get("tools", []):
            if decl.get("type") in (None, "custom") and decl.get("name") in value:
                decl[key] = copy.deepcopy(value[decl["name"]])
        yield path


ENVELOPE = EnvelopeCodec(
    protocol=NAME,
    conversation=frozenset({"messages", "system"}),
    read_tool=_read_tool,
    write_tools=_write_tools,
    max_tokens=("max_tokens",),
    default_max_tokens=DEFAULT_MAX_TOKENS,
    read_hook=_read,
    write_hook=_write,
    affects_output=frozenset(
        {
            "thinking",
            "tool_choice",
            "output_config",
            "output_config.effort",
            "output_config.format",
            "output_config.task_budget",
            "container",
            "mcp_servers",
            # Not context_management: it edits what the provider keeps of earlier turns (clearing
            # old tool results and thinking) to fit the window; an upstream without it sees the
            # whole history, which changes no answer. Claude Code sends it on every request.
            "compaction",
            "thread",
            "tools.input_examples",
            "tools.allowed_callers",
            "tools.defer_loading",
        }
    ),
)
"""Where a Messages request keeps its envelope."""
