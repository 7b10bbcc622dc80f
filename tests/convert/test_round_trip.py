"""Round trips A -> B -> A keep text, client function calls and their ids; A -> A keeps all.

Text is compared with refusals folded in (Anthropic and Gemini have no refusal block or part,
so a refusal comes back as text), and calls by name, id and parsed arguments. A call the source cut is not sent to
Gemini (calls go whole), so through Gemini only completed calls come back. The converted
streams' ids are the source's own (synthesized ones included: Gemini calls without an id get
``maas_gc_...`` ids that must survive the trip).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import msgspec
import pytest

import maas_stream as ms
from tests.conftest import corpus, recordings
from tests.convert.test_matrix import PROTOCOLS, WHOLE_CALLS_ONLY, choice0
from tests.protocols.test_openai_responses import reencode_view

DROPS_REFUSALS: set[str] = set()
"""Targets that leave refusals out (none: a target with no refusal field writes it as text)."""

if TYPE_CHECKING:
    from pathlib import Path


def _params() -> list[Any]:
    return [
        pytest.param(src, path, via, id=f"{src}/{path.name}->{via}")
        for src in PROTOCOLS
        for path in recordings(src) + corpus(src)
        for via in PROTOCOLS
        if via != src
    ]


def _args(text: str) -> Any:
    try:
        return json.loads(text or "{}")
    except json.JSONDecodeError:
        return text


def summary(
    resp: ms.Response, *, whole_calls: bool, refusals: bool
) -> tuple[str, list[tuple[str, str, Any]]]:
    parts = choice0(resp)
    kinds: tuple[type[Any], ...] = (ms.TextPart, ms.RefusalPart) if refusals else (ms.TextPart,)
    text = "".join(p.text for p in parts if isinstance(p, kinds))
    calls = [
        (p.id, p.name, _args(p.arguments) if p.status != "incomplete" else None)
        for p in parts
        if isinstance(p, ms.ToolCallPart)
        and p.kind == "function"
        and (p.status != "incomplete" or not whole_calls)
    ]
    return text, calls


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize(("source", "path", "via"), _params())
def test_a_to_b_to_a_keeps_text_calls_and_ids(source: str, path: Path, via: str) -> None:
    data = path.read_bytes()
    original = ms.aggregate(data, protocol=source)
    there = ms.convert(data, to=via, protocol=source, fail_closed=False)
    back = ms.convert(there, to=source, protocol=via)
    again = ms.aggregate(back, protocol=source)
    whole = via in WHOLE_CALLS_ONLY or source in WHOLE_CALLS_ONLY
    refusals = via not in DROPS_REFUSALS
    assert summary(again, whole_calls=whole, refusals=refusals) == summary(
        original, whole_calls=whole, refusals=refusals
    )
    cut_call = any(isinstance(p, ms.ToolCallPart) and p.status == "incomplete" for p in choice0(original))
    if not (whole and cut_call):  # a dropped cut call was what made the response incomplete
        assert again.status == original.status


@pytest.mark.parametrize(
    "path", [pytest.param(p, id=f"{s}/{p.name}") for s in PROTOCOLS for p in recordings(s) + corpus(s)]
)
def test_same_protocol_keeps_everything(path: Path) -> None:
    data = path.read_bytes()
    original = ms.aggregate(data)
    conv = ms.StreamConverter(original.protocol)
    out = conv.feed(data) + conv.finish()
    again = ms.aggregate(out, protocol=original.protocol)
    if original.protocol in WHOLE_CALLS_ONLY and any(
        isinstance(p, ms.ToolCallPart) and p.status == "incomplete" for p in choice0(original)
    ):
        # Gemini sends calls whole: a call the source cut cannot be re-sent; reported, the rest kept.
        assert any("cut" in line for line in map(str, conv.lossy))
        assert summary(again, whole_calls=True, refusals=True) == summary(
            original, whole_calls=True, refusals=True
        )
        return
    assert conv.lossy == []
    if original.protocol == "openai-responses":
        # Usage as the one mapping writes it, and the terminal event's restated bytes: see
        # reencode_view for what a same-protocol re-encode of Responses may differ in.
        assert reencode_view(again, data) == reencode_view(original, data)
        return
    assert msgspec.to_builtins(again) == msgspec.to_builtins(original)
