"""pytest entry point of maas-stream: the ``maas_replay`` and ``maas_recordings_dir`` fixtures.

This module is what the ``pytest11`` entry point loads in every pytest run of a project that
has maas-stream installed, so it imports nothing of the library at import time: the fixtures
import :mod:`maas_stream.testing` when first used (loading the library earlier would also hide
it from coverage measurement, which starts after plugins load).

Configuration, as pytest-recording / vcrpy users know it:

* where recordings are: the ``maas_recordings("dir")`` marker (relative to the test file; put
  it in a module's ``pytestmark``), else the ``maas_stream_recordings`` ini option (relative to
  the ini file), else ``recordings/`` beside the test file when it exists, else
  ``<rootdir>/recordings``; or override the ``maas_recordings_dir`` fixture;
* ``--maas-record``: record a recording that does not exist yet from the real provider (the
  protocol's API key from its environment variable); ``--maas-record-url`` sends those
  requests elsewhere than the provider's own URL (a proxy, a local fake).

The fixtures are synchronous, so they serve sync and async tests alike, whatever runs the
latter: pytest-asyncio in ``strict`` (``@pytest.mark.asyncio``) or ``auto`` mode, or anyio's
plugin (``@pytest.mark.anyio``, on asyncio or trio).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from collections.abc import Iterator

    from maas_stream.testing import ReplayServer

__all__ = ["maas_recordings_dir", "maas_replay", "pytest_addoption", "pytest_configure"]

INI_RECORDINGS = "maas_stream_recordings"
MARKER = "maas_recordings"


def pytest_addoption(parser: pytest.Parser) -> None:
    """Register ``--maas-record``, ``--maas-record-url`` and the ``maas_stream_recordings`` ini option."""
    group = parser.getgroup("maas-stream", "maas-stream recordings")
    group.addoption(
        "--maas-record",
        action="store_true",
        default=False,
        help="record missing maas-stream recordings from the real provider (needs its API key)",
    )
    group.addoption(
        "--maas-record-url",
        default=None,
        metavar="URL",
        help="base URL to record from instead of the provider's own (e.g. a proxy)",
    )
    parser.addini(
        INI_RECORDINGS,
        "folder of maas-stream recordings, relative to the ini file (default: recordings/ "
        "beside the test file, else <rootdir>/recordings)",
        default="",
    )


def pytest_configure(config: pytest.Config) -> None:
    """Declare the ``maas_recordings`` marker (so ``--strict-markers`` accepts it)."""
    config.addinivalue_line(
        "markers",
        f"{MARKER}(path): folder of the maas-stream recordings for these tests, relative to the test file",
    )


def _recordings_dir(request: pytest.FixtureRequest) -> Path:
    marker = request.node.get_closest_marker(MARKER)
    here = request.path.parent
    if marker is not None:
        if len(marker.args) != 1:
            raise pytest.UsageError(f"@pytest.mark.{MARKER} takes one folder, got {marker.args!r}")
        return (here / str(marker.args[0])).resolve()
    config = request.config
    configured = str(config.getini(INI_RECORDINGS) or "")
    if configured:
        base = config.inipath.parent if config.inipath is not None else config.rootpath
        return (base / configured).resolve()
    beside = here / "recordings"
    if beside.is_dir():
        return beside
    return Path(config.rootpath) / "recordings"


@pytest.fixture
def maas_recordings_dir(request: pytest.FixtureRequest) -> Path:
    """Where ``maas_replay`` looks up recordings by name (see the module docstring for the order)."""
    return _recordings_dir(request)


@pytest.fixture
def maas_replay(request: pytest.FixtureRequest, maas_recordings_dir: Path) -> Iterator[ReplayServer]:
    """Serve recordings to httpx2 / httpx clients (and the official SDKs built on them), offline."""
    from maas_stream.testing import ReplayServer

    config = request.config
    server = ReplayServer(
        maas_recordings_dir,
        record=bool(config.getoption("maas_record", default=False)),
        record_url=config.getoption("maas_record_url", default=None),
    )
    yield server
    server.close()
