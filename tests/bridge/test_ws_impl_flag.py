"""``serve --ws``: uvicorn's websocket implementation, the bridge's own unless named."""

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
