"""Observability (``bridge/_metrics.py``): ``/health``, Prometheus ``/metrics``, one log line per request.

The counters are read back from the app's own registry and from the ``/metrics`` text; the
expected token and unknown-type counts come from ``ms.aggregate`` of the recording served.
"""

from __future__ import annotations

import logging
import sys
from typing import TYPE_CHECKING, Any

import openai
import pytest
from prometheus_client.parser import text_string_to_metric_families

import maas_stream as ms
from maas_stream.bridge import BridgeApp, Guard, Metrics, RecordingUpstream, Route, create_app
from tests.bridge.test_auth import HI, anthropic_sdk, asgi, openai_sdk
from tests.conftest import RECORDINGS

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = pytest.mark.anyio

THINKING = RECORDINGS / "anthropic/thinking_parallel_tools.sse"
UNKNOWN = RECORDINGS / "anthropic/unknown_types.sse"
MIDSTREAM_ERROR = RECORDINGS / "anthropic/error_midstream.sse"
KEY = "bridge-key-0123456789"


def sample(app: BridgeApp, name: str, **labels: str) -> float:
    value = app.metrics.registry.get_sample_value(name, labels)
    return value or 0.0


def routed(**guard: Any) -> BridgeApp:
    routes = [
        Route("think", RecordingUpstream(THINKING)),
        Route("odd", RecordingUpstream(UNKNOWN)),
        Route("broken", RecordingUpstream(MIDSTREAM_ERROR)),
    ]
    return create_app(routes=routes, guard=Guard(**guard) if guard else None)


async def test_health_answers_without_a_key() -> None:
    app = routed(keys=(KEY,))
    async with asgi(app) as client:
        response = await client.get("http://bridge/health")
    assert response.status_code == 200
    assert response.json() == {"status": "ok", "routes": 3}


async def test_requests_ttfb_duration_tokens_and_drops_are_counted() -> None:
    app = routed()
    usage = ms.aggregate(THINKING.read_bytes()).usage
    assert usage is not None
    assert usage.input_tokens
    assert usage.output_tokens
    async with openai_sdk(app, "k").chat.completions.stream(model="think", messages=HI) as stream:
        await stream.get_final_completion()
    await openai_sdk(app, "k").chat.completions.create(model="think", messages=HI)  # non-streaming
    labels = {"client": "openai-chat", "route": "think"}
    assert sample(app, "maas_stream_requests_total", **labels, status="200") == 2
    assert sample(app, "maas_stream_time_to_first_byte_seconds_count", **labels) == 2
    assert sample(app, "maas_stream_request_duration_seconds_count", **labels) == 2
    assert sample(app, "maas_stream_tokens_total", route="think", direction="in") == 2 * usage.input_tokens
    assert sample(app, "maas_stream_tokens_total", route="think", direction="out") == 2 * usage.output_tokens
    # Anthropic thinking has no place in Chat: counted by kind, as in app.stats.
    assert sample(app, "maas_stream_drops_total", kind="reasoning") == app.stats.dropped["reasoning"] > 0
    assert sample(app, "maas_stream_in_flight_requests") == 0


async def test_unknown_provider_types_are_counted_by_provider_and_model() -> None:
    app = routed()
    reference = ms.aggregate(UNKNOWN.read_bytes())
    assert reference.unknown
    await anthropic_sdk(app, "k").messages.create(model="odd", max_tokens=5, messages=HI)
    for provider_type, count in reference.unknown.items():
        got = sample(
            app,
            "maas_stream_unknown_types_total",
            provider="anthropic",
            model=reference.model or "",
            type=provider_type,
        )
        assert got == count, provider_type


async def test_errors_by_kind() -> None:
    app = routed(keys=(KEY,))
    async with asgi(app) as client:
        await client.post("http://bridge/v1/chat/completions", json={"model": "think", "messages": HI})
        await client.post(
            "http://bridge/v1/chat/completions",
            content=b"{}",
            headers={"authorization": f"Bearer {KEY}", "content-type": "text/plain"},
        )
        await client.post(
            "http://bridge/v1/chat/completions",
            json={"model": "nothing-here", "messages": HI},
            headers={"authorization": f"Bearer {KEY}"},
        )
        broken = await client.post(
            "http://bridge/v1/chat/completions",
            json={"model": "broken", "messages": HI, "stream": True},
            headers={"authorization": f"Bearer {KEY}"},
        )
    assert broken.status_code == 200  # streamed: the error is in the stream
    for kind in ("auth", "content_type", "not_found", "upstream_stream_error"):
        assert sample(app, "maas_stream_errors_total", kind=kind) == 1, kind
    assert sample(app, "maas_stream_requests_total", client="openai-chat", route="", status="401") == 1


