"""A tiny user project that tests with the pytest plugin, one test per official SDK.

Written into a temporary folder by the plugin tests (run with this checkout) and by the
fresh-project test (run in a new virtualenv with the built wheel installed). It uses only
what a user has: the installed package, its pytest plugin, the SDKs, and recordings it holds.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Literal

ROOT = Path(__file__).resolve().parent.parent.parent
RECORDINGS = ROOT / "recordings"

CHAT = "openai-chat/readme_text_then_parallel_tools.sse"
ANTHROPIC = "anthropic/thinking_parallel_tools.sse"
GEMINI = "gemini/thoughts_text_parallel_calls.sse"

Mode = Literal["strict", "auto", "trio"]

_ASYNC_MARK = {"strict": "@pytest.mark.asyncio\n", "auto": "", "trio": "@pytest.mark.anyio\n"}

TESTS = """
import anthropic
import openai
import pytest
from google import genai
from google.genai import types

import maas_stream as ms

MESSAGES = [{"role": "user", "content": "weather in Paris and Oslo?"}]


def expected(maas_recordings_dir, name):
    response = ms.aggregate((maas_recordings_dir / name).read_bytes())
    return [p.id for m in response.messages for p in m.content if isinstance(p, ms.ToolCallPart)]


def test_openai_stream_and_body(maas_replay, maas_recordings_dir):
    client = openai.OpenAI(api_key="test", base_url="http://replay.test/v1", max_retries=0,
                           http_client=maas_replay.client("openai-chat/readme_text_then_parallel_tools"))
    ids = []
    for chunk in client.chat.completions.create(model="m", messages=MESSAGES, stream=True):
        for choice in chunk.choices:
            ids += [t.id for t in choice.delta.tool_calls or [] if t.id]
    body = client.chat.completions.create(model="m", messages=MESSAGES)  # not streamed
    assert ids == [t.id for t in body.choices[0].message.tool_calls]
    assert ids == expected(maas_recordings_dir, "openai-chat/readme_text_then_parallel_tools.sse")
    assert body.choices[0].finish_reason == "tool_calls"
    assert [r.url.path for r in maas_replay.requests] == ["/v1/chat/completions"] * 2


{mark}async def test_anthropic_body_async(maas_replay, maas_recordings_dir):
    client = anthropic.AsyncAnthropic(api_key="test", base_url="http://replay.test", max_retries=0,
                                      http_client=maas_replay.async_client("anthropic/thinking_parallel_tools"))
    message = await client.messages.create(model="m", max_tokens=100, messages=MESSAGES)
    assert [b.type for b in message.content] == ["thinking", "text", "tool_use", "tool_use"]
    assert [b.id for b in message.content if b.type == "tool_use"] == expected(
        maas_recordings_dir, "anthropic/thinking_parallel_tools.sse")
    assert message.stop_reason == "tool_use"


def test_gemini_body(maas_replay, maas_recordings_dir):
    http = maas_replay.client("gemini/thoughts_text_parallel_calls")
    client = genai.Client(api_key="test", http_options=types.HttpOptions(httpx_client=http))
    response = client.models.generate_content(model="gemini-2.5-flash", contents="weather?")
    assert [c.name for c in response.function_calls] == ["get_weather", "get_weather"]
    assert maas_replay.requests[0].url.path.endswith(":generateContent")
"""

CONFTEST_TRIO = """
import pytest


@pytest.fixture
def anyio_backend():
    return "trio"
"""


def write_project(folder: Path, mode: Mode, *, recordings: str = "fixtures/recordings") -> Path:
    """Write the project into ``folder`` (recordings under ``recordings``, named by the ini option)."""
    for name in (CHAT, ANTHROPIC, GEMINI):
        target = folder / recordings / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(RECORDINGS / name, target)
    tests = folder / "tests"
    tests.mkdir(parents=True, exist_ok=True)
    (tests / "test_sdks.py").write_text(TESTS.replace("{mark}", _ASYNC_MARK[mode]))
    if mode == "trio":
        (tests / "conftest.py").write_text(CONFTEST_TRIO)
    asyncio_mode = "auto" if mode == "auto" else "strict"
    (folder / "pytest.ini").write_text(
        "[pytest]\n"
        f"maas_stream_recordings = {recordings}\n"
        f"asyncio_mode = {asyncio_mode}\n"
        "asyncio_default_fixture_loop_scope = function\n"
        "addopts = --strict-markers --strict-config -p no:cacheprovider\n"
        "filterwarnings = error\n"
        "    ignore::ResourceWarning\n"
    )
    return folder
