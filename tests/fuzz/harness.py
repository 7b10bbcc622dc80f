"""The fuzz contract, written once for the CI tests (``tests/fuzz``) and the long run
(``scripts/fuzz.py``): every input ends in a result or in a ``MaasStreamError`` of the kind the
input deserves, never in anything else.

* Provider bytes (streams): ``ms.aggregate`` whole and fed one byte at a time (h11's discipline)
  give the same result or the same exception type; ``ms.StreamConverter(to=q,
  fail_closed=False)`` for every target ``q`` ends well or raises what the aggregator raised.
  Allowed: ``RemoteProtocolError`` (``ProtocolDetectionError`` when no protocol is given).
* Provider bodies: ``ms.decode_response`` on mutated ``ms.encode_response`` bodies. Allowed:
  ``RemoteProtocolError``.
* Request bodies: ``ms.to_canonical``, ``ms.validate`` and ``ms.convert_history`` to every
  target. Allowed: ``ValidationError``, ``RemoteProtocolError``.

Inputs are made by :class:`Mutator` from real streams and bodies, driven by one
``random.Random`` so a seed replays a run exactly. A broken contract raises :class:`Broken`
with the site (the innermost frame of the library) and the input.
"""

from __future__ import annotations

import json
import reprlib
import traceback
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import msgspec

import maas_stream as ms
from maas_stream import sse
from tests.conftest import corpus, recordings

if TYPE_CHECKING:
    import random
    from collections.abc import Callable

PROTOCOLS: tuple[str, ...] = tuple(ms.protocol_names())
BODY_PROTOCOLS: tuple[str, ...] = tuple(
    p for p in PROTOCOLS if ms.get_protocol(p).encode_response is not None
)


class Broken(Exception):
    """An input ended in an exception the contract does not allow, or in two different ends."""

    def __init__(
        self, check: str, protocol: str, data: Any, exc: BaseException | None, detail: str = ""
    ) -> None:
        self.check = check
        self.protocol = protocol
        self.data = data
        self.exc = exc
        self.site = site(exc) if exc is not None else detail
        kind = type(exc).__name__ if exc is not None else "mismatch"
        super().__init__(
            f"{check} [{protocol}] {kind} at {self.site}: {exc!r:.300} {detail}\ninput: {show(data)}"
        )


_REPR = reprlib.Repr()
_REPR.maxlevel, _REPR.maxstring, _REPR.maxother, _REPR.maxlist, _REPR.maxdict = 12, 2000, 200, 30, 30


def show(data: Any) -> str:
    """A bounded repr of an input (bytes up to 2000 characters; nested values to 12 levels)."""
    return repr(data)[:2000] if isinstance(data, bytes) else _REPR.repr(data)


def site(exc: BaseException) -> str:
    """The innermost frame of the traceback that lies inside maas_stream (else the innermost)."""
    frames = traceback.extract_tb(exc.__traceback__)
    ours = [f for f in frames if "maas_stream" in f.filename]
    f = (ours or frames)[-1] if (ours or frames) else None
    if f is None:
        return "?"
    path = f.filename.split("src/")[-1]
    return f"{path}:{f.lineno} ({f.name})"


# ------------------------------------------------------------------------------------- seeds


def is_jsonl(protocol: str) -> bool:
    return ms.get_protocol(protocol).framing == "jsonl"


def frames_of(protocol: str, data: bytes) -> list[tuple[str, Any]]:
    """A stream's frames as (SSE event name or JSON-lines direction, parsed JSON or raw text)."""
    out: list[tuple[str, Any]] = []
    if is_jsonl(protocol):
        for line in data.splitlines():
            if line.strip():
                try:
                    msg = json.loads(line)
                    out.append((str(msg.get("dir", "server")), msg.get("msg")))
                except (ValueError, AttributeError):
                    continue
        return out
    decoder = sse.Decoder()
    for e in decoder.feed(data) + decoder.finish():
        try:
            out.append((e.event, json.loads(e.data)))
        except ValueError:
            out.append((e.event, e.data))  # [DONE] and the like stay text
    return out


