"""The command line: the DESIGN.md contract, run in-process and once as a real subprocess."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from typing import TYPE_CHECKING

import msgspec
import pytest

import maas_stream as ms
from maas_stream._cli import main
from tests.conftest import RECORDINGS

if TYPE_CHECKING:
    from pathlib import Path

README_CASE = RECORDINGS / "openai-chat" / "readme_text_then_parallel_tools.sse"


def test_aggregate_prints_the_response_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["aggregate", str(README_CASE)]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed == msgspec.to_builtins(ms.aggregate(README_CASE.read_bytes()))
    assert printed["finish_reason"] == "tool_calls"


def test_aggregate_with_explicit_protocol_and_compact(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["aggregate", "--from", "openai-chat", "--compact", str(README_CASE)]) == 0
    out = capsys.readouterr().out
    assert out.count("\n") == 1
    assert json.loads(out)["protocol"] == "openai-chat"


def test_convert_prints_the_re_encoded_stream(capsys: pytest.CaptureFixture[bytes]) -> None:
    assert main(["convert", "--to", "openai-chat", str(README_CASE)]) == 0
    out = capsys.readouterr().out
    again = ms.aggregate(out.encode() if isinstance(out, str) else out)
    assert msgspec.to_builtins(again) == msgspec.to_builtins(ms.aggregate(README_CASE.read_bytes()))


def test_bad_frame_is_one_line_naming_file_and_frame(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.sse"
    bad.write_bytes(b'data: {"id":"c","object":"chat.completion.chunk","choices":[]}\n\ndata: {oops\n\n')
    with pytest.raises(SystemExit) as info:
        main(["aggregate", str(bad)])
    assert info.value.code == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith(f"maas-stream: {bad}: frame 2: openai-chat: ")


def test_undetectable_input_fails_clearly(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "what.sse"
    bad.write_bytes(b'data: {"hello": 1}\n\n')
    with pytest.raises(SystemExit):
        main(["aggregate", str(bad)])
    err = capsys.readouterr().err
    assert "matches no known protocol" in err
    assert str(bad) in err


def test_missing_file(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["aggregate", "/nonexistent/x.sse"])
    assert info.value.code == 1
    assert "/nonexistent/x.sse" in capsys.readouterr().err


def test_history_and_validate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    body = {
        "messages": [
            {"role": "user", "content": "hi"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "call_9", "type": "function", "function": {"name": "f", "arguments": "{}"}}
                ],
            },
        ]
    }
    path = tmp_path / "body.json"
    path.write_text(json.dumps(body))
    assert main(["history", "--from", "openai-chat", "--to", "openai-chat", str(path)]) == 0
    assert json.loads(capsys.readouterr().out) == body
    assert main(["history", "--to", "openai-chat", str(path)]) == 0  # source detected from the shape
    assert json.loads(capsys.readouterr().out) == body
    assert main(["validate", "--protocol", "openai-chat", str(path)]) == 1
    err = capsys.readouterr().err
    assert "messages[1]: tool call 'call_9' has no tool message answering it" in err
    body["messages"].append({"role": "tool", "tool_call_id": "call_9", "content": "ok"})
    path.write_text(json.dumps(body))
    assert main(["validate", "--protocol", "openai-chat", str(path)]) == 0
    assert "valid openai-chat request" in capsys.readouterr().out


def test_unknown_protocol_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["convert", "--to", "nope", str(README_CASE)])
    assert info.value.code == 2
    assert "unknown protocol 'nope'" in capsys.readouterr().err


def test_protocols_lists_the_registry(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["protocols"]) == 0
    assert "openai-chat\tsse" in capsys.readouterr().out.splitlines()


def test_console_script_from_stdin() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "maas_stream", "aggregate", "-"],
        input=README_CASE.read_bytes(),
        capture_output=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["messages"][0]["content"][1]["id"] == "call_P1"


def test_history_of_an_unknown_shape_names_the_fix(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "body.json"
    path.write_text('{"prompt": "hi"}')
    with pytest.raises(SystemExit):
        main(["history", "--to", "openai-chat", str(path)])
    assert "--from" in capsys.readouterr().err


THINKING_CASE = RECORDINGS / "anthropic" / "thinking_parallel_tools.sse"
FOREIGN_THINKING: dict[str, object] = {
    "model": "m",
    "max_tokens": 10,
    "messages": [
        {"role": "user", "content": "hi"},
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "hmm", "signature": "sig"},
                {"type": "text", "text": "yo"},
            ],
        },
        {"role": "user", "content": "again"},
    ],
}


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    # A real process: there logging's last-resort handler is live (under pytest, pytest's own
    # handlers on the root logger would hide a second printing of a drop).
    return subprocess.run(
        [sys.executable, "-m", "maas_stream", *args], capture_output=True, text=True, check=False
    )


def test_convert_prints_each_drop_once() -> None:
    proc = _cli("convert", "--to", "openai-chat", str(THINKING_CASE))
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.splitlines()
    conv = ms.StreamConverter("openai-chat")
    conv.feed(THINKING_CASE.read_bytes())
    conv.finish()
    records = conv.lossy
    assert any(rec.kind == "reasoning" for rec in records)
    assert len(lines) == len(records)  # one line per record, none twice
    for rec in records:
        assert len([line for line in lines if line.endswith(f"dropped {rec.what}")]) == 1
    assert all(line.startswith("maas-stream: ") for line in lines)
    assert ms.aggregate(proc.stdout.encode(), protocol="openai-chat").status == "completed"


def test_history_prints_each_drop_once(tmp_path: Path) -> None:
    path = tmp_path / "body.json"
    path.write_text(json.dumps(FOREIGN_THINKING))
    proc = _cli("history", "--from", "anthropic", "--to", "openai-chat", str(path))
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.splitlines()
    records: list[ms.Dropped] = []
    ms.convert_history(FOREIGN_THINKING, to="openai-chat", protocol="anthropic", lossy=records)
    assert any(rec.kind == "reasoning" for rec in records)
    assert len(lines) == len(records)  # one line per record, none twice
    assert all(line.startswith("maas-stream: ") for line in lines)
    for rec in records:
        assert len([line for line in lines if rec.what in line]) == 1
    assert json.loads(proc.stdout)["messages"][1] == {"role": "assistant", "content": "yo"}


def test_the_cli_log_handler_is_removed_after_each_command(capsys: pytest.CaptureFixture[str]) -> None:
    logger = logging.getLogger("maas_stream")
    before = list(logger.handlers)
    assert main(["convert", "--to", "openai-chat", str(THINKING_CASE)]) == 0
    assert logger.handlers == before
    err = capsys.readouterr().err.splitlines()
    assert len([line for line in err if "dropped reasoning (" in line]) == 1
