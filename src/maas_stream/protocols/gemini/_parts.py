"""Gemini ``Part`` objects ↔ canonical parts: the one two-way mapping of this protocol.

The stream decoder, :func:`decode_response` and the history codec read parts with the
functions here; the stream encoder, :func:`encode_response` and the history codec write them
with :class:`ToWire`. What differs between those uses is a parameter (model output or a
request's model turn), never a second rendering.

Gemini → canonical:

* ``text`` → a text part, ``thought: true`` text → a reasoning part;
* ``functionCall`` → a ``function`` tool call (``arguments`` as JSON text; a call without an
  ``id`` gets a synthesized one starting with :data:`SYNTH_PREFIX`, never sent back);
* ``inlineData``/``fileData`` → image, audio or file part by MIME type;
* ``executableCode``/``codeExecutionResult`` → code parts;
* ``toolCall``/``toolResponse`` (server-side tools) → a ``server`` call / a tool result;
  ``functionResponse`` → a tool result;
* anything else → an ``unknown`` part ``part.<field>`` holding the whole part.

A ``thoughtSignature`` stays on the part it came with (text, reasoning and tool-call parts
have a ``signature`` field); on a part whose canonical type has none it becomes an ``unknown``
part of type :data:`SIGNATURE_TYPE` right before that part, and is written back on the part
that follows it.

Canonical → Gemini: signatures, server calls and their results, raw unknown parts and candidate
fields are written only when :func:`~maas_stream.protocols._replay.replayable` says their origin
may be replayed to Gemini; otherwise they are dropped and reported, never turned into text.

It must not hold stream state or build events.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

import msgspec
from msgspec import UNSET

from ... import _model as cm
from ..._exceptions import RemoteProtocolError
from .._json import NOT_JSON, object_from_text
from .._names import GEMINI as PROTOCOL
from .._replay import replayable
from ._args import ArgsWriter

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..._drops import DropKind, DropLog
    from ._wire import FunctionCall, WirePart

__all__ = [
    "SIGNATURE_TYPE",
    "SYNTH_PREFIX",
    "ToWire",
    "as_object",
    "call_arguments",
    "call_part",
    "drop_kind",
    "media_body",
    "other_part",
    "parts_from_wire",
    "signature_part",
    "text_part",
    "unknown_type",
]

SIGNATURE_TYPE: Final = "gemini.thought_signature"
"""``UnknownPart.provider_type`` of a signature kept for the part that follows it."""
SYNTH_PREFIX: Final = "maas_gc_"
"""Prefix of the call ids this library synthesizes for Gemini calls without one."""

_json: Final = msgspec.json.Encoder()
_dec: Final = msgspec.json.Decoder()


# ---------------------------------------------------------------------- Gemini → canonical


def text_part(text: str, *, thought: bool, signature: str | None = None) -> cm.TextPart | cm.ReasoningPart:
    """A ``text`` part: reasoning when ``thought`` is set, else text."""
    if thought:
        return cm.ReasoningPart(text=text, signature=signature)
    return cm.TextPart(text=text, signature=signature)


def call_arguments(call: FunctionCall) -> str:
    """A whole ``functionCall``'s arguments as JSON text (``{}`` when it has none).

    Raises:
        RemoteProtocolError: ``args`` is not a JSON object or not valid UTF-8, or a
            ``partialArgs`` fragment is malformed.
    """
    if call.args is not UNSET:
        raw = bytes(call.args)
        if raw == b"null":
            return "{}"
        if not raw.startswith(b"{"):
            raise RemoteProtocolError("functionCall.args is not a JSON object")
        try:
            return raw.decode()
        except UnicodeDecodeError as exc:
            raise RemoteProtocolError("functionCall.args is not valid UTF-8") from exc
    if call.partial_args:
        writer = ArgsWriter()
        for arg in call.partial_args:
            writer.feed(arg)
        writer.finish()
        return writer.final_text() or writer.text
    return "{}"


def call_part(call: FunctionCall, call_id: str, signature: str | None, arguments: str) -> cm.ToolCallPart:
    """A ``functionCall`` as a canonical client call."""
    return cm.ToolCallPart(
        id=call.id or call_id, name=call.name or "", arguments=arguments, signature=signature
    )


def media_part(mime: str | None, data: str | None, url: str | None, name: str | None) -> cm.Part:
    """An ``inlineData`` / ``fileData`` part as an image, audio or file part by MIME type."""
    if mime is not None and mime.startswith("image/"):
        return cm.ImagePart(url=url, data=data, media_type=mime)
    if mime is not None and mime.startswith("audio/") and url is None:
        return cm.AudioPart(data=data, format=mime)
    return cm.FilePart(url=url, data=data, filename=name, media_type=mime)


def _response_text(value: Any) -> str:
    return _json.encode(value if value is not None else {}).decode()


def other_part(part: WirePart, server_id: Callable[[], str]) -> cm.Part | None:
    """A part that is neither text nor a ``functionCall``; ``None`` when it is of no known kind.

    Args:
        part: The wire part.
        server_id: Makes an id for a server-side ``toolCall`` that has none.
    """
    if part.inline_data is not None:
        blob = part.inline_data
        return media_part(blob.mime_type, blob.data, None, blob.display_name)
    if part.file_data is not None:
        fd = part.file_data
        return media_part(fd.mime_type, None, fd.file_uri, fd.display_name)
    if part.executable_code is not None:
        code = part.executable_code
        return cm.CodePart(language=code.language, code=code.code)
    if part.code_execution_result is not None:
        result = part.code_execution_result
        return cm.CodePart(outcome=result.outcome, output=result.output)
    if part.tool_call is not None:
        tc = part.tool_call
        return cm.ToolCallPart(
            id=str(tc.get("id") or server_id()),
            name=str(tc.get("toolType") or ""),
            arguments=_response_text(tc.get("args")),
            kind="server",
            signature=part.thought_signature,
            status="completed",
        )
    if part.tool_response is not None:
        tr = part.tool_response
        return cm.ToolResultPart(
            tool_call_id=str(tr.get("id") or ""),
            name=str(tr.get("toolType") or ""),
            content=_response_text(tr.get("response")),
        )
    if part.function_response is not None:
        fr = part.function_response
        name = fr.get("name")
        return cm.ToolResultPart(
            tool_call_id=str(fr.get("id") or ""),
            name=name if isinstance(name, str) else None,
            content=_response_text(fr.get("response")),
        )
    return None


def signature_part(signature: str) -> cm.UnknownPart:
    """The kept signature of a part whose canonical type has no signature field."""
    return cm.UnknownPart(provider_type=SIGNATURE_TYPE, raw={"thoughtSignature": signature})


def unknown_type(raw: Any) -> str:
    """The ``provider_type`` of an unknown part: ``part.<its data field>``."""
    if isinstance(raw, dict):
        return "part." + next((k for k in raw if k not in ("thought", "thoughtSignature")), "part")
    return "part.part"


def parts_from_wire(
    part: WirePart, raw: Callable[[], Any], call_id: Callable[[], str], server_id: Callable[[], str]
) -> list[cm.Part]:
    """One whole Gemini part (of a response body or a request) as canonical parts.

    Args:
        part: The part, decoded.
        raw: Gives the part as plain JSON (kept whole when its kind is unknown).
        call_id: Makes an id for a ``functionCall`` that has none.
        server_id: Makes an id for a server-side ``toolCall`` that has none.

    Raises:
        RemoteProtocolError: A ``functionCall``'s arguments are not a valid JSON object.
    """
    sig = part.thought_signature
    if part.text is not UNSET:
        return [text_part(part.text, thought=bool(part.thought), signature=sig)]
    call = part.function_call
    if call is not None:
        return [call_part(call, call.id or call_id(), sig, call_arguments(call))]
    value = other_part(part, server_id)
    if value is None:
        whole = raw()
        return [cm.UnknownPart(provider_type=unknown_type(whole), raw=whole)]
    if sig and not isinstance(value, cm.ToolCallPart):
        return [signature_part(sig), value]
    return [value]


# ---------------------------------------------------------------------- canonical → Gemini


def as_object(text: str) -> dict[str, Any]:
    """Tool output text as the JSON object Gemini's ``response`` fields want."""
    try:
        value = _dec.decode(text)
    except NOT_JSON:
        return {"output": text}
    return value if isinstance(value, dict) else {"output": value}


