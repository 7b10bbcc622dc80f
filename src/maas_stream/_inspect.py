"""``maas-stream inspect``: a recording as a person would rather look at it than read its JSON.

It replays a recording chunk by chunk through the aggregator (with canonical events) and notes,
per part, when it started and ended (the recording's own chunk times, from its meta file, and
the event order), how many delta events and characters it got; then the time to first token,
tokens per second, which tool calls streamed side by side (interleaved), and the response's
warnings, unknown types and error. :func:`inspect_recording` gives that as data (``--json``);
:func:`render` draws it with ``rich`` (the ``inspect`` extra), or as plain text without it.

It holds no protocol logic: everything comes from the canonical events.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TextIO

import msgspec

from ._stream_aggregator import StreamAggregator
from .events import (
    ArgumentsDelta,
    AudioDelta,
    Key,
    PartDone,
    PartStart,
    ReasoningDelta,
    RefusalDelta,
    SummaryDelta,
    TextDelta,
)
from .io._record import Recording

if TYPE_CHECKING:
    from pathlib import Path

    from .events import Event

__all__ = ["Inspection", "PartTimeline", "inspect_recording", "render"]

_CONTENT = (TextDelta, RefusalDelta, ReasoningDelta, SummaryDelta, ArgumentsDelta, AudioDelta)


class PartTimeline(msgspec.Struct, kw_only=True, omit_defaults=True):
    """One part of one message, over the stream."""

    message: Key
    """The canonical message key."""
    part: Key
    """The canonical part key."""
    kind: str
    """The part type (``text``, ``reasoning``, ``tool_call``...)."""
    name: str | None = None
    """The tool's name, for a call."""
    id: str | None = None
    """The call id, for a call."""
    start: float | None = None
    """Seconds after the response headers when the part started (``None`` without timing)."""
    end: float | None = None
    """Seconds after the response headers when its last content delta arrived."""
    first_event: int = 0
    """The ordinal of its first event in the stream (a clock that needs no timing)."""
    last_event: int = 0
    """The ordinal of its last content delta (its start when it got none)."""
    deltas: int = 0
    """How many content delta events it got."""
    chars: int = 0
    """How many characters of content (text, reasoning, arguments, transcript) it got."""
    status: str | None = None
    """The part's final status, when it has one (a call's ``completed`` / ``incomplete``)."""


class Inspection(msgspec.Struct, kw_only=True, omit_defaults=True):
    """What ``maas-stream inspect`` shows (and prints as JSON with ``--json``)."""

    file: str
    protocol: str | None
    status: str
    finish_reason: str | None = None
    model: str | None = None
    chunks: int
    bytes: int
    events: int
    timed: bool
    """True when the recording has per-chunk times (a meta file written by ``record``)."""
    duration: float | None = None
    """Seconds from the response headers to the last chunk."""
    time_to_first_token: float | None = None
    """Seconds from the response headers to the first content delta."""
    output_tokens: int | None = None
    tokens_per_second: float | None = None
    """Output tokens over the time from the first content delta to the last chunk."""
    parts: list[PartTimeline] = msgspec.field(default_factory=list)
    parallel_calls: list[list[str]] = msgspec.field(default_factory=list)
    """Groups of tool call ids whose events interleaved (streamed side by side)."""
    warnings: list[str] = msgspec.field(default_factory=list)
    unknown: dict[str, int] = msgspec.field(default_factory=dict)
    error: str | None = None


def _chars(event: Event) -> int:
    if isinstance(event, TextDelta | RefusalDelta | ReasoningDelta | SummaryDelta):
        return len(event.text)
    if isinstance(event, ArgumentsDelta):
        return len(event.delta)
    if isinstance(event, AudioDelta):
        return len(event.transcript or "")
    return 0


def _tag(value: Any) -> str:
    return str(type(value).__struct_config__.tag)


class _Timeline:
    def __init__(self) -> None:
        self.parts: dict[tuple[Any, Any], PartTimeline] = {}
        self.count = 0
        self.first_token: float | None = None

    def add(self, event: Event, at: float | None) -> None:
        self.count += 1
        n = self.count
        if isinstance(event, PartStart):
            value = event.value
            self.parts[(event.message, event.part)] = PartTimeline(
                message=event.message,
                part=event.part,
                kind=_tag(value),
                name=getattr(value, "name", None) if _tag(value) == "tool_call" else None,
                id=getattr(value, "id", None) if _tag(value) == "tool_call" else None,
                start=at,
                end=at,
                first_event=n,
                last_event=n,
            )
            return
        key = (getattr(event, "message", None), getattr(event, "part", None))
        part = self.parts.get(key)
        if part is None:
            return
        if isinstance(event, _CONTENT):
            part.end, part.last_event = at, n
            part.deltas += 1
            part.chars += _chars(event)
            if self.first_token is None:
                self.first_token = at
        elif isinstance(event, PartDone) and event.value is not None:
            part.status = getattr(event.value, "status", None)


