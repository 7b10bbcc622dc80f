"""pytest entry point of maas-stream: the ``maas_replay`` and ``maas_recordings_dir`` fixtures.

This module is what the ``pytest11`` entry point loads in every pytest run of a project that
has maas-stream installed, so it imports nothing of the library at import time: the fixtures
import :mod:`maas_stream.testing` when first used (loading the library earlier would also hide
it from coverage measurement, which starts after plugins load).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from collections.abc import Iterator

    from maas_stream.testing import ReplayServer

__all__ = ["maas_recordings_dir", "maas_replay"]


@pytest.fixture
def maas_recordings_dir(request: pytest.FixtureRequest) -> Path:
    """Where ``maas_replay`` looks up recordings by name: ``<rootdir>/recordings``."""
    return Path(request.config.rootpath) / "recordings"


@pytest.fixture
def maas_replay(maas_recordings_dir: Path) -> Iterator[ReplayServer]:
    """Serve recordings to httpx / httpx2 clients (and the official SDKs built on them), offline."""
    from maas_stream.testing import ReplayServer

    server = ReplayServer(maas_recordings_dir)
    yield server
    server.close()
