"""Benchmark google-interactions, google-live and openai-realtime decoding, aggregation and re-encoding.

Run: ``PYTHONPATH=src python benchmarks/bench_realtime.py [--quick] [protocol ...]``. For each protocol, on synthesized
~2k-event and ~30k-event streams (the same bytes for every measurement, one process) it reports
events/s of:

(a) bare framing + ``msgspec.json.decode`` (untyped) of every payload: JSON lines split on
    ``\\n`` (each line decoded, as a websocket reader would), or SSE split with
    ``Decoder.feed_raw`` and each ``data`` decoded from bytes;
(b) ``ms.aggregate`` (our decode + aggregate);
(c) the official SDK's own per-event handling: openai's realtime ``construct_type_unchecked``
    into ``RealtimeServerEvent`` (what ``connection.recv()`` does), google-genai's
    ``LiveServerMessage.model_validate`` per server message, google-genai's Interactions stream
    event model (``construct_unvalidated`` into ``InteractionSSEStreamEvent``). None of these
    SDKs accumulates a response, so this is parse-only and flatters the SDK;
(d) ``ms.convert`` to the same protocol (re-encode cost = (d) time - (b) time).

CPU time, contenders interleaved, best of several runs (``_harness.py``). Budgets (DESIGN.md): (b) >= 0.5x (a); (b) >= 10x (c); re-encode <= 2x decode.

For the two websocket protocols it then splits (b), per line and in one run: the typed floor
(the same newline split + the decoder's own typed ``msgspec`` decode of each line, nothing
else), the decoder alone (events), the aggregator alone (fed the decoder's events, decoded
beforehand), the event path (decoder then aggregator) and ``ms.aggregate`` itself, where the
decoder folds the streamed deltas straight into the parts (the direct fold). With
``--against DIR`` (a checkout, e.g. ``/work/main``) the same ``ms.aggregate`` of that checkout's
``src`` (loaded beside this one as ``maas_stream_against``) is measured in the same run,
interleaved: before/after numbers on one loaded machine.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

import maas_stream as ms
from _harness import LARGE, SMALL, bare_jsonl, bare_sse, best_of, chunks_of, measure, quick, record
from maas_stream._aggregate import Aggregator
from maas_stream.protocols import google_live, openai_realtime
from maas_stream.sse import Decoder

if TYPE_CHECKING:
    from collections.abc import Callable

AUDIO = "AAAAAP//AQD+/wIA/f8DAPz/BAD7/wUA+v8GAPn/BwD4/wgA9/8JAPb/"


def _line(direction: str, msg: dict[str, Any]) -> str:
    return json.dumps({"dir": direction, "msg": msg}, separators=(",", ":"))


def realtime_stream(events: int) -> bytes:
    """One session: responses of text, audio + transcript and function-call argument deltas."""
    lines = [
        _line("server", {"type": "session.created", "event_id": "e0", "session": {"model": "gpt-realtime"}})
    ]
    r = 0
    while len(lines) < events:
        r += 1
        rid, mid, fid = f"resp_{r}", f"item_m{r}", f"item_f{r}"
        base = {"response_id": rid, "output_index": 0}
        lines.append(
            _line(
                "server",
                {
                    "type": "response.created",
                    "event_id": "x",
                    "response": {
                        "id": rid,
                        "object": "realtime.response",
                        "status": "in_progress",
                        "output": [],
                    },
                },
            )
        )
        lines.append(
            _line(
                "server",
                {
                    "type": "response.output_item.added",
                    "event_id": "x",
                    **base,
                    "item": {
                        "id": mid,
                        "type": "message",
                        "role": "assistant",
                        "status": "in_progress",
                        "content": [],
                    },
                },
            )
        )
        for ci, kind in ((0, "text"), (1, "audio")):
            lines.append(
                _line(
                    "server",
                    {
                        "type": "response.content_part.added",
                        "event_id": "x",
                        **base,
                        "item_id": mid,
                        "content_index": ci,
                        "part": {"type": kind},
                    },
                )
            )
        for i in range(60):
            lines.append(
                _line(
                    "server",
                    {
                        "type": "response.output_text.delta",
                        "event_id": f"t{i}",
                        **base,
                        "item_id": mid,
                        "content_index": 0,
                        "delta": f"word{i} ",
                    },
                )
            )
            lines.append(
                _line(
                    "server",
                    {
                        "type": "response.output_audio.delta",
                        "event_id": f"a{i}",
                        **base,
                        "item_id": mid,
                        "content_index": 1,
                        "delta": AUDIO,
                    },
                )
            )
            lines.append(
                _line(
                    "server",
                    {
                        "type": "response.output_audio_transcript.delta",
                        "event_id": f"s{i}",
                        **base,
                        "item_id": mid,
                        "content_index": 1,
                        "delta": f"word{i} ",
                    },
                )
            )
        for ci in (0, 1):
            lines.append(
                _line(
                    "server",
                    {
                        "type": "response.content_part.done",
                        "event_id": "x",
                        **base,
                        "item_id": mid,
                        "content_index": ci,
                        "part": {},
                    },
                )
            )
        lines.append(
            _line(
                "server",
                {
                    "type": "response.output_item.done",
                    "event_id": "x",
                    **base,
                    "item": {
                        "id": mid,
                        "type": "message",
                        "role": "assistant",
                        "status": "completed",
                        "content": [],
                    },
                },
            )
        )
        lines.append(
            _line(
                "server",
                {
                    "type": "response.output_item.added",
                    "event_id": "x",
                    **base,
                    "output_index": 1,
                    "item": {
                        "id": fid,
                        "type": "function_call",
                        "name": "f",
                        "call_id": f"call_{r}",
                        "arguments": "",
                        "status": "in_progress",
                    },
                },
            )
        )
        args = [f'"k{i}":1,' for i in range(20)]
        for piece in args:
            lines.append(
                _line(
                    "server",
                    {
                        "type": "response.function_call_arguments.delta",
                        "event_id": "x",
                        **base,
                        "item_id": fid,
                        "call_id": f"call_{r}",
                        "delta": piece,
                    },
                )
            )
        lines.append(
            _line(
                "server",
                {
                    "type": "response.output_item.done",
                    "event_id": "x",
                    **base,
                    "item": {
                        "id": fid,
                        "type": "function_call",
                        "name": "f",
                        "call_id": f"call_{r}",
                        "arguments": "".join(args),
                        "status": "completed",
                    },
                },
            )
        )
        lines.append(
            _line(
                "server",
                {
                    "type": "response.done",
                    "event_id": "x",
                    "response": {
                        "id": rid,
                        "object": "realtime.response",
                        "status": "completed",
                        "output": [],
                        "usage": {"total_tokens": 10, "input_tokens": 4, "output_tokens": 6},
                    },
                },
            )
        )
    return ("\n".join(lines) + "\n").encode()


def live_stream(events: int) -> bytes:
    """One session: turns of thought text, text, audio with transcription, a tool call round."""
    lines = [
        _line("client", {"setup": {"model": "models/gemini-live"}}),
        _line("server", {"setupComplete": {}}),
    ]
    t = 0
    while len(lines) < events:
        t += 1
        lines.append(
            _line(
                "server",
                {"serverContent": {"modelTurn": {"parts": [{"text": "planning ", "thought": True}]}}},
            )
        )
        for i in range(60):
            lines.append(
                _line("server", {"serverContent": {"modelTurn": {"parts": [{"text": f"word{i} "}]}}})
            )
        lines.append(
            _line(
                "server", {"toolCall": {"functionCalls": [{"id": f"fc-{t}", "name": "f", "args": {"a": t}}]}}
            )
        )
        lines.append(
            _line(
                "client",
                {
                    "toolResponse": {
                        "functionResponses": [{"id": f"fc-{t}", "name": "f", "response": {"output": "ok"}}]
                    }
                },
            )
        )
        for i in range(60):
            lines.append(
                _line(
                    "server",
                    {
                        "serverContent": {
                            "modelTurn": {
                                "parts": [{"inlineData": {"mimeType": "audio/pcm;rate=24000", "data": AUDIO}}]
                            }
                        }
                    },
                )
            )
            lines.append(_line("server", {"serverContent": {"outputTranscription": {"text": f"word{i} "}}}))
        lines.append(_line("server", {"serverContent": {"generationComplete": True}}))
        lines.append(
            _line(
                "server",
                {
                    "serverContent": {"turnComplete": True},
                    "usageMetadata": {"promptTokenCount": 5, "responseTokenCount": 7, "totalTokenCount": 12},
                },
            )
        )
    return ("\n".join(lines) + "\n").encode()


def interactions_stream(events: int) -> bytes:
    """One interaction: a thought with summary deltas, long text, streamed call arguments."""

    def ev(name: str, body: dict[str, Any]) -> str:
        body["event_type"] = name
        return f"event: {name}\ndata: {json.dumps(body, separators=(',', ':'))}\n\n"

    out = [
        ev("interaction.created", {"interaction": {"id": "v1_b", "status": "in_progress", "model": "gemini"}})
    ]
    out.append(ev("step.start", {"index": 0, "step": {"type": "thought"}}))
    out += [
        ev(
            "step.delta",
            {"index": 0, "delta": {"type": "thought_summary", "content": {"type": "text", "text": f"t{i} "}}},
        )
        for i in range(events // 10)
    ]
    out.append(
        ev("step.delta", {"index": 0, "delta": {"type": "thought_signature", "signature": "c2lnbmF0dXJl"}})
    )
    out.append(ev("step.stop", {"index": 0}))
    out.append(ev("step.start", {"index": 1, "step": {"type": "model_output"}}))
    n = events - len(out) - 2 - events // 10 - 4
    out += [ev("step.delta", {"index": 1, "delta": {"type": "text", "text": f"word{i} "}}) for i in range(n)]
    out.append(ev("step.stop", {"index": 1}))
    out.append(
        ev(
            "step.start",
            {"index": 2, "step": {"type": "function_call", "id": "c1", "name": "f", "arguments": {}}},
        )
    )
    out += [
        ev("step.delta", {"index": 2, "delta": {"type": "arguments_delta", "arguments": f'"k{i}":1,'}})
        for i in range(events // 10)
    ]
    out.append(ev("step.stop", {"index": 2}))
    out.append(
        ev(
            "interaction.completed",
            {"interaction": {"id": "v1_b", "status": "requires_action", "usage": {"total_tokens": 9}}},
        )
    )
    return "".join(out).encode()


# ---------------------------------------------------------------- measurements


def sdk_realtime(chunks: list[bytes]) -> int:
    """(c) openai: each server event through construct_type_unchecked(RealtimeServerEvent)."""
    from openai._models import construct_type_unchecked
    from openai.types.realtime import RealtimeServerEvent

    n = 0
    for line in b"".join(chunks).split(b"\n"):
        if line:
            frame = json.loads(line)
            if frame["dir"] == "server":
                construct_type_unchecked(value=frame["msg"], type_=RealtimeServerEvent)  # type: ignore[arg-type]
            n += 1
    return n


def sdk_live(chunks: list[bytes]) -> int:
    """(c) google-genai: each server message through LiveServerMessage.model_validate."""
    from google.genai import types

    n = 0
    for line in b"".join(chunks).split(b"\n"):
        if line:
            frame = json.loads(line)
            if frame["dir"] == "server":
                types.LiveServerMessage.model_validate(frame["msg"])
            n += 1
    return n


def sdk_interactions(chunks: list[bytes]) -> int:
    """(c) google-genai Interactions: each SSE payload into InteractionSSEStreamEvent (unvalidated)."""
    from google.genai._gaos.types import interactions
    from google.genai._gaos.utils.serializers import construct_unvalidated

    decoder = Decoder()
    n = 0
    for chunk in chunks:
        for e in decoder.feed(chunk):
            construct_unvalidated(json.loads(e.data), interactions.InteractionSSEStreamEvent)
            n += 1
    return n


def against() -> Any:
    """The ``maas_stream`` of the checkout given with ``--against DIR`` (as ``maas_stream_against``), or ``None``."""
    if "--against" not in sys.argv:
        return None
    name = "maas_stream_against"
    if name in sys.modules:
        return sys.modules[name]
    folder = Path(sys.argv[sys.argv.index("--against") + 1]) / "src" / "maas_stream"
    spec = importlib.util.spec_from_file_location(
        name, folder / "__init__.py", submodule_search_locations=[str(folder)]
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # its relative imports resolve inside it, apart from this maas_stream
    spec.loader.exec_module(module)
    return module


def split_jsonl(protocol: str, data: bytes) -> None:
    """Where ``ms.aggregate``'s time goes on a websocket recording (see the module docstring)."""
    module = openai_realtime if protocol == "openai-realtime" else google_live
    frames = module._wire.frame_decoder
    chunks = chunks_of(data)

    def typed(chunks: list[bytes]) -> int:
        pending = b""
        n = 0
        for chunk in chunks:
            lines = (pending + chunk).split(b"\n")
            pending = lines.pop()
            for line in lines:
                if line:
                    try:
                        frames.decode(line)
                    except msgspec.ValidationError:
                        pass  # a client line: the decoder's other path
                    n += 1
        return n

    def decoded() -> list[list[Any]]:
        decoder = module.StreamDecoder()
        return [decoder.feed(chunk) for chunk in chunks] + [decoder.finish()]

    def aggregated(batches: list[list[Any]]) -> object:
        agg = Aggregator(protocol)
        for batch in batches:
            agg.consume(batch)
        return agg.finish()

    messages = [
        (f["dir"], msgspec.json.encode(f["msg"])) for f in map(msgspec.json.decode, data.splitlines())
    ]

    def side_read(_: list[bytes]) -> object:
        # A same-protocol bridge's side read: each websocket message, for the Session's record only.
        agg = ms.StreamAggregator(protocol, keep_passthrough=False)
        feed = agg.feed_message
        for direction, msg in messages:
            feed(msg, direction=direction)
        return agg.finish()

    batches = decoded()
    assert aggregated(batches) == ms.aggregate(chunks, protocol=protocol)
    fns: dict[str, Callable[[list[bytes]], object]] = {
        "bare": bare_jsonl,
        "typed": typed,
        "decoder": lambda _: decoded(),
        "aggregator": lambda _: aggregated(batches),
        "events": lambda _: aggregated(decoded()),
        "direct": lambda c: ms.aggregate(c, protocol=protocol),
        "side": side_read,
    }
    labels = [
        ("bare", "bare split+msgspec.decode"),
        ("typed", "split + typed frame decode"),
        ("decoder", "our decoder alone (events)"),
        ("aggregator", "Aggregator alone"),
        ("events", "decoder + Aggregator (events)"),
        ("direct", "ms.aggregate (direct fold)"),
        ("side", "side read per message (bridge)"),
    ]
    other = against()
    if other is not None:
        fns["against"] = lambda c: other.aggregate(c, protocol=protocol)
        labels.append(("against", "ms.aggregate of --against"))
    lines = bare_jsonl(chunks)
    t = best_of(fns, chunks, 1 if quick() else (5 if lines > 10_000 else 9))
    events = sum(map(len, batches))
    print(f"  split per line ({events:,} events; the event path = decoder + aggregator):")
    for name, label in labels:
        print(f"    {label:32} {t[name] / lines * 1e6:6.2f} us/line   {t['bare'] / t[name]:5.2f}x bare")
    bench = f"{protocol} {lines:,} ev"
    record(bench, "direct fold (ms.aggregate) vs bare", t["bare"] / t["direct"], ">= 0.5")
    if other is not None:
        record(bench, "--against ms.aggregate vs bare", t["bare"] / t["against"])
        record(bench, "speed-up over --against", t["against"] / t["direct"], ">= 1")


CASES: list[
    tuple[str, Callable[[int], bytes], Callable[[list[bytes]], int], Callable[[list[bytes]], int], str]
] = [
    ("openai-realtime", realtime_stream, bare_jsonl, sdk_realtime, "openai construct (parse)"),
    ("google-live", live_stream, bare_jsonl, sdk_live, "genai model_validate"),
    ("google-interactions", interactions_stream, bare_sse, sdk_interactions, "genai construct (parse)"),
]


def main() -> None:
    """Run every case (or those named on the command line) and print events/s and the ratios."""
    print(f"python {sys.version.split()[0]}, msgspec {msgspec.__version__}")
    argv = sys.argv[1:]
    if "--against" in argv:
        at = argv.index("--against")
        del argv[at : at + 2]
    names = [a for a in argv if not a.startswith("-")]
    for name, make, bare, sdk, sdk_label in CASES:
        if names and name not in names:
            continue
        for size in (SMALL, LARGE):
            data = make(size)
            measure(name, data, bare=bare, sdk=sdk, sdk_label=sdk_label)
            if bare is bare_jsonl:
                split_jsonl(name, data)


if __name__ == "__main__":
    main()