def _parallel(parts: list[PartTimeline]) -> list[list[str]]:
    calls = sorted((p for p in parts if p.kind == "tool_call"), key=lambda p: p.first_event)
    groups: list[list[PartTimeline]] = []
    for call in calls:
        if groups and call.first_event <= max(p.last_event for p in groups[-1]):
            groups[-1].append(call)
        else:
            groups.append([call])
    return [[p.id or f"{p.message}/{p.part}" for p in g] for g in groups if len(g) > 1]


def inspect_recording(path: str | Path, *, protocol: str | None = None) -> Inspection:
    """Replay a recording through the aggregator and describe it.

    Args:
        path: A recording (``.sse`` / ``.jsonl``; its ``.meta.json`` gives the timing).
        protocol: The source protocol; detected when ``None``.

    Raises:
        OSError: The file cannot be read.
        RemoteProtocolError: The recording breaks its protocol.
        ProtocolDetectionError: No protocol given and none detected.
    """
    rec = Recording.load(path)
    chunks = rec.chunks()
    times = rec.meta.times if rec.meta is not None and len(rec.meta.times) == len(chunks) else []
    agg = StreamAggregator(protocol, emit=True)
    timeline = _Timeline()
    for i, chunk in enumerate(chunks):
        at = times[i] if times else None
        for event in agg.feed(chunk):
            timeline.add(event, at)
    end = times[-1] if times else None
    for event in agg.finish_events():
        timeline.add(event, end)
    response = agg.finish()
    output = response.usage.output_tokens if response.usage is not None else None
    ttft = timeline.first_token
    rate = None
    if output and ttft is not None and end is not None and end > ttft:
        rate = round(output / (end - ttft), 1)
    parts = list(timeline.parts.values())
    return Inspection(
        file=str(path),
        protocol=response.protocol,
        status=response.status,
        finish_reason=response.finish_reason,
        model=response.model,
        chunks=len(chunks),
        bytes=len(rec.data),
        events=timeline.count,
        timed=bool(times),
        duration=end,
        time_to_first_token=ttft,
        output_tokens=output,
        tokens_per_second=rate,
        parts=parts,
        parallel_calls=_parallel(parts),
        warnings=list(response.warnings or []),
        unknown=dict(response.unknown),
        error=(response.error.message or response.error.type) if response.error is not None else None,
    )


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}s"


def _bar(part: PartTimeline, total: int, width: int = 30) -> str:
    lo = (part.first_event - 1) * width // max(total, 1)
    hi = max(lo + 1, part.last_event * width // max(total, 1))
    return " " * lo + "█" * (hi - lo) + " " * (width - hi)


def _summary(ins: Inspection) -> list[str]:
    lines = [
        f"{ins.file}: {ins.protocol} {ins.model or ''}".rstrip(),
        f"status {ins.status}, finish {ins.finish_reason or '-'}; {ins.chunks} chunks, {ins.bytes} bytes,"
        f" {ins.events} events",
    ]
    if ins.timed:
        rate = f", {ins.tokens_per_second} tokens/s" if ins.tokens_per_second is not None else ""
        lines.append(
            f"time to first token {_seconds(ins.time_to_first_token)}, stream {_seconds(ins.duration)}{rate}"
        )
    else:
        lines.append("no timing (no meta file with chunk times): the timeline is in event order")
    lines += [f"parallel calls: {', '.join(group)}" for group in ins.parallel_calls]
    if ins.error:
        lines.append(f"error: {ins.error}")
    lines += [f"warning: {w}" for w in ins.warnings]
    lines += [f"unknown: {kind} x{count}" for kind, count in ins.unknown.items()]
    return lines


def _row(p: PartTimeline, timed: bool) -> list[str]:
    what = " ".join(x for x in (p.name, p.id) if x)
    when = [_seconds(p.start), _seconds(p.end)] if timed else []
    return [f"{p.message}.{p.part}", p.kind, what, *when, str(p.deltas), str(p.chars)]


def _head(timed: bool) -> list[str]:
    when = ["start", "end"] if timed else []
    return ["part", "kind", "call", *when, "deltas", "chars", "timeline (event order)"]


def render(ins: Inspection, out: TextIO) -> None:
    """Draw an inspection: with ``rich`` when it is installed, else as plain text."""
    try:
        from rich.console import Console
        from rich.table import Table
    except ImportError:
        for line in _summary(ins):
            print(line, file=out)
        print("\t".join(_head(ins.timed)), file=out)
        for p in ins.parts:
            print("\t".join([*_row(p, ins.timed), _bar(p, ins.events)]), file=out)
        return
    console = Console(file=out, highlight=False, width=None if out.isatty() else 140)
    for line in _summary(ins):
        console.print(line, markup=False)
    table = Table(*_head(ins.timed))
    table.columns[-1].no_wrap = True
    for p in ins.parts:
        table.add_row(*_row(p, ins.timed), _bar(p, ins.events))
    console.print(table)
