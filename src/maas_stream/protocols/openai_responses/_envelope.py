"""The Responses request envelope: every ``POST /v1/responses`` field besides the conversation.

Canonical fields: ``model``, ``stream``, ``max_output_tokens``, ``temperature``, ``top_p``,
``tools`` (``_envelope_tools``), ``tool_choice`` (modes, a named function or custom tool,
``allowed_tools`` of named tools), ``parallel_tool_calls``, ``reasoning`` (``effort``,
``summary``) with ``include: ["reasoning.encrypted_content"]``, ``text.format`` (the output
format), ``store``, ``metadata``, ``safety_identifier`` / ``user`` and ``service_tier``. The
rest travels as native fields (``previous_response_id``, ``conversation``, ``prompt``,
``truncation``, ``max_tool_calls``, ``text.verbosity``, ``reasoning.context``, the other
``include`` values...), written back only to Responses; those whose loss changes the answer
are in :data:`AFFECTS_OUTPUT`. docs/requests/openai-responses.md gives the mapping and the
judgment calls with their sources.

Responses has no stop sequences, ``seed``, ``top_k``, penalties or ``n``: a writer reports them
(the codec does, as unhandled fields).

It must not convert the conversation (``input`` and ``instructions`` are the history codec's)
or do IO.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final, cast, get_args

from ..._envelope import (
    Envelope,
    EnvelopeCodec,
    OutputFormat,
    Reasoning,
    ReasoningEffort,
    ToolChoice,
    Unread,
    budget_effort,
)
from .._names import OPENAI_RESPONSES as NAME
from ._envelope_tools import TOOL_EXTRAS, read_tool, write_tools

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

__all__ = ["AFFECTS_OUTPUT", "ENCRYPTED_REASONING", "ENVELOPE"]

ENCRYPTED_REASONING: Final = "reasoning.encrypted_content"
"""The ``include`` value asking for reasoning items' encrypted content (stateless replay)."""

AFFECTS_OUTPUT: Final = frozenset(
    {
        # Stateful: without them the model does not see the earlier conversation.
        "previous_response_id",
        "conversation",
        # A stored prompt template: instructions, tools, variables the target never sees.
        "prompt",
        # Forcing a built-in, MCP, shell or apply_patch tool (no canonical form).
        "tool_choice",
        # Moderation can block the answer.
        "moderation",
        # Reasoning execution mode ("pro") and values the reader could not map.
        "reasoning.mode",
        "reasoning.effort",
        "reasoning.summary",
        "text.format",
    }
)
"""Native Responses fields whose loss changes what the model does (refused across protocols)."""

_EFFORTS: Final = frozenset(get_args(ReasoningEffort))
_SUMMARIES: Final = frozenset({"auto", "concise", "detailed"})
_TIERS: Final = frozenset({"auto", "default", "flex", "scale", "priority", "fast", "ultrafast"})
_TIER_ALIASES: Final = {"standard_only": "default", "standard": "default"}
"""Other protocols' service tiers with a Responses equivalent (Anthropic ``standard_only``:
standard capacity only, i.e. Responses ``default``)."""
_OPTIONAL: Final = (
    "tool_choice",
    "parallel_tool_calls",
    "reasoning",
    "include",
    "text",
    "store",
    "metadata",
    "safety_identifier",
    "user",
    "service_tier",
)
"""Fields this hook reads whose ``null`` is the API default (consumed, nothing set)."""


def _read(body: Mapping[str, Any], env: Envelope) -> Iterable[str]:
    consumed = {k for k in _OPTIONAL if k in body and body[k] is None}
    for reader in (_read_tool_choice, _read_reasoning, _read_text, _read_settings):
        consumed.update(reader(body, env))
    _report_tool_extras(body.get("tools"), env)
    return consumed


def _read_tool_choice(body: Mapping[str, Any], env: Envelope) -> Iterable[str]:
    choice = _tool_choice(body.get("tool_choice"))
    if choice is not None:
        env.tool_choice = choice
        env.sources["tool_choice"] = "tool_choice"
        yield "tool_choice"
    if isinstance(body.get("parallel_tool_calls"), bool):
        env.parallel_tool_calls = body["parallel_tool_calls"]
        env.sources["parallel_tool_calls"] = "parallel_tool_calls"
        yield "parallel_tool_calls"


