"""The Interactions request envelope: every ``POST /v1beta/interactions`` field besides the conversation.

The current schema (``GGI:createmodelinteraction.py``, PROTOCOLS.md §5.2), snake_case on the
wire. The mapping, with the provider docs each judgment call rests on, is
docs/requests/google-interactions.md:

* ``model``, ``stream`` and, in ``generation_config``, ``max_output_tokens``, ``temperature``,
  ``top_p`` (the codec's); ``seed``, ``stop_sequences``; ``thinking_level`` /
  ``thinking_summaries`` ↔ :class:`Reasoning`; ``tool_choice`` (``auto``/``any``/``none``/
  ``validated`` or ``{"allowed_tools": {mode, tools}}``) ↔ :class:`ToolChoice`. The rest of
  ``generation_config`` (``speech_config``, ``image_config``, ``video_config``,
  ``transcription_config``) is native.
* ``tools``: ``function`` ↔ :class:`FunctionTool`; every built-in (``google_search``,
  ``code_execution``, ``url_context``, ``file_search``, ``google_maps``, ``computer_use``,
  ``mcp_server``, ``retrieval``...) ↔ :class:`NativeTool` by category.
* ``response_format`` (a text format with ``mime_type`` and ``schema``; the legacy raw JSON
  schema with ``response_mime_type``) ↔ :class:`OutputFormat`.
* ``store``, ``service_tier``, ``labels`` (↔ ``metadata``); ``background: false`` is the
  default and read as such.
* Native, written back only to Interactions: ``previous_interaction_id`` (a conversation
  stored by the provider: the bridge's store expands it for other upstreams), ``background:
  true``, ``agent`` / ``agent_config``, ``environment``, ``safety_settings``,
  ``cached_content``, ``continuation_token``, ``response_modalities``, ``webhook_config``.
  Those that change the answer are in :data:`AFFECTS_OUTPUT`.

It must not convert the conversation (``input`` and ``system_instruction`` are the history
codec's) or do IO.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final, cast

from ..._envelope import (
    Envelope,
    EnvelopeCodec,
    FunctionTool,
    NativeTool,
    OutputFormat,
    Reasoning,
    ReasoningEffort,
    ToolChoice,
    ToolChoiceMode,
    Unread,
    budget_effort,
)
from .._names import GEMINI
from .._names import GOOGLE_INTERACTIONS as NAME

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

__all__ = ["AFFECTS_OUTPUT", "ENVELOPE"]

AFFECTS_OUTPUT: Final = frozenset(
    {
        # Stateful: without them the model does not see the stored conversation.
        "previous_interaction_id",
        "continuation_token",
        "cached_content",
        # A background run answers with a resource to poll, not the answer.
        "background",
        # An agent (Deep Research...) and the environment it runs in, instead of a model.
        "agent",
        "agent_config",
        "environment",
        # Blocking thresholds and other output kinds.
        "safety_settings",
        "response_modalities",
        "response_format",
        "response_mime_type",
        "generation_config.speech_config",
        "generation_config.image_config",
        "generation_config.video_config",
        # Values the reader could not map (kept whole).
        "generation_config.tool_choice",
        "generation_config.thinking_level",
    }
)
"""Native Interactions fields whose loss changes what the model does (refused across protocols)."""

_BUILT_INS: Final[dict[str, str]] = {
    "google_search": "web_search",
    "code_execution": "code_execution",
    "url_context": "url_context",
    "file_search": "file_search",
    "google_maps": "googleMaps",
    "computer_use": "computer_use",
    "mcp_server": "mcp",
    "retrieval": "retrieval",
}
"""Built-in tool type → cross-protocol category (``GGI:tool.py``); Gemini's names for the same
tools give the same categories, so the two Google protocols map onto each other. Other types are
their own category."""

_WRITE_BUILT_INS: Final[dict[str, tuple[str, frozenset[str]]]] = {
    "web_search": ("google_search", frozenset({"search_types"})),
    "code_execution": ("code_execution", frozenset()),
    "url_context": ("url_context", frozenset()),
}
"""Another protocol's built-in category → the Interactions tool that does the same, and the
settings it takes (snake_case). Other settings are reported."""

_GOOGLE_BUILT_INS: Final[dict[str, tuple[str, frozenset[str]]]] = {
    **_WRITE_BUILT_INS,
    "file_search": ("file_search", frozenset({"file_search_store_names", "metadata_filter", "top_k"})),
    "googleMaps": ("google_maps", frozenset({"enable_widget", "latitude", "longitude"})),
}
"""Gemini's built-ins with an Interactions twin: file search stores and Maps are the same Google
services (an OpenAI vector store is not a file search store)."""

TOOL_EXTRAS: Final = ("defer_loading", "short_description")
"""Fields of a function tool no other protocol has (tool search): reported by the reader."""

_MODES_IN: Final[dict[str, ToolChoiceMode]] = {
    "auto": "auto",
    "any": "required",
    "none": "none",
    "validated": "validated",
}
_MODES_OUT: Final[dict[str, str]] = {v: k for k, v in _MODES_IN.items()}

_LEVELS: Final = frozenset({"minimal", "low", "medium", "high", "xhigh"})
"""``thinking_level`` values (``GGI:thinkinglevel.py``), each a canonical effort."""

_TIERS_OUT: Final[dict[str, str]] = {
    "flex": "flex",
    "priority": "priority",
    "standard": "standard",
    "default": "standard",
    "standard_only": "standard",
    "deferred": "deferred",
}
"""Canonical service tier → ``service_tier`` (``GGI:servicetier.py``); ``auto`` is the default
(nothing written)."""

_LABEL_CHARS: Final = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_-")

_FORMATS: Final = frozenset({"text", "audio", "image", "video"})
"""``response_format`` object types (``GGI:responseformat.py``); another ``type`` is a JSON schema's."""
_JSON: Final = "application/json"
_TEXT: Final = "text/plain"

