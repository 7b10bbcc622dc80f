"""Fake session upstreams written from the protocols' docs, and the bridge under uvicorn.

:class:`FakeRealtime` speaks OpenAI Realtime (GA event names; beta names when the handshake has
``OpenAI-Beta: realtime=v1``), :class:`FakeLive` speaks the Gemini Live API. Both are small
``websockets`` servers on 127.0.0.1 that check the operator's key and answer by the user's text:

* ``weather`` → a ``get_weather`` call (Realtime ``function_call`` item; Live ``toolCall``); the
  tool result → ``"Paris is 18C."``;
* ``slow`` → a call whose arguments stop half-way; Realtime waits for ``response.cancel`` and
  answers ``response.done`` ``cancelled`` with the item ``incomplete``; Live sends
  ``toolCallCancellation`` for it;
* ``halt`` (Realtime) → a call whose arguments stop half-way, then ``response.done``
  ``cancelled`` (``turn_detected``) with the item ``incomplete``, without any client message;
* ``cut`` → the TCP connection is dropped mid-response (no close frame);
* ``fail`` → the connection is closed with 1011 and a reason;
* anything else → the text :data:`ANSWER`, in two deltas;
* Live audio (``realtimeInput``) is collected, and ``activityEnd`` / ``audioStreamEnd`` is
  answered with :data:`AUDIO_OUT` (24 kHz PCM16) as ``inlineData``;
* Realtime audio (``input_audio_buffer.append``) is collected in :attr:`FakeRealtime.audio_in`;
  a ``response.create`` after an ``input_audio_buffer.commit`` is answered with
  :data:`AUDIO_OUT` (24 kHz PCM16) as ``response.output_audio.delta`` (beta: ``response.audio.delta``);
* ``oops`` (Realtime) → a recoverable ``error`` event instead of a response (the session goes on).

A Realtime ``response.cancel`` with no response active answers the recoverable ``error`` event
the docs describe (the session goes on).

:func:`serving` runs an ASGI app under uvicorn (optionally with TLS, which google-genai's Live
client needs: it always connects with ``wss``).
"""

from __future__ import annotations

import base64
import contextlib
import datetime
import ipaddress
import json
import ssl
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Self

import anyio

if TYPE_CHECKING:
    from collections.abc import AsyncIterator
    from pathlib import Path

UPSTREAM_KEY = "sk-upstream-operator-0123456789"
BRIDGE_KEY = "bridge-key-abcdefgh"
ANSWER = "Hello from the fake upstream."
TOOL_ANSWER = "Paris is 18C."
AUDIO_OUT = bytes(range(256)) * 19 * 2  # 9728 bytes: 4864 PCM16 samples, about 0.2 s at 24 kHz


@dataclass
class Seen:
    """What a fake upstream received."""

    paths: list[str] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    messages: list[Any] = field(default_factory=list)
    closes: list[tuple[int | None, str]] = field(default_factory=list)


class _Fake:
    """A ``websockets`` server on 127.0.0.1 (use ``async with``; :attr:`url` once started)."""

    key_header = ""
    key_format = "{}"

    def __init__(self) -> None:
        self.seen = Seen()
        self.port = 0
        self._server: Any = None
        self._ended = anyio.Event()

    def _check(self, connection: Any, request: Any) -> Any:
        headers = {k.lower(): v for k, v in request.headers.raw_items()}
        self.seen.paths.append(request.path)
        self.seen.headers.append(headers)
        if headers.get(self.key_header) != self.key_format.format(UPSTREAM_KEY):
            return connection.respond(401, "invalid API key\n")
        return None

    async def __aenter__(self) -> Self:
        from websockets.asyncio.server import serve

        self._server = await serve(
            self._run, "127.0.0.1", 0, process_request=self._check, max_size=None, compression=None
        )
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._server.close()
        await self._server.wait_closed()

    async def _run(self, ws: Any) -> None:
        from websockets.exceptions import ConnectionClosed

        try:
            await self.handle(ws)
        except ConnectionClosed:
            pass
        finally:
            rcvd = ws.protocol.close_rcvd
            self.seen.closes.append((rcvd.code, rcvd.reason) if rcvd is not None else (None, ""))
            self._ended.set()

    async def ended(self) -> list[tuple[int | None, str]]:
        """The close codes received, once a session has ended."""
        await self._ended.wait()
        return self.seen.closes

    async def handle(self, ws: Any) -> None:
        raise NotImplementedError


def _text_of(item: dict[str, Any]) -> str:
    return "".join(c.get("text") or "" for c in item.get("content") or [] if isinstance(c, dict))


