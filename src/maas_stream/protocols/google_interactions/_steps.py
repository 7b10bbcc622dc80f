"""Interactions steps ↔ canonical parts, usage ↔ ``usage``, finish ↔ ``status``: THE mapping.

Every rendering of this package goes through here, in both directions: the stream decoder
(parts it builds), the stream encoder, the response body (``_body``) and the history codec
(``_history``). So the three encoders cannot disagree on a step, a usage count or a status.

A step is one canonical :class:`~maas_stream.Message` whose ``type`` is the step type:

* ``thought`` ↔ a reasoning part (``signature`` byte-exact; ``summary`` items as the summary);
* ``model_output`` / ``user_input`` ↔ a run of text / image / audio / file parts (see
  ``_content``);
* ``function_call`` ↔ a ``function`` tool call (``arguments`` object ↔ JSON text; a
  ``signature`` kept when the step has one, even an empty one);
* ``function_result`` ↔ a ``tool`` message with a tool result;
* built-in tool calls (``google_search_call``, ...) ↔ a ``server`` call named after the tool;
  ``mcp_server_tool_call`` ↔ an ``mcp`` call;
* built-in results and any other step type ↔ an ``unknown`` part holding the whole step.

Canonical usage counts ``output_tokens`` with thoughts and ``input_tokens`` with tool-use
prompt tokens (``total_tokens`` = input + output, docs/usage.md), so the wire's
``total_output_tokens`` (without thoughts) and ``total_input_tokens`` (without tool use) are
restated on the way out (``_usage.google_split``).

Continuation state (signatures, steps kept whole) goes back only where
:func:`~maas_stream.protocols._replay.replayable` allows it; what cannot be written is reported
to a :class:`~maas_stream.DropLog` with a kind that says what it was. It must not hold stream
state or do IO.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

import msgspec

from ..._model import (
    CitationPart,
    CodePart,
    FinishReason,
    Message,
    Part,
    ReasoningPart,
    RefusalPart,
    ResponseStatus,
    Role,
    StreamError,
    ToolCallPart,
    ToolResultPart,
    UnknownPart,
    Usage,
)
from ..._usage import google_split, google_usage
from .._names import GOOGLE_INTERACTIONS as PROTOCOL
from .._replay import replayable
from ._content import (
    CONTENT_TYPES,
    LOGPROBS,
    content_from_part,
    is_content,
    part_from_content,
    report,
    result_content,
    result_wire,
)
from ._wire import StepFields, UsageFields

if TYPE_CHECKING:
    from ..._drops import DropLog

__all__ = [
    "BUILTIN_TOOLS",
    "CHOICE_DROP",
    "HISTORY_KEYS",
    "INPUT_DROP",
    "INPUT_ROLES",
    "PREVIOUS_INTERACTION",
    "arguments_object",
    "arguments_text",
    "call_from_step",
    "error_from",
    "error_wire",
    "failure_of",
    "finish_from_status",
    "interaction_extra",
    "reasoning_drops",
    "is_step",
    "keep_signature",
    "legacy_step",
    "message_from_step",
    "role_of",
    "status_wire",
    "step_from_call",
    "step_kind",
    "step_of_part",
    "steps_from_message",
    "summary_texts",
    "thought_step",
    "unknown_what",
    "usage_from",
    "usage_wire",
]

BUILTIN_TOOLS: Final = frozenset(
    {
        "google_search",
        "code_execution",
        "url_context",
        "file_search",
        "google_maps",
        "retrieval",
        "computer_use",
    }
)
"""Server-side tools whose steps are ``<tool>_call`` / ``<tool>_result``."""

INPUT_ROLES: Final = frozenset({"user", "system", "developer"})
"""Roles whose content is a ``user_input`` step (never part of an interaction's output)."""

INPUT_DROP: Final = "input (user) messages in an interaction's output"
CHOICE_DROP: Final = "choices after the first (an interaction has one output; choice 0 is kept)"

_STEP_TYPES: Final = frozenset({"user_input", "model_output", "thought", "function_call", "function_result"})
_json = msgspec.json.Encoder()

# ---------------------------------------------------------------------------------- step types


def is_step(raw: Any) -> bool:
    """Whether ``raw`` looks like an Interactions step object (a kept whole step)."""
    if not isinstance(raw, dict):
        return False
    kind = raw.get("type")
    return isinstance(kind, str) and (kind in _STEP_TYPES or kind.endswith(("_call", "_result")))


def step_kind(step_type: str) -> str:
    """Classify a step type.

    Returns ``thought``, ``output`` (model output), ``input`` (user input), ``call``,
    ``server_call``, ``mcp_call``, ``result`` (function result) or ``whole`` (kept as one
    unknown part).
    """
    if step_type == "thought":
        return "thought"
    if step_type == "model_output":
        return "output"
    if step_type == "user_input":
        return "input"
    if step_type == "function_call":
        return "call"
    if step_type == "function_result":
        return "result"
    if step_type == "mcp_server_tool_call":
        return "mcp_call"
    if step_type.endswith("_call") and step_type[:-5] in BUILTIN_TOOLS:
        return "server_call"
    return "whole"


def role_of(step_type: str) -> Role:
    """The canonical role of a step's message."""
    kind = step_kind(step_type)
    return "tool" if kind == "result" else "user" if kind == "input" else "assistant"


def legacy_step(content: dict[str, Any]) -> dict[str, Any]:
    """A legacy content block (``outputs[]``, ``content.start``) as the step it became."""
    kind = content.get("type")
    if isinstance(kind, str) and kind in CONTENT_TYPES:
        return {"type": "model_output", "content": [content]}
    return content


# ---------------------------------------------------------------------------------- usage


def usage_from(raw: Any) -> Usage | None:
    """Map an Interactions ``usage`` object to canonical usage.

    Input is ``total_input_tokens`` plus ``total_tool_use_tokens``; output is
    ``total_output_tokens`` plus ``total_thought_tokens`` (the Gemini family's arithmetic,
    ``_usage.google_usage``).

    Raises:
        msgspec.ValidationError: A count is not an integer.
    """
    if not isinstance(raw, dict):
        return None
    f = msgspec.convert(raw, UsageFields)
    return google_usage(
        prompt=f.total_input_tokens,
        tool_use=f.total_tool_use_tokens,
        answer=f.total_output_tokens,
        thoughts=f.total_thought_tokens,
        cached=f.total_cached_tokens,
        reported_total=f.total_tokens,
        raw=raw,
    )


def usage_wire(usage: Usage, *, same: bool) -> dict[str, Any]:
    """Canonical usage → an Interactions ``usage`` object (the one writer of every encoder).

    From an Interactions source the provider's object is kept (its breakdowns by modality,
    ``total_tool_use_tokens``) and its counts restated from the canonical fields, so it reads
    back the same.
    """
    out: dict[str, Any] = dict(usage.raw) if same and isinstance(usage.raw, dict) else {}
    tool = out.get("total_tool_use_tokens")
    counts = google_split(usage, tool_use=tool if type(tool) is int else 0)
    pairs = (
        ("total_input_tokens", counts.prompt),
        ("total_output_tokens", counts.answer),
        ("total_thought_tokens", counts.thoughts),
        ("total_cached_tokens", counts.cached),
        ("total_tokens", counts.total),
    )
    out.update((key, value) for key, value in pairs if value is not None)
    return out


# ---------------------------------------------------------------------------------- status

_FROM_STATUS: Final[dict[str, tuple[ResponseStatus, FinishReason | None]]] = {
    "completed": ("completed", "stop"),
    "requires_action": ("completed", "tool_calls"),
    "incomplete": ("incomplete", "length"),
    "budget_exceeded": ("incomplete", "length"),
    "cancelled": ("incomplete", "other"),
    "failed": ("failed", "error"),
    "in_progress": ("in_progress", None),
    "queued": ("in_progress", None),
}
"""Interaction ``status`` → (canonical status, finish reason). The canonical → wire direction
is :data:`_TO_STATUS` plus the response status; both live here and nowhere else."""

_TO_STATUS: Final[dict[str, str]] = {
    "stop": "completed",
    "tool_calls": "requires_action",
    "length": "incomplete",
    "content_filter": "incomplete",
    "error": "failed",
}


def finish_from_status(status: str) -> tuple[ResponseStatus, FinishReason | None]:
    """An interaction ``status`` → (canonical response status, finish reason)."""
    return _FROM_STATUS.get(status, ("completed", "other"))


def status_wire(
    status: ResponseStatus | None, finish: FinishReason | None, provider: str | None, *, same: bool
) -> str:
    """Canonical status and finish reason → an interaction ``status``.

    From an Interactions source, the provider's own status (``budget_exceeded``, ...) stands.
    """
    if same and provider:
        return provider
    if status == "failed" or finish == "error":
        return "failed"
    if status in ("incomplete", "in_progress"):
        return status
    return _TO_STATUS.get(finish or "stop", "completed")


# ---------------------------------------------------------------------------------- errors


def error_from(raw: Any) -> StreamError:
    """Map an Interactions ``error`` object (``{code, message}``) to a StreamError."""
    if isinstance(raw, dict):
        code = raw.get("code")
        message = raw.get("message")
        return StreamError(
            type=str(code or "error"),
            message=message if isinstance(message, str) else None,
            code=None if code is None else str(code),
            raw=raw,
        )
    return StreamError(type="error", message=None if raw is None else str(raw), raw=raw)


def failure_of(errors: list[Any] | None) -> StreamError:
    """The error of a ``failed`` interaction: its first ``errors[]`` entry, or a generic one."""
    return error_from(errors[0] if errors else {"message": "interaction failed"})


def error_wire(error: StreamError, *, same: bool) -> dict[str, Any]:
    """A canonical error → an Interactions ``{code, message}`` (the provider's own when same)."""
    if same and isinstance(error.raw, dict):
        return error.raw
    return {k: v for k, v in (("code", error.code or error.type), ("message", error.message)) if v}


def interaction_extra(inter: dict[str, Any]) -> dict[str, Any] | None:
    """An interaction's fields with no canonical home (``object``, ``created``, ``service_tier``...)."""
    drop = ("id", "model", "status", "steps", "outputs", "usage", "errors")
    extra = {k: v for k, v in inter.items() if k not in drop}
    return extra or None


# ---------------------------------------------------------------------------------- calls


def arguments_text(value: Any) -> str:
    """A step's ``arguments`` object as JSON text (empty when absent)."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return _json.encode(value).decode()


def arguments_object(text: str) -> Any:
    """JSON text back to the ``arguments`` object (``{}`` for empty text; invalid JSON stays text)."""
    if not text:
        return {}
    try:
        return msgspec.json.decode(text)
    except (msgspec.DecodeError, RecursionError, UnicodeEncodeError):  # a lone surrogate: not JSON
        return text


def call_from_step(step: dict[str, Any]) -> ToolCallPart:
    """A call step (function, built-in or MCP) → a tool-call part.

    Raises:
        msgspec.ValidationError: A field the mapping reads has the wrong JSON type.
    """
    return _call(msgspec.convert(step, StepFields))


def _call(f: StepFields) -> ToolCallPart:
    sk = step_kind(f.type)
    arguments = arguments_text(f.arguments)
    if sk == "mcp_call":
        return ToolCallPart(
            id=f.id or "",
            name=f.name or "",
            arguments=arguments,
            kind="mcp",
            server_name=f.server_name,
            signature=f.signature,
        )
    if sk == "server_call":
        return ToolCallPart(
            id=f.id or "", name=f.type[:-5], arguments=arguments, kind="server", signature=f.signature
        )
    return ToolCallPart(id=f.id or "", name=f.name or "", arguments=arguments, signature=f.signature)


def step_from_call(part: ToolCallPart) -> dict[str, Any] | None:
    """A tool-call part → its step; ``None`` for a server tool Interactions does not have.

    The signature is left to the caller (it may not be replayable).
    """
    step: dict[str, Any]
    if part.kind == "server":
        if part.name not in BUILTIN_TOOLS:
            return None
        step = {"type": f"{part.name}_call", "id": part.id}
        if part.arguments:
            step["arguments"] = arguments_object(part.arguments)
        return step
    if part.kind == "mcp":
        step = {"type": "mcp_server_tool_call", "id": part.id, "name": part.name}
        if part.server_name is not None:
            step["server_name"] = part.server_name
    else:
        step = {"type": "function_call", "id": part.id, "name": part.name}
    step["arguments"] = arguments_object(part.arguments)
    return step


# ---------------------------------------------------------------------------------- thoughts


def thought_step(
    part: ReasoningPart, *, origin: str | None, drops: DropLog | None, where: str | None = None
) -> dict[str, Any]:
    """A reasoning part → a ``thought`` step, without its summary (see :func:`summary_texts`).

    Its opaque state is checked by :func:`reasoning_drops` once the part is whole.
    """
    step: dict[str, Any] = {"type": "thought"}
    if part.signature is not None and keep_signature(origin, drops, where):
        step["signature"] = part.signature
    return step


def reasoning_drops(part: ReasoningPart, drops: DropLog | None, where: str | None = None) -> None:
    """Report what of a whole reasoning part no ``thought`` step carries."""
    if part.encrypted_content or part.data:
        report(
            drops,
            "encrypted_reasoning",
            "encrypted or redacted reasoning (Interactions has no such field)",
            where,
        )


def summary_texts(part: ReasoningPart) -> list[str]:
    """A reasoning part's ``thought.summary`` texts: its summary items, then its text."""
    return [*(part.summary or ()), *([part.text] if part.text else [])]


def keep_signature(origin: str | None, drops: DropLog | None, where: str | None = None) -> bool:
    """Whether a signature from ``origin`` may be written; reports it dropped when not."""
    if replayable(origin, PROTOCOL):
        return True
    report(
        drops,
        "signature",
        "signatures of another or unknown origin (Interactions takes back only its own)",
        where,
    )
    return False


# ---------------------------------------------------------------------------------- whole steps


_READ: Final[dict[str, frozenset[str]]] = {
    "thought": frozenset({"type", "signature", "summary"}),
    "output": frozenset({"type", "content"}),
    "input": frozenset({"type", "content"}),
    "call": frozenset({"type", "id", "name", "arguments", "signature"}),
    "mcp_call": frozenset({"type", "id", "name", "server_name", "arguments", "signature"}),
    "server_call": frozenset({"type", "id", "arguments", "signature"}),
    "result": frozenset({"type", "call_id", "name", "result", "is_error"}),
}
"""The step fields the canonical parts carry, per step kind; the rest ride on
``Message.provider_raw`` (a ``search_type``, a ``model_output.error``) for a same-protocol
replay."""

PREVIOUS_INTERACTION: Final = "previous_interaction_id"
"""Where the history codec keeps a stateful body's previous interaction (on ``provider_raw``)."""

HISTORY_KEYS: Final = frozenset({PREVIOUS_INTERACTION})
"""Keys the history codec keeps on ``provider_raw`` too: never step fields."""


def message_from_step(step: dict[str, Any]) -> Message:
    """One whole step → one canonical message (a body's steps, history, non-streamed steps).

    Raises:
        msgspec.ValidationError: A field the mapping reads has the wrong JSON type.
    """
    kind = step.get("type")
    step_type = kind if isinstance(kind, str) else ""
    sk = step_kind(step_type)
    role = role_of(step_type)
    if sk == "whole":
        return Message(role=role, type=step_type, content=[UnknownPart(provider_type=step_type, raw=step)])
    f = msgspec.convert(step, StepFields)
    extra = {k: v for k, v in step.items() if k not in _READ[sk]} or None
    parts: list[Part]
    if sk == "thought":
        texts = [c.get("text") for c in f.summary if isinstance(c, dict)] if f.summary is not None else None
        summary = [t for t in texts if isinstance(t, str)] if texts is not None else None
        parts = [ReasoningPart(signature=f.signature, summary=summary)]
    elif sk in ("output", "input"):
        parts = [part_from_content(c) for c in f.content or ()]
    elif sk == "result":
        result = ToolResultPart(
            tool_call_id=f.call_id or "", content=result_content(f.result), name=f.name, is_error=f.is_error
        )
        return Message(
            role=role, type=step_type, content=[result], tool_call_id=f.call_id or "", provider_raw=extra
        )
    else:
        parts = [_call(f)]
    return Message(role=role, type=step_type, content=parts, provider_raw=extra)


def steps_from_message(
    message: Message, *, origin: str | None, drops: DropLog | None, where: str | None = None
) -> list[dict[str, Any]]:
    """One canonical message → the steps that carry it (body and history).

    A run of content parts is one ``user_input`` (input roles) or ``model_output`` step; every
    other part is a step of its own (:func:`step_of_part`).
    """
    run_type = "user_input" if message.role in INPUT_ROLES else "model_output"
    content = message.content
    if isinstance(content, str):
        return [{"type": run_type, "content": [{"type": "text", "text": content}]}]
    steps: list[dict[str, Any]] = []
    run: list[dict[str, Any]] = []
    for part in content:
        if is_content(part, same=origin == PROTOCOL):
            item = content_from_part(part, drops=drops, where=where)
            if item is not None:
                run.append(item)
            continue
        if run:
            steps.append({"type": run_type, "content": run})
            run = []
        steps.extend(step_of_part(part, origin=origin, drops=drops, where=where))
    if run or (not steps and message.type == run_type):
        steps.append({"type": run_type, "content": run})
    raw = message.provider_raw
    if origin == PROTOCOL and len(steps) == 1 and isinstance(raw, dict):
        # The step's own fields with no canonical home, back where they were.
        for key, value in raw.items():
            if key not in HISTORY_KEYS:
                steps[0].setdefault(key, value)
    return steps


def step_of_part(
    part: Part, *, origin: str | None, drops: DropLog | None, where: str | None = None
) -> list[dict[str, Any]]:
    """A part that is not content → its step; none when Interactions cannot carry it (reported)."""
    if isinstance(part, ReasoningPart):
        step = thought_step(part, origin=origin, drops=drops, where=where)
        reasoning_drops(part, drops, where)
        texts = summary_texts(part)
        if texts:
            step["summary"] = [{"type": "text", "text": t} for t in texts]
        return [step]
    if isinstance(part, ToolCallPart):
        found = step_from_call(part)
        if found is None:
            report(
                drops,
                "server_call",
                f"server tool call {part.name!r} (no such Interactions built-in tool)",
                where,
            )
            return []
        if part.signature is not None and keep_signature(origin, drops, where):
            found["signature"] = part.signature
        return [found]
    if isinstance(part, ToolResultPart):
        return [result_step(part, drops=drops, where=where)]
    if isinstance(part, UnknownPart) and origin == PROTOCOL and _kept_step(part):
        return [dict(part.raw)]
    _drop_part(part, drops, where, same=origin == PROTOCOL)
    return []


def result_step(part: ToolResultPart, *, drops: DropLog | None, where: str | None = None) -> dict[str, Any]:
    """A tool result → a ``function_result`` step."""
    step: dict[str, Any] = {"type": "function_result", "call_id": part.tool_call_id}
    if part.name is not None:
        step["name"] = part.name
    step["result"] = result_wire(part.content, drops=drops, where=where)
    if part.is_error is not None:
        step["is_error"] = part.is_error
    return step


def _kept_step(part: UnknownPart) -> bool:
    """An unknown part our decoder made from a whole step (of any type, known or not)."""
    raw = part.raw
    return is_step(raw) or (isinstance(raw, dict) and raw.get("type") == part.provider_type)


def unknown_what(provider_type: str, things: str, *, same: bool) -> str:
    """How an unknown part or frame that cannot be written is reported (one wording)."""
    if same:
        return f"unknown {provider_type!r} {things} with no Interactions form"
    return f"unknown {provider_type!r} {things} of another protocol"


def _drop_part(part: Part, drops: DropLog | None, where: str | None, *, same: bool) -> None:
    if isinstance(part, RefusalPart):
        report(drops, "refusal", "refusal text (Interactions has no refusal)", where)
        if part.logprobs:
            report(drops, "logprobs", LOGPROBS, where)
    elif isinstance(part, CodePart):
        report(drops, "code", "code parts (no Interactions step outside code execution)", where)
    elif isinstance(part, CitationPart):
        report(drops, "citation", "citations outside text (Interactions annotates text only)", where)
    elif isinstance(part, UnknownPart):
        report(drops, "unknown", unknown_what(part.provider_type, "parts", same=same), where)
    else:
        report(drops, "field", f"{part.__struct_config__.tag} parts (no Interactions step)", where)
