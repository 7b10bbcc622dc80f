"""The Gemini request envelope: ``generationConfig``, ``toolConfig``, ``tools`` and the top-level fields.

The model and the streaming switch are in the URL (``models/{model}:streamGenerateContent``),
not the body. Field names are read in both spellings: the REST API's camelCase and the
snake_case google-genai writes inside nested objects (it sends ``thinkingConfig:
{"thinking_budget": ...}`` and ``functionDeclarations[].parameters_json_schema`` on the wire);
they are written in camelCase. The mapping, with the provider docs each judgment call rests
on, is docs/requests/gemini.md:

* ``generationConfig``: ``maxOutputTokens``, ``temperature``, ``topP`` (the codec's),
  ``topK``, ``seed``, ``candidateCount`` (``n``), ``stopSequences``, ``presencePenalty``,
  ``frequencyPenalty``; ``responseMimeType`` with ``responseJsonSchema`` / ``responseSchema``
  ↔ :class:`OutputFormat`; ``thinkingConfig`` ↔ :class:`Reasoning`. The rest
  (``responseModalities``, ``speechConfig``, ``mediaResolution``...) is native.
* ``toolConfig.functionCallingConfig`` ↔ :class:`ToolChoice`; ``tools``: function declarations
  ↔ :class:`FunctionTool`, every built-in tool ↔ :class:`NativeTool` by category.
* ``serviceTier`` ↔ ``service_tier``, ``store`` ↔ ``store``, ``labels`` ↔ ``metadata``;
  ``safetySettings``, ``cachedContent`` and the rest are native.

It must not convert the conversation (``contents`` and ``systemInstruction`` are the history
codec's) or do IO.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Final, cast

from ..._envelope import (
    HOOK_FIELDS,
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
    effort_budget,
)
from .._names import GEMINI as NAME

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

__all__ = ["ENVELOPE"]

_DECLARATIONS: Final = ("functionDeclarations", "function_declarations")
_SCHEMAS: Final = ("parametersJsonSchema", "parameters_json_schema", "parameters")
_OPENAPI_SCHEMAS: Final = frozenset({"parameters"})
"""Schema keys holding Gemini's OpenAPI-subset ``Schema`` (converted to JSON Schema on read)."""

_BUILT_INS: Final[dict[str, str]] = {
    "googleSearch": "web_search",
    "googleSearchRetrieval": "web_search",
    "enterpriseWebSearch": "web_search",
    "codeExecution": "code_execution",
    "urlContext": "url_context",
    "fileSearch": "file_search",
    "computerUse": "computer_use",
    "mcpServers": "mcp",
    "googleMaps": "googleMaps",
    "retrieval": "retrieval",
    "parallelAiSearch": "web_search",
    "exaAiSearch": "web_search",
}
"""Gemini built-in tool (the ``Tool`` key) → cross-protocol category (``GG:types.py Tool``)."""

_WRITE_BUILT_INS: Final[dict[str, str]] = {
    "web_search": "googleSearch",
    "code_execution": "codeExecution",
    "url_context": "urlContext",
}
"""Another protocol's built-in tool category → the Gemini tool that does the same, configless.
``file_search`` (Gemini's stores are no OpenAI vector stores), ``computer_use`` (another action
vocabulary) and ``mcp`` (another declaration) have no equivalent and are reported."""

_MODES_IN: Final[dict[str, ToolChoiceMode]] = {
    "AUTO": "auto",
    "ANY": "required",
    "NONE": "none",
    "VALIDATED": "validated",
}
_MODES_OUT: Final[dict[str, str]] = {v: k for k, v in _MODES_IN.items()}

_LEVELS: Final[dict[str, ReasoningEffort]] = {
    "MINIMAL": "minimal",
    "LOW": "low",
    "MEDIUM": "medium",
    "HIGH": "high",
    "XHIGH": "xhigh",
}
_LEVEL_MODELS: Final = ("gemini-3",)
"""Model families that take ``thinkingLevel``; earlier ones take ``thinkingBudget`` only
(ai.google.dev/gemini-api/docs/thinking)."""

