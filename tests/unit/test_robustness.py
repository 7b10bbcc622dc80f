"""Regression tests for the core findings of the fuzz contract (one per finding).

Each reproduces the reported input in small and asserts the result the library owes it: a
result, or the library's own protocol error, never a stray exception or a silent wrong value.
"""

from __future__ import annotations

import base64
import logging
import subprocess
import sys
from typing import TYPE_CHECKING

import msgspec
import pytest

import maas_stream as ms
from maas_stream import events as ev
from tests.conftest import RECORDINGS

if TYPE_CHECKING:
    from pathlib import Path


def run(events: list[ev.Event]) -> ms.Response:
    agg = ms.Aggregator("test")
    for event in events:
        agg.feed(event)
    return agg.finish()


# ------------------------------------------------------------------ audio base64


@pytest.mark.parametrize(
    ("chunks", "raw"),
    [
        pytest.param(["AQI=", "AwQ="], b"\x01\x02\x03\x04", id="padded-mid-stream"),
        pytest.param(["AQID", "BA=="], b"\x01\x02\x03\x04", id="whole-groups"),
        pytest.param(["AQ==", "Ag==", "Aw=="], b"\x01\x02\x03", id="every-chunk-padded"),
    ],
)
def test_audio_deltas_join_as_bytes_not_as_text(chunks: list[str], raw: bytes) -> None:
    events: list[ev.Event] = [ev.ResponseStart(protocol="test")]
    events += [ev.AudioDelta(message=0, part=0, data=chunk) for chunk in chunks]
    events.append(ev.ResponseDone())
    part = run(events).messages[0].content[0]
    assert isinstance(part, ms.AudioPart)
    assert part.data is not None
    assert base64.b64decode(part.data, validate=True) == raw  # every byte, not a fraction
    assert part.data == base64.b64encode(raw).decode()


def test_audio_that_is_not_base64_is_kept_as_sent() -> None:
    events: list[ev.Event] = [
        ev.AudioDelta(message=0, part=0, data="AQI="),
        ev.AudioDelta(message=0, part=0, data="not base64!"),
    ]
    part = run(events).messages[0].content[0]
    assert isinstance(part, ms.AudioPart)
    assert part.data == "AQI=not base64!"


# ------------------------------------------------------------------ response id / model


@pytest.mark.parametrize(
    ("value", "kept"),
    [(5, "5"), (1.5, "1.5"), ({"a": 1}, None), (["x"], None), (True, None)],
)
def test_a_response_id_or_model_that_is_not_text_never_breaks_the_schema(
    value: object, kept: str | None
) -> None:
    resp = run(
        [
            ev.ResponseStart(protocol="test", id=value, model=value),  # type: ignore[arg-type]
            ev.TextDelta(message=0, part=0, text="x"),
            ev.ResponseDone(),
        ]
    )
    assert resp.id == kept
    assert resp.model == kept
    assert resp.warnings  # said, not silent
    again = msgspec.json.decode(msgspec.json.encode(resp), type=ms.Response)
    assert again == resp


# ------------------------------------------------------------------ JSON lines cut mid-line


@pytest.mark.parametrize(
    "path",
    [
        pytest.param(p, id=f"{p.parent.name}/{p.name}")
        for p in sorted(RECORDINGS.glob("*/*.jsonl"))
        if p.stat().st_size > 200
    ],
)
def test_a_websocket_recording_cut_mid_line_is_incomplete_with_a_warning(path: Path) -> None:
    data = path.read_bytes()
    last = data.rstrip(b"\n").rfind(b"\n")
    cut = data[: last + 1 + (len(data) - last) // 2]  # half of the last line
    assert not cut.endswith(b"\n")
    whole = ms.aggregate(cut, protocol=path.parent.name)
    assert whole.warnings is not None
    assert any("ended inside a line" in w for w in whole.warnings)
    agg = ms.StreamAggregator(path.parent.name)
    for i in range(len(cut)):
        agg.feed(cut[i : i + 1])
    assert agg.finish() == whole  # byte by byte: the same result


# ------------------------------------------------------------------ logging


def test_the_library_logs_to_a_null_handler() -> None:
    assert any(isinstance(h, logging.NullHandler) for h in logging.getLogger("maas_stream").handlers)


def test_library_warnings_do_not_reach_stderr_by_default() -> None:
    code = (
        "import maas_stream as ms\n"
        "from maas_stream import events as ev\n"
        "agg = ms.Aggregator('test')\n"
        "agg.feed(ev.StreamWarning(text='a gap'))\n"
        "assert agg.finish().warnings == ['a gap']\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""


# ------------------------------------------------------------------ explicit --from


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "maas_stream", *args], capture_output=True, text=True, check=False
    )


@pytest.mark.parametrize(
    ("name", "content"),
    [
        ("empty.sse", b""),
        ("plain.txt", b"hello, world\nnot a stream\n"),
        ("body.json", b'{"model": "m", "messages": [{"role": "user", "content": "hi"}]}\n'),
        ("random.bin", bytes(range(256)) * 4),
    ],
)
@pytest.mark.parametrize("command", ["aggregate", "convert"])
def test_input_with_nothing_of_the_named_protocol_is_an_error(
    tmp_path: Path, name: str, content: bytes, command: str
) -> None:
    path = tmp_path / name
    path.write_bytes(content)
    extra = ["--to", "anthropic"] if command == "convert" else []
    proc = _cli(command, *extra, "--from", "openai-chat", str(path))
    assert proc.returncode == 1
    lines = proc.stderr.splitlines()
    assert "Traceback" not in proc.stderr
    assert all(line.startswith("maas-stream: ") for line in lines), proc.stderr
    assert str(path) in lines[-1]  # the error names the file; warnings may precede it
    assert "no openai-chat stream" in lines[-1]


def test_another_protocols_stream_under_from_is_an_error() -> None:
    path = RECORDINGS / "openai-chat" / "readme_text_then_parallel_tools.sse"
    proc = _cli("aggregate", "--from", "openai-responses", str(path))
    assert proc.returncode == 1
    assert "no openai-responses stream" in proc.stderr
    assert proc.stdout == ""
    ok = _cli("aggregate", "--from", "openai-chat", str(path))
    assert ok.returncode == 0, ok.stderr
    assert msgspec.json.decode(ok.stdout)["status"] == "completed"


def test_history_warns_about_content_its_own_protocol_rejects(tmp_path: Path) -> None:
    path = tmp_path / "body.json"
    path.write_bytes(b'{"messages": [{"role": "user", "content": 5}]}')
    proc = _cli("history", "--from", "openai-chat", "--to", "anthropic", str(path))
    assert proc.returncode == 0
    assert f"{path}: warning: openai-chat: messages[0]: content must be" in proc.stderr
