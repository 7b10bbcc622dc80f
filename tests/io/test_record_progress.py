"""``maas-stream record``'s progress: a live line on a terminal, one summary line at the end, ``--quiet``.

Oracles: the number of SSE events is counted independently here (blank-line separated blocks
holding a ``data:`` line), the clock is a fake one, and the terminal is a text buffer that says
it is one.
"""

from __future__ import annotations

import io
import re
from typing import TYPE_CHECKING

import anyio
import pytest

from maas_stream._cli import main
from maas_stream.io._progress import RecordProgress, format_bytes

from ..conftest import recordings
from .loopback import send_recording, serve

if TYPE_CHECKING:
    from pathlib import Path

TOOLS = next(p for p in recordings("openai-chat") if p.name == "readme_text_then_parallel_tools.sse")
ORIGINAL = TOOLS.read_bytes()
N_EVENTS = sum(1 for block in ORIGINAL.replace(b"\r\n", b"\n").split(b"\n\n") if b"data:" in block)


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def chunked(data: bytes, size: int) -> list[bytes]:
    return [data[i : i + size] for i in range(0, len(data), size)]


def test_the_oracle_counts_events() -> None:
    assert N_EVENTS >= 5


@pytest.mark.parametrize("size", [1, 7, 64, len(ORIGINAL)])
def test_events_bytes_and_chunks_are_counted_across_any_chunking(size: int) -> None:
    progress = RecordProgress(io.StringIO(), framing="sse", live=False)
    chunks = chunked(ORIGINAL, size)
    for chunk in chunks:
        progress.feed(chunk)
    assert (progress.events, progress.bytes, progress.chunks) == (N_EVENTS, len(ORIGINAL), len(chunks))


def test_time_to_first_event_is_when_the_first_event_is_complete() -> None:
    clock = Clock()
    progress = RecordProgress(io.StringIO(), framing="sse", live=False, clock=clock)
    clock.now += 0.5
    progress.feed(b"data: {")  # not an event yet
    assert progress.first_event is None
    clock.now += 0.25
    progress.feed(b"}\n\ndata: [DONE]\n\n")
    assert progress.first_event == pytest.approx(0.75)
    assert progress.events == 2
    clock.now += 1.0
    summary = progress.summary("out.sse")
    assert summary == "recorded 2 events, 24 B in 2 chunks to out.sse in 1.75 s, first event after 0.75 s"
    clock.now += 5.0  # the clock stopped at the summary
    assert progress.elapsed == pytest.approx(1.75)


def test_jsonl_counts_lines() -> None:
    progress = RecordProgress(io.StringIO(), framing="jsonl", live=False)
    progress.feed(b'{"dir":"server","msg":{}}\n')
    progress.feed(b'{"dir":"server","msg":{}}\n{"dir":"server"')
    assert progress.events == 2
    assert progress.first_event is not None


def test_input_that_is_not_sse_stops_the_count_not_the_recording() -> None:
    from maas_stream.sse import DEFAULT_MAX_EVENT_SIZE

    progress = RecordProgress(io.StringIO(), framing="sse", live=False)
    progress.feed(b"data: x\n\n")
    progress.feed(b"x" * (DEFAULT_MAX_EVENT_SIZE + 1))  # one unterminated line past the SSE cap
    progress.feed(b"\n\ndata: y\n\n")
    assert progress.events == 1
    assert progress.bytes == 9 + DEFAULT_MAX_EVENT_SIZE + 1 + 11


def test_plain_live_line_is_rewritten_in_place_and_taken_off_at_the_end() -> None:
    term = Terminal()
    clock = Clock()
    progress = RecordProgress(term, framing="sse", rich=False, clock=clock)
    assert progress.live  # a terminal
    progress.feed(b"data: 1\n\n")
    clock.now += 1.0
    progress.feed(b"data: 2\n\n")
    clock.now += 0.01  # too soon for another redraw
    progress.feed(b"data: 3\n\n")
    progress.close()
    out = term.getvalue()
    frames = out.split("\r")
    assert frames[0] == ""
    assert frames[1].startswith("recording: 1 event, 9 B, 0.0 s (first after 0.00 s)")
    assert frames[2].startswith("recording: 2 events, 18 B, 1.0 s (first after 0.00 s)")
    assert len(frames) == 5  # two draws, then the line blanked and the cursor back at its start
    assert frames[3].strip() == ""
    assert frames[4] == ""
    assert "\n" not in out


def test_plain_live_line_fits_the_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "30")
    term = Terminal()
    progress = RecordProgress(term, framing="sse", rich=False, clock=Clock())
    progress.feed(b"data: 1\n\n")
    drawn = term.getvalue()
    assert drawn == "\r" + "recording: 1 event, 9 B, 0.0 s (first after 0.00 s)"[:29]


def test_not_a_terminal_draws_nothing() -> None:
    out = io.StringIO()
    progress = RecordProgress(out)
    assert not progress.live
    progress.feed(ORIGINAL)
    progress.close()
    assert out.getvalue() == ""


def test_rich_live_line_is_transient() -> None:
    pytest.importorskip("rich")
    term = Terminal()
    progress = RecordProgress(term, framing="sse", rich=True)
    progress.feed(b"data: 1\n\n")
    drawn = term.getvalue()
    assert "recording: 1 event, 9 B" in drawn
    progress.close()
    assert "\x1b[2K" in term.getvalue()[len(drawn) :]  # rich erased its line


def test_format_bytes() -> None:
    assert [format_bytes(n) for n in (0, 1023, 1024, 1536, 5 * 1024 * 1024)] == [
        "0 B",
        "1023 B",
        "1.0 KiB",
        "1.5 KiB",
        "5.0 MiB",
    ]


# ---------------------------------------------------------------- the command


@pytest.mark.anyio
async def test_cli_record_says_one_summary_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-cli-SECRET-000111")
    out = tmp_path / "case.sse"
    async with serve(send_recording(ORIGINAL)) as server:
        argv = ["record", "--protocol", "openai-chat", "--url", server.url, "--out", str(out)]
        code = await anyio.to_thread.run_sync(main, argv)
    assert code == 0
    err = capsys.readouterr().err
    assert "\r" not in err  # not a terminal: no live line
    lines = err.splitlines()
    assert len(lines) == 1
    found = re.fullmatch(
        r"maas-stream: recorded (\d+) events, (.+) in (\d+) chunks? to (.+) in [\d.]+ s, first event after [\d.]+ s",
        lines[0],
    )
    assert found is not None, lines[0]
    assert int(found[1]) == N_EVENTS
    assert found[2] == format_bytes(len(ORIGINAL))
    assert found[4] == str(out)
    assert out.read_bytes() == ORIGINAL


@pytest.mark.anyio
async def test_cli_record_quiet_says_nothing_but_errors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-cli-SECRET-000111")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-SECRET-000111")
    out = tmp_path / "case.sse"
    async with serve(send_recording(ORIGINAL)) as server:
        argv = ["record", "--protocol", "openai-chat", "--url", server.url, "--out", str(out), "--quiet"]
        assert await anyio.to_thread.run_sync(main, argv) == 0
        assert capsys.readouterr().err == ""
        assert out.read_bytes() == ORIGINAL
        wrong = ["record", "--protocol", "anthropic", "--url", server.url, "--out", str(out), "--quiet"]
        assert await anyio.to_thread.run_sync(main, [*wrong, "--force"]) == 1
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1
    assert "recorded as anthropic, but the provider sent a stream of openai-chat" in err[0]
