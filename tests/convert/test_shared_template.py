"""Templates shared between streams (``_template.shared_template``) and the Responses hot writer.

A shared template is made once per frame for every stream, so it must be the template of exactly
its body: bodies that differ in any value, type or key order get templates of their own.
"""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

import maas_stream as ms
from maas_stream.protocols import _template
from maas_stream.protocols._template import HOLE, shared_template, template

_json = msgspec.json.Encoder()


def _sse(body: Any) -> bytes:
    return b"data: " + _json.encode(body) + b"\n\n"


def test_an_equal_body_gets_the_one_shared_template() -> None:
    first = shared_template("k", _sse, {"id": "shared-a", "delta": HOLE[0]}, 1)
    again = shared_template("k", _sse, {"id": "shared-a", "delta": HOLE[0]}, 1)
    assert again is first
    assert first == template(_sse, {"id": "shared-a", "delta": HOLE[0]}, 1)


@pytest.mark.parametrize(
    "other",
    [
        {"id": "shared-b", "delta": HOLE[0]},  # another value
        {"id": 1, "delta": HOLE[0]},  # another type
        {"id": True, "delta": HOLE[0]},  # equal to 1, encoded otherwise
        {"delta": HOLE[0], "id": "shared-a"},  # another key order
        {"id": "shared-a", "delta": HOLE[0], "logprobs": []},  # another key
    ],
)
def test_a_different_body_gets_its_own_template(other: dict[str, Any]) -> None:
    shared_template("k", _sse, {"id": "shared-a", "delta": HOLE[0]}, 1)
    assert shared_template("k", _sse, other, 1) == template(_sse, other, 1)


def test_templates_past_the_limit_are_made_but_not_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_template, "_SHARED", {})
    monkeypatch.setattr(_template, "SHARED_MAX", 2)
    made = [shared_template("k", _sse, {"n": n, "delta": HOLE[0]}, 1) for n in range(4)]
    assert len(_template._SHARED) == 2
    assert made[3] == template(_sse, {"n": 3, "delta": HOLE[0]}, 1)


def _responses(*deltas: tuple[int, str]) -> bytes:
    item = {"type": "message", "id": "msg_1", "role": "assistant", "status": "in_progress", "content": []}
    part = {"type": "output_text", "text": "", "annotations": []}
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": {"id": "r", "status": "in_progress", "output": []}},
        {"type": "response.output_item.added", "output_index": 0, "item": item},
        *(
            {
                "type": "response.content_part.added",
                "item_id": "msg_1",
                "output_index": 0,
                "content_index": i,
                "part": part,
            }
            for i in (0, 1)
        ),
        *(
            {
                "type": "response.output_text.delta",
                "item_id": "msg_1",
                "output_index": 0,
                "content_index": i,
                "delta": t,
            }
            for i, t in deltas
        ),
    ]
    return b"".join(b"event: " + e["type"].encode() + b"\ndata: " + _json.encode(e) + b"\n\n" for e in events)


def test_deltas_alternating_between_parts_go_to_their_own_parts() -> None:
    # The encoder keeps the writer of the last delta's part: a delta of another part must not use it.
    out = ms.convert(_responses((0, "a"), (1, "x"), (0, "b"), (1, "y"), (0, "c")), to="openai-responses")
    deltas = [
        (event["content_index"], event["delta"])
        for event in (
            msgspec.json.decode(line[6:]) for line in out.split(b"\n") if line.startswith(b"data: ")
        )
        if event["type"] == "response.output_text.delta"
    ]
    assert deltas == [(0, "a"), (1, "x"), (0, "b"), (1, "y"), (0, "c")]


def test_a_session_split_into_streams_leaves_the_shared_empty_list_empty() -> None:
    from maas_stream import _convert
    from tests.conftest import RECORDINGS

    source = next((RECORDINGS / "google-live").glob("*.jsonl"))
    ms.convert_session(source.read_bytes(), to="openai-chat", fail_closed=False)
    assert _convert._NO_STREAMS == []
    assert ms.StreamConverter("openai-chat").streams == []
