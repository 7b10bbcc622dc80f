"""Gemini history codec and validation: request ``contents`` + ``systemInstruction`` ↔ canonical.

Mapping (PROTOCOLS.md §4.6, §4.8, §4.9 and the spec's "Google Gemini generateContent API"):

* ``systemInstruction`` → one ``system`` message first; back, every ``system`` and
  ``developer`` message goes to ``systemInstruction`` (in order).
* A ``model`` content → one ``assistant`` message (``provider="google"``) with its parts in
  order: text, thoughts (reasoning), ``functionCall`` → ``tool_call`` (id synthesized as in the
  stream decoder when absent), ``toolCall``/``toolResponse`` → server ``tool_call`` /
  ``tool_result``, code, media. A ``thoughtSignature`` stays on its part; on a part type with no
  signature field it becomes a ``gemini.thought_signature`` unknown part right before it.
* A ``user`` content → one ``tool`` message per ``functionResponse`` (``tool_call_id`` linked to
  the call by id, else by order and name among the previous model turn's calls), then one
  ``user`` message with the other parts, if any.
* Back to Gemini: consecutive ``tool`` messages (and ``tool_result`` parts of a user message)
  form one ``user`` content with one ``functionResponse`` per result; a result's name comes from
  its part or from the call it answers. Signatures are replayed only for messages from Google
  (``provider="google"``); others are dropped and reported. A model turn from another provider
  whose first ``functionCall`` has no signature gets Google's documented placeholder
  :data:`PLACEHOLDER_SIGNATURE`, so Gemini 3 accepts the rebuilt history; a real signature is
  never overwritten. Synthesized call ids are not sent.

``tools``, ``toolConfig`` and the other request fields are passed through by
:func:`request_extras` and the ``extras`` argument of :func:`from_canonical`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

import msgspec

from ..._exceptions import ValidationError
from ..._model import (
    AudioPart,
    CodePart,
    FilePart,
    ImagePart,
    Message,
    Part,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    UnknownPart,
)
from .._turns import join_items
from ._decode import SIGNATURE_TYPE, SYNTH_PREFIX, media_part
from ._encode import call_args, media_body
from ._wire import normalize

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
_json = msgspec.json.Encoder()
_dec = msgspec.json.Decoder()


def _body(body: Any) -> dict[str, Any]:
    if isinstance(body, list):
        return {"contents": normalize(body)}
    if isinstance(body, dict):
        norm: dict[str, Any] = normalize(body)
        if not isinstance(norm.get("contents"), list):
            raise ValidationError("gemini", ["the body has no 'contents' list"])
        return norm
    raise ValidationError("gemini", ["expected a request body object or a list of contents"])


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
        ValidationError: The body is not a Gemini request shape at all.
    """
    norm = _body(body)
    out: list[Message] = []
    system = norm.get("systemInstruction")
    if isinstance(system, dict):
        out.append(Message(role="system", content=_parts(system.get("parts"), -1, [])))
    elif isinstance(system, str):
        out.append(Message(role="system", content=[TextPart(text=system)]))
    calls: list[ToolCallPart] = []
    for i, content in enumerate(norm["contents"]):
        if not isinstance(content, dict):
            raise ValidationError("gemini", [f"contents[{i}]: not a Content object"])
        role = content.get("role") or "user"
        if role == "model":
            parts = _parts(content.get("parts"), i, [])
            calls = [p for p in parts if isinstance(p, ToolCallPart) and p.kind == "function"]
            out.append(Message(role="assistant", content=parts, provider="google"))
        else:
            out.extend(_user(i, content.get("parts"), calls))
    return out


