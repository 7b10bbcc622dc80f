"""Agent-CLI tests run on asyncio (uvicorn, which serves the bridge, is asyncio only)."""

from __future__ import annotations

import pytest


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
