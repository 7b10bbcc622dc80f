"""IO tests run under asyncio and trio (anyio's pytest plugin), against loopback servers and mock transports."""

from __future__ import annotations

import pytest

# The pytest11 entry point registers this plugin once the package is installed; importing the
# fixtures here makes them available from a source checkout too (a conftest fixture of the same
# name simply takes precedence).
from maas_stream_pytest import maas_recordings_dir as maas_recordings_dir
from maas_stream_pytest import maas_replay as maas_replay


@pytest.fixture(params=[pytest.param("asyncio", id="asyncio"), pytest.param("trio", id="trio")])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)