def call_args(arguments: str) -> dict[str, Any] | None:
    """A call's arguments text as the JSON object Gemini wants, or ``None`` if it is not one."""
    return object_from_text(arguments)


def media_body(part: cm.Part) -> dict[str, Any] | None:
    """``inlineData`` / ``fileData`` for an image, audio or file part (``None`` if it has neither)."""
    if isinstance(part, cm.ImagePart | cm.FilePart):
        mime = part.media_type or (
            "image/png" if isinstance(part, cm.ImagePart) else "application/octet-stream"
        )
        if part.data is not None:
            return {"inlineData": {"mimeType": mime, "data": part.data}}
        if part.url is not None:
            return {"fileData": {"mimeType": mime, "fileUri": part.url}}
        return None
    if isinstance(part, cm.AudioPart) and part.data:
        fmt = part.format or "wav"
        return {"inlineData": {"mimeType": fmt if "/" in fmt else f"audio/{fmt}", "data": part.data}}
    return None


_KINDS: Final[dict[type[Any], DropKind]] = {
    cm.TextPart: "field",
    cm.RefusalPart: "refusal",
    cm.ImagePart: "media",
    cm.AudioPart: "media",
    cm.FilePart: "media",
    cm.ToolResultPart: "tool_result",
    cm.ReasoningPart: "reasoning",
    cm.CitationPart: "citation",
    cm.CodePart: "code",
    cm.UnknownPart: "unknown",
}


