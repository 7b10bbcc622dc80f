"""Private wire Structs for Gemini ``GenerateContentResponse`` stream chunks (PROTOCOLS.md §4).

Gemini is a key-presence wire: a part holds exactly one data field, and a field that is absent
means "not this kind". The Structs below declare only the fields the decoder reads, with
``rename="camel"`` (what servers send). Proto3 JSON parsers also accept the original snake_case
names, so :func:`decode_chunk` falls back to a schema-aware key normaliser when a payload uses
them (free-form objects such as ``functionCall.args`` are never rewritten).

The direct fold reads common chunks with lean twins (:class:`FoldChunk` and the Structs under
it, plus their :func:`snake_keys` variants) that declare only what the fold reads and refuse
unknown fields: unlike the Structs above they are a gate, not the decoder of record, and a chunk
they refuse goes the normal way whole (which ignores or keeps unknown fields as ever).

They are ``gc=False``: decoded fresh per chunk, they hold only strings, numbers and plain JSON
values, so they cannot form reference cycles; leaving them out of the cycle collector is measured
in ``benchmarks/bench_gemini.py``.

It must not hold state, build events or know canonical types.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Final, Literal, TypeVar, cast

import msgspec
from msgspec import UNSET, UnsetType

from ..._exceptions import RemoteProtocolError

__all__ = [
    "Blob",
    "Candidate",
    "Chunk",
    "CodeResult",
    "Content",
    "ExecutableCode",
    "FileData",
    "FoldCandidate",
    "FoldChunk",
    "FoldContent",
    "FoldPart",
    "FunctionCall",
    "PartialArg",
    "WirePart",
    "block_reason",
    "candidate_fields",
    "decode_any",
    "decode_chunk",
    "decode_part",
    "fold_decoders",
    "normalize",
    "raw_part",
    "reencoded",
    "renamed",
    "response_fields",
    "snake_keys",
]


_NO_RAW: Final = msgspec.Raw()
"""Default of raw fields: empty (falsy) when the field is absent."""


class PartialArg(msgspec.Struct, rename="camel", gc=False):
    """One Vertex streamed-argument fragment: a JSONPath and a value."""

    json_path: str = ""
    string_value: str | UnsetType = UNSET
    number_value: int | float | UnsetType = UNSET
    bool_value: bool | UnsetType = UNSET
    null_value: Any = UNSET
    will_continue: bool | None = None


class FunctionCall(msgspec.Struct, rename="camel", gc=False):
    """``functionCall``: whole (Gemini API) or one piece of a streamed call (Vertex)."""

    id: str | None = None
    name: str | None = None
    args: msgspec.Raw | UnsetType = UNSET
    partial_args: list[PartialArg] | None = None
    will_continue: bool | None = None


class Blob(msgspec.Struct, rename="camel", gc=False):
    """``inlineData``."""

    mime_type: str | None = None
    data: str | None = None
    display_name: str | None = None


class FileData(msgspec.Struct, rename="camel", gc=False):
    """``fileData``."""

    file_uri: str | None = None
    mime_type: str | None = None
    display_name: str | None = None


class ExecutableCode(msgspec.Struct, rename="camel", gc=False):
    """``executableCode``."""

    code: str | None = None
    language: str | None = None
    id: str | None = None


class CodeResult(msgspec.Struct, rename="camel", gc=False):
    """``codeExecutionResult``."""

    outcome: str | None = None
    output: str | None = None
    id: str | None = None


class WirePart(msgspec.Struct, rename="camel", gc=False):
    """One ``Part``: exactly one data field plus optional metadata."""

    text: str | UnsetType = UNSET
    thought: bool | None = None
    thought_signature: str | None = None
    inline_data: Blob | None = None
    file_data: FileData | None = None
    function_call: FunctionCall | None = None
    function_response: dict[str, Any] | None = None
    executable_code: ExecutableCode | None = None
    code_execution_result: CodeResult | None = None
    tool_call: dict[str, Any] | None = None
    tool_response: dict[str, Any] | None = None


class Content(msgspec.Struct, rename="camel", gc=False):
    """``content``: the role and the new parts."""

    role: str | None = None
    parts: list[WirePart] = msgspec.field(default_factory=list)


class Candidate(msgspec.Struct, rename="camel", gc=False):
    """One candidate of a chunk. Fields with no canonical home stay raw JSON until kept."""

    content: Content | None = None
    finish_reason: str | None = None
    index: int = 0
    finish_message: msgspec.Raw = _NO_RAW
    safety_ratings: msgspec.Raw = _NO_RAW
    citation_metadata: msgspec.Raw = _NO_RAW
    grounding_metadata: msgspec.Raw = _NO_RAW
    url_context_metadata: msgspec.Raw = _NO_RAW
    avg_logprobs: msgspec.Raw = _NO_RAW
    logprobs_result: msgspec.Raw = _NO_RAW
    token_count: msgspec.Raw = _NO_RAW


class Chunk(msgspec.Struct, rename="camel", gc=False):
    """One ``GenerateContentResponse`` chunk (or an in-stream ``{"error": ...}`` body).

    ``usageMetadata`` stays raw: Gemini repeats it on every chunk and only the last is kept.
    """

    candidates: list[Candidate] = msgspec.field(default_factory=list)
    prompt_feedback: dict[str, Any] | None = None
    usage_metadata: msgspec.Raw = _NO_RAW
    model_version: str | None = None
    response_id: str | None = None
    create_time: msgspec.Raw = _NO_RAW
    model_status: dict[str, Any] | None = None
    error: Any = None


# ---------------------------------------------------------------------- the direct fold's chunks

S = TypeVar("S", bound=msgspec.Struct)


def _lean(cls: type[S], rename: Literal["camel", "lower"], types: dict[str, Any]) -> type[S]:
    """``cls`` refusing unknown fields, its names renamed by ``rename``, nested Structs swapped per ``types``."""
    fields: list[tuple[str, Any, Any]] = []
    for f in msgspec.structs.fields(cls):
        default = (
            f.default
            if f.default_factory is msgspec.NODEFAULT
            else msgspec.field(default_factory=f.default_factory)
        )
        fields.append((f.name, types.get(f.name, f.type), default))
    lean = msgspec.defstruct(
        cls.__name__, fields, bases=(cls,), rename=rename, forbid_unknown_fields=True, gc=False
    )
    return cast("type[S]", lean)


def snake_keys(cls: type[S], **types: Any) -> type[S]:
    """The variant of a fold Struct that reads the SDK's snake_case names (``types``: its nested Structs')."""
    return _lean(cls, "lower", types)


if TYPE_CHECKING:
    FoldArg = PartialArg
    FoldCall = FunctionCall
else:
    FoldArg = _lean(PartialArg, "camel", {})
    FoldCall = _lean(FunctionCall, "camel", {"partial_args": list[FoldArg] | None})
"""A ``partialArgs`` entry and a ``functionCall`` as the fold reads them: unknown names refused (a
snake_case one among camelCase ones must go the normal way, which renames it)."""


class FoldPart(msgspec.Struct, rename="camel", forbid_unknown_fields=True, gc=False):
    """A part as the direct fold reads it: text (or a thought) or a ``functionCall``, nothing else."""

    text: str | UnsetType = UNSET
    thought: bool | None = None
    thought_signature: str | None = None
    function_call: FoldCall | None = None


class FoldContent(msgspec.Struct, rename="camel", forbid_unknown_fields=True, gc=False):
    """``content`` as the direct fold reads it."""

    role: str | None = None
    parts: list[FoldPart] = msgspec.field(default_factory=list)


class FoldCandidate(msgspec.Struct, rename="camel", forbid_unknown_fields=True, gc=False):
    """A candidate as the direct fold reads it: no finish reason and no field without a canonical home."""

    content: FoldContent | None = None
    index: int = 0


class FoldChunk(msgspec.Struct, rename="camel", forbid_unknown_fields=True, gc=False):
    """A chunk as the direct fold reads it (the fields a common chunk has, typed as :class:`Chunk` types them).

    Unknown fields are refused, so a chunk with anything else (a finish reason, an error,
    candidate metadata, another part kind) fails to decode and goes the normal way whole.
    """

    candidates: list[FoldCandidate] = msgspec.field(default_factory=list)
    usage_metadata: msgspec.Raw = _NO_RAW
    model_version: str | None = None
    response_id: str | None = None
    create_time: msgspec.Raw = _NO_RAW


_snake_arg: Final = snake_keys(FoldArg)
_snake_call: Final = snake_keys(FoldCall, partial_args=list[_snake_arg] | None)  # type: ignore[valid-type]
_snake_part: Final = snake_keys(FoldPart, function_call=_snake_call | None)
_snake_content: Final = snake_keys(FoldContent, parts=list[_snake_part])  # type: ignore[valid-type]
_snake_candidate: Final = snake_keys(FoldCandidate, content=_snake_content | None)
_snake_chunk: Final = snake_keys(FoldChunk, candidates=list[_snake_candidate])  # type: ignore[valid-type]

fold_decoders: Final = (msgspec.json.Decoder(FoldChunk), msgspec.json.Decoder(_snake_chunk))
"""The direct fold's decoders: camelCase names (what servers send), then snake_case (the SDK's)."""


CANDIDATE_EXTRAS: Final = (
    ("finish_message", "finishMessage"),
    ("safety_ratings", "safetyRatings"),
    ("citation_metadata", "citationMetadata"),
    ("grounding_metadata", "groundingMetadata"),
    ("url_context_metadata", "urlContextMetadata"),
    ("avg_logprobs", "avgLogprobs"),
    ("logprobs_result", "logprobsResult"),
    ("token_count", "tokenCount"),
)
"""Candidate fields with no canonical home: (attribute, wire name), kept raw per candidate."""

_chunk: Final = msgspec.json.Decoder(Chunk)
_part: Final = msgspec.json.Decoder(WirePart)
_any: Final = msgspec.json.Decoder()
_json: Final = msgspec.json.Encoder()

# A JSON object key with an underscore between lowercase letters: maybe a snake_case field.
_SNAKE_KEY: Final = re.compile(r'"[a-z][a-z0-9]*_[a-z0-9_]*"\s*:')
_SNAKE_KEY_BYTES: Final = re.compile(_SNAKE_KEY.pattern.encode())

_OPAQUE: Final = frozenset({"args", "response", "partMetadata", "searchEntryPoint", "customMetadata"})
"""Keys whose values are free-form (user data): never renamed."""


def _camel(key: str) -> str:
    if "_" not in key:
        return key
    head, *rest = key.split("_")
    return head + "".join(w[:1].upper() + w[1:] for w in rest)


def normalize(value: Any) -> Any:
    """Rename snake_case keys to lowerCamelCase, leaving free-form objects untouched."""
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, item in value.items():
            name = _camel(key) if isinstance(key, str) else key
            out[name] = item if name in _OPAQUE else normalize(item)
        return out
    if isinstance(value, list):
        return [normalize(v) for v in value]
    return value


def renamed(data: bytes | str) -> bool:
    """Whether :func:`decode_chunk` renames this payload's keys (and so re-encodes ``args``)."""
    # "_" not in data is a C-speed scan that clears almost every chunk; the regex runs rarely.
    if isinstance(data, bytes):
        return 0x5F in data and _SNAKE_KEY_BYTES.search(data) is not None  # an int: memchr
    return "_" in data and _SNAKE_KEY.search(data) is not None


