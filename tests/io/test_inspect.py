"""``maas-stream inspect``: the timeline of a recording, as data (--json) and drawn (rich or plain)."""

from __future__ import annotations

import io
import json
import sys
from typing import TYPE_CHECKING

import msgspec
import pytest

import maas_stream as ms
from maas_stream._cli import main
from maas_stream._inspect import inspect_recording, render
from maas_stream.io import Recorder

from ..conftest import recordings
from .test_http import frames

if TYPE_CHECKING:
    from pathlib import Path

TOOLS = next(p for p in recordings("openai-chat") if p.stem == "readme_text_then_parallel_tools")
SEQUENTIAL = next(p for p in recordings("anthropic") if p.stem == "thinking_parallel_tools")


def timed_copy(source: Path, folder: Path, step: float) -> Path:
    """The recording re-recorded one SSE event per chunk, ``step`` seconds apart (a fake clock)."""
    ticks = iter(range(10_000))
    rec = Recorder(folder / source.parent.name / source.name, clock=lambda: next(ticks) * step)
    rec.start(200, {"content-type": "text/event-stream"})  # t0 = tick 0
    for chunk in frames(source.read_bytes()):
        rec.feed(chunk)  # the n-th chunk arrives at n * step
    rec.save()
    return rec.path


def test_timing_parts_and_parallel_calls(tmp_path: Path) -> None:
    path = timed_copy(TOOLS, tmp_path, 0.25)
    got = inspect_recording(path)
    assert got.timed
    assert got.protocol == "openai-chat"
    assert got.finish_reason == "tool_calls"
    chunks = frames(TOOLS.read_bytes())
    assert got.chunks == len(chunks)
    assert got.duration == pytest.approx(0.25 * len(chunks))
    # The first chunk's empty content is no token (an empty delta is a no-op).
    first_text = next(i for i, c in enumerate(chunks, 1) if b'"content":"' in c and b'"content":""' not in c)
    assert got.time_to_first_token == pytest.approx(0.25 * first_text)
    assert got.output_tokens is not None
    assert got.duration is not None
    assert got.time_to_first_token is not None
    assert got.tokens_per_second == pytest.approx(
        round(got.output_tokens / (got.duration - got.time_to_first_token), 1)
    )
    assert [(p.kind, p.id) for p in got.parts] == [
        ("text", None),
        ("tool_call", "call_P1"),
        ("tool_call", "call_O2"),
    ]
    assert all(p.start is not None and p.end is not None and p.start <= p.end for p in got.parts)
    assert got.parallel_calls == [["call_P1", "call_O2"]]
    response = ms.aggregate(TOOLS.read_bytes())
    calls = [p for m in response.messages for p in m.content if isinstance(p, ms.ToolCallPart)]
    assert [p.chars for p in got.parts[1:]] == [len(c.arguments) for c in calls]


def test_sequential_calls_are_not_parallel_and_untimed_recordings_say_so() -> None:
    got = inspect_recording(SEQUENTIAL)
    assert not got.timed
    assert got.time_to_first_token is None
    assert [p.kind for p in got.parts] == ["reasoning", "text", "tool_call", "tool_call"]
    assert got.parallel_calls == []
    out = io.StringIO()
    render(got, out)
    text = out.getvalue()
    assert "no timing" in text
    assert "toolu_maas_P1" in text
    assert "parallel calls" not in text


def test_cli_json_and_rich_and_plain_rendering(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = timed_copy(TOOLS, tmp_path, 0.1)
    assert main(["inspect", "--json", str(path)]) == 0
    assert json.loads(capsys.readouterr().out) == msgspec.to_builtins(inspect_recording(path))
    assert main(["inspect", str(path)]) == 0
    drawn = capsys.readouterr().out
    assert "parallel calls: call_P1, call_O2" in drawn
    assert "time to first token" in drawn
    assert "┃ part" in drawn  # rich's table
    monkeypatch.setitem(sys.modules, "rich.console", None)  # rich not installed
    assert main(["inspect", str(path)]) == 0
    plain = capsys.readouterr().out
    assert "parallel calls: call_P1, call_O2" in plain
    assert "part\tkind\tcall\tstart\tend\tdeltas\tchars" in plain
    assert "┃" not in plain


def test_cli_inspect_of_a_broken_recording_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.sse"
    bad.write_bytes(b'data: {"id":"c","object":"chat.completion.chunk","choices":[]}\n\ndata: {oops\n\n')
    with pytest.raises(SystemExit) as info:
        main(["inspect", str(bad)])
    assert info.value.code == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert err[0].startswith(f"maas-stream: {bad}: frame 2: openai-chat: ")
