"""The ``maas-stream`` command line (DESIGN.md "Command line").

::

    maas-stream aggregate [--from P] FILE|-         print the final Response as JSON
    maas-stream convert --to Q [--from P] FILE|-    print the stream re-encoded as protocol Q
    maas-stream history --to Q [--from P] [--model M] [--drop-params] FILE|-
                                                    convert a whole request body (or a history);
                                                    every drop on stderr ("dropped: ...")
    maas-stream validate --protocol P FILE|-        check a request body; exit 1 naming each fault
    maas-stream protocols                           list the protocols this build knows
    maas-stream schema [TYPE ...]                   the JSON Schema of the JSON contract (Response, Event)
    maas-stream inspect [--from P] [--json] FILE    a recording's timeline (rich when installed)
    maas-stream --version                           the installed version
    maas-stream replay [--speed X] FILE             write a recording to stdout with its chunks and timing
    maas-stream record --protocol P --url URL --body FILE --out FILE [--header K:V ...] [--force] [--quiet]
                                                    call a provider and save the stream (+ .meta.json);
                                                    websocket protocols: --body holds the client
                                                    messages, one JSON per line; one response is recorded;
                                                    a live progress line on a terminal, a summary at the end
    maas-stream serve [--host H] [--port N] [--workers N] (--config ROUTES.toml
                      | --recording FILE [--speed X]
                      | --upstream-protocol P [--upstream-url URL] [--upstream-model M])
                      [--connect-timeout S] [--first-byte-timeout S] [--idle-timeout S]
                      [--total-timeout S] [--max-connections N] [--max-streams N] [--max-body B]
                      [--body-timeout S] [uvicorn limits: --limit-concurrency N ...]
                      [--config ROUTES.toml] [--drop-params] [--workers N]
                      [--bridge-key K | --bridge-keys-file F | --no-auth]
                      [--allowed-host H] [--cors-origin O]
                                                    the bridge: provider endpoints from any upstream

Bad input gives one clear line on stderr (the file, the frame number and what is wrong) and a
non-zero exit; nothing is printed as if it had worked. It holds no protocol logic.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import sys
from typing import IO, TYPE_CHECKING, Any, Literal, NoReturn

import msgspec

from ._bodies import convert_history, validate
from ._cli_serve import add_serve_parser
from ._cli_serve import serve_options as serve_options
from ._convert import StreamConverter
from ._exceptions import MaasStreamError, ProtocolError, ValidationError
from ._registry import detect_body_protocol, get_protocol, protocol_names
from ._stream_aggregator import StreamAggregator

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Iterator, Sequence

    from ._drops import Dropped
    from .io._progress import RecordProgress

__all__ = ["main"]

_CHUNK = 64 * 1024

EXIT_FAULT = 1
"""Bad input: a protocol error, an invalid request body, an undetectable stream."""
EXIT_USAGE = 2
"""Bad command line (argparse's own code)."""


def _read_chunks(path: str) -> Iterator[bytes]:
    if path == "-":
        stream: IO[bytes] = sys.stdin.buffer
        while chunk := stream.read1(_CHUNK) if hasattr(stream, "read1") else stream.read(_CHUNK):
            yield chunk
        return
    with open(path, "rb") as f:
        while chunk := f.read(_CHUNK):
            yield chunk


def _fail(path: str, exc: BaseException) -> NoReturn:
    name = "<stdin>" if path == "-" else path
    if isinstance(exc, ProtocolError):
        where = f"frame {exc.frame}: " if exc.frame is not None else ""
        what = exc.message
        if exc.event_type:
            what = f"event {exc.event_type!r}: {what}"
        proto = f"{exc.protocol}: " if exc.protocol else ""
        line = f"maas-stream: {name}: {where}{proto}{what}"
    elif isinstance(exc, OSError):
        line = f"maas-stream: {name}: {exc.strerror or exc}"
    else:
        line = f"maas-stream: {name}: {exc}"
    print(line.replace("\n", " "), file=sys.stderr)
    raise SystemExit(EXIT_FAULT)


def _json_out(obj: Any, compact: bool) -> None:
    data = msgspec.json.encode(obj)
    if not compact:
        data = msgspec.json.format(data, indent=2)
    sys.stdout.buffer.write(data + b"\n")
    sys.stdout.buffer.flush()


def _cmd_aggregate(args: argparse.Namespace) -> int:
    agg = StreamAggregator(args.source)
    try:
        for chunk in _read_chunks(args.file):
            agg.feed(chunk)
        response = agg.finish()
    except (MaasStreamError, OSError) as exc:
        _fail(args.file, exc)
    _check_recognised(args, agg.recognised, agg.frames)
    _json_out(response, args.compact)
    return 0


def _cmd_convert(args: argparse.Namespace) -> int:
    conv = StreamConverter(args.to, protocol=args.source)
    out = sys.stdout.buffer
    try:
        for chunk in _read_chunks(args.file):
            data = conv.feed(chunk)
            if data:
                out.write(data)
                out.flush()
        out.write(conv.finish())
        out.flush()
    except (MaasStreamError, OSError) as exc:
        _fail(args.file, exc)
    _check_recognised(args, conv.recognised, conv.frames)
    return 0


def _check_recognised(args: argparse.Namespace, recognised: bool, frames: int) -> None:
    """With ``--from``, input holding nothing of that protocol is an error, not an empty result."""
    if args.source and not recognised:
        what = "no frame" if frames == 0 else f"{frames} frame{'s' if frames != 1 else ''}, none of them"
        _fail(args.file, ValueError(f"no {args.source} stream in it: {what} recognised as {args.source}"))


def _load_json(path: str) -> Any:
    try:
        return msgspec.json.decode(b"".join(_read_chunks(path)))
    except msgspec.DecodeError as exc:
        _fail(path, ValueError(f"not valid JSON: {exc}"))
    except OSError as exc:
        _fail(path, exc)


def _cmd_history(args: argparse.Namespace) -> int:
    from ._request import UnsupportedParamsError, convert_request

    body = _load_json(args.file)
    name = "<stdin>" if args.file == "-" else args.file
    dropped: list[Dropped] = []
    try:
        source = args.source or detect_body_protocol(body)
        faults = validate(body, source)
        whole = get_protocol(source).envelope is not None and get_protocol(args.to).envelope is not None
        if whole:  # the whole request: conversation and envelope
            converted = convert_request(
                body, protocol=source, to=args.to, model=args.model, drop_params=args.drop_params
            )
            out, dropped = converted.body, converted.dropped
        else:  # a websocket protocol's history: the conversation only
            out = convert_history(body, to=args.to, protocol=source, lossy=dropped)
    except UnsupportedParamsError as exc:
        for fault in exc.faults:
            print(f"maas-stream: {name}: {fault}", file=sys.stderr)
        return EXIT_FAULT
    except MaasStreamError as exc:
        _fail(args.file, exc)
    for fault in faults:
        # Said, never silent: what the source's own rules reject may not convert as meant
        # (content of the wrong type has no canonical form). A pending turn (a call not yet
        # answered) is common in stored histories, so this warns rather than refuses.
        print(f"maas-stream: {name}: warning: {source}: {fault}", file=sys.stderr)
    # Each drop was logged once by the library (the CLI's log handler prints it).
    _json_out(out, args.compact)
    return 0


def _cmd_validate(args: argparse.Namespace) -> int:
    body = _load_json(args.file)
    try:
        faults = validate(body, args.protocol)
    except ValidationError as exc:
        faults = exc.faults
    except MaasStreamError as exc:
        _fail(args.file, exc)
    name = "<stdin>" if args.file == "-" else args.file
    if faults:
        for fault in faults:
            print(f"maas-stream: {name}: {fault}", file=sys.stderr)
        return EXIT_FAULT
    print(f"{name}: valid {args.protocol} request")
    return 0


def _cmd_protocols(args: argparse.Namespace) -> int:
    for name in protocol_names():
        spec = get_protocol(name)
        print(f"{name}\t{spec.framing}")
    return 0


def _cmd_replay(args: argparse.Namespace) -> int:
    from .io import replay

    out = sys.stdout.buffer
    try:
        for chunk in replay(args.file, speed=args.speed or None):
            out.write(chunk)
            out.flush()
    except (MaasStreamError, OSError) as exc:
        _fail(args.file, exc)
    return 0


def _record_headers(args: argparse.Namespace, *, websocket: bool = False) -> dict[str, str]:
    # The protocol's spec says how its provider is authenticated (key header, fixed headers);
    # a --header of the same name wins.
    spec = get_protocol(args.protocol)
    headers = {} if websocket else {"content-type": "application/json", "accept": spec.media_type}
    for item in args.header:
        name, sep, value = item.partition(":")
        if not sep or not name.strip():
            raise SystemExit(f"maas-stream: --header {item!r}: expected NAME:VALUE")
        headers[name.strip().lower()] = value.strip()
    auth = spec.auth
    if auth is None:
        return headers
    key = None if auth.header in headers else os.environ.get(auth.env)
    if key is None and auth.header not in headers:
        print(f"maas-stream: ${auth.env} is not set; sending the request without an API key", file=sys.stderr)
    for name, value in auth.headers(key).items():
        headers.setdefault(name, value)
    return headers


def _client_messages(path: str | None) -> list[bytes]:
    if not path:
        return []
    lines = [line.strip() for line in b"".join(_read_chunks(path)).splitlines()]
    out = []
    for n, line in enumerate(lines, 1):
        if not line:
            continue
        try:
            msgspec.json.decode(line)
        except msgspec.DecodeError as exc:
            raise SystemExit(f"maas-stream: {path}: line {n} is not JSON: {exc}") from None
        out.append(line)
    return out


def _record_websocket(args: argparse.Namespace) -> int:
    import anyio

    from .events import ResponseDone
    from .io import StreamIOError, arecord_websocket

    try:
        from websockets.asyncio.client import connect
        from websockets.exceptions import WebSocketException
    except ImportError:
        print(
            "maas-stream: recording a websocket needs the 'ws' extra: pip install 'maas-stream[ws]'",
            file=sys.stderr,
        )
        return EXIT_FAULT
    pending = _client_messages(args.body)
    headers = _record_headers(args, websocket=True)
    done = False
    count = 0
    progress = None if args.quiet else _progress("jsonl")

    async def run() -> None:
        # Each client message after the first waits for a server message (Live wants its
        # setupComplete first); the recording ends at the end of a response once all were sent.
        nonlocal done, count
        async with connect(args.url, additional_headers=headers, open_timeout=args.timeout) as ws:
            rec = arecord_websocket(ws, args.out, protocol=args.protocol, idle_timeout=args.idle_timeout)
            agg = StreamAggregator(args.protocol, emit=True)
            try:
                if pending:
                    await rec.send(pending.pop(0).decode())
                async for line in rec.lines():
                    ended = any(isinstance(e, ResponseDone) for e in agg.feed(line))
                    if not line.startswith(b'{"dir":"server"'):
                        continue
                    if progress is not None:
                        progress.feed(line)
                    if pending:
                        await rec.send(pending.pop(0).decode())
                    elif ended:
                        done = True
                        break
            finally:
                count = len(rec.recorded)
                rec.save(complete=True if done else None)

    try:
        anyio.run(_with_progress, run, progress)
    except (StreamIOError, WebSocketException, OSError, ProtocolError) as exc:
        print(
            f"maas-stream: {args.url.split('?', 1)[0]}: {exc or type(exc).__name__} "
            f"({count} messages recorded to {args.out})".replace("\n", " "),
            file=sys.stderr,
        )
        return EXIT_FAULT
    if progress is not None:
        print(
            f"maas-stream: {progress.summary(args.out)} ({count} lines in all, the client's included)",
            file=sys.stderr,
        )
    return 0


def _progress(framing: Literal["sse", "jsonl"]) -> RecordProgress:
    from .io._progress import RecordProgress

    return RecordProgress(sys.stderr, framing=framing)


async def _with_progress(run: Callable[[], Awaitable[None]], progress: RecordProgress | None) -> None:
    from .io._progress import arun_with_progress

    await arun_with_progress(run, progress)


def _cmd_record(args: argparse.Namespace) -> int:
    import anyio
    import httpx2

    if os.path.exists(args.out) and not args.force:
        print(f"maas-stream: {args.out} exists; pass --force to overwrite it", file=sys.stderr)
        return EXIT_FAULT
    if get_protocol(args.protocol).framing == "jsonl":
        return _record_websocket(args)

    from .io import ProviderHTTPError, StreamIOError, arecord_request
    from .io._record import check_recorded_protocol

    body = b"".join(_read_chunks(args.body)) if args.body else None
    headers = _record_headers(args)
    progress = None if args.quiet else _progress("sse")

    async def run() -> None:
        timeout = httpx2.Timeout(args.timeout, read=None)
        async with httpx2.AsyncClient(timeout=timeout) as client:
            await arecord_request(
                client,
                args.method,
                args.url,
                args.out,
                protocol=args.protocol,
                idle_timeout=args.idle_timeout,
                on_chunk=None if progress is None else progress.feed,
                content=body,
                headers=headers,
            )
        if progress is not None:
            progress.close()
            print(f"maas-stream: {progress.summary(args.out)}", file=sys.stderr)

    try:
        anyio.run(_with_progress, run, progress)
    except ProviderHTTPError as exc:
        print(f"maas-stream: {args.url}: {exc} (recorded to {args.out})".replace("\n", " "), file=sys.stderr)
        return EXIT_FAULT
    except (StreamIOError, httpx2.HTTPError, OSError) as exc:
        print(f"maas-stream: {args.url}: {exc or type(exc).__name__}".replace("\n", " "), file=sys.stderr)
        return EXIT_FAULT
    try:
        check_recorded_protocol(args.out, args.protocol)
    except StreamIOError as exc:
        print(f"maas-stream: {exc} (the files are kept; --force overwrites them)", file=sys.stderr)
        return EXIT_FAULT
    return 0


SCHEMA_TYPES: dict[str, Any] = {}
"""The named types of the JSON contract that ``maas-stream schema`` describes (name → type).

Filled on first use (:func:`schema_types`); a new public type of the contract is one more entry.
"""


def schema_types() -> dict[str, Any]:
    """The contract's named types: ``Response`` and ``Event`` (the union of canonical events)."""
    if not SCHEMA_TYPES:
        from ._model import Response
        from .events import Event

        SCHEMA_TYPES.update({"Response": Response, "Event": Event})
    return SCHEMA_TYPES


def json_schema(names: Sequence[str] = ()) -> dict[str, Any]:
    """One JSON Schema (2020-12) document for the contract's types, from ``msgspec.json.schema``.

    Each named type is a ``$defs`` entry (the structs it uses beside it); the document validates
    an instance of any of ``names`` (all types when empty).

    Raises:
        KeyError: A name is not one of :func:`schema_types`.
    """
    from . import __version__

    types = schema_types()
    chosen = list(names) or list(types)
    unknown = [n for n in chosen if n not in types]
    if unknown:
        raise KeyError(f"unknown type {unknown[0]!r} (known: {', '.join(types)})")
    roots, defs = msgspec.json.schema_components([types[n] for n in chosen])
    for name, root in zip(chosen, roots, strict=True):
        if root != {"$ref": f"#/$defs/{name}"}:
            defs[name] = root
    refs = [{"$ref": f"#/$defs/{name}"} for name in chosen]
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": f"maas-stream {__version__} JSON contract: {', '.join(chosen)}",
        **(refs[0] if len(refs) == 1 else {"anyOf": refs}),
        "$defs": dict(sorted(defs.items())),
    }


