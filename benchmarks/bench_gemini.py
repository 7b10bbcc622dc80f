"""Gemini decode/aggregate/re-encode throughput against bare JSON decoding and google-genai.

Run: ``PYTHONPATH=src python benchmarks/bench_gemini.py`` (``--quick``: fewer runs). Reports chunks (SSE events) per second
for (a) splitting SSE and ``msgspec.json.decode``-ing every payload untyped, (b) ``ms.aggregate``,
(c) google-genai's streaming client parsing every chunk into ``GenerateContentResponse``, and
(d) re-encoding to Gemini (``ms.convert``), on a ~2k-chunk and a ~30k-chunk synthesized stream.
CPU time, contenders interleaved, best of several runs (``_harness.py``).
"""

from __future__ import annotations

import base64
import json
import sys
from typing import TYPE_CHECKING

import httpx2
import msgspec
from google import genai
from google.genai import types

from _harness import LARGE, SMALL, bare_sse, flatness, measure

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


def sdk(data: bytes) -> Callable[[list[bytes]], object]:
    """google-genai's streaming client parsing every chunk into ``GenerateContentResponse``.

    google-genai does not accumulate a response, so this is parse-only and flatters the SDK.
    """

    def handler(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, content=data, headers={"content-type": "text/event-stream"})

    client = genai.Client(
        api_key="dummy",
        http_options=types.HttpOptions(httpx_client=httpx2.Client(transport=httpx2.MockTransport(handler))),
    )

    def run(chunks: list[bytes]) -> object:
        return sum(1 for _ in client.models.generate_content_stream(model="gemini-bench", contents="hi"))

    return run


def main() -> None:
    print(f"python {sys.version.split()[0]}, msgspec {msgspec.__version__}, google-genai {genai.__version__}")
    runs = []
    for n in (SMALL, LARGE):
        data = synth(n)
        runs.append(
            measure("gemini", data, bare=bare_sse, sdk=sdk(data), sdk_label="google-genai stream (parse)")
        )
    flatness("gemini", *runs)


if __name__ == "__main__":
    main()