_TIERS_OUT: Final[dict[str, str]] = {
    "flex": "flex",
    "priority": "priority",
    "standard": "standard",
    "default": "standard",
    "standard_only": "standard",
}
"""Canonical (OpenAI / Anthropic) service tier → Gemini ``serviceTier``; ``auto`` is Gemini's
default (nothing written)."""

_LABEL: Final = re.compile(r"[a-z0-9_-]{1,63}")
"""A valid label key or value (Google Cloud labels: lowercase letters, digits, ``_``, ``-``)."""

_JSON: Final = "application/json"
_TEXT: Final = "text/plain"

_NATIVE_AFFECTING: Final = (
    ("safetySettings", "safety_settings"),
    ("cachedContent", "cached_content"),
    ("continuationToken", "continuation_token"),
)
_SETTINGS_AFFECTING: Final = (
    ("responseModalities", "response_modalities"),
    ("speechConfig", "speech_config"),
    ("imageConfig", "image_config"),
    ("responseMimeType", "response_mime_type"),
    ("responseSchema", "response_schema"),
    ("responseJsonSchema", "response_json_schema"),
    ("routingConfig", "routing_config"),
    ("modelSelectionConfig", "model_selection_config"),
)


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)([A-Z])", r"_\1", name).lower()


def _key(obj: Mapping[str, Any], name: str) -> str | None:
    """The key ``obj`` uses for the camelCase field ``name`` (itself or its snake_case), if any."""
    if name in obj:
        return name
    snake = _snake(name)
    return snake if snake in obj else None


def _get(obj: Mapping[str, Any], name: str) -> Any:
    key = _key(obj, name)
    return obj[key] if key is not None else None


# ---------------------------------------------------------------------- schemas