async def test_metrics_endpoint_serves_prometheus_text_behind_the_key() -> None:
    app = routed(keys=(KEY,))
    async with asgi(app) as client:
        await client.post(
            "http://bridge/v1/chat/completions",
            json={"model": "think", "messages": HI},
            headers={"authorization": f"Bearer {KEY}"},
        )
        denied = await client.get("http://bridge/metrics")
        response = await client.get("http://bridge/metrics", headers={"authorization": f"Bearer {KEY}"})
    assert denied.status_code == 401
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    families = {f.name: f for f in text_string_to_metric_families(response.text)}
    requests = families["maas_stream_requests"]
    assert any(
        s.labels == {"client": "openai-chat", "route": "think", "status": "200"} and s.value == 1
        for s in requests.samples
    )
    for name in (
        "maas_stream_errors",
        "maas_stream_time_to_first_byte_seconds",
        "maas_stream_request_duration_seconds",
        "maas_stream_tokens",
        "maas_stream_drops",
        "maas_stream_unknown_types",
        "maas_stream_fallbacks",
        "maas_stream_in_flight_requests",
    ):
        assert name in families, name


async def test_without_prometheus_client_metrics_are_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "prometheus_client", None)
    metrics = Metrics()
    assert not metrics.enabled
    app = BridgeApp(routed().router, metrics=metrics)
    chat = await openai_sdk(app, "k").chat.completions.create(model="think", messages=HI)
    assert chat.choices[0].message.content  # the bridge works without them
    async with asgi(app) as client:
        response = await client.get("http://bridge/metrics")
    assert response.status_code == 501
    assert "prometheus-client" in response.json()["error"]["message"]


# ---------------------------------------------------------------------- the log line


def access_lines(caplog: pytest.LogCaptureFixture) -> list[dict[str, Any]]:
    return [r.exchange for r in caplog.records if r.name == "maas_stream.bridge.access"]  # type: ignore[attr-defined]


async def test_one_log_line_per_request_with_route_status_drops_and_reason(
    caplog: pytest.LogCaptureFixture,
) -> None:
    app = routed(keys=(KEY,))
    with caplog.at_level(logging.INFO, logger="maas_stream"):
        async with openai_sdk(app, KEY).chat.completions.stream(model="think", messages=HI, seed=1) as stream:
            await stream.get_final_completion()
        with pytest.raises(openai.AuthenticationError):
            await openai_sdk(app, "wrong-key-00").chat.completions.create(model="think", messages=HI)
    served, denied = access_lines(caplog)
    assert served["route"] == "think"
    assert served["client"] == "openai-chat"
    assert served["upstream"] == "anthropic"
    assert served["status"] == 200
    assert served["peer"]  # the client's address, as the server saw it
    assert served["model"] == "think"
    assert served["drops"] == sum(app.stats.dropped.values()) >= 2  # `seed`, and the reasoning
    assert served["tokens_out"] > 0
    assert "ttfb_ms" in served
    assert "error" not in served
    assert denied["status"] == 401
    assert denied["error"] == "auth"
    assert "invalid bridge key" in denied["reason"]
    assert denied["route"] is None  # refused before routing
    text = " ".join(r.getMessage() for r in caplog.records)
    assert KEY not in text
    assert "wrong-key-00" not in text


async def test_each_drop_is_logged_once(caplog: pytest.LogCaptureFixture) -> None:
    app = routed()
    with caplog.at_level(logging.WARNING, logger="maas_stream"):
        async with openai_sdk(app, "k").chat.completions.stream(model="think", messages=HI) as stream:
            await stream.get_final_completion()
        streamed = [r.getMessage() for r in caplog.records if "dropped" in r.getMessage()]
        caplog.clear()
        await openai_sdk(app, "k").chat.completions.create(model="think", messages=HI)
        answered = [r.getMessage() for r in caplog.records if "dropped" in r.getMessage()]
    for lines in (streamed, answered):
        whats = [line.split("dropped ", 1)[1] for line in lines]
        assert any("reasoning" in w for w in whats)
        assert len(whats) == len(set(whats))  # no drop twice


async def test_health_and_metrics_polls_log_at_debug_only(caplog: pytest.LogCaptureFixture) -> None:
    app = routed()
    with caplog.at_level(logging.INFO, logger="maas_stream"):
        async with asgi(app) as client:
            await client.get("http://bridge/health")
            await client.get("http://bridge/metrics")
    assert access_lines(caplog) == []
    with caplog.at_level(logging.DEBUG, logger="maas_stream"):
        async with asgi(app) as client:
            await client.get("http://bridge/health")
    assert [line["path"] for line in access_lines(caplog)] == ["/health"]


def test_multiprocess_collection_reads_the_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Each worker writes its values under PROMETHEUS_MULTIPROC_DIR; any worker's /metrics sums them.
    prometheus_client = pytest.importorskip("prometheus_client")
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(tmp_path))
    metrics = Metrics()
    data, kind = metrics.render()
    assert kind == prometheus_client.CONTENT_TYPE_LATEST
    assert isinstance(data, bytes)
