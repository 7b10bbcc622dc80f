"""The ``maas-stream serve`` command: its flags, and running the bridge under uvicorn.

The flags for time limits, sizes and the ASGI server's own limits are one table each
(:data:`_TIMEOUT_FLAGS`, :data:`_LIMIT_FLAGS`, :data:`_SERVER_FLAGS`), checked against the
library's defaults; access (bridge keys, hosts, origins), routes and workers come from
``bridge._serve``. The rest of the command line is ``_cli``'s.

It holds no protocol logic.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import sys
from typing import TYPE_CHECKING, Any, Final

import msgspec

from ._exceptions import MaasStreamError

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

__all__ = ["add_serve_parser", "serve_options"]


def add_serve_parser(sub: Any, protocol: Callable[[str], str]) -> None:
    """Add the ``serve`` subcommand to ``sub`` (``protocol`` checks a protocol name)."""
    _protocol = protocol
    p = sub.add_parser("serve", help="the bridge: serve provider endpoints from an upstream or a recording")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8000, help="port to listen on (default 8000)")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--config", metavar="FILE", help="a TOML routes file: model name or pattern -> upstream")
    src.add_argument("--recording", metavar="FILE", help="replay this recording for every request")
    src.add_argument("--upstream-protocol", type=_protocol, help="the real upstream provider's protocol")
    p.add_argument("--upstream-url", help="the upstream's streaming endpoint ({model} is filled in)")
    p.add_argument("--upstream-model", help="send this model upstream instead of the client's")
    p.add_argument("--speed", type=float, default=0.0, help="recording timing factor (default 0: no waits)")
    p.add_argument("--log-level", default="info", help="uvicorn log level (default info)")
    _serve_limit_flags(p)
    sec = p.add_argument_group("access (bridge keys, hosts, origins)")
    sec.add_argument(
        "--bridge-key",
        action="append",
        default=[],
        metavar="KEY",
        help="a key clients must send (repeatable)",
    )
    sec.add_argument(
        "--bridge-keys-file", action="append", default=[], metavar="FILE", help="bridge keys, one per line"
    )
    sec.add_argument(
        "--no-auth",
        action="store_true",
        help="serve a non-loopback address without bridge keys (not advised)",
    )
    sec.add_argument(
        "--allowed-host",
        action="append",
        default=[],
        metavar="HOST",
        help="a Host name served (repeatable; default: loopback names for a loopback bind)",
    )
    sec.add_argument(
        "--cors-origin",
        action="append",
        default=[],
        metavar="ORIGIN",
        help="a browser origin allowed (repeatable)",
    )
    p.add_argument("--workers", type=int, default=1, help="worker processes (uvicorn; default 1)")
    tls = p.add_argument_group("TLS (google-genai's Live client connects only with wss)")
    tls.add_argument("--ssl-certfile", metavar="FILE", help="serve https/wss with this certificate (PEM)")
    tls.add_argument("--ssl-keyfile", metavar="FILE", help="the certificate's private key (PEM)")
    _store_flags(p)
    p.add_argument(
        "--drop-params",
        action="store_true",
        help="drop (and report) request fields that change the answer and cannot reach the upstream, "
        "instead of answering 400",
    )
    p.set_defaults(run=_cmd_serve)


def _cmd_serve(args: argparse.Namespace) -> int:
    from ._cli import EXIT_FAULT, _fail  # the command line's own error line (no import cycle)

    try:
        import uvicorn
    except ImportError:
        print(
            "maas-stream: serve needs uvicorn, which comes with the 'serve' extra: "
            "pip install 'maas-stream[serve]'",
            file=sys.stderr,
        )
        return EXIT_FAULT
    from .bridge import KEYS_ENV, SETTINGS_ENV, ConfigError, ServeSettings, build_app, describe

    if (args.ssl_certfile is None) != (args.ssl_keyfile is None):
        raise SystemExit("maas-stream: serve: give both --ssl-certfile and --ssl-keyfile, or neither")
    try:
        timeouts, limits, options, server = serve_options(args)
    except ValueError as exc:
        raise SystemExit(f"maas-stream: serve: {exc}") from None
    settings = ServeSettings(
        config=args.config,
        recording=args.recording,
        speed=args.speed or None,
        upstream_protocol=args.upstream_protocol,
        upstream_url=args.upstream_url,
        upstream_model=args.upstream_model,
        keys_files=args.bridge_keys_file,
        no_auth=args.no_auth,
        allowed_hosts=args.allowed_host or None,
        cors_origins=args.cors_origin,
        host=args.host,
        log_level=args.log_level,
        timeouts=timeouts,
        limits=limits,
        max_connections=options.get("max_connections"),
        drop_params=args.drop_params,
        session_limits=options.get("session_limits", {}),
        **store_settings(args),
    )
    try:
        app = build_app(settings, keys=args.bridge_key)
    except ConfigError as exc:
        raise SystemExit(f"maas-stream: --config: {exc}") from None
    except (MaasStreamError, OSError) as exc:
        if args.recording is None and isinstance(exc, MaasStreamError):
            raise SystemExit(f"maas-stream: --upstream-protocol: {exc}") from None
        _fail(args.recording or args.config or "serve", exc)
    except ValueError as exc:
        raise SystemExit(f"maas-stream: {exc}") from None
    auth = f"{len(app.guard.keys)} bridge key(s)" if app.guard.auth else "no bridge keys"
    scheme = "http" if args.ssl_certfile is None else "https"
    print(
        f"maas-stream: serving {describe(app)} on {scheme}://{args.host}:{args.port} ({auth})",
        file=sys.stderr,
    )
    # access_log=False: the bridge writes its own line per request (with route, status, drops).
    run: dict[str, Any] = {
        "host": args.host,
        "port": args.port,
        "log_level": args.log_level,
        "access_log": False,
        **server,
    }
    if args.ssl_certfile is not None:
        run |= {"ssl_certfile": args.ssl_certfile, "ssl_keyfile": args.ssl_keyfile}
    with _access_log(args.log_level):
        if args.workers > 1:
            # Each worker builds the same app from the settings; the keys travel in the environment.
            if args.bridge_key:
                os.environ[KEYS_ENV] = " ".join([os.environ.get(KEYS_ENV, ""), *args.bridge_key]).strip()
            os.environ[SETTINGS_ENV] = msgspec.json.encode(settings).decode()
            uvicorn.run("maas_stream.bridge:app_from_env", factory=True, workers=args.workers, **run)
        else:
            uvicorn.run(app, **run)
    return 0


@contextlib.contextmanager
def _access_log(level: str) -> Iterator[None]:
    # One line per request on the access logger (INFO by default), whatever level the drops'
    # handler has. Worker processes set up their own (see maas_stream.bridge.app_from_env).
    access = logging.getLogger("maas_stream.bridge.access")
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("maas-stream: %(message)s"))
    known = logging.getLevelNamesMapping()
    saved = access.level, access.propagate
    access.addHandler(handler)
    access.setLevel(known.get(level.upper(), logging.INFO))
    access.propagate = False
    try:
        yield
    finally:
        access.removeHandler(handler)
        access.setLevel(saved[0])
        access.propagate = saved[1]


STORE_ENV = {
    "store": "MAAS_STREAM_STORE",
    "store_ttl": "MAAS_STREAM_STORE_TTL",
    "store_max_bytes": "MAAS_STREAM_STORE_MAX_BYTES",
}
"""The environment variables giving the store flags' values when the flags are left out."""


