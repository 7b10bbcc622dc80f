"""The google-genai SDK as a test oracle for Gemini streams.

Bytes go through the real client (``client.models.generate_content_stream``) over an
``httpx2.MockTransport``; each chunk comes back as the SDK's ``GenerateContentResponse``. The
aggregation below is deliberately small and independent of maas-stream: concatenate text and
thought text per candidate, collect every named ``functionCall`` as its own call, apply Vertex
``partialArgs`` by JSONPath, note whether a streamed call was still open at the end.
"""

from __future__ import annotations

import base64
import re
from dataclasses import dataclass, field
from typing import Any

import httpx2
from google import genai
from google.genai import errors, types


@dataclass
class OracleCandidate:
    text: list[str] = field(default_factory=list)
    thought: list[str] = field(default_factory=list)
    calls: list[dict[str, Any]] = field(default_factory=list)
    finish: str | None = None
    open_call: bool = False


@dataclass
class Oracle:
    candidates: dict[int, OracleCandidate] = field(default_factory=dict)
    chunks: int = 0
    error: errors.APIError | None = None
    block_reason: str | None = None
    usage: Any = None


def sdk_chunks(data: bytes) -> tuple[list[types.GenerateContentResponse], errors.APIError | None]:
    """Run bytes through google-genai's streaming client; return its chunks and any APIError."""

    def handler(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, content=data, headers={"content-type": "text/event-stream"})

    client = genai.Client(
        api_key="dummy",
        http_options=types.HttpOptions(httpx_client=httpx2.Client(transport=httpx2.MockTransport(handler))),
    )
    out: list[types.GenerateContentResponse] = []
    try:
        for chunk in client.models.generate_content_stream(model="gemini-test", contents="hi"):
            out.append(chunk)
    except errors.APIError as exc:
        return out, exc
    return out, None


_SEG = re.compile(r"\.([A-Za-z_][\w-]*)|\[(\d+)\]")


def _apply(args: dict[str, Any], pa: types.PartialArg) -> None:
    path = pa.json_path or "$"
    segs: list[str | int] = [int(i) if i else n for n, i in _SEG.findall(path[1:])]
    node: Any = args
    for depth, seg in enumerate(segs[:-1]):
        nxt = segs[depth + 1]
        if isinstance(seg, int):
            while len(node) <= seg:
                node.append(None)
            if node[seg] is None:
                node[seg] = [] if isinstance(nxt, int) else {}
            node = node[seg]
        else:
            node = node.setdefault(seg, [] if isinstance(nxt, int) else {})
    leaf = segs[-1]
    if pa.string_value is not None:
        old = (
            node[leaf]
            if isinstance(leaf, int) and leaf < len(node)
            else (node.get(leaf) if isinstance(leaf, str) else None)
        )
        value: Any = (old if isinstance(old, str) else "") + pa.string_value
    elif pa.number_value is not None:
        value = pa.number_value
    elif pa.bool_value is not None:
        value = pa.bool_value
    else:
        value = None
    if isinstance(leaf, int):
        while len(node) <= leaf:
            node.append(None)
        node[leaf] = value
    else:
        node[leaf] = value


def oracle(data: bytes) -> Oracle:
    chunks, error = sdk_chunks(data)
    result = Oracle(chunks=len(chunks), error=error)
    for chunk in chunks:
        if chunk.prompt_feedback is not None and chunk.prompt_feedback.block_reason is not None:
            result.block_reason = chunk.prompt_feedback.block_reason.value
        if chunk.usage_metadata is not None:
            result.usage = chunk.usage_metadata
        for cand in chunk.candidates or ():
            c = result.candidates.setdefault(cand.index or 0, OracleCandidate())
            parts = cand.content.parts if cand.content is not None and cand.content.parts else []
            for part in parts:
                fc = part.function_call
                if fc is not None:
                    if fc.name:
                        sig = part.thought_signature
                        call: dict[str, Any] = {
                            "name": fc.name,
                            "args": dict(fc.args or {}),
                            "signature": base64.b64encode(sig).decode() if sig else None,
                            "id": fc.id,
                        }
                        c.calls.append(call)
                        c.open_call = bool(fc.will_continue)
                        for pa in fc.partial_args or ():
                            _apply(call["args"], pa)
                    elif c.open_call:
                        for pa in fc.partial_args or ():
                            args: dict[str, Any] = c.calls[-1]["args"]
                            _apply(args, pa)
                        if not fc.partial_args and not fc.will_continue:
                            c.open_call = False
                    continue
                if part.text is not None:
                    (c.thought if part.thought else c.text).append(part.text)
            if cand.finish_reason is not None:
                c.finish = cand.finish_reason.value
    return result


def sdk_response(body: dict[str, Any]) -> types.GenerateContentResponse:
    """Run a non-streaming body through google-genai's client (``generate_content``).

    The SDK drops fields it does not know (forward compatibility) and validates the rest with
    ``GenerateContentResponse.model_validate``; an invalid body raises.
    """

    def handler(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, json=body)

    client = genai.Client(
        api_key="dummy",
        http_options=types.HttpOptions(httpx_client=httpx2.Client(transport=httpx2.MockTransport(handler))),
    )
    return client.models.generate_content(model="gemini-test", contents="hi")