def _user(i: int, raw_parts: Any, calls: list[ToolCallPart]) -> list[Message]:
    out: list[Message] = []
    rest: list[Any] = []
    answered: set[str] = set()
    for raw in raw_parts if isinstance(raw_parts, list) else ():
        fr = raw.get("functionResponse") if isinstance(raw, dict) else None
        if not isinstance(fr, dict):
            rest.append(raw)
            continue
        name = fr.get("name") if isinstance(fr.get("name"), str) else None
        call_id = fr.get("id") if isinstance(fr.get("id"), str) and fr.get("id") else None
        if call_id is None:
            match = next(
                (c for c in calls if c.id not in answered and (name is None or c.name == name)), None
            )
            call_id = match.id if match is not None else f"{SYNTH_PREFIX}h{i}_{len(answered) + 1}"
        answered.add(call_id)
        content = _json.encode(fr.get("response", {})).decode()
        result = ToolResultPart(tool_call_id=call_id, name=name, content=content)
        out.append(Message(role="tool", content=[result], tool_call_id=call_id, name=name))
    if rest:
        out.append(Message(role="user", content=_parts(rest, i, [])))
    return out


def _parts(raw_parts: Any, i: int, out: list[Part]) -> list[Part]:
    calls = 0
    for raw in raw_parts if isinstance(raw_parts, list) else ():
        if not isinstance(raw, dict):
            out.append(UnknownPart(provider_type="part", raw=raw))
            continue
        sig = raw.get("thoughtSignature") if isinstance(raw.get("thoughtSignature"), str) else None
        if isinstance(raw.get("text"), str):
            if raw.get("thought"):
                out.append(ReasoningPart(text=raw["text"], signature=sig))
            else:
                out.append(TextPart(text=raw["text"], signature=sig))
            continue
        fc = raw.get("functionCall")
        if isinstance(fc, dict):
            calls += 1
            raw_id = fc.get("id")
            call_id = raw_id if isinstance(raw_id, str) and raw_id else f"{SYNTH_PREFIX}h{i}_{calls}"
            args = fc.get("args", {})
            out.append(
                ToolCallPart(
                    id=call_id,
                    name=str(fc.get("name") or ""),
                    arguments=_json.encode(args).decode(),
                    signature=sig,
                )
            )
            continue
        tc = raw.get("toolCall")
        if isinstance(tc, dict):
            out.append(
                ToolCallPart(
                    id=str(tc.get("id") or ""),
                    name=str(tc.get("toolType") or ""),
                    arguments=_json.encode(tc.get("args", {})).decode(),
                    kind="server",
                    signature=sig,
                )
            )
            continue
        value = _other(raw)
        if value is None:
            field = next((k for k in raw if k not in ("thought", "thoughtSignature")), "part")
            out.append(UnknownPart(provider_type=f"part.{field}", raw=raw))
            continue
        if sig is not None:
            out.append(UnknownPart(provider_type=SIGNATURE_TYPE, raw={"thoughtSignature": sig}))
        out.append(value)
    return out


def _other(raw: dict[str, Any]) -> Part | None:
    blob = raw.get("inlineData")
    if isinstance(blob, dict):
        return media_part(blob.get("mimeType"), blob.get("data"), None, blob.get("displayName"))
    fd = raw.get("fileData")
    if isinstance(fd, dict):
        return media_part(fd.get("mimeType"), None, fd.get("fileUri"), fd.get("displayName"))
    code = raw.get("executableCode")
    if isinstance(code, dict):
        return CodePart(language=code.get("language"), code=code.get("code"))
    result = raw.get("codeExecutionResult")
    if isinstance(result, dict):
        return CodePart(outcome=result.get("outcome"), output=result.get("output"))
    tr = raw.get("toolResponse")
    if isinstance(tr, dict):
        return ToolResultPart(
            tool_call_id=str(tr.get("id") or ""),
            name=str(tr.get("toolType") or ""),
            content=_json.encode(tr.get("response", {})).decode(),
        )
    fr = raw.get("functionResponse")
    if isinstance(fr, dict):
        return ToolResultPart(
            tool_call_id=str(fr.get("id") or ""),
            name=fr.get("name") if isinstance(fr.get("name"), str) else None,
            content=_json.encode(fr.get("response", {})).decode(),
        )
    return None


# ---------------------------------------------------------------------- canonical → Gemini


