"""OpenAI Chat Completions wire Structs (private). Only the fields we read are declared.

A streamed ``delta`` and a response body's ``message`` have the same fields, so one Struct
(:class:`Delta`) reads both; :class:`Completion` is the non-streaming ``chat.completion`` body.

They are ``gc=False``: decoded fresh per chunk, they hold only strings, numbers and plain JSON
values, so they cannot form reference cycles, and leaving them out of the cycle collector is
measured in ``benchmarks/bench_openai_chat.py`` (about a tenth of the decode cost).

Source: PROTOCOLS.md §1 (openai-python ``types/chat/chat_completion_chunk.py``), plus the
OpenAI-compatible extensions seen on real streams (``reasoning_content``, ``reasoning``,
``reasoning_details``, ``annotations``, Azure ``prompt_filter_results``, ``moderation``).
"""

from __future__ import annotations

from typing import Any

import msgspec


class FunctionDelta(msgspec.Struct, gc=False):
    name: str | None = None
    arguments: str | None = None


class CustomDelta(msgspec.Struct, gc=False):
    name: str | None = None
    input: str | None = None


class ToolCallDelta(msgspec.Struct, gc=False):
    index: int = 0
    id: str | None = None
    type: str | None = None
    function: FunctionDelta | None = None
    custom: CustomDelta | None = None


class AudioDelta(msgspec.Struct, gc=False):
    id: str | None = None
    data: str | None = None
    transcript: str | None = None
    expires_at: int | None = None


class ReasoningDetail(msgspec.Struct, gc=False):
    type: str = "reasoning.text"
    index: int | None = None
    text: str | None = None
    summary: str | None = None
    signature: str | None = None
    data: str | None = None
    id: str | None = None
    format: str | None = None


class Delta(msgspec.Struct, gc=False):
    role: str | None = None
    content: str | None = None
    refusal: str | None = None
    tool_calls: list[ToolCallDelta] | None = None
    function_call: FunctionDelta | None = None
    audio: AudioDelta | None = None
    reasoning_content: str | None = None
    reasoning: Any = None
    reasoning_details: list[ReasoningDetail] | None = None
    annotations: list[Any] | None = None


class Logprobs(msgspec.Struct, gc=False):
    content: list[Any] | None = None
    refusal: list[Any] | None = None


class _ChoiceBase(msgspec.Struct, gc=False):
    index: int = 0
    finish_reason: str | None = None
    logprobs: Logprobs | None = None


class Choice(_ChoiceBase, gc=False):
    """A chunk's choice: what its ``delta`` adds."""

    delta: Delta | None = None


class CompletionChoice(_ChoiceBase, gc=False):
    """A response body's choice: its whole ``message``."""

    message: Delta | None = None


class _Envelope(msgspec.Struct, gc=False):
    """What a chunk and a response body have in common."""

    id: str | None = None
    object: str | None = None
    created: int | None = None
    model: str | None = None
    usage: Any = None
    error: Any = None
    system_fingerprint: str | None = None
    service_tier: str | None = None


class Chunk(_Envelope, gc=False):
    """One ``chat.completion.chunk``."""

    choices: list[Choice] = []
    prompt_filter_results: Any = None
    moderation: Any = None


class Completion(_Envelope, gc=False):
    """A non-streaming ``chat.completion`` body."""

    choices: list[CompletionChoice] = []


class FoldDelta(msgspec.Struct, gc=False):
    """A delta read for the direct fold (``protocols/_direct.py``).

    Every field of :class:`Delta`, typed the same where the fold reads it; the others only told
    apart from ``null`` (``Any``): any of them sends the frame the normal way, whose full
    decoding checks it. So a frame folded directly is one :class:`Chunk` accepts.
    """

    role: str | None = None
    content: str | None = None
    tool_calls: list[ToolCallDelta] | None = None
    refusal: None = None
    function_call: None = None
    audio: None = None
    reasoning_content: Any = None
    reasoning: Any = None
    reasoning_details: None = None
    annotations: None = None


class FoldChoice(msgspec.Struct, gc=False):
    """A choice read for the direct fold (see :class:`FoldDelta`)."""

    index: int = 0
    finish_reason: str | None = None
    logprobs: None = None
    delta: FoldDelta | None = None


class FoldChunk(_Envelope, gc=False):
    """A chunk read for the direct fold (see :class:`FoldDelta`)."""

    error: None = None
    choices: list[FoldChoice] = []
    prompt_filter_results: None = None
    moderation: None = None


class LaterChunk(msgspec.Struct, gc=False):
    """A chunk after the one that gave the response its id: :class:`Chunk` without the envelope.

    The decoder reads ``id``, ``object``, ``created``, ``model``, ``system_fingerprint`` and
    ``service_tier`` from the chunk that announces the response only (every later chunk repeats
    them), so later chunks leave them undeclared: msgspec skips them as any unknown field (still
    checked as JSON) rather than making five objects per chunk. Both ways of reading a stream (the
    events and the direct fold) read later chunks so.
    """

    usage: Any = None
    error: Any = None
    choices: list[Choice] = []
    prompt_filter_results: Any = None
    moderation: Any = None


class FoldLaterChunk(msgspec.Struct, gc=False):
    """A later chunk read for the direct fold: :class:`LaterChunk` as :class:`FoldChunk` reads it."""

    usage: Any = None
    error: None = None
    choices: list[FoldChoice] = []
    prompt_filter_results: None = None
    moderation: None = None


chunk_decoder = msgspec.json.Decoder(Chunk)
later_decoder = msgspec.json.Decoder(LaterChunk)
fold_decoder = msgspec.json.Decoder(FoldChunk)
fold_later_decoder = msgspec.json.Decoder(FoldLaterChunk)
completion_decoder = msgspec.json.Decoder(Completion)
