"""Gemini history codec and validation: request ``contents`` + ``systemInstruction`` ↔ canonical.

Parts map through the package's one part mapping (``_parts``); this module shapes turns
(PROTOCOLS.md §4.6, §4.8, §4.9 and the spec's "Google Gemini generateContent API"):

* ``systemInstruction`` → one ``system`` message first; back, every ``system`` and
  ``developer`` message goes to ``systemInstruction`` (in order).
* A ``model`` content → one ``assistant`` message (``provider="gemini"``) with its parts in
  order (a ``functionCall`` without an ``id`` gets a synthesized one, never sent back).
  Consecutive ``model`` contents are ONE turn, merged into one message: google-genai's chat
  helper (``client.chats``) records each streamed chunk as its own ``model`` content, and the
  empty text part a stream's last chunk carries (no signature) is left out of the merged turn.
* A ``user`` content → one ``tool`` message per ``functionResponse`` (``tool_call_id`` linked to
  the call by id, else by order and name among the previous model turn's calls), then one
  ``user`` message with the other parts, if any.
* Back to Gemini: consecutive ``tool`` messages (and ``tool_result`` parts of a user message)
  form one ``user`` content with one ``functionResponse`` per result; a result's name comes from
  its part or from the call it answers. Signatures, raw parts and server calls are replayed only
  when :func:`~maas_stream.protocols._replay.replayable` allows it for the message's
  ``provider``; others are dropped and reported. A model turn of another origin whose first
  ``functionCall`` has no signature gets Google's documented placeholder
  :data:`PLACEHOLDER_SIGNATURE`, so Gemini 3 accepts the rebuilt history; a real signature is
  never overwritten.

``tools``, ``toolConfig`` and the other request fields are passed through by
:func:`request_extras` and the ``extras`` argument of :func:`from_canonical`.

It must not do IO or decide replay on its own.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any, Final

import msgspec

from ..._drops import DropLog
from ..._exceptions import RemoteProtocolError, ValidationError
from ..._model import Message, Part, TextPart, ToolCallPart, ToolResultPart, UnknownPart
from .._names import GEMINI as PROTOCOL
from .._turns import join_items
from ._parts import SIGNATURE_TYPE, SYNTH_PREFIX, ToWire, other_part, parts_from_wire
from ._wire import decode_part, normalize

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["PLACEHOLDER_SIGNATURE", "from_canonical", "request_extras", "to_canonical", "validate"]

PLACEHOLDER_SIGNATURE: Final = "skip_thought_signature_validator"
"""Google's documented ``thoughtSignature`` for function calls that did not come from Gemini."""

_EXTRA_KEYS: Final = (
    "tools",
    "toolConfig",
    "generationConfig",
    "safetySettings",
    "cachedContent",
    "labels",
    "serviceTier",
)


def _body(body: Any) -> dict[str, Any]:
    if isinstance(body, list):
        return {"contents": normalize(body)}
    if isinstance(body, dict):
        norm: dict[str, Any] = normalize(body)
        if not isinstance(norm.get("contents"), list):
            raise ValidationError(PROTOCOL, ["the body has no 'contents' list"])
        return norm
    raise ValidationError(PROTOCOL, ["expected a request body object or a list of contents"])


def request_extras(body: Any) -> dict[str, Any]:
    """The request fields other than the conversation (``tools``, ``toolConfig``, ...), unchanged.

    Raises:
        ValidationError: The body is not a Gemini request shape at all.
    """
    norm = _body(body)
    return {k: norm[k] for k in _EXTRA_KEYS if k in norm}


# ---------------------------------------------------------------------- Gemini → canonical


def to_canonical(body: Any) -> list[Message]:
    """Convert a Gemini request body (or its ``contents`` list) to canonical messages.

    Raises:
        ValidationError: The body is not a Gemini request shape, or a part has a field of the
            wrong type (the fault names ``contents[i].parts[j]``).
    """
    norm = _body(body)
    out: list[Message] = []
    system = norm.get("systemInstruction")
    if isinstance(system, dict):
        out.append(Message(role="system", content=_parts(system.get("parts"), "systemInstruction", "s")))
    elif isinstance(system, str):
        out.append(Message(role="system", content=[TextPart(text=system)]))
    calls: list[ToolCallPart] = []
    model: list[Part] | None = None  # the model turn being merged
    for i, content in enumerate(norm["contents"]):
        if not isinstance(content, dict):
            raise ValidationError(PROTOCOL, [f"contents[{i}]: not a Content object"])
        role = content.get("role") or "user"
        if role == "model":
            parts = [p for p in _parts(content.get("parts"), f"contents[{i}]", str(i)) if not _blank(p)]
            new = [p for p in parts if isinstance(p, ToolCallPart) and p.kind == "function"]
            if model is None:
                model, calls = [], []
                out.append(Message(role="assistant", content=model, provider=PROTOCOL))
            model.extend(parts)
            calls.extend(new)
        else:
            model = None
            out.extend(_user(i, content.get("parts"), calls))
    return out