_OPTIONAL: Final = (
    "generation_config",
    "tools",
    "response_format",
    "response_mime_type",
    "store",
    "service_tier",
    "labels",
    "background",
    "previous_interaction_id",
)
"""Top-level fields whose ``null`` is the API default (consumed, nothing set)."""


# ---------------------------------------------------------------------- tools


def _read_tool(tool: Mapping[str, Any]) -> tuple[list[FunctionTool | NativeTool], list[str]]:
    kind = tool.get("type")
    if kind == "function":
        return [FunctionTool.of(tool, "parameters")], []
    if not isinstance(kind, str):
        return [], [f"tool of type {kind!r}"]
    return [NativeTool(NAME, dict(tool), _BUILT_INS.get(kind, kind))], []


def _write_tools(tools: list[FunctionTool], native: list[NativeTool], lost: list[Unread]) -> list[Any]:
    out: list[Any] = []
    for tool in tools:
        if tool.kind == "custom":
            # No free-form tools: a function taking text would come back as a call of a
            # function the client never declared.
            lost.append(Unread(f"custom tool {tool.name}", "tools", "tools.custom"))
            continue
        if tool.cache_control is not None:
            lost.append(Unread(f"cache_control of tool {tool.name}", "tools", "tools.cache_control"))
        # ``strict`` needs no field: the write hook asks for ``validated`` calling instead.
        out.append({"type": "function", **tool.declaration("parameters", empty_schema=False)})
    for built_in in native:
        written = dict(built_in.decl) if built_in.protocol == NAME else _built_in(built_in, lost)
        if written is not None:
            out.append(written)
    return out


def _built_in(tool: NativeTool, lost: list[Unread]) -> dict[str, Any] | None:
    """Another protocol's built-in tool as the Interactions one that does the same, or ``None``."""
    google = tool.protocol == GEMINI
    found = (_GOOGLE_BUILT_INS if google else _WRITE_BUILT_INS).get(tool.category)
    if found is None:
        lost.append(Unread(f"built-in tool {tool.category}", field="native_tools"))
        return None
    kind, takes = found
    out: dict[str, Any] = {"type": kind}
    settings = _settings(tool)
    for key in sorted(settings):
        if key in takes:
            out[key] = settings[key]
        else:
            lost.append(Unread(f"setting {key} of built-in tool {tool.category}", field="tools.options"))
    return out


def _settings(tool: NativeTool) -> dict[str, Any]:
    """What a built-in declaration configures, with snake_case names (besides type and name)."""
    if tool.protocol == GEMINI:
        # {"googleSearch": {...}}: the settings are the one key's object, camelCase.
        inner = next(iter(tool.decl.values()), None) if len(tool.decl) == 1 else None
        return {_snake(k): v for k, v in inner.items()} if isinstance(inner, dict) else {}
    return {k: v for k, v in tool.decl.items() if k not in ("type", "name")}


def _snake(name: str) -> str:
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in name).lstrip("_")


# ---------------------------------------------------------------------- read


def _read(body: Mapping[str, Any], env: Envelope) -> Iterable[str]:
    consumed = {k for k in _OPTIONAL if k in body and body[k] is None}
    settings = body.get("generation_config")
    if isinstance(settings, dict):
        consumed.update(f"generation_config.{k}" for k in _read_settings(settings, env))
    consumed.update(_read_output(body, env))
    if isinstance(body.get("store"), bool):
        env.store = body["store"]
        env.sources["store"] = "store"
        consumed.add("store")
    if isinstance(body.get("service_tier"), str):
        env.service_tier = body["service_tier"].lower()
        env.sources["service_tier"] = "service_tier"
        consumed.add("service_tier")
    labels = body.get("labels")
    if isinstance(labels, dict) and all(isinstance(v, str) for v in labels.values()):
        env.metadata = {str(k): v for k, v in labels.items()}
        env.sources["metadata"] = "labels"
        consumed.add("labels")
    if body.get("background") is False:
        consumed.add("background")  # the default: the answer comes in this exchange
    _report_tool_extras(body.get("tools"), env)
    return consumed


