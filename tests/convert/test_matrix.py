"""The any-to-any streaming conversion matrix, judged by the target's official SDK.

Every project recording and every corpus stream of every SSE protocol that has an SDK oracle
(``tests/oracles.py``) is converted to every OTHER such protocol. The target SDK's streaming
client must accept the output and report the same text and the same client function calls
(names, arguments as parsed JSON, ids) as our aggregate of the source, restricted to what the
target can carry. A protocol registered with SSE framing and given an oracle joins on its own.

Expected restrictions (each is also checked to be reported in ``lossy``):

* Only choice / candidate 0 reaches single-choice targets (Anthropic, Responses); the SDK
  oracles read choice 0 everywhere.
* Only client function calls: server-side and MCP calls of another protocol are dropped.
* Gemini writes a call whole when it closes, so a call the source cut is not sent to Gemini.
* Anthropic has no refusal block: a refusal is ordinary text there (with ``stop_reason`` refusal).
* The Responses SDK raises unless it sees ``response.completed``; for a source that was cut or
  stopped early it must raise, and what it accumulated is still compared.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import pydantic
import pytest

import maas_stream as ms
from maas_stream._convert import continuation_key
from maas_stream._registry import get_protocol
from tests.conftest import corpus, recordings
from tests.oracles import ORACLES, Seen

if TYPE_CHECKING:
    from pathlib import Path

PROTOCOLS = [name for name in ms.protocol_names() if name in ORACLES and get_protocol(name).framing == "sse"]
SINGLE_CHOICE = {"anthropic", "openai-responses"}
REFUSAL_AS_TEXT = {"anthropic", "gemini"}
WHOLE_CALLS_ONLY = {"gemini"}
RAISES_WITHOUT_COMPLETED = {"openai-responses"}
MCP_TARGETS = {"anthropic"}
"""Targets with MCP call blocks of their own (Anthropic ``mcp_tool_use``)."""
REASONING_TEXT = {"anthropic", "gemini"}
"""Targets whose SDK reports reasoning text we can compare (Chat has none; Responses drops
other providers' reasoning, see docs/openai-responses.md)."""


def sources() -> list[tuple[str, Path]]:
    return [(proto, path) for proto in PROTOCOLS for path in recordings(proto) + corpus(proto)]


def matrix() -> list[Any]:
    return [
        pytest.param(src, path, tgt, id=f"{src}/{path.name}->{tgt}")
        for src, path in sources()
        for tgt in PROTOCOLS
        if tgt != src
    ]


def choice0(resp: ms.Response) -> list[ms.Part]:
    return [
        p
        for m in resp.messages
        if m.role == "assistant" and not m.choice_index and isinstance(m.content, list)
        for p in m.content
    ]


def parsed(arguments: str) -> Any:
    try:
        return json.loads(arguments or "{}")
    except json.JSONDecodeError:
        return arguments


def expected_calls(parts: list[ms.Part], target: str) -> list[ms.ToolCallPart]:
    return [
        p
        for p in parts
        if isinstance(p, ms.ToolCallPart)
        and p.kind == "function"
        and (p.status != "incomplete" or target not in WHOLE_CALLS_ONLY)
    ]


def stateful_unknown(resp: ms.Response, source: str) -> str | None:
    """The first unknown part type that carries continuation state (a signature, a call id...)."""
    for m in resp.messages:
        for p in m.content if isinstance(m.content, list) else ():
            if (
                isinstance(p, ms.UnknownPart)
                and p.provider_type in resp.unknown
                and p.provider_type not in get_protocol(source).replay_only
                and continuation_key(p.raw) is not None
            ):
                return p.provider_type
    return None


def bad_media(parts: list[ms.Part]) -> bool:
    """A media part whose base64 the corpus recorder truncated (``...`` in the middle)."""
    return any(isinstance(p, ms.ImagePart | ms.AudioPart) and "..." in (p.data or "") for p in parts)


def assert_same_calls(seen: Seen, calls: list[ms.ToolCallPart]) -> None:
    assert [c[1] for c in seen.calls] == [c.name for c in calls]
    for (sid, _, args), call in zip(seen.calls, calls, strict=True):
        if sid is not None:
            assert sid == call.id
        if call.status != "incomplete":
            assert args == parsed(call.arguments)


def assert_lossy_reported(parts: list[ms.Part], source: str, target: str, lossy: list[ms.Dropped]) -> None:
    text = "\n".join(map(str, lossy))
    kinds = ("server",) if target in MCP_TARGETS else ("server", "mcp")
    if target != source and any(isinstance(p, ms.ToolCallPart) and p.kind in kinds for p in parts):
        assert "tool call" in text
    if target == "openai-chat" and any(isinstance(p, ms.ReasoningPart) for p in parts):
        assert "reasoning" in text
    if target in WHOLE_CALLS_ONLY and any(
        isinstance(p, ms.ToolCallPart) and p.kind == "function" and p.status == "incomplete" for p in parts
    ):
        assert "cut" in text


@pytest.mark.filterwarnings("ignore::UserWarning")  # pydantic warns on item types an SDK lacks
@pytest.mark.parametrize(("source", "path", "target"), matrix())
def test_converted_stream_is_accepted_by_the_target_sdk(source: str, path: Path, target: str) -> None:
    data = path.read_bytes()
    resp = ms.aggregate(data, protocol=source)
    stateful = stateful_unknown(resp, source)
    if stateful is not None:
        # Fail closed: an unknown type the next turn needs back cannot cross protocols.
        with pytest.raises(ms.ConversionError, match=repr(stateful)):
            ms.convert(data, to=target, protocol=source)
    conv = ms.StreamConverter(target, protocol=source, fail_closed=stateful is None)
    out = conv.feed(data) + conv.finish()
    parts = choice0(resp)
    assert_lossy_reported(parts, source, target, conv.lossy)
    if target == "gemini" and bad_media(parts):
        with pytest.raises(pydantic.ValidationError):
            ORACLES[target](out)
        return
    seen = ORACLES[target](out)
    if resp.status == "failed":
        assert seen.error is not None  # the SDK raises or reports the error
        return
    if target in RAISES_WITHOUT_COMPLETED:
        assert (seen.error is None) == (resp.status == "completed")
    else:
        assert seen.error is None
        cut = resp.status == "incomplete" and resp.finish_reason is None
        assert (seen.finish is None) == cut  # a cut source stays cut, no stop is invented
    kinds: tuple[type[Any], ...] = (
        (ms.TextPart, ms.RefusalPart) if target in REFUSAL_AS_TEXT else (ms.TextPart,)
    )
    assert seen.text == "".join(p.text for p in parts if isinstance(p, kinds))
    assert_same_calls(seen, expected_calls(parts, target))
    if target in REASONING_TEXT:
        # Reasoning text, or its summary where that is all there is (Responses).
        assert seen.reasoning == "".join(
            p.text or "".join(p.summary or ()) for p in parts if isinstance(p, ms.ReasoningPart)
        )


def test_matrix_covers_every_pair() -> None:
    assert set(PROTOCOLS) >= {"openai-chat", "openai-responses", "anthropic", "gemini"}
    per_source = {proto: len(recordings(proto)) for proto in PROTOCOLS}
    assert all(per_source.values()), per_source