def _tool_choice(raw: Any) -> ToolChoice | None:
    """A canonical tool choice, or ``None`` when it names no client tool (kept native)."""
    if raw in ("auto", "none", "required"):
        return ToolChoice(raw)
    if not isinstance(raw, dict):
        return None
    if raw.get("type") in ("function", "custom") and isinstance(raw.get("name"), str):
        return ToolChoice("required", (raw["name"],))
    if raw.get("type") == "allowed_tools" and raw.get("mode") in ("auto", "required"):
        tools = raw.get("tools")
        names = [t.get("name") for t in tools if isinstance(t, dict)] if isinstance(tools, list) else []
        named = isinstance(tools, list) and all(
            isinstance(t, dict) and t.get("type") in ("function", "custom") for t in tools
        )
        if named and names and all(isinstance(n, str) for n in names):
            return ToolChoice(raw["mode"], tuple(cast("list[str]", names)))
    return None


def _read_reasoning(body: Mapping[str, Any], env: Envelope) -> Iterable[str]:
    raw, include = body.get("reasoning"), body.get("include")
    fields: dict[str, Any] = {}
    if isinstance(raw, dict):
        yield "reasoning"
        effort = raw.get("effort")
        # "max" (the most the model offers) has no canonical value: xhigh is the nearest.
        effort = "xhigh" if effort == "max" else effort
        if effort in _EFFORTS:
            fields.update(effort=effort, enabled=effort != "none")
        summary = raw.get("summary", raw.get("generate_summary"))
        if summary in _SUMMARIES:
            fields["summary"] = summary
        for k, v in raw.items():
            read = (k == "effort" and "effort" in fields) or (
                k in ("summary", "generate_summary") and "summary" in fields
            )
            if v is not None and not read:
                env.native[f"reasoning.{k}"] = v
    if isinstance(include, list) and all(isinstance(i, str) for i in include):
        yield "include"
        if ENCRYPTED_REASONING in include:
            fields["include_encrypted"] = True
        if any(i != ENCRYPTED_REASONING for i in include):
            # The other values ask for more output data (sources, logprobs...); kept whole so
            # that a Responses upstream gets the same list.
            env.native["include"] = list(include)
    if fields:
        env.reasoning = Reasoning(**fields)
        env.sources["reasoning"] = "reasoning" if isinstance(raw, dict) else "include"


def _read_text(body: Mapping[str, Any], env: Envelope) -> Iterable[str]:
    text = body.get("text")
    if not isinstance(text, dict):
        return
    yield "text"
    output = _output(text.get("format"))
    if output is not None:
        env.output = output
        env.sources["output"] = "text.format"
    for k, v in text.items():
        if v is not None and not (k == "format" and output is not None):
            env.native[f"text.{k}"] = v


def _output(raw: Any) -> OutputFormat | None:
    if not isinstance(raw, dict):
        return None
    kind = raw.get("type")
    if kind in ("text", "json_object"):
        return OutputFormat(kind)
    if kind != "json_schema" or not isinstance(raw.get("schema"), dict):
        return None
    name, description, strict = raw.get("name"), raw.get("description"), raw.get("strict")
    return OutputFormat(
        "json_schema",
        raw["schema"],
        name if isinstance(name, str) else None,
        description if isinstance(description, str) else None,
        strict if isinstance(strict, bool) else None,
    )


def _read_settings(body: Mapping[str, Any], env: Envelope) -> Iterable[str]:
    if isinstance(body.get("store"), bool):
        env.store = body["store"]
        env.sources["store"] = "store"
        yield "store"
    metadata = body.get("metadata")
    if isinstance(metadata, dict) and all(isinstance(v, str) for v in metadata.values()):
        env.metadata = dict(metadata)
        env.sources["metadata"] = "metadata"
        yield "metadata"
    # safety_identifier replaced user for abuse monitoring; a body with both keeps user native.
    user = next((k for k in ("safety_identifier", "user") if isinstance(body.get(k), str)), None)
    if user is not None:
        env.user = body[user]
        env.sources["user"] = user
        yield user
    if isinstance(body.get("service_tier"), str):
        env.service_tier = body["service_tier"]
        env.sources["service_tier"] = "service_tier"
        yield "service_tier"


def _report_tool_extras(tools: Any, env: Envelope) -> None:
    for i, tool in enumerate(tools if isinstance(tools, list) else []):
        if isinstance(tool, dict) and tool.get("type") in ("function", "custom"):
            env.dropped.extend(
                Unread(f"tool field {k}", f"tools[{i}]", f"tools[{i}].{k}")
                for k in TOOL_EXTRAS
                if tool.get(k) not in (None, False)
            )