def stream_of(protocol: str, frames: list[tuple[str, Any]]) -> bytes:
    """Frames (as :func:`frames_of` gives them) back to this protocol's bytes."""

    def text(v: Any) -> str:
        return v if isinstance(v, str) and not is_jsonl(protocol) else dumps(v)

    if is_jsonl(protocol):
        return b"".join(f'{{"dir":{json.dumps(d)},"msg":{text(v)}}}\n'.encode() for d, v in frames)
    return b"".join(
        (b"" if e == "message" else f"event: {e}\n".encode())
        + f"data: {text(v)}\n\n".encode("utf-8", "surrogatepass")
        for e, v in frames
    )


@dataclass
class Seeds:
    """The real inputs mutations start from, per protocol."""

    streams: dict[str, list[bytes]] = field(default_factory=dict)
    frames: dict[str, list[list[tuple[str, Any]]]] = field(default_factory=dict)
    bodies: dict[str, list[Any]] = field(default_factory=dict)
    responses: dict[str, list[Any]] = field(default_factory=dict)


def load_seeds(*, with_corpus: bool = True, max_bytes: int = 60_000) -> Seeds:
    """Recordings (and the corpus when present) as streams, request bodies from the history
    tests converted to every protocol, and response bodies encoded from the aggregated streams."""
    from tests.convert.test_history_matrix import BODIES

    seeds = Seeds()
    for p in PROTOCOLS:
        paths = recordings(p) + (corpus(p) if with_corpus else [])
        datas = [d for d in (path.read_bytes() for path in paths) if len(d) <= max_bytes]
        seeds.streams[p] = datas
        seeds.frames[p] = [f for f in (frames_of(p, d) for d in datas) if f]
        bodies: list[Any] = [BODIES[p]] if p in BODIES else []
        for source, body in BODIES.items():
            try:
                bodies.append(ms.convert_history(body, to=p, protocol=source))
            except ms.MaasStreamError:
                pass
        seeds.bodies[p] = bodies
        if p in BODY_PROTOCOLS:
            out = []
            for source in PROTOCOLS:
                for d in (recordings(source) or [])[:6]:
                    try:
                        out.append(ms.encode_response(ms.aggregate(d.read_bytes(), protocol=source), p))
                    except ms.MaasStreamError:
                        pass
            seeds.responses[p] = out
    return seeds


# ----------------------------------------------------------------------------------- mutation

DEEP = 1000
HUGE = 10**30


@dataclass(frozen=True)
class Deep:
    """A value nested ``depth`` deep, kept as a leaf until written out (``json`` would recurse)."""

    depth: int
    obj: bool

    def text(self) -> str:
        return (
            ('{"a":' * self.depth + "1" + "}" * self.depth)
            if self.obj
            else "[" * self.depth + "1" + "]" * self.depth
        )

    def value(self) -> Any:
        value: Any = 1
        for _ in range(self.depth):
            value = {"a": value} if self.obj else [value]
        return value


def _nested(r: random.Random) -> Any:
    return Deep(r.choice([3, 50, DEEP, DEEP]), r.random() < 0.5)