class FakeRealtime(_Fake):
    """An OpenAI Realtime server (see the module docstring)."""

    key_header = "authorization"
    key_format = "Bearer {}"

    def __init__(self) -> None:
        super().__init__()
        self.audio_in = b""
        """The PCM16 audio the client appended (``input_audio_buffer.append``), decoded."""

    @property
    def url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/v1/realtime?model={{model}}"

    async def handle(self, ws: Any) -> None:
        beta = ws.request.headers.get("openai-beta") == "realtime=v1"
        s = _RealtimeSession(ws, beta, self)
        await s.event({"type": "session.created", "session": s.session_object()})
        async for raw in ws:
            msg = json.loads(raw)
            self.seen.messages.append(msg)
            await s.on(msg)


class _RealtimeSession:
    def __init__(self, ws: Any, beta: bool, fake: FakeRealtime) -> None:
        self.ws = ws
        self.beta = beta
        self.fake = fake
        self.committed = False
        self.n = 0
        self.items: list[dict[str, Any]] = []
        self.active: dict[str, Any] | None = None

    async def event(self, body: dict[str, Any]) -> None:
        self.n += 1
        await self.ws.send(json.dumps({"event_id": f"event_{self.n}", **body}))

    def session_object(self) -> dict[str, Any]:
        if self.beta:
            return {"id": "sess_1", "object": "realtime.session", "model": "gpt-4o-realtime-preview"}
        return {"type": "realtime", "id": "sess_1", "object": "realtime.session", "model": "gpt-realtime"}

    async def on(self, msg: dict[str, Any]) -> None:
        kind = msg.get("type")
        if kind == "session.update":
            await self.event({"type": "session.updated", "session": self.session_object()})
        elif kind == "conversation.item.create":
            item = {"id": f"item_c{len(self.items)}", **msg["item"]}
            self.items.append(item)
            added = "conversation.item.created" if self.beta else "conversation.item.added"
            await self.event({"type": added, "previous_item_id": None, "item": item})
        elif kind == "input_audio_buffer.append":
            self.fake.audio_in += base64.b64decode(msg["audio"])
        elif kind == "input_audio_buffer.commit":
            self.committed = True
            iid = f"item_a{self.n}"
            await self.event(
                {"type": "input_audio_buffer.committed", "previous_item_id": None, "item_id": iid}
            )
        elif kind == "response.create":
            if self.committed:
                self.committed = False
                await self.speak()
            else:
                await self.respond()
        elif kind == "response.cancel":
            if self.active is None:
                await self.event(
                    {
                        "type": "error",
                        "error": {
                            "type": "invalid_request_error",
                            "code": "response_cancel_not_active",
                            "message": "Cancellation failed: no active response found",
                            "param": None,
                            "event_id": msg.get("event_id"),
                        },
                    }
                )
                return
            await self.cancel("client_cancelled")

    async def cancel(self, reason: str) -> None:
        """End the active response ``cancelled``, its call item ``incomplete``."""
        assert self.active is not None
        response, self.active = self.active, None
        item = {**response["output"][0], "status": "incomplete"}
        await self.event(
            {
                "type": "response.done",
                "response": {
                    **response,
                    "status": "cancelled",
                    "status_details": {"type": "cancelled", "reason": reason},
                    "output": [item],
                },
            }
        )

    async def respond(self) -> None:
        last = self.items[-1] if self.items else {}
        text = _text_of(last)
        rid = f"resp_{self.n}"
        response = {"object": "realtime.response", "id": rid, "status": "in_progress", "output": []}
        await self.event({"type": "response.created", "response": response})
        if "cut" in text:
            self.ws.transport.abort()
            return
        if "fail" in text:
            await self.ws.close(1011, "the model is overloaded")
            return
        if "oops" in text:
            error = {
                "type": "server_error",
                "code": None,
                "message": "The server had an error",
                "param": None,
            }
            await self.event({"type": "error", "error": {**error, "event_id": None}})
            return
        if last.get("type") == "function_call_output":
            await self.message(rid, TOOL_ANSWER)
        elif "halt" in text:  # the server cuts the call itself (the user spoke again)
            await self.call(rid, response, slow=True)
            await self.cancel("turn_detected")
        elif "weather" in text or "slow" in text:
            await self.call(rid, response, slow="slow" in text)
        else:
            await self.message(rid, ANSWER)

    async def message(self, rid: str, text: str) -> None:
        iid = f"item_m{self.n}"
        base = {"response_id": rid, "item_id": iid, "output_index": 0, "content_index": 0}
        item = {"id": iid, "type": "message", "status": "in_progress", "role": "assistant", "content": []}
        delta = "response.text.delta" if self.beta else "response.output_text.delta"
        done = "response.text.done" if self.beta else "response.output_text.done"
        part_type = "text" if self.beta else "output_text"
        await self.event(
            {"type": "response.output_item.added", "response_id": rid, "output_index": 0, "item": item}
        )
        await self.event(
            {"type": "response.content_part.added", **base, "part": {"type": "text", "text": ""}}
        )
        half = len(text) // 2
        for piece in (text[:half], text[half:]):
            await self.event({"type": delta, **base, "delta": piece})
        await self.event({"type": done, **base, "text": text})
        await self.event(
            {"type": "response.content_part.done", **base, "part": {"type": "text", "text": text}}
        )
        final = {**item, "status": "completed", "content": [{"type": part_type, "text": text}]}
        await self.event(
            {"type": "response.output_item.done", "response_id": rid, "output_index": 0, "item": final}
        )
        usage = {"total_tokens": 30, "input_tokens": 20, "output_tokens": 10}
        await self.event(
            {
                "type": "response.done",
                "response": {
                    "object": "realtime.response",
                    "id": rid,
                    "status": "completed",
                    "output": [final],
                    "usage": usage,
                },
            }
        )

    async def speak(self) -> None:
        """An audio answer: :data:`AUDIO_OUT` bytes of 24 kHz PCM16, in two deltas."""
        rid, iid = f"resp_{self.n}", f"item_s{self.n}"
        response = {"object": "realtime.response", "id": rid, "status": "in_progress", "output": []}
        await self.event({"type": "response.created", "response": response})
        base = {"response_id": rid, "item_id": iid, "output_index": 0, "content_index": 0}
        item = {"id": iid, "type": "message", "status": "in_progress", "role": "assistant", "content": []}
        await self.event(
            {"type": "response.output_item.added", "response_id": rid, "output_index": 0, "item": item}
        )
        await self.event({"type": "response.content_part.added", **base, "part": {"type": "audio"}})
        delta = "response.audio.delta" if self.beta else "response.output_audio.delta"
        done = "response.audio.done" if self.beta else "response.output_audio.done"
        half = len(AUDIO_OUT) // 2
        for piece in (AUDIO_OUT[:half], AUDIO_OUT[half:]):
            await self.event({"type": delta, **base, "delta": base64.b64encode(piece).decode()})
        await self.event({"type": done, **base})
        await self.event({"type": "response.content_part.done", **base, "part": {"type": "audio"}})
        final = {**item, "status": "completed", "content": [{"type": "output_audio"}]}
        await self.event(
            {"type": "response.output_item.done", "response_id": rid, "output_index": 0, "item": final}
        )
        await self.event(
            {
                "type": "response.done",
                "response": {
                    "object": "realtime.response",
                    "id": rid,
                    "status": "completed",
                    "output": [final],
                },
            }
        )

    async def call(self, rid: str, response: dict[str, Any], *, slow: bool) -> None:
        iid, cid = f"item_f{self.n}", f"call_{self.n}"
        args = '{"city": "Paris"}'
        item = {
            "id": iid,
            "type": "function_call",
            "status": "in_progress",
            "name": "get_weather",
            "call_id": cid,
            "arguments": "",
        }
        base = {"response_id": rid, "item_id": iid, "output_index": 0, "call_id": cid}
        await self.event(
            {"type": "response.output_item.added", "response_id": rid, "output_index": 0, "item": item}
        )
        await self.event({"type": "response.function_call_arguments.delta", **base, "delta": args[:6]})
        if slow:  # wait for the client's response.cancel
            self.active = {**response, "output": [{**item, "arguments": args[:6]}]}
            return
        await self.event({"type": "response.function_call_arguments.delta", **base, "delta": args[6:]})
        await self.event(
            {
                "type": "response.function_call_arguments.done",
                **base,
                "name": "get_weather",
                "arguments": args,
            }
        )
        final = {**item, "status": "completed", "arguments": args}
        await self.event(
            {"type": "response.output_item.done", "response_id": rid, "output_index": 0, "item": final}
        )
        await self.event(
            {
                "type": "response.done",
                "response": {
                    "object": "realtime.response",
                    "id": rid,
                    "status": "completed",
                    "output": [final],
                },
            }
        )


