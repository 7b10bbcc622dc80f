"""``serve --ws``: uvicorn's websocket implementation, uvicorn's ``auto`` unless named."""

from __future__ import annotations

import contextlib
import io

import pytest

import maas_stream._cli as cli


def _server(*flags: str) -> dict[str, object]:
    args = cli.build_parser().parse_args(["serve", "--upstream-protocol", "openai-realtime", *flags])
    return cli.serve_options(args)[3]


def test_left_out_uvicorn_picks_the_implementation() -> None:
    # Not named: an HTTP-only bridge (no ``websockets`` installed) must still start.
    assert "ws" not in _server()


@pytest.mark.parametrize("impl", ["websockets-sansio", "websockets", "wsproto"])
def test_a_named_implementation_reaches_uvicorn(impl: str) -> None:
    assert _server("--ws", impl)["ws"] == impl


def test_an_unknown_implementation_is_refused() -> None:
    with pytest.raises(SystemExit), contextlib.redirect_stderr(io.StringIO()) as err:
        _server("--ws", "auto-magic")
    assert "expected one of websockets-sansio, websockets, wsproto" in err.getvalue()