def _read_settings(settings: Mapping[str, Any], env: Envelope) -> list[str]:
    """The canonical fields of ``generation_config``; gives the keys consumed."""
    consumed = [
        k
        for k in ("seed", "stop_sequences", "thinking_level", "thinking_summaries", "tool_choice")
        if k in settings and settings[k] is None
    ]
    seed = settings.get("seed")
    if isinstance(seed, int) and not isinstance(seed, bool):
        env.seed = seed
        env.sources["seed"] = "generation_config.seed"
        consumed.append("seed")
    stop = settings.get("stop_sequences")
    if isinstance(stop, list) and all(isinstance(s, str) for s in stop):
        env.stop = list(stop)
        env.sources["stop"] = "generation_config.stop_sequences"
        consumed.append("stop_sequences")
    consumed += _read_reasoning(settings, env)
    choice = _tool_choice(settings.get("tool_choice"))
    if choice is not None:
        env.tool_choice = choice
        env.sources["tool_choice"] = "generation_config.tool_choice"
        consumed.append("tool_choice")
    return consumed


def _read_reasoning(settings: Mapping[str, Any], env: Envelope) -> list[str]:
    level, summaries = settings.get("thinking_level"), settings.get("thinking_summaries")
    effort = cast("ReasoningEffort", level) if isinstance(level, str) and level in _LEVELS else None
    consumed: list[str] = []
    fields: dict[str, Any] = {}
    if effort is not None:
        fields.update(enabled=True, effort=effort)
        consumed.append("thinking_level")
    if summaries == "auto":
        fields["summary"] = "auto"
        consumed.append("thinking_summaries")
    elif summaries == "none" and effort is not None:
        consumed.append("thinking_summaries")  # no summary: the canonical default
    if not fields:
        return []  # "none" alone (no thinking said) or unknown values: native
    env.reasoning = Reasoning(**fields)
    env.sources["reasoning"] = f"generation_config.{consumed[0]}"
    if len(consumed) > 1:
        # Both fields make the one canonical setting; the summary's own source, for reports.
        env.sources["reasoning.summary"] = "generation_config.thinking_summaries"
    return consumed


def _tool_choice(raw: Any) -> ToolChoice | None:
    """A canonical tool choice, or ``None`` when it cannot be read (kept native)."""
    if isinstance(raw, str):
        mode = _MODES_IN.get(raw)
        return ToolChoice(mode) if mode is not None else None
    allowed = raw.get("allowed_tools") if isinstance(raw, dict) and len(raw) == 1 else None
    if not isinstance(allowed, dict) or set(allowed) - {"mode", "tools"}:
        return None
    raw_mode = allowed.get("mode", "auto")
    mode = _MODES_IN.get(raw_mode) if isinstance(raw_mode, str) else None
    tools = allowed.get("tools", [])
    if mode is None or not isinstance(tools, list) or not all(isinstance(t, str) for t in tools):
        return None
    return ToolChoice(mode, tuple(tools))


def _read_output(body: Mapping[str, Any], env: Envelope) -> list[str]:
    raw, mime = body.get("response_format"), body.get("response_mime_type")
    if isinstance(raw, list) and len(raw) == 1:
        raw = raw[0]
    output: OutputFormat | None = None
    kind = raw.get("type") if isinstance(raw, dict) else None
    if kind == "text" and isinstance(raw, dict):
        output = _text_format(raw, mime)
    elif isinstance(raw, dict) and not (isinstance(kind, str) and kind in _FORMATS) and mime in (None, _JSON):
        # The legacy form: the JSON schema itself (with response_mime_type).
        output = OutputFormat("json_schema", dict(raw))
    elif raw is None and mime in (_JSON, _TEXT):
        output = OutputFormat("json_object" if mime == _JSON else "text")
    if output is None:
        return []  # another output kind (audio, image...), several, or unreadable: native
    consumed = [k for k in ("response_format", "response_mime_type") if k in body]
    env.output = output
    env.sources["output"] = consumed[0]
    return consumed


def _text_format(raw: Mapping[str, Any], mime: Any) -> OutputFormat | None:
    own, schema = raw.get("mime_type"), raw.get("schema")
    if set(raw) - {"type", "mime_type", "schema"} or (mime is not None and own not in (None, mime)):
        return None
    own = own if own is not None else mime
    if own == _JSON:
        return (
            OutputFormat("json_schema", schema) if isinstance(schema, dict) else OutputFormat("json_object")
        )
    return OutputFormat("text") if own in (None, _TEXT) and schema is None else None