class FakeLive(_Fake):
    """A Gemini Live API server (see the module docstring)."""

    key_header = "x-goog-api-key"

    def __init__(self) -> None:
        super().__init__()
        self.audio_in = b""
        """The PCM16 audio the client streamed (``realtimeInput``), decoded."""

    @property
    def url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/ws/google.ai.generativelanguage.v1beta.GenerativeService.BidiGenerateContent"

    async def handle(self, ws: Any) -> None:
        pending = ""  # the user text of the turn so far (Live answers at turnComplete: true)
        async for raw in ws:
            msg = json.loads(raw)
            self.seen.messages.append(msg)
            if "setup" in msg:
                await ws.send(json.dumps({"setupComplete": {}}))
                continue
            content = msg.get("clientContent") or msg.get("client_content")
            if content is not None:
                pending += "".join(
                    p.get("text", "") for t in content.get("turns", []) for p in t.get("parts", [])
                )
                if content.get("turnComplete", content.get("turn_complete", False)):
                    text, pending = pending, ""
                    await self.turn(ws, text)
                continue
            response = msg.get("toolResponse") or msg.get("tool_response")
            if response is not None:
                await self.say(ws, TOOL_ANSWER)
            realtime = msg.get("realtimeInput") or msg.get("realtime_input") or {}
            for blob in [realtime.get("audio"), *(realtime.get("mediaChunks") or [])]:
                if blob:
                    self.audio_in += base64.b64decode(blob["data"])
            if "activityEnd" in realtime or "audioStreamEnd" in realtime:
                await self.speak(ws)

    def messages_setup_modalities(self) -> Any:
        """The ``responseModalities`` of the session's ``setup``."""
        setup = next(m["setup"] for m in self.seen.messages if "setup" in m)
        return (setup.get("generationConfig") or {}).get("responseModalities")

    async def speak(self, ws: Any) -> None:
        """An audio answer: :data:`AUDIO_OUT` bytes of 24 kHz PCM16, in two chunks."""
        half = len(AUDIO_OUT) // 2
        for piece in (AUDIO_OUT[:half], AUDIO_OUT[half:]):
            blob = {"mimeType": "audio/pcm;rate=24000", "data": base64.b64encode(piece).decode()}
            await ws.send(json.dumps({"serverContent": {"modelTurn": {"parts": [{"inlineData": blob}]}}}))
        await ws.send(json.dumps({"serverContent": {"turnComplete": True}}))

    async def turn(self, ws: Any, text: str) -> None:
        if "cut" in text:
            await ws.send(json.dumps({"serverContent": {"modelTurn": {"parts": [{"text": "Hel"}]}}}))
            ws.transport.abort()
            return
        if "fail" in text:
            await ws.close(1011, "the model is overloaded")
            return
        if "weather" in text or "slow" in text:
            call = {"id": "fc-1", "name": "get_weather", "args": {"city": "Paris"}}
            await ws.send(json.dumps({"toolCall": {"functionCalls": [call]}}))
            if "slow" in text:
                await ws.send(json.dumps({"toolCallCancellation": {"ids": ["fc-1"]}}))
            return
        await self.say(ws, ANSWER)

    async def say(self, ws: Any, text: str) -> None:
        half = len(text) // 2
        for piece in (text[:half], text[half:]):
            await ws.send(json.dumps({"serverContent": {"modelTurn": {"parts": [{"text": piece}]}}}))
        await ws.send(json.dumps({"serverContent": {"generationComplete": True}}))
        usage = {"promptTokenCount": 20, "responseTokenCount": 10, "totalTokenCount": 30}
        await ws.send(json.dumps({"serverContent": {"turnComplete": True}, "usageMetadata": usage}))


