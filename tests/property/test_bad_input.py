"""Explicit bad provider input that random generation rarely finds: each must end in a result or
in ``RemoteProtocolError`` (:func:`tests.invariants.assert_decodes_or_remote_error`), never in a
``RecursionError``, ``TypeError``, ``UnicodeDecodeError`` or a memory blow-up.

Inputs that still fail on this branch are ``xfail(strict=True)`` with what is wrong and where,
so a fix shows up as an unexpected pass (and the mark must then go).
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import TYPE_CHECKING, Any

import pytest

import maas_stream as ms
from maas_stream import sse
from tests import invariants as inv
from tests.conftest import RECORDINGS, recordings

if TYPE_CHECKING:
    from collections.abc import Iterator

PROTOCOLS = ms.protocol_names()
BODY_TARGETS = ("openai-chat", "openai-responses", "anthropic", "gemini")


def _jsonl(protocol: str) -> bool:
    return ms.get_protocol(protocol).framing == "jsonl"


def _frames(protocol: str, data: bytes) -> list[tuple[str, str]]:
    """A recording's frames as (SSE event name or JSON-lines direction, JSON text)."""
    if _jsonl(protocol):
        lines = [json.loads(line) for line in data.splitlines() if line.strip()]
        return [(line["dir"], json.dumps(line["msg"])) for line in lines]
    decoder = sse.Decoder()
    return [(e.event, e.data) for e in decoder.feed(data) + decoder.finish() if e.data.startswith("{")]


def _stream(protocol: str, frames: list[tuple[str, str]]) -> bytes:
    """Frames (as :func:`_frames` gives them) back to this protocol's bytes."""
    if _jsonl(protocol):
        return b"".join(f'{{"dir":"{d}","msg":{text}}}\n'.encode() for d, text in frames)
    return b"".join(
        (b"" if e == "message" else f"event: {e}\n".encode()) + f"data: {text}\n\n".encode()
        for e, text in frames
    )


def _assert_refused_or_decoded_everywhere(data: bytes, protocol: str) -> None:
    """Decoding, and converting to every target with a body, end well or in RemoteProtocolError."""
    inv.assert_decodes_or_remote_error(data, protocol)
    for target in BODY_TARGETS:
        try:
            ms.convert(data, protocol=protocol, to=target, fail_closed=False)
        except ms.RemoteProtocolError:
            pass


# ------------------------------------------------------------------ JSON nested 1,000 deep

DEPTH = 1000
_NESTED = '{"a":' * DEPTH + "1" + "}" * DEPTH
_RECURSION = (
    "msgspec raises RecursionError decoding JSON nested past the interpreter's recursion limit;"
    " the decoder bases (protocols/_base.py: SSEStreamDecoder.feed, _jsonl.py: JSONLinesStreamDecoder."
    "feed_message) must report it as RemoteProtocolError"
)
KNOWN_NESTED: dict[str, str] = {}  # fixed: protocols/_base.py reports it as RemoteProtocolError


@pytest.mark.parametrize(
    "protocol",
    [
        pytest.param(
            p, marks=[pytest.mark.xfail(strict=True, reason=KNOWN_NESTED[p])] if p in KNOWN_NESTED else []
        )
        for p in PROTOCOLS
    ],
)
def test_json_nested_1000_deep_in_a_frame(protocol: str) -> None:
    (first, *_) = recordings(protocol)
    (head, text), *rest = _frames(protocol, first.read_bytes())
    nested = '{"x":' + _NESTED + "," + text[1:]  # the first frame, with one deep extra field
    _assert_refused_or_decoded_everywhere(_stream(protocol, [(head, nested), *rest]), protocol)


# ------------------------------------------------------ a `type` that is a list or an object

DISCRIMINATORS = ("type", "event_type", "role")


