"""Benchmark: the fixed cost of one ``ms.aggregate`` call, on tiny streams (a few events).

Run: ``python benchmarks/bench_tiny.py`` (``--quick`` for a smoke run; ``--against DIR`` to
measure another checkout's library beside this one, e.g. ``/work/main``).

Most streams are short: a few text deltas. Their cost is mostly per call (detection, setting up
the decoder and the aggregator, the finish), not per event. For each SSE protocol a tiny stream
(a short text answer, written by this library's encoder from one Chat stream) is aggregated
whole, as one bytes object, with the protocol given and detected: microseconds of CPU per call.
Last, a 30k-event Chat stream as one bytes object, given and detected: detection must cost
nothing there (it reads the first frame, not the whole input). With ``--against`` each row has
the other checkout's figure and the ratio (``this vs --against``: above 1 when this is faster).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import maas_stream as ms
from _harness import LARGE, against, best_of, quick, record
from bench_openai_chat import synth_stream

if TYPE_CHECKING:
    from collections.abc import Callable
    from types import ModuleType

PROTOCOLS = ("openai-chat", "anthropic", "openai-responses", "gemini", "google-interactions")


def tiny_chat() -> bytes:
    """A Chat stream of a short answer: the role, four text deltas, the finish, ``[DONE]``."""
    base = {"id": "chatcmpl-tiny", "object": "chat.completion.chunk", "created": 1767225600, "model": "m"}
    deltas: list[dict[str, object]] = [{"role": "assistant", "content": ""}]
    deltas += [{"content": word} for word in ("Hello", " there", ", friend", ".")]
    chunks = [{**base, "choices": [{"index": 0, "delta": d, "finish_reason": None}]} for d in deltas]
    chunks.append({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    body = b"".join(b"data: " + json.dumps(c, separators=(",", ":")).encode() + b"\n\n" for c in chunks)
    return body + b"data: [DONE]\n\n"


def calls(lib: ModuleType, protocol: str | None, loops: int) -> Callable[[list[bytes]], object]:
    """``loops`` calls of ``lib.aggregate`` on the one bytes object given."""

    def run(chunks: list[bytes]) -> object:
        data = chunks[0]
        for _ in range(loops):
            lib.aggregate(data, protocol=protocol)
        return None

    return run


def compare(bench: str, data: bytes, protocol: str, loops: int, repeat: int, unit: float) -> None:
    """Print (and record) the CPU per call of this library, and of ``--against``'s, given and detected."""
    other = against()
    fns = {"given": calls(ms, protocol, loops), "detected": calls(ms, None, loops)}
    if other is not None:
        fns["given against"] = calls(other, protocol, loops)
        fns["detected against"] = calls(other, None, loops)
    for fn in fns.values():
        fn([data])  # warm: the first call of each pays for imports and caches
    t = best_of(fns, [data], repeat)
    name = "µs" if unit == 1e6 else "ms"
    for how in ("given", "detected"):
        line = f"  {bench:34} protocol {how:8} {t[how] / loops * unit:9.1f} {name}"
        if other is not None:
            ratio = t[f"{how} against"] / t[how]
            line += f"   --against {t[f'{how} against'] / loops * unit:9.1f} {name}   this is {ratio:4.2f}x as fast"
            record(bench, f"this vs --against, protocol {how}", ratio, "info")
        else:
            record(bench, f"{name} per call, protocol {how}", t[how] / loops * unit, "info")
        print(line)


def main() -> None:
    chat = tiny_chat()
    loops, repeat = (5, 1) if quick() else (200, 31)
    print("tiny streams (one bytes object), CPU per ms.aggregate call:")
    for protocol in PROTOCOLS:
        data = chat if protocol == "openai-chat" else ms.convert(chat, to=protocol, protocol="openai-chat")
        frames = data.replace(b"\r\n", b"\n").count(b"\n\n")
        compare(f"tiny {protocol} ({frames} ev)", data, protocol, loops, repeat, 1e6)
    big = synth_stream(LARGE)
    print(f"\na {LARGE:,}-event Chat stream as one bytes object ({len(big) / 1e6:.1f} MB):")
    compare(f"whole openai-chat ({LARGE:,} ev)", big, "openai-chat", 1, 1 if quick() else 7, 1e3)


if __name__ == "__main__":
    main()