def from_canonical(
    messages: list[Message],
    *,
    lossy: list[str] | None = None,
    extras: dict[str, Any] | None = None,
    signature_placeholder: bool = True,
) -> dict[str, Any]:
    """Convert canonical messages to a Gemini request body ``{"contents": [...], ...}``.

    Args:
        messages: The conversation.
        lossy: If given, a line is appended for everything Gemini cannot carry, which is
            dropped, never turned into text.
        extras: Request fields passed through unchanged (``tools``, ``toolConfig``, ... as
            returned by :func:`request_extras`).
        signature_placeholder: Give the first function call of a model turn from another
            provider Google's placeholder signature (needed by Gemini 3).
    """
    sink: list[str] = lossy if lossy is not None else []
    names: dict[str, str] = {}
    system: list[dict[str, Any]] = []
    contents: list[dict[str, Any]] = []
    results: list[dict[str, Any]] | None = None
    for i, msg in enumerate(join_items(messages)):
        parts: list[Part] = (
            [TextPart(text=msg.content)] if isinstance(msg.content, str) else list(msg.content)
        )
        if msg.role in ("system", "developer"):
            if contents:
                sink.append(
                    f"messages[{i}]: {msg.role} message moved to systemInstruction (no position in contents)"
                )
            system.extend(_user_parts(i, parts, sink))
            continue
        if msg.role in ("assistant", "model"):
            results = None
            model = _model_parts(i, msg, parts, names, sink, signature_placeholder)
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
            results.extend(_response(i, r, names, sink) for r in tool_results)
        if rest:
            user = _user_parts(i, rest, sink)
            if results is not None:
                results.extend(user)  # text after the results, in the same user turn
            else:
                contents.append({"role": "user", "parts": user})
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


def _response(i: int, result: ToolResultPart, names: dict[str, str], lossy: list[str]) -> dict[str, Any]:
    name = result.name or names.get(result.tool_call_id)
    if name is None:
        lossy.append(
            f"messages[{i}]: tool result {result.tool_call_id} answers no known call; name left empty"
        )
        name = ""
    response: Any
    media: list[dict[str, Any]] = []
    if isinstance(result.content, str):
        response = _as_object(result.content)
    else:
        texts: list[str] = []
        for part in result.content:
            if isinstance(part, TextPart):
                texts.append(part.text)
            elif (body := media_body(part)) is not None:
                media.append(body)
            else:
                lossy.append(
                    f"messages[{i}]: {part.__struct_config__.tag} part in tool result {result.tool_call_id}"
                )
        response = _as_object("".join(texts))
    if result.is_error:
        response = (
            {"error": response.get("output", response)} if "output" in response else {"error": response}
        )
    fr: dict[str, Any] = {"name": name, "response": response}
    if result.tool_call_id and not result.tool_call_id.startswith(SYNTH_PREFIX):
        fr = {"id": result.tool_call_id, **fr}
    if media:
        fr["parts"] = media
    return {"functionResponse": fr}


def _as_object(text: str) -> dict[str, Any]:
    try:
        value = _dec.decode(text)
    except msgspec.DecodeError:
        return {"output": text}
    return value if isinstance(value, dict) else {"output": value}