def _report_tool_extras(tools: Any, env: Envelope) -> None:
    for i, tool in enumerate(tools if isinstance(tools, list) else []):
        if isinstance(tool, dict) and tool.get("type") == "function":
            env.dropped.extend(
                Unread(f"tool field {k}", f"tools[{i}]", f"tools[{i}].{k}")
                for k in TOOL_EXTRAS
                if tool.get(k) not in (None, False)
            )


# ---------------------------------------------------------------------- write


def _write(body: dict[str, Any], env: Envelope, lost: list[Unread]) -> Iterable[str]:
    handled = ["tool_choice", "reasoning", "output", "store", "service_tier", "metadata"]
    settings: dict[str, Any] = {}
    if env.seed is not None:
        settings["seed"] = env.seed
        handled.append("seed")
    if env.stop is not None:
        settings["stop_sequences"] = list(env.stop)
        handled.append("stop")
    if env.reasoning is not None:
        settings.update(_thinking(env.reasoning))
    choice = _write_tool_choice(env, lost)
    if choice is not None:
        settings["tool_choice"] = choice
    if settings:
        body.setdefault("generation_config", {}).update(settings)
    if env.output is not None:
        body["response_format"] = _format(env.output)
    if env.parallel_tool_calls is not None:
        handled.append("parallel_tool_calls")
        if env.parallel_tool_calls is False:
            # The model decides alone whether to call several functions in one turn.
            source = env.source("parallel_tool_calls")
            lost.append(Unread(f"request field {source}", field="parallel_tool_calls"))
    _write_top(body, env, lost)
    # top_k, n, penalties and user have no Interactions field: the codec reports them.
    return handled


def _thinking(reasoning: Reasoning) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if reasoning.enabled is False or reasoning.effort == "none":
        # Thinking cannot be switched off; "minimal" is the level that thinks least
        # (ai.google.dev/gemini-api/docs/thinking#thinking-levels).
        out["thinking_level"] = "minimal"
    elif reasoning.effort is not None:
        out["thinking_level"] = reasoning.effort
    elif reasoning.budget_tokens is not None:
        effort = budget_effort(reasoning.budget_tokens)
        out["thinking_level"] = "minimal" if effort == "none" else effort
    if reasoning.summary is not None and out.get("thinking_level") != "minimal":
        out["thinking_summaries"] = "auto"
    return out


def _write_tool_choice(env: Envelope, lost: list[Unread]) -> Any:
    choice = env.tool_choice
    strict = any(t.strict for t in env.tools)
    if choice is None:
        # Strict function tools: "validated" is schema-adherent calling (Gemini's VALIDATED).
        return "validated" if strict else None
    mode = _MODES_OUT[choice.mode]
    if choice.mode == "auto" and strict:
        mode = "validated"
    if not choice.names:
        return mode
    if choice.mode == "none":
        lost.append(Unread("tool_choice names with mode none", field="tool_choice"))
        return mode
    return {"allowed_tools": {"mode": mode, "tools": list(choice.names)}}


def _format(output: OutputFormat) -> dict[str, Any]:
    if output.type == "json_schema" and output.schema is not None:
        return {"type": "text", "mime_type": _JSON, "schema": output.schema}
    return {"type": "text", "mime_type": _TEXT if output.type == "text" else _JSON}


def _write_top(body: dict[str, Any], env: Envelope, lost: list[Unread]) -> None:
    if env.store is not None:
        body["store"] = env.store
    elif env.origin != NAME:
        # Interactions stores by default; the client's protocol keeps nothing for it to retrieve.
        body["store"] = False
    if env.service_tier is not None and env.service_tier != "auto":
        tier = _TIERS_OUT.get(env.service_tier)
        if tier is None:
            lost.append(Unread(f"request field {env.source('service_tier')}", field="service_tier"))
        else:
            body["service_tier"] = tier
    if env.metadata is not None:
        if env.origin in (NAME, GEMINI) or all(_label(k) and _label(v) for k, v in env.metadata.items()):
            body["labels"] = dict(env.metadata)
        else:
            # Labels take only lowercase letters, digits, "_" and "-" (cloud.google.com "labels").
            lost.append(Unread(f"request field {env.source('metadata')}", field="metadata"))


def _label(text: str) -> bool:
    return 0 < len(text) <= 63 and set(text) <= _LABEL_CHARS


ENVELOPE = EnvelopeCodec(
    protocol=NAME,
    conversation=frozenset({"input", "system_instruction"}),
    read_tool=_read_tool,
    write_tools=_write_tools,
    max_tokens=("max_output_tokens",),
    settings_in=("generation_config",),
    read_hook=_read,
    write_hook=_write,
    affects_output=AFFECTS_OUTPUT,
)
"""Where an Interactions request keeps its envelope."""