def _cmd_inspect(args: argparse.Namespace) -> int:
    from ._inspect import inspect_recording, render

    try:
        found = inspect_recording(args.file, protocol=args.source)
    except (MaasStreamError, OSError) as exc:
        _fail(args.file, exc)
    if args.json:
        _json_out(found, compact=False)
    else:
        render(found, sys.stdout)
    return 0


def _cmd_schema(args: argparse.Namespace) -> int:
    try:
        schema = json_schema(args.types)
    except KeyError as exc:
        raise SystemExit(f"maas-stream: schema: {exc.args[0]}") from None
    _json_out(schema, args.compact)
    return 0


def _protocol(value: str) -> str:
    if value not in protocol_names():
        raise argparse.ArgumentTypeError(
            f"unknown protocol {value!r} (choose from {', '.join(protocol_names())})"
        )
    return value


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (exposed for documentation tools)."""
    parser = argparse.ArgumentParser(
        prog="maas-stream",
        description="Decode, aggregate and re-encode LLM provider streams.",
    )
    from . import __version__

    parser.add_argument("--version", action="version", version=f"maas-stream {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("aggregate", help="print the final Response of a recorded stream as JSON")
    p.add_argument("--from", dest="source", type=_protocol, help="source protocol (detected when left out)")
    p.add_argument("--compact", action="store_true", help="one line of JSON instead of indented")
    p.add_argument("file", metavar="FILE", help="recording to read, or - for stdin")
    p.set_defaults(run=_cmd_aggregate)

    p = sub.add_parser("convert", help="re-encode a recorded stream as another protocol")
    p.add_argument("--to", required=True, type=_protocol, help="target protocol")
    p.add_argument("--from", dest="source", type=_protocol, help="source protocol (detected when left out)")
    p.add_argument("file", metavar="FILE", help="recording to read, or - for stdin")
    p.set_defaults(run=_cmd_convert)

    p = sub.add_parser("history", help="convert a request body (conversation and envelope) / a history")
    p.add_argument("--to", required=True, type=_protocol, help="target protocol")
    p.add_argument("--from", dest="source", type=_protocol, help="source protocol (detected when left out)")
    p.add_argument("--model", help="name this model in the converted request instead of the client's")
    p.add_argument(
        "--drop-params",
        action="store_true",
        help="drop (and report) fields that change the answer and cannot be carried, instead of failing",
    )
    p.add_argument("--compact", action="store_true", help="one line of JSON instead of indented")
    p.add_argument("file", metavar="FILE", help="JSON file to read, or - for stdin")
    p.set_defaults(run=_cmd_history)

    p = sub.add_parser("validate", help="check a request body against a protocol's rules")
    p.add_argument("--protocol", required=True, type=_protocol, help="protocol whose rules apply")
    p.add_argument("file", metavar="FILE", help="JSON file to read, or - for stdin")
    p.set_defaults(run=_cmd_validate)

    p = sub.add_parser("protocols", help="list the protocols this build knows")
    p.set_defaults(run=_cmd_protocols)

    p = sub.add_parser("replay", help="write a recording to stdout with its chunk boundaries and timing")
    p.add_argument(
        "--speed", type=float, default=1.0, help="timing factor: 1 original, 2 twice as fast, 0 no waits"
    )
    p.add_argument(
        "file", metavar="FILE", help="recording (.sse/.jsonl; its .meta.json is read when present)"
    )
    p.set_defaults(run=_cmd_replay)

    p = sub.add_parser("record", help="call a provider and save its stream (+ .meta.json, secrets redacted)")
    p.add_argument("--protocol", required=True, type=_protocol, help="the provider's protocol")
    p.add_argument("--url", required=True, help="the streaming endpoint")
    p.add_argument(
        "--body",
        help="JSON request body file, or - for stdin (websocket protocols: client messages, one JSON per line)",
    )
    p.add_argument(
        "--out",
        required=True,
        help="the .sse (.jsonl for websocket protocols) file to write, e.g. recordings/P/case.sse",
    )
    p.add_argument("--header", action="append", default=[], metavar="K:V", help="extra request header")
    p.add_argument("--method", default="POST", help="HTTP method (default POST)")
    p.add_argument("--timeout", type=float, default=30.0, help="connect/write timeout in seconds")
    p.add_argument("--idle-timeout", type=float, default=120.0, help="seconds allowed between chunks")
    p.add_argument("--force", action="store_true", help="overwrite --out if it exists")
    p.add_argument(
        "--quiet",
        action="store_true",
        help="no progress line while recording and no summary after it (errors are still said)",
    )
    p.set_defaults(run=_cmd_record)

    p = sub.add_parser("inspect", help="show a recording's timeline: parts, timing, parallel calls, warnings")
    p.add_argument("--from", dest="source", type=_protocol, help="source protocol (detected when left out)")
    p.add_argument("--json", action="store_true", help="print the inspection as JSON")
    p.add_argument("file", metavar="FILE", help="recording (.sse/.jsonl; its .meta.json gives the timing)")
    p.set_defaults(run=_cmd_inspect)

    p = sub.add_parser("schema", help="print the JSON Schema of the JSON contract (Response, events)")
    p.add_argument("types", nargs="*", metavar="TYPE", help="only these types (default: all)")
    p.add_argument("--compact", action="store_true", help="one line of JSON instead of indented")
    p.set_defaults(run=_cmd_schema)

    add_serve_parser(sub, _protocol)

    return parser


# ---------------------------------------------------------------- serve: timeouts and limits


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit code."""
    args = build_parser().parse_args(argv)
    with _log_to_stderr():
        try:
            code: int = args.run(args)
        except BrokenPipeError:
            return 0
    return code


@contextlib.contextmanager
def _log_to_stderr() -> Iterator[None]:
    # The library reports each drop (and each stream warning) once, as a warning on the
    # ``maas_stream`` logger: that is what the user reads on stderr, one line each. A handler of
    # our own keeps logging's last-resort handler from printing them a second, unprefixed way.
    logger = logging.getLogger("maas_stream")
    handler = logging.StreamHandler(sys.stderr)
    handler.setLevel(logging.WARNING)
    handler.setFormatter(logging.Formatter("maas-stream: %(message)s"))
    logger.addHandler(handler)
    try:
        yield
    finally:
        logger.removeHandler(handler)


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
