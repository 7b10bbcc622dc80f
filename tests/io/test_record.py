"""Recording a live stream, replaying it, and the ``record`` / ``replay`` commands."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

import anyio
import msgspec
import pytest

import maas_stream as ms
from maas_stream._cli import main
from maas_stream.io import REDACTED, Recorder, Recording, RecordingMeta, redact_headers, redact_url

from ..conftest import recordings
from .loopback import Conn, send_recording, serve

if TYPE_CHECKING:
    from pathlib import Path
    from types import ModuleType

pytestmark = pytest.mark.anyio

TOOLS = next(p for p in recordings("openai-chat") if p.name == "readme_text_then_parallel_tools.sse")
ORIGINAL = TOOLS.read_bytes()

SECRETS = {
    "authorization": "Bearer sk-live-SECRET1234567890",
    "x-api-key": "ant-api03-SECRETabcdef",
    "x-goog-api-key": "AIzaSECRETgoog98765",
    "api-key": "azureSECRET55555",
    "cookie": "session=COOKIESECRET4242",
}
URL_SECRET = "AIzaURLSECRET11111"
BODY_SECRET = "BODYSECRET7777777"


def secret_values() -> list[str]:
    return [v.split()[-1] for v in SECRETS.values()] + [URL_SECRET, BODY_SECRET]


def assert_no_secret_in(folder: Path, secrets: list[str] | None = None) -> None:
    files = [p for p in folder.rglob("*") if p.is_file()]
    assert files
    for path in files:
        content = path.read_bytes()
        for secret in secrets or secret_values():
            assert secret.encode() not in content, f"{secret} leaked into {path.name}"


@pytest.fixture(params=["httpx", "httpx2"])
def lib(request: pytest.FixtureRequest) -> ModuleType:
    return importlib.import_module(request.param)


async def test_record_then_replay_aggregates_to_the_original(lib: ModuleType, tmp_path: Path) -> None:
    expected = ms.aggregate(ORIGINAL, protocol="openai-chat")
    out = tmp_path / "recordings" / "openai-chat" / "case.sse"
    body = {"model": "gpt-5.1", "stream": True, "max_tokens": 5, "api_key": BODY_SECRET}
    async with serve(send_recording(ORIGINAL, pause=0.005)) as server, lib.AsyncClient(trust_env=False) as c:
        url = f"{server.url}/v1beta/models/m:streamGenerateContent?alt=sse&key={URL_SECRET}"
        async with c.stream("POST", url, headers=SECRETS, json=body) as resp:
            live = await ms.aaggregate(
                ms.io.arecord(resp, out, protocol="openai-chat"), protocol="openai-chat"
            )
    # The secrets did go out (so their absence from the files means something).
    sent = server.requests[0]
    assert sent.headers["authorization"] == SECRETS["authorization"]
    assert URL_SECRET in sent.target
    assert BODY_SECRET.encode() in sent.body

    assert live == expected
    assert out.read_bytes() == ORIGINAL
    rec = Recording.load(out)
    meta = rec.meta
    assert meta is not None
    assert meta.protocol == "openai-chat"
    assert meta.status == 200
    assert meta.complete
    assert meta.headers["content-type"] == "text/event-stream"
    assert len(meta.chunks) > 1
    assert sum(meta.chunks) == len(ORIGINAL)
    assert meta.times == sorted(meta.times)
    assert meta.times[-1] > 0
    assert [len(c) for c in rec.chunks()] == meta.chunks
    assert b"".join(rec.chunks()) == ORIGINAL

    # Redaction: every credential is replaced, everything else is kept.
    assert meta.request is not None
    for name in SECRETS:
        assert meta.request.headers[name] == REDACTED
    assert "alt=sse" in meta.request.url
    assert f"key={REDACTED}" in meta.request.url
    assert meta.request.body == {**body, "api_key": REDACTED}
    assert_no_secret_in(tmp_path)

    # Replay (async, with the recorded chunks; and sync) aggregates to the original.
    assert await ms.aaggregate(ms.io.areplay(out), protocol="openai-chat") == expected
    assert ms.aggregate(ms.io.replay(out), protocol="openai-chat") == expected
    assert [c async for c in ms.io.areplay(out)] == rec.chunks()


async def test_arecord_request_records_an_error_answer(lib: ModuleType, tmp_path: Path) -> None:
    raw = b'{"error":{"message":"Incorrect API key provided","type":"invalid_request_error"}}'

    async def script(conn: Conn) -> None:
        await conn.start(401, {"content-type": "application/json", "set-cookie": "sid=COOKIESECRET4242"})
        await conn.send(raw)
        await conn.end()

    out = tmp_path / "openai-chat" / "unauthorized.sse"
    async with serve(script) as server, lib.AsyncClient(trust_env=False) as c:
        with pytest.raises(ms.ProviderHTTPError) as info:
            await ms.io.arecord_request(
                c, "POST", server.url + "/v1/chat/completions", out, protocol="openai-chat", headers=SECRETS
            )
    assert info.value.status == 401
    assert out.read_bytes() == raw
    meta = Recording.load(out).meta
    assert meta is not None
    assert meta.status == 401
    assert meta.headers["set-cookie"] == REDACTED
    assert_no_secret_in(tmp_path)


async def test_stopping_early_saves_an_incomplete_recording(tmp_path: Path) -> None:
    out = tmp_path / "cut.sse"
    gen = ms.io.arecord(ms.io.areplay(TOOLS), out, protocol="openai-chat")
    first = await anext(gen)
    await gen.aclose()
    rec = Recording.load(out)
    assert rec.data == first
    assert rec.meta is not None
    assert not rec.meta.complete


async def test_areplay_keeps_the_recorded_timing(tmp_path: Path) -> None:
    ticks = iter([0.0, 0.0, 0.1, 0.25])  # construction, start(), then two chunks
    rec = Recorder(tmp_path / "t.sse", protocol="openai-chat", clock=lambda: next(ticks))
    rec.start(200, {"content-type": "text/event-stream"})
    rec.feed(b"data: [DONE]")
    rec.feed(b"\n\n")
    meta = rec.save()
    assert meta.times == [0.1, 0.25]
    loaded = Recording.load(tmp_path / "t.sse")
    assert loaded.delays(1.0) == pytest.approx([0.1, 0.15])
    assert loaded.delays(2.0) == pytest.approx([0.05, 0.075])
    assert loaded.delays(None) == [0.0, 0.0]

    start = anyio.current_time()
    assert b"".join([c async for c in ms.io.areplay(loaded, speed=1.0)]) == b"data: [DONE]\n\n"
    assert anyio.current_time() - start >= 0.24
    start = anyio.current_time()
    assert [c async for c in ms.io.areplay(loaded)] == [b"data: [DONE]", b"\n\n"]
    assert anyio.current_time() - start < 0.2


def test_meta_file_that_does_not_match_falls_back_to_one_chunk(tmp_path: Path) -> None:
    path = tmp_path / "x.sse"
    path.write_bytes(ORIGINAL)
    ms.io.meta_path(path).write_bytes(msgspec.json.encode(RecordingMeta(chunks=[1, 2], times=[0.0, 0.1])))
    rec = Recording.load(path)
    assert rec.chunks() == [ORIGINAL]
    assert rec.delays(1.0) == [0.0]
    ms.io.meta_path(path).write_bytes(b'{"chunks": "nope"}')
    with pytest.raises(ms.StreamIOError, match="not a valid recording meta file"):
        Recording.load(path)


def test_redaction_rules() -> None:
    found: set[str] = set()
    headers = redact_headers(
        {
            "Authorization": "Bearer abcdefgh12345",
            "X-Goog-Api-Key": "k1",
            "Content-Type": "application/json",
            "anthropic-version": "2023-06-01",
            "X-Custom-Token": "tok",
        },
        secrets=found,
    )
    assert headers == {
        "authorization": REDACTED,
        "x-goog-api-key": REDACTED,
        "content-type": "application/json",
        "anthropic-version": "2023-06-01",
        "x-custom-token": REDACTED,
    }
    assert {"abcdefgh12345", "k1", "tok"} <= found
    # Response headers: only credentials, never rate-limit counters.
    resp = redact_headers({"x-ratelimit-remaining-tokens": "99", "set-cookie": "a=b"}, request=False)
    assert resp == {"x-ratelimit-remaining-tokens": "99", "set-cookie": REDACTED}
    url = redact_url(
        "https://u:pw@host/v1/m:gen?alt=sse&key=AIza1&access_token=t&max_tokens=5", secrets=found
    )
    assert (
        url == f"https://{REDACTED}@host/v1/m:gen?alt=sse&key={REDACTED}&access_token={REDACTED}&max_tokens=5"
    )
    assert {"AIza1", "pw"} <= found


# ---------------------------------------------------------------- the command line


def api_answer(received: list[dict[str, str]]) -> Any:
    async def script(conn: Conn) -> None:
        received.append(conn.request.headers)
        await send_recording(ORIGINAL)(conn)

    return script


async def test_cli_record_then_replay(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-cli-SECRET-000111")
    body = tmp_path / "body.json"
    body.write_bytes(b'{"model": "gpt-5.1", "stream": true, "messages": []}')
    out = tmp_path / "recordings" / "openai-chat" / "cli_case.sse"
    received: list[dict[str, str]] = []
    async with serve(api_answer(received)) as server:
        argv = [
            "record",
            "--protocol",
            "openai-chat",
            "--url",
            server.url + "/v1/chat/completions",
            "--body",
            str(body),
            "--out",
            str(out),
            "--header",
            "X-Trace: abc",
        ]
        code = await anyio.to_thread.run_sync(main, argv)
    assert code == 0
    assert received[0]["authorization"] == "Bearer sk-cli-SECRET-000111"
    assert received[0]["x-trace"] == "abc"
    assert server.requests[0].body == body.read_bytes()
    assert out.read_bytes() == ORIGINAL
    meta = Recording.load(out).meta
    assert meta is not None
    assert meta.request is not None
    assert meta.request.headers["authorization"] == REDACTED
    assert meta.request.body == {"model": "gpt-5.1", "stream": True, "messages": []}
    assert_no_secret_in(tmp_path, ["sk-cli-SECRET-000111"])
    capsysbinary.readouterr()

    assert main(["replay", "--speed", "0", str(out)]) == 0
    captured = capsysbinary.readouterr()
    assert captured.out == ORIGINAL


async def test_cli_record_error_exits_non_zero(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)

    async def script(conn: Conn) -> None:
        await conn.start(401, {"content-type": "application/json"})
        await conn.send(
            b'{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}'
        )
        await conn.end()

    out = tmp_path / "err.sse"
    async with serve(script) as server:
        argv = ["record", "--protocol", "openai-chat", "--url", server.url, "--out", str(out)]
        code = await anyio.to_thread.run_sync(main, argv)
    assert code == 1
    err = capsys.readouterr().err
    assert "401" in err
    assert "invalid x-api-key" in err
    assert "OPENAI_API_KEY" in err or "authorization" in server.requests[0].headers
    assert Recording.load(out).status == 401


def test_cli_replay_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["replay", str(tmp_path / "nope.sse")])
    assert info.value.code == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert "nope.sse" in err[0]


async def test_cli_record_refuses_to_overwrite_without_force(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-cli-SECRET-000111")
    out = tmp_path / "case.sse"
    out.write_bytes(b"data: [DONE]\n\n")
    received: list[dict[str, str]] = []
    async with serve(api_answer(received)) as server:
        argv = ["record", "--protocol", "openai-chat", "--url", server.url, "--out", str(out)]
        code = await anyio.to_thread.run_sync(main, argv)
        assert code == 1
        assert f"{out} exists; pass --force to overwrite it" in capsys.readouterr().err
        assert received == []  # refused before calling the provider
        assert out.read_bytes() == b"data: [DONE]\n\n"
        code = await anyio.to_thread.run_sync(main, [*argv, "--force"])
    assert code == 0
    assert out.read_bytes() == ORIGINAL


async def test_cli_record_checks_the_stream_is_of_the_protocol_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-SECRET-000111")
    out = tmp_path / "case.sse"
    async with serve(send_recording(ORIGINAL)) as server:  # an openai-chat stream
        argv = ["record", "--protocol", "anthropic", "--url", server.url, "--out", str(out)]
        code = await anyio.to_thread.run_sync(main, argv)
    assert code == 1
    err = capsys.readouterr().err
    assert "recorded as anthropic, but the provider sent a stream of openai-chat" in err
    assert out.read_bytes() == ORIGINAL  # kept for a look; --force records again
