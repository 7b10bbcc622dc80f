"""The IO names are exported from ``maas_stream`` but loaded lazily (the core never imports httpx)."""

from __future__ import annotations

import subprocess
import sys

import maas_stream as ms
import maas_stream.io


def test_io_names_are_exported_and_sorted() -> None:
    assert list(ms.__all__) == sorted(ms.__all__)
    assert list(maas_stream.io.__all__) == sorted(maas_stream.io.__all__)
    for name in ("astream", "aaggregate", "aconvert", "stream", "ProviderHTTPError", "IdleTimeoutError"):
        assert name in ms.__all__
        assert getattr(ms, name) is getattr(maas_stream.io, name)
    for name in ms.__all__:
        assert getattr(ms, name) is not None


def test_importing_the_core_does_not_import_httpx_or_anyio() -> None:
    # The IO layer runs on httpx2; plain httpx and httpx-sse load only when handed their objects.
    code = (
        "import sys, maas_stream as ms; ms.aggregate(b'data: [DONE]\\n\\n', protocol='openai-chat');"
        "assert not {'httpx', 'httpx2', 'anyio', 'httpx_sse', 'websockets'} & set(sys.modules), sorted(sys.modules);"
        "ms.io.aconnect; assert 'httpx2' in sys.modules;"
        "assert not {'httpx', 'httpx_sse'} & set(sys.modules), sorted(sys.modules)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