# ------------------------------------------------------------------------------ TLS and uvicorn


def tls_files(folder: Path) -> tuple[Path, Path, ssl.SSLContext]:
    """A self-signed certificate for 127.0.0.1 (cert file, key file, a client context trusting it)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = folder / "cert.pem", folder / "key.pem"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    context = ssl.create_default_context(cafile=str(cert_file))
    return cert_file, key_file, context


@contextlib.asynccontextmanager
async def serving(app: Any, *, tls: tuple[Path, Path] | None = None, **options: Any) -> AsyncIterator[int]:
    """Run ``app`` under uvicorn on 127.0.0.1, with ``serve``'s protocols; yield its port.

    ``options``: more ``uvicorn.Config`` arguments (``http=`` picks the HTTP protocol).

    (``LeanWebSocketProtocol`` and the bridge's subclass of uvicorn's HTTP/1.1 protocol, as
    ``maas-stream serve`` runs them: every served test, the official SDKs' realtime and live
    clients included, goes through them.)
    """
    import uvicorn

    from maas_stream.bridge._uvicorn_http import http_protocol
    from maas_stream.bridge._ws_lean import LeanWebSocketProtocol

    extra: dict[str, Any] = {"ws": LeanWebSocketProtocol, "http": http_protocol(), **options}
    if tls is not None:
        extra.update(ssl_certfile=str(tls[0]), ssl_keyfile=str(tls[1]))
    config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="on", **extra)
    server = uvicorn.Server(config)
    async with anyio.create_task_group() as tg:
        tg.start_soon(server.serve)
        while not server.started:  # noqa: ASYNC110 (uvicorn offers no event to wait on)
            await anyio.sleep(0.01)
        try:
            yield server.servers[0].sockets[0].getsockname()[1]
        finally:
            server.should_exit = True
