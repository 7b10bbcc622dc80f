"""The providers' token-count endpoints: one :class:`~maas_stream._registry.TokenCount` each.

Anthropic ``POST /v1/messages/count_tokens`` (``{"input_tokens": n}``), Gemini
``POST /v1beta/models/{model}:countTokens`` (``{"totalTokens": n}``) and OpenAI Responses
``POST /v1/responses/input_tokens`` (``{"object": "response.input_tokens", "input_tokens":
n}``); Chat Completions has none (the bridge answers its clients with a marked estimate). Each
protocol package declares its own as ``COUNT_TOKENS``; this module only holds the three shapes,
which differ in data, not in logic.

It must not import any protocol package.
"""

from __future__ import annotations

from typing import Any, Final

from .._registry import TokenCount

__all__ = ["ANTHROPIC_COUNT", "GEMINI_COUNT", "RESPONSES_COUNT"]

_ANTHROPIC_FIELDS: Final = frozenset(
    {"model", "messages", "system", "tools", "tool_choice", "thinking", "mcp_servers", "context_management"}
)
"""What ``count_tokens`` accepts (it refuses ``max_tokens``, ``stream`` and sampling)."""

_RESPONSES_DROP: Final = frozenset({"stream", "stream_options", "store", "background", "include"})
"""What ``input_tokens`` does not take of a Responses request."""


def _int_at(answer: Any, key: str) -> int | None:
    value = answer.get(key) if isinstance(answer, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


ANTHROPIC_COUNT: Final = TokenCount(
    url=lambda url: url.rstrip("/") + "/count_tokens",
    request=lambda body: {k: v for k, v in body.items() if k in _ANTHROPIC_FIELDS},
    answer=lambda n: {"input_tokens": n},
    read=lambda answer: _int_at(answer, "input_tokens"),
)

GEMINI_COUNT: Final = TokenCount(
    url=lambda url: url.split("?", 1)[0].rsplit(":", 1)[0] + ":countTokens",
    # The whole request goes as ``generateContentRequest`` so that tools and the system
    # instruction are counted too; the model is named by the URL and by the body (required).
    request=lambda body: {"generateContentRequest": {"model": "models/{model}", **body}},
    answer=lambda n: {"totalTokens": n},
    read=lambda answer: _int_at(answer, "totalTokens"),
)

RESPONSES_COUNT: Final = TokenCount(
    url=lambda url: url.rstrip("/") + "/input_tokens",
    request=lambda body: {k: v for k, v in body.items() if k not in _RESPONSES_DROP},
    answer=lambda n: {"object": "response.input_tokens", "input_tokens": n},
    read=lambda answer: _int_at(answer, "input_tokens"),
)