def _blank(part: Part) -> bool:
    """An empty text part without a signature (a stream's last chunk): nothing of the turn."""
    return isinstance(part, TextPart) and not part.text and part.signature is None


def _decode(raw: dict[str, Any], where: str) -> Any:
    try:
        return decode_part(raw)
    except msgspec.ValidationError as exc:
        raise ValidationError(PROTOCOL, [f"{where}: {exc}"]) from exc


def _same(value: Any) -> Any:
    return value


def _parts(raw_parts: Any, where: str, tag: str) -> list[Part]:
    out: list[Part] = []
    calls = 0
    servers = 0

    def call_id() -> str:
        nonlocal calls
        calls += 1
        return f"{SYNTH_PREFIX}h{tag}_{calls}"

    def server_id() -> str:
        nonlocal servers
        servers += 1
        return f"{SYNTH_PREFIX}h{tag}_s{servers}"

    for j, raw in enumerate(raw_parts if isinstance(raw_parts, list) else ()):
        if not isinstance(raw, dict):
            out.append(UnknownPart(provider_type="part", raw=raw))
            continue
        at = f"{where}.parts[{j}]"
        try:
            out.extend(parts_from_wire(_decode(raw, at), partial(_same, raw), call_id, server_id))
        except RemoteProtocolError as exc:
            raise ValidationError(PROTOCOL, [f"{at}: {exc}"]) from exc
    return out


def _user(i: int, raw_parts: Any, calls: list[ToolCallPart]) -> list[Message]:
    out: list[Message] = []
    rest: list[Any] = []
    answered: set[str] = set()
    for j, raw in enumerate(raw_parts if isinstance(raw_parts, list) else ()):
        wire = _decode(raw, f"contents[{i}].parts[{j}]") if isinstance(raw, dict) else None
        if wire is None or wire.function_response is None:
            rest.append(raw)
            continue
        result = other_part(wire, str)
        assert isinstance(result, ToolResultPart)
        call_id = result.tool_call_id
        if not call_id:
            name = result.name
            match = next(
                (c for c in calls if c.id not in answered and (name is None or c.name == name)), None
            )
            call_id = match.id if match is not None else f"{SYNTH_PREFIX}h{i}_{len(answered) + 1}"
            result = msgspec.structs.replace(result, tool_call_id=call_id)
        answered.add(call_id)
        out.append(Message(role="tool", content=[result], tool_call_id=call_id, name=result.name))
    if rest:
        out.append(Message(role="user", content=_parts(rest, f"contents[{i}]", str(i))))
    return out


# ---------------------------------------------------------------------- canonical → Gemini


def from_canonical(
    messages: list[Message],
    *,
    drops: DropLog | None = None,
    extras: dict[str, Any] | None = None,
    signature_placeholder: bool = True,
) -> dict[str, Any]:
    """Convert canonical messages to a Gemini request body ``{"contents": [...], ...}``.

    Args:
        messages: The conversation.
        drops: If given, records everything Gemini cannot carry, which is dropped, never
            turned into text (``where`` names ``messages[i]``).
        extras: Request fields passed through unchanged (``tools``, ``toolConfig``, ... as
            returned by :func:`request_extras`).
        signature_placeholder: Give the first function call of a model turn of another
            origin Google's placeholder signature (needed by Gemini 3).

    Returns:
        The request body.
    """
    log = drops if drops is not None else DropLog(PROTOCOL)
    user = ToWire(log, None, request=True)
    names: dict[str, str] = {}
    system: list[dict[str, Any]] = []
    contents: list[dict[str, Any]] = []
    results: list[dict[str, Any]] | None = None
    for i, msg in enumerate(join_items(messages)):
        user.where = f"messages[{i}]"
        parts: list[Part] = (
            [TextPart(text=msg.content)] if isinstance(msg.content, str) else list(msg.content)
        )
        if msg.role in ("system", "developer"):
            if contents:
                user.drop(
                    "message", f"{msg.role} message moved to systemInstruction (no position in contents)"
                )
            system.extend(p for part in parts for p in user.user_part(part))
            continue
        if msg.role in ("assistant", "model"):
            results = None
            wire = ToWire(log, msg.provider, request=True)
            wire.where = user.where
            model = _model_turn(msg, parts, names, wire, signature_placeholder)
            if model:  # a turn of only what Gemini cannot carry (reported) is left out
                contents.append({"role": "model", "parts": model})
            continue
        tool_results = [p for p in parts if isinstance(p, ToolResultPart)]
        rest = [p for p in parts if not isinstance(p, ToolResultPart)]
        if msg.role in ("tool", "function") and not tool_results:
            call_id = msg.tool_call_id or ""
            tool_results = [ToolResultPart(tool_call_id=call_id, name=msg.name, content=_text_of(rest))]
            rest = []
        if tool_results:
            if results is None:
                results = []
                contents.append({"role": "user", "parts": results})
            results.extend(_response(r, names, user) for r in tool_results)
        if rest:
            written = [p for part in rest for p in user.user_part(part)]
            if results is not None:
                results.extend(written)  # text after the results, in the same user turn
            else:
                contents.append({"role": "user", "parts": written})
        if msg.role not in ("tool", "function") and not tool_results:
            results = None
    body: dict[str, Any] = {"contents": contents}
    if system:
        body["systemInstruction"] = {"parts": system}
    if extras:
        body.update(extras)
    return body


