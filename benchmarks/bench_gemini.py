"""Gemini decode/aggregate/re-encode throughput against bare JSON decoding and google-genai.

Run: ``PYTHONPATH=src python benchmarks/bench_gemini.py``. Reports chunks (SSE events) per second
for (a) splitting SSE and ``msgspec.json.decode``-ing every payload untyped, (b) ``ms.aggregate``,
(c) google-genai's streaming client parsing every chunk into ``GenerateContentResponse``, and
(d) re-encoding to Gemini (``ms.convert``), on a ~2k-chunk and a ~30k-chunk synthesized stream.
"""

from __future__ import annotations

import base64
import json
import time
from typing import TYPE_CHECKING

import httpx2
import msgspec
from google import genai
from google.genai import types

import maas_stream as ms
from maas_stream.sse import Decoder

if TYPE_CHECKING:
    from collections.abc import Callable

SIG = base64.b64encode(bytes(range(96))).decode()


def synth(n: int) -> bytes:
    """A realistic stream of ``n`` chunks: thoughts, answer text, function calls, usage."""
    frames: list[bytes] = []
    for i in range(n):
        parts: list[dict[str, object]]
        if i % 50 == 49:
            parts = [
                {
                    "functionCall": {"name": "lookup", "args": {"q": f"item {i}", "n": i}},
                    "thoughtSignature": SIG,
                }
            ]
        elif (i // 10) % 4 == 0:
            parts = [{"text": f"Considering step {i} of the plan carefully. ", "thought": True}]
        else:
            parts = [{"text": f"Token run {i}: the quick brown fox jumps over the lazy dog. "}]
        cand: dict[str, object] = {"content": {"role": "model", "parts": parts}, "index": 0}
        usage = {"promptTokenCount": 120, "candidatesTokenCount": i, "totalTokenCount": 120 + i}
        if i == n - 1:
            cand["finishReason"] = "STOP"
        body = {
            "candidates": [cand],
            "usageMetadata": usage,
            "modelVersion": "gemini-3.5-flash",
            "responseId": "bench",
        }
        frames.append(b"data: " + json.dumps(body, separators=(",", ":")).encode() + b"\r\n\r\n")
    return b"".join(frames)


def bare(data: bytes) -> int:
    decode = msgspec.json.decode
    n = 0
    for frame in data.split(b"\r\n\r\n"):
        if frame.startswith(b"data: "):
            decode(frame[6:])
            n += 1
    return n


def ours(data: bytes) -> int:
    resp = ms.aggregate(data, protocol="gemini")
    assert resp.status == "completed"
    return 0


def sse_only(data: bytes) -> int:
    return len(Decoder().feed(data))


def reencode(data: bytes) -> int:
    return len(ms.convert(data, to="gemini", protocol="gemini"))


def sdk(data: bytes) -> int:
    def handler(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, content=data, headers={"content-type": "text/event-stream"})

    client = genai.Client(
        api_key="dummy",
        http_options=types.HttpOptions(httpx_client=httpx2.Client(transport=httpx2.MockTransport(handler))),
    )
    return sum(1 for _ in client.models.generate_content_stream(model="gemini-bench", contents="hi"))


def best(fn: Callable[[bytes], int], data: bytes, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn(data)
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    for n, repeat, sdk_repeat in ((2_000, 7, 3), (30_000, 3, 1)):
        data = synth(n)
        t_bare = best(bare, data, repeat)
        t_ours = best(ours, data, repeat)
        t_conv = best(reencode, data, repeat)
        t_sse = best(sse_only, data, repeat)
        t_sdk = best(sdk, data, sdk_repeat)
        print(f"--- {n} chunks, {len(data) / 1e6:.1f} MB")
        print(f"(a) bare split + json.decode : {n / t_bare:12,.0f} chunks/s")
        print(f"(b) ms.aggregate             : {n / t_ours:12,.0f} chunks/s")
        print(f"    of which core SSE framing : {n / t_sse:12,.0f} chunks/s ({t_sse / t_ours:.0%} of (b))")
        print(f"(c) google-genai stream      : {n / t_sdk:12,.0f} chunks/s")
        print(f"(d) ms.convert -> gemini     : {n / t_conv:12,.0f} chunks/s")
        print(f"    (b)/(a) = {t_bare / t_ours:.2f}x   (budget >= 0.5)")
        print(f"    (b)/(c) = {t_sdk / t_ours:.1f}x   (budget >= 10)")
        print(f"    re-encode cost / decode cost = {(t_conv - t_ours) / t_ours:.2f}   (budget <= 2)")


if __name__ == "__main__":
    main()
