"""The python examples of docs/convert.md and docs/io.md run as written (tests/docs/runner.py).

The names an example leaves to the reader (``anthropic_sse_bytes``, ``upstream``, ``url``,
``auth``, ``body``, ``resp``...) are bound here to bundled recordings and to a loopback fake
provider on 127.0.0.1, which answers ``/v1/messages`` with an Anthropic recording and anything
else with an OpenAI Chat one; provider URLs in the code are replaced by the fake's. docs/io.md
runs in a temporary folder holding a copy of a few recordings, so that what it records stays
there. Blocks marked ``<!-- no-run: ... -->`` (a real provider's websocket, a real key) are
left out (the test checks which).
"""

from __future__ import annotations

import shutil
from typing import TYPE_CHECKING, Any

import pytest

import maas_stream as ms

from ..conftest import RECORDINGS, ROOT
from ..io.loopback import Conn, send_recording, serve
from .runner import Block, blocks, run_python

if TYPE_CHECKING:
    from collections.abc import AsyncIterator
    from pathlib import Path

pytestmark = pytest.mark.anyio

CHAT = RECORDINGS / "openai-chat" / "readme_text_then_parallel_tools.sse"
ANTHROPIC = RECORDINGS / "anthropic" / "thinking_parallel_tools.sse"
RESPONSES = RECORDINGS / "openai-responses" / "reasoning_text_parallel_calls.sse"
GEMINI = RECORDINGS / "gemini" / "thoughts_text_parallel_calls.sse"
LIVE = RECORDINGS / "google-live" / "text_thought_parallel_tools.jsonl"

CHAT_BODY = {
    "model": "gpt-5.1",
    "messages": [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Weather in Paris and Oslo?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "weather", "arguments": '{"city":"Paris"}'},
                },
                {
                    "id": "call_2",
                    "type": "function",
                    "function": {"name": "weather", "arguments": '{"city":"Oslo"}'},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "18C"},
        {"role": "tool", "tool_call_id": "call_2", "content": "9C"},
    ],
    "tools": [{"type": "function", "function": {"name": "weather", "parameters": {"type": "object"}}}],
}
ANTHROPIC_BODY = {
    "model": "claude-sonnet-4-5",
    "max_tokens": 1024,
    "stream": True,
    "system": "Be brief.",
    "messages": [{"role": "user", "content": "Weather in Paris and Oslo?"}],
}


def document(name: str) -> list[Block]:
    return [b for b in blocks(ROOT / "docs" / name) if b.lang == "python"]


async def run_document(
    found: list[Block], namespace: dict[str, Any], subs: dict[str, str], cwd: Path = ROOT
) -> list[str]:
    """Run the blocks in order; return the skipped ones' reasons."""
    skipped = []
    for block in found:
        if block.skip:
            skipped.append(f"{block.where}: {block.skip}")
            continue
        await run_python(block, namespace, subs, cwd)
    return skipped


class Replayable:
    """An ``AsyncIterable[bytes]`` that replays a recording afresh each time it is iterated."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __aiter__(self) -> AsyncIterator[bytes]:
        return ms.io.areplay(self.path).__aiter__()


async def by_path(conn: Conn) -> None:
    path = ANTHROPIC if conn.request.target.startswith("/v1/messages") else CHAT
    await send_recording(path.read_bytes())(conn)


async def test_convert_md_examples() -> None:
    sent: list[bytes] = []
    namespace: dict[str, Any] = {
        "anthropic_sse_bytes": ANTHROPIC.read_bytes(),
        "gemini_sse_bytes": GEMINI.read_bytes(),
        "upstream": [RESPONSES.read_bytes()[i : i + 50] for i in range(0, RESPONSES.stat().st_size, 50)],
        "send": sent.append,
        "source": Replayable(ANTHROPIC),
        "chat_body": CHAT_BODY,
        "anthropic_body": ANTHROPIC_BODY,
    }
    skipped = await run_document(document("convert.md"), namespace, {})
    assert skipped == []
    assert b"".join(sent)  # the streaming example sent the converted frames
    assert namespace["conv"].response.status == "completed"
    assert namespace["out"].body["model"] == "claude-sonnet-4-5"  # the whole-request example ran last


async def test_io_md_examples(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for src, name in ((CHAT, "openai-chat/case.sse"), (LIVE, "google-live/case.jsonl")):
        (tmp_path / "recordings" / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(src, tmp_path / "recordings" / name)
    frames: list[bytes] = []

    async def send_to_client(frame: bytes) -> None:
        frames.append(frame)

    async with serve(by_path) as server:
        monkeypatch.setenv("OPENAI_API_KEY", "sk-docs-test")
        monkeypatch.setenv("OPENAI_BASE_URL", server.url + "/v1")
        namespace: dict[str, Any] = {
            "ms": ms,
            "url": server.url + "/v1/messages",
            "auth": {"x-api-key": "sk-ant-docs-test", "anthropic-version": "2023-06-01"},
            "body": ANTHROPIC_BODY,
            "resp": Replayable(CHAT),
            "send_to_client": send_to_client,
            "messages": [{"role": "user", "content": "hi"}],
        }
        subs = {"https://api.openai.com": server.url, "https://api.anthropic.com": server.url}
        skipped = await run_document(document("io.md"), namespace, subs, tmp_path)
    assert server.errors == []
    targets = [r.target for r in server.requests]
    assert "/v1/chat/completions" in targets
    assert "/v1/messages" in targets
    assert frames  # the aconvert example forwarded its frames
    recorded = tmp_path / "recordings" / "anthropic" / "case.sse"
    assert recorded.read_bytes() == ANTHROPIC.read_bytes()  # the recording example wrote the stream
    assert len(skipped) == 1, skipped  # only the real-provider websocket example needs a key
    assert "key" in skipped[0]
