"""``serve --ws`` and ``--http``: uvicorn's websocket and HTTP/1.1 implementations.

The websocket one is the bridge's own unless named; the HTTP/1.1 one is always the bridge's
subclass of uvicorn's (``_uvicorn_http``), httptools unless h11 is named or httptools is missing.
"""

from __future__ import annotations

import contextlib
import io
import sys

import pytest

import maas_stream._cli as cli


def _server(*flags: str) -> dict[str, object]:
    args = cli.build_parser().parse_args(["serve", "--upstream-protocol", "openai-realtime", *flags])
    return cli.serve_options(args)[3]


def test_left_out_the_bridge_s_own_protocol_is_used() -> None:
    from maas_stream.bridge._ws_lean import LeanWebSocketProtocol

    assert _server()["ws"] is LeanWebSocketProtocol


def test_left_out_without_websockets_uvicorn_picks_the_implementation(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # An HTTP-only bridge (no ``websockets`` installed) must still start: uvicorn's auto.
    monkeypatch.delitem(sys.modules, "maas_stream.bridge._ws_lean", raising=False)
    monkeypatch.setitem(sys.modules, "websockets", None)
    monkeypatch.setitem(sys.modules, "websockets.server", None)
    assert "ws" not in _server()


@pytest.mark.parametrize("impl", ["websockets-sansio", "websockets", "wsproto"])
def test_a_named_implementation_reaches_uvicorn(impl: str) -> None:
    assert _server("--ws", impl)["ws"] == impl


def test_an_unknown_implementation_is_refused() -> None:
    with pytest.raises(SystemExit), contextlib.redirect_stderr(io.StringIO()) as err:
        _server("--ws", "auto-magic")
    assert "expected one of websockets-sansio, websockets, wsproto" in err.getvalue()


def test_left_out_the_http_protocol_is_the_bridge_s_httptools_one() -> None:
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    from maas_stream.bridge._uvicorn_http import AheadHttpToolsProtocol

    assert _server()["http"] is AheadHttpToolsProtocol
    assert AheadHttpToolsProtocol is not None
    assert issubclass(AheadHttpToolsProtocol, HttpToolsProtocol)


def test_named_h11_is_the_bridge_s_h11_protocol() -> None:
    from uvicorn.protocols.http.h11_impl import H11Protocol

    from maas_stream.bridge._uvicorn_http import AheadH11Protocol

    assert _server("--http", "h11")["http"] is AheadH11Protocol
    assert issubclass(AheadH11Protocol, H11Protocol)


def test_left_out_without_httptools_the_bridge_s_h11_protocol_is_used(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from maas_stream.bridge import _uvicorn_http

    monkeypatch.setattr(_uvicorn_http, "AheadHttpToolsProtocol", None)
    assert _server()["http"] is _uvicorn_http.AheadH11Protocol
    with pytest.raises(ValueError, match="httptools is not installed"):
        _server("--http", "httptools")


def test_an_unknown_http_implementation_stops_serve_with_its_name() -> None:
    with pytest.raises(ValueError, match="--http: expected one of httptools, h11, not 'zttp'"):
        _server("--http", "zttp")