def copy(value: Any) -> Any:
    """A deep copy of a JSON value (``Deep`` leaves shared)."""
    if isinstance(value, dict):
        return {k: copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [copy(v) for v in value]
    return value


def dumps(value: Any) -> str:
    """JSON text of a value that may hold ``Deep`` leaves."""
    deep: list[Deep] = []

    def swap(v: Any) -> Any:
        if isinstance(v, Deep):
            deep.append(v)
            return f"\x00DEEP{len(deep) - 1}\x00"
        raise TypeError(type(v))

    text = json.dumps(value, default=swap)
    for i, d in enumerate(deep):
        text = text.replace(json.dumps(f"\x00DEEP{i}\x00"), d.text())
    return text


def materialize(value: Any) -> Any:
    """The value with every ``Deep`` leaf built out (as a caller would pass it)."""
    if isinstance(value, Deep):
        return value.value()
    if isinstance(value, dict):
        return {k: materialize(v) for k, v in value.items()}
    if isinstance(value, list):
        return [materialize(v) for v in value]
    return value


SCALARS: tuple[Callable[[random.Random], Any], ...] = (
    lambda r: None,
    lambda r: r.choice([True, False]),
    lambda r: r.choice([0, -1, 1, 2**31, 2**63, HUGE, -HUGE, 100_000_000]),
    lambda r: r.choice([0.5, -0.0, 1e308, 1e-300]),
    lambda r: r.choice(["", "x", "null", "{", "é" * 3, "\ud800", "a" * 1000]),
    lambda r: [],
    lambda r: {},
    lambda r: [r.choice([None, 1, "x", {}])],
    lambda r: {"x": 1},
    _nested,
)


def _paths(value: Any, at: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [at]
    if isinstance(value, dict):
        for key, inner in value.items():
            out += _paths(inner, (*at, key))
    elif isinstance(value, list):
        for i, inner in enumerate(value):
            out += _paths(inner, (*at, i))
    return out


def _get(value: Any, path: tuple[Any, ...]) -> Any:
    for step in path:
        value = value[step]
    return value


def mutate_value(value: Any, r: random.Random, times: int = 1) -> Any:
    """A deep copy of a JSON value with ``times`` random changes: a value replaced by another
    JSON type, a key deleted or added, a list item duplicated or deleted, a string spliced."""
    value = copy(value)
    for _ in range(times):
        paths = _paths(value)
        path = r.choice(paths)
        if not path:
            if r.random() < 0.3:
                value = r.choice(SCALARS)(r)
            continue
        parent, key = _get(value, path[:-1]), path[-1]
        op = r.random()
        if op < 0.55:
            parent[key] = r.choice(SCALARS)(r)
        elif op < 0.7:
            del parent[key]
        elif op < 0.8 and isinstance(parent, list):
            parent.insert(key, copy(parent[key]))
        elif op < 0.9 and isinstance(parent[key], str) and parent[key]:
            s = parent[key]
            i = r.randrange(len(s))
            parent[key] = s[:i] + r.choice(["", "\x00", '"', "\\", "😀", s[i:]]) + s[i:]
        elif isinstance(parent, dict):
            parent[r.choice(["type", "index", "id", "role", "x", "output_index", "content_index"])] = (
                r.choice(SCALARS)(r)
            )
        else:
            parent[key] = r.choice(SCALARS)(r)
    return value


def mutate_frames(frames: list[tuple[str, Any]], r: random.Random) -> list[tuple[str, Any]]:
    """Frame-level changes: JSON mutation of some frames, frames duplicated, dropped, swapped."""
    frames = list(frames)
    for _ in range(r.choice([1, 1, 2, 3])):
        if not frames:
            break
        i = r.randrange(len(frames))
        op = r.random()
        if op < 0.6:
            head, v = frames[i]
            frames[i] = (head, mutate_value(v, r, r.choice([1, 1, 2])))
        elif op < 0.75:
            frames.insert(i, frames[i])
        elif op < 0.85:
            del frames[i]
        elif op < 0.95:
            j = r.randrange(len(frames))
            frames[i], frames[j] = frames[j], frames[i]
        else:
            frames = frames[:i]
    return frames


def mutate_bytes(data: bytes, r: random.Random) -> bytes:
    """Byte-level changes: truncation, spliced or deleted bytes, invalid UTF-8, CR/LF noise."""
    if not data:
        return r.choice([b"", b"\n", b"data: {}\n\n", b"\xff\xfe"])
    i = r.randrange(len(data) + 1)
    op = r.random()
    if op < 0.25:
        return data[:i]
    if op < 0.45:
        return (
            data[:i]
            + r.choice([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\x80\x80", b"\xf4\x90\x80\x80"])
            + data[i:]
        )
    if op < 0.6:
        j = min(len(data), i + r.randrange(1, 40))
        return data[:i] + data[j:]
    if op < 0.75:
        return (
            data[:i]
            + r.choice([b"\n", b"\r", b"\r\n", b"\n\n", b":", b"data: ", b"event: x\n", b"{", b"}", b"\x00"])
            + data[i:]
        )
    if op < 0.9:
        j = r.randrange(len(data) + 1)
        return data[:i] + data[j : j + r.randrange(1, 200)] + data[i:]
    return data[:i] + bytes(r.randrange(256) for _ in range(r.randrange(1, 8))) + data[i:]


def stream_input(seeds: Seeds, protocol: str, r: random.Random) -> bytes:
    """One mutated stream of ``protocol``: frame mutation, byte mutation, or both."""
    choices = seeds.frames[protocol]
    if not choices:
        return mutate_bytes(r.choice(seeds.streams[protocol]), r)
    frames = r.choice(choices)
    op = r.random()
    if op < 0.65:
        data = stream_of(protocol, mutate_frames(frames, r))
        return mutate_bytes(data, r) if r.random() < 0.15 else data
    if op < 0.8:
        return mutate_bytes(stream_of(protocol, frames), r)
    # generated: frames of other streams of the protocol, mixed
    mixed = [r.choice(r.choice(choices)) for _ in range(r.randrange(1, 12))]
    return stream_of(protocol, mixed if r.random() < 0.5 else mutate_frames(mixed, r))


# ------------------------------------------------------------------------------------ checks

STREAM_OK: tuple[type[BaseException], ...] = (ms.RemoteProtocolError,)
DETECT_OK: tuple[type[BaseException], ...] = (ms.RemoteProtocolError, ms.ProtocolDetectionError)
BODY_OK: tuple[type[BaseException], ...] = (ms.RemoteProtocolError,)
HISTORY_OK: tuple[type[BaseException], ...] = (ms.ValidationError, ms.RemoteProtocolError)


@dataclass
class Tally:
    """Counts of a run: inputs, results, allowed errors by type, broken contracts by site."""

    inputs: int = 0
    results: int = 0
    errors: dict[str, int] = field(default_factory=dict)
    broken: dict[str, list[Any]] = field(default_factory=dict)  # site -> [count, first Broken]

    def ok(self) -> None:
        self.results += 1

    def error(self, exc: BaseException) -> None:
        name = type(exc).__name__
        self.errors[name] = self.errors.get(name, 0) + 1

    def fail(self, b: Broken) -> None:
        key = f"{b.check.split('->')[0]} {type(b.exc).__name__ if b.exc else 'mismatch'} at {b.site}"
        entry = self.broken.setdefault(key, [0, b])
        entry[0] += 1


def _end(fn: Callable[[], Any]) -> tuple[str, Any]:
    """Run ``fn``: ("ok", result) or ("err", exception)."""
    try:
        return "ok", fn()
    except RecursionError as exc:  # not a MaasStreamError: reported by the caller
        return "err", exc
    except Exception as exc:
        return "err", exc


def _one_byte(data: bytes, protocol: str | None) -> ms.Response:
    agg = ms.StreamAggregator(protocol)
    for i in range(len(data)):
        agg.feed(data[i : i + 1])
    return agg.finish()


def check_stream(
    data: bytes,
    protocol: str,
    tally: Tally,
    *,
    byte_by_byte: bool = True,
    targets: tuple[str, ...] = PROTOCOLS,
) -> None:
    """The stream contract for one input (see the module docstring); counts into ``tally``."""
    tally.inputs += 1
    kind, whole = _end(lambda: msgspec.to_builtins(ms.aggregate(data, protocol=protocol)))
    if kind == "err" and not isinstance(whole, STREAM_OK):
        tally.fail(Broken("aggregate", protocol, data, whole))
        return
    if kind == "ok":
        tally.ok()
    else:
        tally.error(whole)
    if byte_by_byte:
        kind2, single = _end(lambda: msgspec.to_builtins(_one_byte(data, protocol)))
        if kind2 == "err" and not isinstance(single, STREAM_OK):
            tally.fail(Broken("one-byte", protocol, data, single))
        elif (
            kind2 != kind
            or (kind == "ok" and single != whole)
            or (kind == "err" and type(single) is not type(whole))
        ):
            tally.fail(
                Broken(
                    "one-byte",
                    protocol,
                    data,
                    None,
                    f"whole: {type(whole).__name__ if kind == 'err' else 'result'}; one byte: "
                    f"{type(single).__name__ if kind2 == 'err' else 'result'}",
                )
            )
    for target in targets:

        def run(target: str = target) -> bytes:
            conv = ms.StreamConverter(to=target, protocol=protocol, fail_closed=False)
            return conv.feed(data) + conv.finish()

        kind3, out = _end(run)
        if kind3 == "err" and not (isinstance(out, STREAM_OK) and kind == "err"):
            tally.fail(Broken(f"convert->{target}", protocol, data, out))


def check_detected(data: bytes, tally: Tally) -> None:
    """No protocol given: whole and one byte at a time end alike, in a result,
    ``RemoteProtocolError`` or ``ProtocolDetectionError``."""
    tally.inputs += 1
    kind, whole = _end(lambda: msgspec.to_builtins(ms.aggregate(data)))
    kind2, single = _end(lambda: msgspec.to_builtins(_one_byte(data, None)))
    for check, k, out in (("detect", kind, whole), ("detect-one-byte", kind2, single)):
        if k == "err" and not isinstance(out, DETECT_OK):
            tally.fail(Broken(check, "?", data, out))
            return
    if (
        kind != kind2
        or (kind == "ok" and single != whole)
        or (kind == "err" and type(single) is not type(whole))
    ):
        tally.fail(
            Broken("detect-one-byte", "?", data, None, f"whole: {whole!r:.200}; one byte: {single!r:.200}")
        )
    elif kind == "ok":
        tally.ok()
    else:
        tally.error(whole)


def check_response_body(body: Any, protocol: str, tally: Tally) -> None:
    """``decode_response`` of a (mutated) body ends in a response or ``RemoteProtocolError``."""
    tally.inputs += 1
    kind, out = _end(lambda: ms.decode_response(body, protocol))
    if kind == "ok":
        tally.ok()
    elif isinstance(out, BODY_OK):
        tally.error(out)
    else:
        tally.fail(Broken("decode_response", protocol, body, out))


def check_history(body: Any, protocol: str, tally: Tally, *, targets: tuple[str, ...] = PROTOCOLS) -> None:
    """``to_canonical`` / ``validate`` / ``convert_history`` of a (mutated) request body."""
    tally.inputs += 1
    for name, fn in (
        ("to_canonical", lambda: ms.to_canonical(body, protocol)),
        ("validate", lambda: ms.validate(body, protocol)),
    ):
        kind, out = _end(fn)
        if kind == "ok":
            tally.ok()
        elif isinstance(out, HISTORY_OK):
            tally.error(out)
        else:
            tally.fail(Broken(name, protocol, body, out))
    for target in targets:

        def run(target: str = target) -> dict[str, Any]:
            return ms.convert_history(body, to=target, protocol=protocol)

        kind, out = _end(run)
        if kind == "err" and not isinstance(out, HISTORY_OK):
            tally.fail(Broken(f"convert_history->{target}", protocol, body, out))


def run_one(seeds: Seeds, r: random.Random, tally: Tally, *, byte_by_byte: bool = True) -> None:
    """One random input of a random kind and protocol."""
    protocol = r.choice(PROTOCOLS)
    what = r.random()
    if what < 0.05:
        data = stream_input(seeds, protocol, r)
        check_detected(data, tally)
    elif what < 0.6:
        data = stream_input(seeds, protocol, r)
        check_stream(data, protocol, tally, byte_by_byte=byte_by_byte and len(data) < 20_000)
    elif what < 0.8 and protocol in BODY_PROTOCOLS and seeds.responses.get(protocol):
        body = materialize(mutate_value(r.choice(seeds.responses[protocol]), r, r.choice([1, 1, 2, 3])))
        check_response_body(body, protocol, tally)
    elif seeds.bodies.get(protocol):
        body = materialize(mutate_value(r.choice(seeds.bodies[protocol]), r, r.choice([1, 1, 2, 3])))
        check_history(body, protocol, tally)