def _json_schema(schema: Any) -> Any:
    """Gemini's OpenAPI-subset ``Schema`` as JSON Schema, recursively.

    Types are lowercased and ``nullable`` becomes a ``"null"`` type
    (ai.google.dev/api/caching#Schema); other keywords are kept as they are.
    """
    if isinstance(schema, list):
        return [_json_schema(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "type" and isinstance(value, str):
            out["type"] = value.lower()
        elif key in ("properties", "$defs", "defs") and isinstance(value, dict):
            out["$defs" if key == "defs" else key] = {k: _json_schema(v) for k, v in value.items()}
        elif key in ("items", "anyOf", "any_of", "additionalProperties"):
            out["anyOf" if key == "any_of" else key] = _json_schema(value)
        elif key != "nullable":
            out[key] = value
    if schema.get("nullable") is True and isinstance(out.get("type"), str):
        out["type"] = [out["type"], "null"]
    return out


# ---------------------------------------------------------------------- tools


def _read_tool(tool: Mapping[str, Any]) -> tuple[list[FunctionTool | NativeTool], list[str]]:
    tools: list[FunctionTool | NativeTool] = []
    others: list[str] = []
    for key, value in tool.items():
        if key in _DECLARATIONS:
            for decl in value if isinstance(value, list) else [value]:
                if isinstance(decl, dict):
                    tools.append(_function(decl))
                else:
                    others.append("a function declaration that is not an object")
            continue
        camel = re.sub(r"_([a-z])", lambda m: m.group(1).upper(), key)
        category = _BUILT_INS.get(camel)
        if category is None:
            others.append(f"tool field {key} (no function declaration or known built-in tool)")
        else:
            tools.append(NativeTool(NAME, {camel: value}, category))
    return tools, others


def _function(decl: Mapping[str, Any]) -> FunctionTool:
    tool = FunctionTool.of(decl, *_SCHEMAS)
    schema_key = next((k for k in _SCHEMAS if k in decl), None)
    if schema_key in _OPENAPI_SCHEMAS:
        return FunctionTool(tool.name, tool.description, _json_schema(tool.parameters))
    return tool


def _write_tools(tools: list[FunctionTool], native: list[NativeTool], lost: list[Unread]) -> list[Any]:
    out: list[Any] = []
    declarations: list[dict[str, Any]] = []
    for tool in tools:
        if tool.kind == "custom":
            # Gemini has no free-form tools: a function taking text would come back as a
            # function call the client never declared.
            lost.append(Unread(f"custom tool {tool.name}", "tools", "tools.custom"))
            continue
        if tool.cache_control is not None:
            lost.append(Unread(f"cache_control of tool {tool.name}", "tools", "tools.cache_control"))
        declarations.append(tool.declaration("parametersJsonSchema", empty_schema=False))
    if declarations:
        out.append({"functionDeclarations": declarations})
    for built_in in native:
        if built_in.protocol == NAME:
            out.append(dict(built_in.decl))
            continue
        key = _WRITE_BUILT_INS.get(built_in.category)
        if key is None:
            lost.append(Unread(f"built-in tool {built_in.category}", field="native_tools"))
            continue
        out.append({key: {}})
        options = sorted(k for k in built_in.decl if k not in ("type", "name"))
        if options:
            # Gemini's equivalent takes no such settings (domains, location, limits...).
            what = f"options of built-in tool {built_in.category} ({', '.join(options)})"
            lost.append(Unread(what, field="tools.options"))
    return out


# ---------------------------------------------------------------------- read


def _read(body: Mapping[str, Any], env: Envelope) -> Iterable[str]:
    consumed: list[str] = []
    settings_key = _key(body, "generationConfig")
    settings = body.get(settings_key) if settings_key else None
    if isinstance(settings, dict):
        assert settings_key is not None
        consumed += [f"generationConfig.{k}" for k in _read_settings(settings, settings_key, env)]
    consumed += _read_tool_config(body, env)
    for name, attr in (("serviceTier", "service_tier"), ("store", "store"), ("labels", "metadata")):
        key = _key(body, name)
        if key is None:
            continue
        value = body[key]
        if attr == "service_tier" and isinstance(value, str):
            env.service_tier = value.lower()
        elif attr == "store" and isinstance(value, bool):
            env.store = value
        elif (
            attr == "metadata" and isinstance(value, dict) and all(isinstance(v, str) for v in value.values())
        ):
            env.metadata = {str(k): v for k, v in value.items()}
        else:
            continue  # malformed: kept as a native field
        env.sources[attr] = key
        consumed.append(key)
    return consumed


def _read_settings(settings: Mapping[str, Any], prefix: str, env: Envelope) -> list[str]:
    """The canonical fields of ``generationConfig``; gives the keys consumed."""
    consumed: list[str] = []

    def source(key: str) -> str:
        consumed.append(key)
        return f"{prefix}.{key}"

    for name, attr in (
        ("topK", "top_k"),
        ("seed", "seed"),
        ("candidateCount", "n"),
        ("presencePenalty", "presence_penalty"),
        ("frequencyPenalty", "frequency_penalty"),
    ):
        key = _key(settings, name)
        value = settings[key] if key is not None else None
        if isinstance(value, bool) or not isinstance(value, int | float):
            continue
        if attr in ("presence_penalty", "frequency_penalty"):
            setattr(env, attr, float(value))
        elif float(value).is_integer():  # google-genai sends topK as a float (40.0)
            setattr(env, attr, int(value))
        else:
            continue
        assert key is not None
        env.sources[attr] = source(key)
    key = _key(settings, "stopSequences")
    stop = settings[key] if key is not None else None
    if isinstance(stop, list) and all(isinstance(s, str) for s in stop):
        assert key is not None
        env.stop = list(stop)
        env.sources["stop"] = source(key)
    _read_output(settings, env, source)
    key = _key(settings, "thinkingConfig")
    thinking = settings[key] if key is not None else None
    if isinstance(thinking, dict):
        reasoning = _reasoning(thinking)
        if reasoning is not None:
            assert key is not None
            env.reasoning = reasoning
            env.sources["reasoning"] = source(key)
    return consumed


def _read_output(settings: Mapping[str, Any], env: Envelope, source: Any) -> None:
    mime_key = _key(settings, "responseMimeType")
    mime = settings[mime_key] if mime_key is not None else None
    schema_key = _key(settings, "responseJsonSchema") or _key(settings, "responseSchema")
    if mime is not None and mime not in (_JSON, _TEXT):
        return  # text/x.enum and the like: no canonical form (native, changes the answer)
    if schema_key is not None and mime != _TEXT:
        schema = settings[schema_key]
        if schema_key in ("responseSchema", "response_schema"):
            schema = _json_schema(schema)
        env.output = OutputFormat("json_schema", schema)
        env.sources["output"] = source(schema_key)
        if mime_key is not None:
            source(mime_key)
    elif mime is not None:
        assert mime_key is not None
        env.output = OutputFormat("json_object" if mime == _JSON else "text")
        env.sources["output"] = source(mime_key)


def _reasoning(thinking: Mapping[str, Any]) -> Reasoning | None:
    budget = _get(thinking, "thinkingBudget")
    level = _get(thinking, "thinkingLevel")
    include = _get(thinking, "includeThoughts")
    budget = budget if isinstance(budget, int) and not isinstance(budget, bool) else None
    effort = _LEVELS.get(level.upper()) if isinstance(level, str) else None
    summary = "auto" if include is True else None
    if budget is None and effort is None and summary is None:
        return None
    enabled = None
    if budget is not None:
        enabled = budget != 0
    elif effort is not None:
        enabled = True
    return Reasoning(enabled=enabled, effort=effort, budget_tokens=budget, summary=summary)


def _read_tool_config(body: Mapping[str, Any], env: Envelope) -> list[str]:
    key = _key(body, "toolConfig")
    config = body[key] if key is not None else None
    if not isinstance(config, dict):
        return []
    fcc_key = _key(config, "functionCallingConfig")
    fcc = config[fcc_key] if fcc_key is not None else None
    if not isinstance(fcc, dict):
        return []
    mode = _get(fcc, "mode")
    names = _get(fcc, "allowedFunctionNames")
    choice = _MODES_IN.get(mode.upper()) if isinstance(mode, str) else None
    if choice is None and mode is not None:
        return []  # MODE_UNSPECIFIED or unknown: native
    named = tuple(n for n in names if isinstance(n, str)) if isinstance(names, list) else ()
    env.tool_choice = ToolChoice(choice or "auto", named)
    env.sources["tool_choice"] = f"{key}.{fcc_key}"
    known = {_key(fcc, "mode"), _key(fcc, "allowedFunctionNames")} - {None}
    # Anything else of toolConfig (retrievalConfig, includeServerSideToolInvocations,
    # streamFunctionCallArguments) keeps the whole object native, written back as it is.
    whole = set(config) == {fcc_key} and set(fcc) <= known
    return [cast("str", key)] if whole else []


# ---------------------------------------------------------------------- write


def _write(body: dict[str, Any], env: Envelope, lost: list[Unread]) -> Iterable[str]:
    settings: dict[str, Any] = {}
    for attr, name in (
        ("top_k", "topK"),
        ("seed", "seed"),
        ("n", "candidateCount"),
        ("presence_penalty", "presencePenalty"),
        ("frequency_penalty", "frequencyPenalty"),
    ):
        value = getattr(env, attr)
        if value is not None:
            settings[name] = value
    if env.stop is not None:
        settings["stopSequences"] = list(env.stop)
    if env.output is not None:
        settings.update(_output(env.output))
    if env.reasoning is not None:
        thinking = _thinking(env.reasoning, env)
        if thinking:
            settings["thinkingConfig"] = thinking
    if settings:
        body.setdefault("generationConfig", {}).update(settings)
    config = _tool_config(env, lost)
    if config is not None:
        body["toolConfig"] = {"functionCallingConfig": config}
    if env.parallel_tool_calls is False:
        # Gemini decides alone whether to call several functions in one turn.
        lost.append(Unread(f"request field {env.source('parallel_tool_calls')}", field="parallel_tool_calls"))
    _write_top(body, env, lost)
    # Every canonical field is written or reported above (include_usage is the client's
    # encoder's: Gemini always reports usage).
    return HOOK_FIELDS


def _output(output: OutputFormat) -> dict[str, Any]:
    if output.type == "json_schema":
        # responseJsonSchema takes JSON Schema as it is (responseSchema is an OpenAPI subset).
        return {"responseMimeType": _JSON, "responseJsonSchema": output.schema}
    return {"responseMimeType": _JSON if output.type == "json_object" else _TEXT}


def _thinking(reasoning: Reasoning, env: Envelope) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if reasoning.enabled is False or reasoning.effort == "none":
        out["thinkingBudget"] = 0
    elif reasoning.budget_tokens is not None:
        out["thinkingBudget"] = reasoning.budget_tokens
    elif reasoning.effort is not None:
        model = (env.model or "").removeprefix("models/").lower()
        if env.origin == NAME or model.startswith(_LEVEL_MODELS):
            out["thinkingLevel"] = reasoning.effort.upper()
        else:
            out["thinkingBudget"] = effort_budget(reasoning.effort)
    elif reasoning.enabled:
        out["thinkingBudget"] = -1  # on, no size said: Gemini's dynamic budget
    if reasoning.summary is not None and out.get("thinkingBudget") != 0:
        out["includeThoughts"] = True
    return out


def _tool_config(env: Envelope, lost: list[Unread]) -> dict[str, Any] | None:
    choice = env.tool_choice
    strict = any(t.strict for t in env.tools)
    if choice is None:
        # Strict function tools: VALIDATED is Gemini's schema-adherent calling (ANY is too).
        return {"mode": "VALIDATED"} if strict else None
    mode = _MODES_OUT[choice.mode]
    if choice.mode == "auto" and (choice.names or strict):
        # AUTO takes no allowedFunctionNames; VALIDATED is AUTO restricted to them, schema-checked.
        mode = "VALIDATED"
    out: dict[str, Any] = {"mode": mode}
    if choice.names:
        if mode == "NONE":
            lost.append(Unread("tool_choice names with mode none", field="tool_choice"))
        else:
            out["allowedFunctionNames"] = list(choice.names)
    return out


def _write_top(body: dict[str, Any], env: Envelope, lost: list[Unread]) -> None:
    if env.service_tier is not None and env.service_tier != "auto":
        tier = _TIERS_OUT.get(env.service_tier)
        if tier is None:
            lost.append(Unread(f"request field {env.source('service_tier')}", field="service_tier"))
        else:
            body["serviceTier"] = tier
    if env.store is not None:
        body["store"] = env.store
    if env.metadata is not None:
        if env.origin == NAME or all(
            _LABEL.fullmatch(k) and _LABEL.fullmatch(v) for k, v in env.metadata.items()
        ):
            body["labels"] = dict(env.metadata)
        else:
            # Labels take only lowercase letters, digits, "_" and "-" (cloud.google.com "labels").
            lost.append(Unread(f"request field {env.source('metadata')}", field="metadata"))
    if env.user is not None:
        lost.append(Unread(f"request field {env.source('user')}", field="user"))


def _affecting() -> frozenset[str]:
    out: set[str] = {name for pair in _NATIVE_AFFECTING for name in pair}
    out |= {f"generationConfig.{name}" for pair in _SETTINGS_AFFECTING for name in pair}
    return frozenset(out)


ENVELOPE = EnvelopeCodec(
    protocol=NAME,
    conversation=frozenset({"contents", "systemInstruction", "system_instruction"}),
    read_tool=_read_tool,
    write_tools=_write_tools,
    max_tokens=("maxOutputTokens", "max_output_tokens"),
    top_p=("topP", "top_p"),
    settings_in=("generationConfig", "generation_config"),
    writes_model=False,
    stream_field=None,
    read_hook=_read,
    write_hook=_write,
    affects_output=_affecting(),
)
"""Where a Gemini request keeps its envelope."""
