"""``maas-stream record`` of a websocket protocol, against a loopback ``websockets`` (sync) server in a thread."""

from __future__ import annotations

import json
import threading
from typing import TYPE_CHECKING, Any

from websockets.sync.server import ServerConnection, serve

import maas_stream as ms
from maas_stream._cli import main
from maas_stream.io import REDACTED, Recording
from tests.conftest import recordings
from tests.io.test_ws_record import HEADER_KEY, KEYS, LIMIT, LIVE, URL_KEY, frames_of, with_key, written_files

if TYPE_CHECKING:
    from pathlib import Path

    import pytest


def test_cli_records_one_websocket_response(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``maas-stream record --protocol google-live``: sends --body's messages, records up to the response's end."""
    path = next(p for p in recordings(LIVE) if p.name == "text_thought_parallel_tools.jsonl")
    script = frames_of(path)
    got: list[Any] = []

    def handler(ws: ServerConnection) -> None:
        for direction, msg in script:
            if direction == "client":
                try:
                    got.append(json.loads(ws.recv(timeout=LIMIT)))
                except Exception:  # the recorder hung up after the response ended
                    return
            else:
                ws.send(json.dumps(msg))

    body = tmp_path / "body.jsonl"
    client = [m for d, m in script if d == "client"][
        :2
    ]  # setup + clientContent; the toolResponse is not sent
    client[0] = with_key(LIVE, client[0])
    body.write_text("".join(json.dumps(m) + "\n" for m in client))
    out = tmp_path / "rec" / "case.jsonl"
    monkeypatch.setenv("GEMINI_API_KEY", HEADER_KEY)
    with serve(handler, "127.0.0.1", 0) as server:
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        url = f"ws://127.0.0.1:{server.socket.getsockname()[1]}/ws?key={URL_KEY}"
        code = main(["record", "--protocol", LIVE, "--url", url, "--body", str(body), "--out", str(out)])
        server.shutdown()
        thread.join(LIMIT)
    assert code == 0, capsys.readouterr().err
    assert got == client  # the server received the body's messages, key included
    frames = [json.loads(x) for x in out.read_bytes().splitlines()]
    # the session up to the tool call (the end of the first response): nothing before is lost
    upto = next(i for i, (d, m) in enumerate(script) if d == "server" and "toolCall" in m) + 1
    assert [f["dir"] for f in frames] == [d for d, _ in script[:upto]]
    assert [f["msg"] for f in frames if f["dir"] == "server"] == [
        m for d, m in script[:upto] if d == "server"
    ]
    assert frames[0]["msg"]["setup"]["api_key"] == REDACTED
    for name, data in written_files(out.parent).items():
        for key in KEYS:
            assert key.encode() not in data, f"{key} leaked into {name}"
    meta = Recording.load(out).meta
    assert meta is not None
    assert meta.request is not None
    assert meta.request.headers["x-goog-api-key"] == REDACTED
    assert meta.complete
    calls = [
        p
        for m in ms.aggregate(out.read_bytes()).messages
        for p in m.content
        if isinstance(p, ms.ToolCallPart)
    ]
    assert [c.id for c in calls] == ["fc-1", "fc-2"]