def _paths(value: Any, at: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Paths to every discriminator key in a JSON value, at any depth."""
    if isinstance(value, dict):
        for key, inner in value.items():
            if key in DISCRIMINATORS:
                yield (*at, key)
            yield from _paths(inner, (*at, key))
    elif isinstance(value, list):
        for i, inner in enumerate(value):
            yield from _paths(inner, (*at, i))


def _replaced(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    copy = json.loads(json.dumps(value))
    inner = copy
    for step in path[:-1]:
        inner = inner[step]
    inner[path[-1]] = new
    return copy


KNOWN_TYPES: dict[str, str] = {}  # every decoder now refuses a mistyped `type` or `role`


@pytest.mark.parametrize("shape", [["x"], {"x": 1}], ids=["list", "object"])
@pytest.mark.parametrize(
    "protocol",
    [
        pytest.param(
            p, marks=[pytest.mark.xfail(strict=True, reason=KNOWN_TYPES[p])] if p in KNOWN_TYPES else []
        )
        for p in PROTOCOLS
    ],
)
def test_a_type_that_is_a_list_or_an_object(protocol: str, shape: object) -> None:
    """Every `type` / `event_type` / `role` of every frame of the recordings, one at a time."""
    tried = 0
    failures: list[str] = []
    for path in recordings(protocol):
        frames = _frames(protocol, path.read_bytes())
        for n, (head, text) in enumerate(frames[:30]):
            value = json.loads(text)
            for where in _paths(value):
                changed = [*frames[:n], (head, json.dumps(_replaced(value, where, shape))), *frames[n + 1 :]]
                tried += 1
                try:
                    inv.assert_decodes_or_remote_error(_stream(protocol, changed), protocol)
                except Exception as exc:
                    failures.append(f"{path.name} frame {n + 1} {'.'.join(map(str, where))}: {exc!r}")
    assert tried, f"no discriminator found in the {protocol} recordings"
    assert not failures, f"{len(failures)} of {tried} inputs:\n" + "\n".join(failures[:10])


# --------------------------------------------- invalid UTF-8 inside Gemini function-call arguments

_GEMINI_ARGS_CALL = (
    b'data: {"candidates":[{"index":0,"content":{"role":"model","parts":[{"functionCall":'
    b'{"name":"f","args":%s}}]}}]}\r\n\r\n'
)
_UTF8_RAW_ARGS = (
    "gemini/_decode.py decodes a functionCall's raw `args` bytes with bytes.decode() (kept as"
    " msgspec.Raw, never validated): UnicodeDecodeError instead of RemoteProtocolError"
)


@pytest.mark.parametrize(
    "data",
    [
        pytest.param(
            _GEMINI_ARGS_CALL % b'{"city":"Ky\xff\xfeo"}',
            id="args-value",
        ),
        pytest.param(
            _GEMINI_ARGS_CALL % b'{"c\xff":1}',
            id="args-key",
        ),
        pytest.param(_GEMINI_ARGS_CALL % b'{"city":"Ky\\ud800o"}', id="args-lone-surrogate"),
        pytest.param(
            (RECORDINGS / "gemini" / "vertex_streamed_args.sse")
            .read_bytes()
            .replace(b'"Kyo"', b'"Ky\xff\xfeo"'),
            id="partial-args-string-value",
        ),
        pytest.param(
            (RECORDINGS / "gemini" / "vertex_streamed_args.sse")
            .read_bytes()
            .replace(b'"Kyo"', b'"Ky\\ud83d"')
            .replace(b'"to \\"old\\" town"', b'"\\ude00 town"'),
            id="partial-args-surrogate-split-over-fragments",
        ),
    ],
)
def test_invalid_utf8_in_gemini_arguments(data: bytes) -> None:
    _assert_refused_or_decoded_everywhere(data, "gemini")


# ------------------------------------------------- Responses summary_index 10,000,000

_CHILD = """
import resource, sys
limit = int(sys.argv[1])
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
import maas_stream as ms
data = sys.stdin.buffer.read()
try:
    response = ms.aggregate(data, protocol="openai-responses")
except ms.RemoteProtocolError:
    sys.exit(0)
except MemoryError:
    sys.exit(4)
sizes = [len(p.summary or []) for m in response.messages if isinstance(m.content, list)
         for p in m.content if isinstance(p, ms.ReasoningPart)]
sys.exit(0 if max(sizes, default=0) <= 10 else 3)
"""


class BlowUpError(AssertionError):
    """The child ran out of its memory cap or kept ten million summaries."""


@pytest.mark.skipif(sys.platform == "win32", reason="needs resource.setrlimit")
def test_a_huge_summary_index_neither_allocates_nor_crashes() -> None:
    raw = (RECORDINGS / "openai-responses" / "reasoning_text_parallel_calls.sse").read_bytes()
    data = raw.replace(
        b'"summary_index":0,"delta":"lookups; "', b'"summary_index":10000000,"delta":"lookups; "'
    )
    assert data != raw
    # In a child process with its address space capped at 256 MB, so the blow-up cannot hurt
    # the test run: a MemoryError there fails the test.
    child = subprocess.run(
        [sys.executable, "-c", _CHILD, str(256 * 1024 * 1024)],
        input=data,
        capture_output=True,
        timeout=120,
        check=False,
    )
    if child.returncode in (3, 4):
        raise BlowUpError("MemoryError" if child.returncode == 4 else "ten million summary entries kept")
    assert child.returncode == 0, child.stderr.decode(errors="replace")[-2000:]