def _user_parts(i: int, parts: Sequence[Part], lossy: list[str]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for part in parts:
        if isinstance(part, TextPart):
            if part.signature is not None:
                lossy.append(f"messages[{i}]: signature on user text")
            out.append({"text": part.text})
        elif (body := media_body(part)) is not None:
            out.append(body)
        elif (
            isinstance(part, UnknownPart)
            and part.provider_type.startswith("part.")
            and isinstance(part.raw, dict)
        ):
            out.append(part.raw)
        else:
            lossy.append(f"messages[{i}]: {part.__struct_config__.tag} part (no Gemini equivalent here)")
    return out


def _model_parts(
    i: int, msg: Message, parts: list[Part], names: dict[str, str], lossy: list[str], placeholder: bool
) -> list[dict[str, Any]]:
    google = msg.provider == "google"
    out: list[dict[str, Any]] = []
    pending: str | None = None
    first_call = True
    for part in parts:
        if isinstance(part, UnknownPart) and google and part.provider_type == SIGNATURE_TYPE:
            value = part.raw.get("thoughtSignature") if isinstance(part.raw, dict) else None
            pending = value if isinstance(value, str) else None
            continue
        body, sig = _model_part(i, part, google, names, lossy)
        if body is None:
            continue
        if sig is not None and not google:
            lossy.append(f"messages[{i}]: signature from another provider (dropped)")
            sig = None
        sig = sig if sig is not None else pending
        pending = None
        if "functionCall" in body and first_call:
            first_call = False
            if sig is None and not google and placeholder:
                sig = PLACEHOLDER_SIGNATURE  # Gemini 3 rejects a rebuilt call turn without one
        if sig is not None:
            body["thoughtSignature"] = sig
        out.append(body)
    return out


def _model_part(
    i: int, part: Part, google: bool, names: dict[str, str], lossy: list[str]
) -> tuple[dict[str, Any] | None, str | None]:
    """One model-turn part as a Gemini part and its signature; ``(None, None)`` when dropped."""
    body: dict[str, Any] | None = None
    if isinstance(part, TextPart):
        return {"text": part.text}, part.signature
    if isinstance(part, ReasoningPart):
        if part.redacted or part.data is not None or part.encrypted_content is not None:
            lossy.append(f"messages[{i}]: redacted or encrypted reasoning (Gemini cannot replay it)")
        if not google:
            lossy.append(f"messages[{i}]: reasoning from another provider (not replayed to Gemini)")
            return None, None
        text = part.text if part.text is not None else "".join(part.summary or ())
        return {"text": text, "thought": True}, part.signature
    if isinstance(part, ToolCallPart):
        return _call_body(i, part, google, names, lossy)
    if isinstance(part, ToolResultPart) and google:
        tr = _as_object(part.content) if isinstance(part.content, str) else {}
        body = {"toolResponse": {"toolType": part.name or "", "response": tr, "id": part.tool_call_id}}
    elif isinstance(part, CodePart):
        body = _code(part)
    elif isinstance(part, UnknownPart) and google and isinstance(part.raw, dict):
        body = dict(part.raw) if part.provider_type.startswith("part.") else None
    elif isinstance(part, ImagePart | AudioPart | FilePart):
        body = media_body(part)
    if body is None:
        lossy.append(f"messages[{i}]: {part.__struct_config__.tag} part (no Gemini equivalent)")
    return body, None


def _call_body(
    i: int, part: ToolCallPart, google: bool, names: dict[str, str], lossy: list[str]
) -> tuple[dict[str, Any] | None, str | None]:
    args = call_args(part.arguments)
    if args is None:
        lossy.append(f"messages[{i}]: tool call {part.id} arguments are not a JSON object")
        args = {}
    if part.kind == "server":
        if not google:
            lossy.append(f"messages[{i}]: server tool call {part.name!r} of another provider")
            return None, None
        return {"toolCall": {"toolType": part.name, "args": args, "id": part.id}}, part.signature
    if part.kind == "mcp":
        lossy.append(f"messages[{i}]: MCP tool call {part.name!r} (no Gemini equivalent)")
        return None, None
    names[part.id] = part.name
    call: dict[str, Any] = {"name": part.name, "args": args}
    if part.id and not part.id.startswith(SYNTH_PREFIX):
        call = {"id": part.id, **call}
    return {"functionCall": call}, part.signature


def _code(part: CodePart) -> dict[str, Any] | None:
    if part.code is not None:
        return {"executableCode": {"language": part.language or "PYTHON", "code": part.code}}
    if part.outcome is not None or part.output is not None:
        result: dict[str, Any] = {"outcome": part.outcome or "OUTCOME_OK"}
        if part.output is not None:
            result["output"] = part.output
        return {"codeExecutionResult": result}
    return None


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
            if open_calls:
                faults.extend(_unanswered(i - 1, open_calls))
            open_calls = [(c.get("id") or None, str(c.get("name") or "")) for c in calls]
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