def _write(body: dict[str, Any], env: Envelope, lost: list[Unread]) -> Iterable[str]:
    foreign = env.origin != NAME
    if foreign:
        # A Responses function tool without strict is strict (optional parameters become
        # required); every other protocol's default is non-strict, so say it.
        for tool in body.get("tools", ()):
            if tool.get("type") == "function":
                tool.setdefault("strict", False)
        # Responses stores by default; no other protocol keeps the answer for retrieval.
        if env.store is None:
            body["store"] = False
    if env.store is not None:
        body["store"] = env.store
    if env.tool_choice is not None:
        _write_tool_choice(body, env, lost)
    if env.parallel_tool_calls is not None:
        body["parallel_tool_calls"] = env.parallel_tool_calls
    if env.reasoning is not None:
        _write_reasoning(body, env, env.reasoning, lost)
    if env.output is not None:
        body.setdefault("text", {})["format"] = _format(env.output)
    if env.metadata is not None:
        body["metadata"] = dict(env.metadata)
    if env.user is not None:
        own = not foreign and env.sources.get("user") == "user"
        body["user" if own else "safety_identifier"] = env.user
    if env.service_tier is not None:
        tier = _TIER_ALIASES.get(env.service_tier, env.service_tier)
        if tier in _TIERS:
            body["service_tier"] = tier
        else:
            lost.append(Unread(f"request field {env.source('service_tier')}", field="service_tier"))
    # The stream always ends with the usage (response.completed); the client's wish for a
    # usage chunk is its own encoder's.
    return (
        "tool_choice",
        "parallel_tool_calls",
        "reasoning",
        "output",
        "include_usage",
        "store",
        "metadata",
        "user",
        "service_tier",
    )


def _write_tool_choice(body: dict[str, Any], env: Envelope, lost: list[Unread]) -> None:
    choice = cast("ToolChoice", env.tool_choice)
    custom = {t.name for t in env.tools if t.kind == "custom"}

    def ref(name: str) -> dict[str, str]:
        return {"type": "custom" if name in custom else "function", "name": name}

    if choice.mode == "validated":
        # Gemini VALIDATED (may call, schema-checked) has no Responses mode.
        lost.append(Unread(f"request field {env.source('tool_choice')} (validated)", field="tool_choice"))
    elif choice.mode == "none" or not choice.names:
        body["tool_choice"] = choice.mode
    elif choice.mode == "required" and len(choice.names) == 1:
        body["tool_choice"] = ref(choice.names[0])
    else:
        body["tool_choice"] = {
            "type": "allowed_tools",
            "mode": choice.mode,
            "tools": [ref(n) for n in choice.names],
        }


def _write_reasoning(body: dict[str, Any], env: Envelope, r: Reasoning, lost: list[Unread]) -> None:
    out: dict[str, Any] = {}
    if r.enabled is False:
        out["effort"] = "none"
    elif r.effort is not None:
        out["effort"] = r.effort
    elif r.budget_tokens is not None:
        out["effort"] = budget_effort(r.budget_tokens)
    if r.summary in _SUMMARIES:
        out["summary"] = r.summary
    elif r.summary is not None:
        lost.append(
            Unread(f"reasoning summary {r.summary!r} of {env.source('reasoning')}", field="reasoning")
        )
    if out:
        body["reasoning"] = out
    if r.include_encrypted:
        include = body.setdefault("include", [])
        if ENCRYPTED_REASONING not in include:
            include.append(ENCRYPTED_REASONING)


def _format(output: OutputFormat) -> dict[str, Any]:
    if output.type != "json_schema" or output.schema is None:
        # A schema-less json_schema asks for any JSON object.
        return {"type": "text" if output.type == "text" else "json_object"}
    out: dict[str, Any] = {"type": "json_schema", "name": output.name or "response", "schema": output.schema}
    if output.description is not None:
        out["description"] = output.description
    if output.strict is not None:
        out["strict"] = output.strict
    return out


ENVELOPE = EnvelopeCodec(
    protocol=NAME,
    conversation=frozenset({"input", "instructions"}),
    read_tool=read_tool,
    write_tools=write_tools,
    max_tokens=("max_output_tokens",),
    read_hook=_read,
    write_hook=_write,
    affects_output=AFFECTS_OUTPUT,
)
"""Where a Responses request keeps its envelope."""