def drop_kind(part: cm.Part) -> DropKind:
    """The drop kind of a whole part that has no place in the output."""
    if isinstance(part, cm.ToolCallPart):
        return "server_call" if part.kind in ("server", "mcp") else "field"
    if isinstance(part, cm.ReasoningPart) and (part.redacted or part.encrypted_content or part.data):
        return "encrypted_reasoning"
    return _KINDS.get(type(part), "field")


def _tag(part: cm.Part) -> str:
    return part.provider_type if isinstance(part, cm.UnknownPart) else str(part.__struct_config__.tag)


class ToWire:
    """Canonical parts → Gemini parts, for one output: a stream, a response body or a request.

    Args:
        drops: Where what Gemini cannot carry is reported.
        origin: The protocol the parts came from; whether its signatures, server calls and raw
            parts may go to Gemini is :func:`~maas_stream.protocols._replay.replayable`'s call.
        request: Writing a request's model turns (history) rather than model output: reasoning
            of another origin is not replayed, a call whose arguments are not an object is kept
            with ``{}`` (its result must still answer it), and cut calls are kept.
        exact_args: Write call arguments as the bytes they arrived in (a stream) rather than
            as a parsed object (a body that callers read as JSON).
    """

    __slots__ = ("drops", "exact_args", "own", "request", "server_ids", "where")

    def __init__(
        self, drops: DropLog, origin: str | None, *, request: bool = False, exact_args: bool = False
    ) -> None:
        self.drops = drops
        self.own = replayable(origin, PROTOCOL)
        """The parts came from Gemini: their signatures and raw fields go back."""
        self.request = request
        self.exact_args = exact_args
        self.where: str | None = None
        """Where the part being written is (``messages[3]``), for the drop records."""
        self.server_ids: set[str] = set()
        """Ids of the server-side calls written so far (their results become ``toolResponse``)."""

    def drop(self, kind: DropKind, what: str, where: str | None = None) -> None:
        """Report a drop at the current place (or ``where``)."""
        self.drops.add(kind, what, where=where if where is not None else self.where)

    def signature(self, signature: str | None) -> str | None:
        """A part's signature if it may go to Gemini; a foreign one is dropped (reported)."""
        if signature is None or self.own:
            return signature
        self.drop("signature", "signature from another provider (Gemini replays only its own)")
        return None

    def kept_signature(self, part: cm.UnknownPart) -> str | None:
        """The signature a :data:`SIGNATURE_TYPE` part keeps for the part after it."""
        raw = part.raw
        sig = raw.get("thoughtSignature") if isinstance(raw, dict) else None
        if not isinstance(sig, str):
            return None
        return self.signature(sig)

    def reasoning_loss(self, part: cm.ReasoningPart) -> None:
        """Report the opaque reasoning of another provider that a thought part cannot hold."""
        if part.redacted or part.data is not None or part.encrypted_content is not None:
            self.drop("encrypted_reasoning", "redacted or encrypted reasoning (Gemini cannot carry it)")

    def refusal(self) -> None:
        """Report a refusal written as a text part (Gemini has no refusal part)."""
        self.drop("refusal", "refusal sent as text (Gemini has no refusal part)")

    def text(self, text: str, *, thought: bool, signature: str | None = None) -> dict[str, Any]:
        """A ``text`` part (``thought`` for reasoning), with a signature already allowed."""
        body: dict[str, Any] = {"text": text}
        if thought:
            body["thought"] = True
        if signature is not None:
            body["thoughtSignature"] = signature
        return body

    def part(self, part: cm.Part) -> list[dict[str, Any]]:
        """One whole canonical part as Gemini parts (none when it is dropped, which is reported).

        A :data:`SIGNATURE_TYPE` part is not written: callers take its signature with
        :meth:`kept_signature` for the part after it.
        """
        if isinstance(part, cm.TextPart):
            if not part.text and part.signature is None and not self.request:
                return []
            return [self.text(part.text, thought=False, signature=self.signature(part.signature))]
        if isinstance(part, cm.RefusalPart):
            # The user must still read it: Gemini has no refusal part, so it goes as text.
            self.refusal()
            return [self.text(part.text, thought=False)] if part.text or self.request else []
        if isinstance(part, cm.ReasoningPart):
            return self._reasoning(part)
        if isinstance(part, cm.ToolCallPart):
            return self._call(part)
        if isinstance(part, cm.ToolResultPart):
            return self._result(part)
        if isinstance(part, cm.CodePart):
            return self._code(part)
        if isinstance(part, cm.UnknownPart) and part.provider_type.startswith("part.") and self.own:
            if isinstance(part.raw, dict):
                return [dict(part.raw)]
        if isinstance(part, cm.ImagePart | cm.AudioPart | cm.FilePart):
            return self._media(part)
        self.drop(drop_kind(part), f"{_tag(part)} part (no Gemini equivalent)")
        return []

    def user_part(self, part: cm.Part) -> list[dict[str, Any]]:
        """One part of a request's user (or system) turn."""
        if isinstance(part, cm.TextPart):
            if part.signature is not None:
                self.drop("signature", "signature on a user text part")
            return [{"text": part.text}]
        body = media_body(part)
        if body is not None:
            return [body]
        if (
            isinstance(part, cm.UnknownPart)
            and part.provider_type.startswith("part.")
            and isinstance(part.raw, dict)
        ):
            return [part.raw]
        self.drop(drop_kind(part), f"{_tag(part)} part in a user turn (no Gemini equivalent)")
        return []

    def function_response(self, result: cm.ToolResultPart, name: str) -> dict[str, Any]:
        """A request's ``functionResponse`` part for a tool result."""
        media: list[dict[str, Any]] = []
        if isinstance(result.content, str):
            response = as_object(result.content)
        else:
            texts: list[str] = []
            for part in result.content:
                if isinstance(part, cm.TextPart):
                    texts.append(part.text)
                elif (body := media_body(part)) is not None:
                    media.append(body)
                else:
                    self.drop("tool_result", f"{_tag(part)} part in a tool result")
            response = as_object("".join(texts))
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

    # ------------------------------------------------------------------ per kind

    def _reasoning(self, part: cm.ReasoningPart) -> list[dict[str, Any]]:
        self.reasoning_loss(part)
        if self.request and not self.own:
            self.drop("reasoning", "reasoning from another provider (not replayed to Gemini)")
            return []
        text = part.text if part.text is not None else "".join(part.summary or ())
        signature = self.signature(part.signature)
        if not text and signature is None:
            return []
        return [self.text(text, thought=True, signature=signature)]

    def _call(self, part: cm.ToolCallPart) -> list[dict[str, Any]]:
        if part.kind == "mcp" or (part.kind == "server" and not self.own):
            self.drop("server_call", f"{part.kind} tool call {part.name!r} (Gemini has no place for it)")
            return []
        if part.status == "incomplete" and not self.request:
            self.drop("field", f"tool call {part.name!r} cut before it completed (Gemini sends calls whole)")
            return []
        args: Any = call_args(part.arguments)
        if args is None:
            self.drop("field", f"arguments of tool call {part.name!r} that are not a JSON object")
            if not self.request:
                return []
            args = {}
        elif self.exact_args and args and "\n" not in part.arguments and "\r" not in part.arguments:
            args = msgspec.Raw(part.arguments.encode())  # byte-exact, as it arrived
        call_id = part.id if part.id and not part.id.startswith(SYNTH_PREFIX) else None
        if part.kind == "server":
            self.server_ids.add(part.id)
            server: dict[str, Any] = {"toolType": part.name, "args": args}
            if call_id is not None:
                server["id"] = call_id
            body: dict[str, Any] = {"toolCall": server}
        else:
            if part.kind == "custom":
                self.drop("field", f"custom tool call {part.name!r} sent as a function call")
            call: dict[str, Any] = {"name": part.name, "args": args}
            body = {"functionCall": {"id": call_id, **call} if call_id is not None else call}
        signature = self.signature(part.signature)
        if signature is not None:
            body["thoughtSignature"] = signature
        return [body]

    def _result(self, part: cm.ToolResultPart) -> list[dict[str, Any]]:
        if not self.own:
            self.drop("tool_result", "tool result inside the model output")
            return []
        response = as_object(part.content) if isinstance(part.content, str) else {}
        if part.tool_call_id in self.server_ids or self.request:
            tr = {"toolType": part.name or "", "response": response, "id": part.tool_call_id}
            return [{"toolResponse": tr}]
        fr: dict[str, Any] = {"name": part.name or "", "response": response}
        if part.tool_call_id:
            fr = {"id": part.tool_call_id, **fr}
        return [{"functionResponse": fr}]

    def _code(self, part: cm.CodePart) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        if part.code is not None:
            out.append({"executableCode": {"language": part.language or "PYTHON", "code": part.code}})
        if part.outcome is not None or part.output is not None:
            result: dict[str, Any] = {"outcome": part.outcome or "OUTCOME_OK"}
            if part.output is not None:
                result["output"] = part.output
            out.append({"codeExecutionResult": result})
        if not out:
            self.drop("code", "code part with neither code nor output")
        return out

    def _media(self, part: cm.ImagePart | cm.AudioPart | cm.FilePart) -> list[dict[str, Any]]:
        if isinstance(part, cm.AudioPart) and part.transcript:
            self.drop("media", "audio transcript (Gemini output audio has no transcript field)")
        body = media_body(part)
        if body is None:
            self.drop("media", f"{_tag(part)} part without data or a URL")
            return []
        return [body]
