"""Bridge tests run on asyncio (uvicorn, used by the loopback test, is asyncio only)."""

from __future__ import annotations

import pytest


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