def _store_flags(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("stored responses (Responses store, previous_response_id, background)")
    g.add_argument(
        "--store",
        default=argparse.SUPPRESS,
        metavar="URL",
        help="sqlite:PATH (default: sqlite: under ~/.local/state/maas-stream), redis://HOST:PORT/DB "
        "(several workers or machines), or none; env MAAS_STREAM_STORE",
    )
    g.add_argument(
        "--store-ttl",
        type=_seconds,
        default=argparse.SUPPRESS,
        metavar="S",
        help="keep a stored response S seconds (default 2592000: 30 days; 0: until deleted); "
        "env MAAS_STREAM_STORE_TTL",
    )
    g.add_argument(
        "--store-max-bytes",
        type=_count,
        default=argparse.SUPPRESS,
        metavar="BYTES",
        help="the most one bridge key may have stored (default: no cap); env MAAS_STREAM_STORE_MAX_BYTES",
    )
    g.add_argument(
        "--no-native-state",
        action="store_true",
        help="expand previous_response_id from the store even for an upstream of the client's protocol",
    )


def store_settings(args: argparse.Namespace) -> dict[str, Any]:
    """The :class:`~maas_stream.bridge.ServeSettings` store fields from the flags and environment.

    Raises:
        SystemExit: An environment variable's value is not valid.
    """
    given = vars(args)
    out: dict[str, Any] = {"native_state": not given.get("no_native_state", False)}
    kinds: dict[str, Callable[[str], Any]] = {"store": str, "store_ttl": _seconds, "store_max_bytes": _count}
    for name, env in STORE_ENV.items():
        if name in given:
            value = given[name]
        elif os.environ.get(env):
            try:
                value = kinds[name](os.environ[env])
            except argparse.ArgumentTypeError as exc:
                raise SystemExit(f"maas-stream: {env}: {exc}") from None
        else:
            continue
        out[name] = None if name == "store" and value.lower() in ("none", "off", "") else value
    return out


def _seconds(value: str) -> float | None:
    """A positive number of seconds, or 0 / ``none`` for no limit."""
    if value.lower() in ("0", "none", "off"):
        return None
    try:
        seconds = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds (or 0 for no limit), not {value!r}") from None
    if not seconds > 0:
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, not {value!r}")
    return seconds


def _switch(value: str) -> bool:
    """``on`` or ``off``."""
    if value.lower() not in ("on", "off"):
        raise argparse.ArgumentTypeError(f"expected on or off, not {value!r}")
    return value.lower() == "on"


_WS_IMPLS: Final = ("websockets-sansio", "websockets", "wsproto")
"""uvicorn's websocket implementations ``serve --ws`` offers. Left out, the bridge's own
(:class:`~maas_stream.bridge._ws_lean.LeanWebSocketProtocol`: websockets' sans-I/O protocol
with uvicorn's ASGI behaviour, lighter per connection, reading paused only when a client is 16
messages ahead) where ``websockets`` is installed, else uvicorn's ``auto`` (wsproto, or none:
an HTTP-only bridge still starts)."""


def _ws_impl(value: str) -> str:
    """One of uvicorn's websocket implementations (:data:`_WS_IMPLS`)."""
    if value not in _WS_IMPLS:
        raise argparse.ArgumentTypeError(f"expected one of {', '.join(_WS_IMPLS)}, not {value!r}")
    return value


def _count(value: str) -> int | None:
    """A positive count, or 0 / ``none`` for no limit."""
    if value.lower() in ("0", "none", "off"):
        return None
    if not value.isdigit():
        raise argparse.ArgumentTypeError(f"expected a whole number (or 0 for no limit), not {value!r}")
    return int(value)


_TIMEOUT_FLAGS = {
    "connect_timeout": ("connect", "connecting to the upstream (default 10)"),
    "first_byte_timeout": ("first_byte", "until the upstream's headers (default 120)"),
    "idle_timeout": ("idle", "between two upstream reads (default 300)"),
    "total_timeout": ("total", "a whole upstream exchange (default 1800)"),
}
_LIMIT_FLAGS: dict[str, tuple[str, Callable[[str], Any], str, str]] = {
    "max_streams": (
        "max_streams",
        _count,
        "N",
        "upstream exchanges in flight; one more gets 503 (default 1000)",
    ),
    "max_body": ("max_body", int, "BYTES", "largest request body; larger gets 413 (default 33554432)"),
    "body_timeout": ("body_timeout", _seconds, "S", "receiving a request body; slower gets 408 (default 60)"),
}
_SESSION_FLAGS: dict[str, tuple[str, Callable[[str], Any], str, str]] = {
    "session_idle_timeout": (
        "idle_timeout",
        _seconds,
        "S",
        "realtime sessions: close one without a message either way for S seconds (default 600)",
    ),
    "session_max_message": (
        "max_message",
        int,
        "BYTES",
        "realtime sessions: largest websocket message either way (default 16777216)",
    ),
}
_SERVER_FLAGS: dict[str, tuple[Callable[[str], Any], str, str]] = {
    "limit_concurrency": (_count, "N", "uvicorn: connections at once; more get 503 (default: no limit)"),
    "timeout_keep_alive": (
        int,
        "S",
        "uvicorn: close idle keep-alive connections after S seconds (default 5)",
    ),
    "timeout_graceful_shutdown": (
        _seconds,
        "S",
        "uvicorn: on shutdown, let in-flight streams finish this long, then cut them (default 30)",
    ),
    "h11_max_incomplete_event_size": (
        int,
        "BYTES",
        "uvicorn: largest request line + headers (default 16384)",
    ),
    "backlog": (int, "N", "uvicorn: pending connections the socket queues (default 2048)"),
    "ws_per_message_deflate": (
        _switch,
        "on|off",
        "uvicorn: compress websocket messages for the clients that ask (browsers, google-genai); "
        "a compressed session costs about 36 KiB and 40%% more CPU per message (default off)",
    ),
    "http": (
        str,
        "httptools|h11",
        "uvicorn: the HTTP/1.1 implementation, httptools or h11 (default: httptools where installed, "
        "else h11); either way the bridge's subclass, which runs what a client's read wakes (a "
        "request's start, its body read) before the frames of streams already flowing",
    ),
    "ws": (
        _ws_impl,
        "IMPL",
        "uvicorn: the websocket implementation, " + ", ".join(_WS_IMPLS) + " (default: the bridge's "
        "websockets-sansio, which pauses reading only for a client 16 messages ahead, where websockets "
        "is installed, else uvicorn's auto; 'websockets' costs the bridge ~30%% more CPU per message "
        "and ~7 KiB more per idle session)",
    ),
}
_SERVER_DEFAULTS: dict[str, Any] = {"timeout_graceful_shutdown": 30.0, "ws_per_message_deflate": False}
"""Where the bridge's default differs from uvicorn's: it waits for ever on shutdown, and compresses
every websocket session whose client asks (permessage-deflate: a zlib compressor and decompressor
per session, measured +36 KiB resident and +43% CPU per relayed message,
``benchmarks/bench_realtime_bridge.py --deflate``)."""


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def _serve_limit_flags(p: argparse.ArgumentParser) -> None:
    """The ``serve`` flags for time limits, sizes and the ASGI server's own limits (one block).

    Left out, each is the library's default (:class:`~maas_stream.bridge.Timeouts`,
    :class:`~maas_stream.bridge.Limits`) or uvicorn's; the defaults in the help are checked
    against them by the tests. The bridge is not imported here (the CLI starts fast).
    """
    g = p.add_argument_group("timeouts and limits (seconds; 0 = no limit)")
    for name, (_, text) in _TIMEOUT_FLAGS.items():
        g.add_argument(_flag(name), type=_seconds, default=argparse.SUPPRESS, metavar="S", help=text)
    g.add_argument(
        "--max-connections",
        type=int,
        default=argparse.SUPPRESS,
        metavar="N",
        help="upstream connection pool size (default 1000)",
    )
    for name, (_, kind, metavar, text) in _LIMIT_FLAGS.items():
        g.add_argument(_flag(name), type=kind, default=argparse.SUPPRESS, metavar=metavar, help=text)
    for name, (_, kind, metavar, text) in _SESSION_FLAGS.items():
        g.add_argument(_flag(name), type=kind, default=argparse.SUPPRESS, metavar=metavar, help=text)
    for name, (kind, metavar, text) in _SERVER_FLAGS.items():
        g.add_argument(_flag(name), type=kind, default=argparse.SUPPRESS, metavar=metavar, help=text)


def serve_options(
    args: argparse.Namespace,
) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any], dict[str, Any]]:
    """The ``serve`` flags: ``Timeouts`` and ``Limits`` fields, upstream and uvicorn options.

    The values are checked by building the classes once. The realtime session limits travel in
    the upstream options as ``session_limits`` (``SessionLimits`` fields); a larger message limit
    raises uvicorn's own websocket limit (``ws_max_size``) with it.

    Raises:
        ValueError: A value the classes refuse.
    """
    from .bridge import Limits, Timeouts

    given = vars(args)
    timeouts = {field: given[name] for name, (field, _) in _TIMEOUT_FLAGS.items() if name in given}
    limits = {field: given[name] for name, (field, *_) in _LIMIT_FLAGS.items() if name in given}
    Timeouts(**timeouts)
    Limits(**limits)
    upstream: dict[str, Any] = (
        {"max_connections": given["max_connections"]} if "max_connections" in given else {}
    )
    server = {**_SERVER_DEFAULTS, **{name: given[name] for name in _SERVER_FLAGS if name in given}}
    from .bridge._uvicorn_http import http_protocol

    server["http"] = http_protocol(server.get("http"))  # (ValueError: httptools not installed)
    if "ws" not in server:
        try:
            from .bridge._ws_lean import LeanWebSocketProtocol
        except ImportError:  # no websockets: uvicorn's auto
            pass
        else:
            server["ws"] = LeanWebSocketProtocol
    sessions = {field: given[name] for name, (field, *_) in _SESSION_FLAGS.items() if name in given}
    if sessions:
        from .bridge._session_limits import SessionLimits

        SessionLimits(**sessions)
        upstream["session_limits"] = sessions
        if "max_message" in sessions:
            server["ws_max_size"] = sessions["max_message"]
    return timeouts, limits, upstream, server