def decode_chunk(data: bytes | str) -> Chunk:
    """Decode one chunk (or a whole response body), accepting camelCase and snake_case names.

    Raises:
        msgspec.DecodeError: Not JSON.
        msgspec.ValidationError: JSON of the wrong shape.
        RemoteProtocolError: JSON nested too deeply to decode.
    """
    try:
        if not renamed(data):
            return _chunk.decode(data)
        return _chunk.decode(_json.encode(normalize(_any.decode(data))))
    except RecursionError as exc:
        raise RemoteProtocolError("JSON nested too deeply") from exc


def reencoded(raw: msgspec.Raw) -> msgspec.Raw:
    """A free-form value as :func:`decode_chunk` gives it from a payload it renames (decoded, encoded again)."""
    return msgspec.Raw(_json.encode(_any.decode(raw)))


def decode_part(raw: dict[str, Any]) -> WirePart:
    """Decode one part given as plain JSON values (camelCase keys), as the stream decoder would.

    Raises:
        msgspec.ValidationError: A field of the wrong type.
    """
    return _part.decode(_json.encode(raw))


def candidate_fields(cand: Candidate) -> dict[str, Any]:
    """A candidate's fields with no canonical home (safety ratings, grounding, ...), decoded."""
    out: dict[str, Any] = {}
    if (
        cand.safety_ratings
        or cand.grounding_metadata
        or cand.citation_metadata
        or cand.url_context_metadata
        or cand.finish_message
        or cand.avg_logprobs
        or cand.logprobs_result
        or cand.token_count
    ):
        for attr, name in CANDIDATE_EXTRAS:
            value = getattr(cand, attr)
            if value:
                decoded = _any.decode(value)
                if decoded is not None and decoded != {}:
                    out[name] = decoded
    return out


def response_fields(chunk: Chunk) -> dict[str, Any]:
    """A response's fields with no canonical home (``createTime``, ``modelStatus``, ``promptFeedback``)."""
    raw: dict[str, Any] = {}
    if chunk.create_time:
        raw["createTime"] = _any.decode(chunk.create_time)
    if chunk.model_status is not None:
        raw["modelStatus"] = chunk.model_status
    if chunk.prompt_feedback is not None:
        raw["promptFeedback"] = chunk.prompt_feedback
    return raw


def block_reason(chunk: Chunk) -> str | None:
    """The ``promptFeedback.blockReason`` of a chunk whose prompt was blocked."""
    feedback = chunk.prompt_feedback
    reason = feedback.get("blockReason") if feedback is not None else None
    return reason if isinstance(reason, str) else None


def raw_part(data: bytes | str, candidate: int, part: int) -> Any:
    """The JSON value of one part of a chunk (for parts of an unknown kind, kept whole)."""
    value = _any.decode(data)
    if renamed(data):
        value = normalize(value)
    return value["candidates"][candidate]["content"]["parts"][part]


def decode_any(raw: msgspec.Raw | bytes) -> Any:
    """Decode raw JSON untyped."""
    return _any.decode(raw)