def _text_of(parts: Sequence[Part]) -> str:
    return "".join(p.text for p in parts if isinstance(p, TextPart))


def _response(result: ToolResultPart, names: dict[str, str], wire: ToWire) -> dict[str, Any]:
    name = result.name or names.get(result.tool_call_id)
    if name is None:
        wire.drop("tool_result", "name of a tool result that answers no known call (left empty)")
        name = ""
    return wire.function_response(result, name)


def _model_turn(
    msg: Message, parts: list[Part], names: dict[str, str], wire: ToWire, placeholder: bool
) -> list[dict[str, Any]]:
    """A model turn's parts.

    Each signature goes on the part it came with (or on the one after a kept
    :data:`SIGNATURE_TYPE` part), and the placeholder on a foreign turn's first call.
    """
    out: list[dict[str, Any]] = []
    pending: str | None = None
    first_call = True
    for part in parts:
        if isinstance(part, UnknownPart) and part.provider_type == SIGNATURE_TYPE:
            pending = wire.kept_signature(part)
            continue
        if isinstance(part, ToolCallPart) and part.kind in ("function", "custom"):
            names[part.id] = part.name
        written = wire.part(part)
        if not written:
            continue
        head = written[0]
        if pending is not None and "thoughtSignature" not in head:
            head["thoughtSignature"] = pending
        pending = None
        if "functionCall" in head and first_call:
            first_call = False
            if "thoughtSignature" not in head and not wire.own and placeholder:
                head["thoughtSignature"] = (
                    PLACEHOLDER_SIGNATURE  # Gemini 3 rejects a rebuilt call turn without one
                )
        out.extend(written)
    return out


# ---------------------------------------------------------------------- validation


def validate(body: Any) -> list[str]:
    """Check a Gemini request body against Gemini's rules; return the faults (empty if none).

    Each fault names the content index (``contents[i]``) and, for calls, the function id or name.
    """
    try:
        norm = _body(body)
    except ValidationError as exc:
        return list(exc.faults)
    faults: list[str] = []
    open_calls: list[tuple[str | None, str]] = []
    previous: Any = None
    for i, content in enumerate(norm["contents"]):
        if not isinstance(content, dict):
            faults.append(f"contents[{i}]: not a Content object")
            continue
        role = content.get("role", "user")
        if role not in ("user", "model"):
            faults.append(f"contents[{i}]: role {role!r} (Gemini contents take 'user' or 'model')")
        parts = content.get("parts")
        if not isinstance(parts, list) or not parts:
            faults.append(f"contents[{i}]: no parts")
            continue
        calls = [
            p["functionCall"]
            for p in parts
            if isinstance(p, dict) and isinstance(p.get("functionCall"), dict)
        ]
        responses = [
            p["functionResponse"]
            for p in parts
            if isinstance(p, dict) and isinstance(p.get("functionResponse"), dict)
        ]
        if role == "user" and calls:
            faults.append(f"contents[{i}]: functionCall in a user content")
        if role == "model" and responses:
            faults.append(f"contents[{i}]: functionResponse in a model content (send it in a user content)")
        if role == "user":
            faults.extend(_answer(i, responses, open_calls))
            open_calls = []
        elif role == "model":
            # Consecutive model contents are one turn (the chat helper's streamed chunks).
            if previous != "model":
                if open_calls:
                    faults.extend(_unanswered(i - 1, open_calls))
                open_calls = []
            open_calls += [(c.get("id") or None, str(c.get("name") or "")) for c in calls]
        previous = role
    return faults


def _answer(i: int, responses: list[dict[str, Any]], open_calls: list[tuple[str | None, str]]) -> list[str]:
    faults: list[str] = []
    remaining = list(open_calls)
    for fr in responses:
        fid = fr.get("id") or None
        name = str(fr.get("name") or "")
        if not name:
            faults.append(f"contents[{i}]: functionResponse {fid or ''} has no name".replace("  ", " "))
        match = None
        for call in remaining:
            if (fid is not None and call[0] == fid) or (fid is None and call[1] == name):
                match = call
                break
        if match is None:
            what = f"id {fid!r}" if fid is not None else f"name {name!r}"
            faults.append(
                f"contents[{i}]: functionResponse with {what} answers no functionCall of the previous model turn"
            )
            continue
        remaining.remove(match)
        if match[1] != name:
            faults.append(
                f"contents[{i}]: functionResponse {fid!r} is named {name!r} but its call is {match[1]!r}"
            )
    faults.extend(_unanswered(i - 1, remaining))
    return faults


def _unanswered(i: int, calls: list[tuple[str | None, str]]) -> list[str]:
    return [
        f"contents[{i}]: functionCall {call_id or name!r} ({name}) has no functionResponse in the next user content"
        for call_id, name in calls
    ]
