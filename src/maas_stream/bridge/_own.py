"""The bridge's answers that open no upstream stream: its own ``GET`` endpoints and token counts.

``GET /health`` (the number of routes), ``GET /metrics`` (Prometheus, behind the bridge key),
each protocol's model listing (``GET /v1/models``..., the routes' model names in that protocol's
shape) and count-tokens: the upstream protocol's own count endpoint when it has one, otherwise
:func:`~maas_stream._request.estimate_input_tokens`, marked as an estimate.

It must not contain protocol logic (listing and count shapes come from the protocols' specs),
route a request or stream an answer (``_app`` and ``_answer`` do).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .._registry import match_model_list
from .._request import estimate_input_tokens
from ..io import StreamIOError
from ._answer import answer_headers
from ._asgi import send_json
from ._failures import upstream_failure
from ._request import Rejected

if TYPE_CHECKING:
    from collections.abc import Mapping

    from .._registry import EndpointMatch
    from ._app import BridgeApp
    from ._asgi import Scope, Send

__all__ = ["count_tokens", "own_endpoint"]


async def own_endpoint(app: BridgeApp, scope: Scope, headers: Mapping[str, str], send: Send) -> None:
    """The bridge's own ``GET`` endpoints: health, metrics, model listings."""
    path = scope["path"].rstrip("/") or "/"
    if path == "/health":
        await send_json(send, 200, {"status": "ok", "routes": len(app.router.routes)})
        return
    if path == "/metrics":
        app.guard.authenticate(None, headers, b"")
        if not app.metrics.enabled:
            raise Rejected(501, "metrics need prometheus-client: pip install 'maas-stream[serve]'")
        data, kind = app.metrics.render()
        await send(
            {"type": "http.response.start", "status": 200, "headers": [(b"content-type", kind.encode())]}
        )
        await send({"type": "http.response.body", "body": data, "more_body": False})
        return
    spec = match_model_list(path, headers)
    if spec is None or spec.models is None:
        raise Rejected(404, f"no bridge endpoint at {scope['path']}")
    app.guard.authenticate(spec, headers, scope.get("query_string", b""))
    await send_json(send, 200, spec.models.body(app.router.models()))


async def count_tokens(app: BridgeApp, match: EndpointMatch, request: Any, send: Send) -> None:
    """Answer a count-tokens request: the upstream's own count, or a marked estimate.

    The converted request goes to the upstream protocol's count endpoint
    (``spec.count_tokens``); an upstream without one (Chat Completions, a recording) gets
    no call, and the answer is :func:`~maas_stream._request.estimate_input_tokens`, marked
    ``x-maas-stream-token-count: estimate``.
    """
    counting = match.spec.count_tokens
    assert counting is not None  # a count endpoint is declared with its counting
    upstream = app.upstream
    count = getattr(upstream, "count_tokens", None)
    n: int | None = None
    if count is not None:
        try:
            n = await count(request.body, model=request.envelope.model)
        except StreamIOError as exc:  # a provider's refusal (ProviderHTTPError) included
            raise upstream_failure(upstream.protocol, exc) from None
    headers = answer_headers(app, len(request.dropped))
    if n is None:
        n = estimate_input_tokens(request.body)
        headers["x-maas-stream-token-count"] = "estimate"
    else:
        headers["x-maas-stream-token-count"] = "upstream"
    await send_json(send, 200, counting.answer(n), headers)
    app.stats.streams += 1
