"""An HTTP upstream's request URL: the model quoted into the template, made once per model.

The made URLs are kept (bounded) per URL template and model; a changed ``url`` or another model
gets its own, never a stale one.
"""

from __future__ import annotations

import httpx
import pytest

from maas_stream import ProviderHTTPError
from maas_stream.bridge import HTTPUpstream, _upstream

pytestmark = pytest.mark.anyio

TEMPLATE = "https://upstream.test/v1beta/models/{model}:streamGenerateContent?alt=sse"


def _upstream_seeing(seen: list[str], model: str | None = None) -> HTTPUpstream:
    async def handler(request: httpx.Request) -> httpx.Response:
        seen.append(str(request.url))
        return httpx.Response(500, json={"error": {"message": "no"}})

    client = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    return HTTPUpstream("gemini", TEMPLATE, api_key="k" * 12, client=client, model=model)


async def _open(upstream: HTTPUpstream, model: str) -> None:
    with pytest.raises(ProviderHTTPError):
        async with upstream.open({"contents": []}, model=model):
            pass


async def test_each_model_and_template_gets_its_own_url() -> None:
    seen: list[str] = []
    upstream = _upstream_seeing(seen)
    await _open(upstream, "gemini-a")
    await _open(upstream, "gemini-b")
    await _open(upstream, "gemini-a")
    await _open(upstream, "a/b")  # quoted whole: no other path of the provider
    upstream.url = "https://other.test/models/{model}:go?alt=sse"
    await _open(upstream, "gemini-a")
    assert seen == [
        "https://upstream.test/v1beta/models/gemini-a:streamGenerateContent?alt=sse",
        "https://upstream.test/v1beta/models/gemini-b:streamGenerateContent?alt=sse",
        "https://upstream.test/v1beta/models/gemini-a:streamGenerateContent?alt=sse",
        "https://upstream.test/v1beta/models/a%2Fb:streamGenerateContent?alt=sse",
        "https://other.test/models/gemini-a:go?alt=sse",
    ]


async def test_the_upstreams_own_model_wins_over_the_clients() -> None:
    seen: list[str] = []
    upstream = _upstream_seeing(seen, model="pinned")
    await _open(upstream, "gemini-a")
    assert seen == ["https://upstream.test/v1beta/models/pinned:streamGenerateContent?alt=sse"]


async def test_the_kept_urls_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_upstream, "_URLS", 3)
    seen: list[str] = []
    upstream = _upstream_seeing(seen)
    for i in range(7):
        await _open(upstream, f"m{i}")
        assert len(upstream._urls) <= 3
    assert seen[-1] == "https://upstream.test/v1beta/models/m6:streamGenerateContent?alt=sse"
