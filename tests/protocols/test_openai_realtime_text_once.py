"""The Realtime encoder lists a closed part's text, encoded once, in every later event."""

from __future__ import annotations

import json

from maas_stream import events
from maas_stream._model import TextPart
from maas_stream.protocols.openai_realtime._encode import StreamEncoder


def _lines(evs: list[events.Event]) -> list[dict[str, object]]:
    enc = StreamEncoder()
    out = b"".join(enc.encode(e) for e in evs) + enc.finish()
    return [json.loads(line)["msg"] for line in out.splitlines()]


def test_a_closed_part_lists_its_streamed_text_everywhere() -> None:
    text = ['a "quoted" ', "line\n", "and é\u2028 more"]
    evs: list[events.Event] = [
        events.ResponseStart(id="r1", protocol="gemini"),
        events.MessageStart(message=0, role="assistant"),
        events.PartStart(message=0, part=0, value=TextPart(text="")),
        *(events.TextDelta(message=0, part=0, text=t) for t in text),
        events.PartDone(message=0, part=0, value=TextPart(text="".join(text))),
        events.MessageDone(message=0),
        events.ResponseDone(status="completed"),
    ]
    msgs = _lines(evs)
    whole = "".join(text)
    deltas = [m for m in msgs if m["type"] == "response.output_text.delta"]
    assert [m["delta"] for m in deltas] == text
    assert [m["event_id"] for m in deltas] == ["event_maas_4", "event_maas_5", "event_maas_6"]
    by_type = {m["type"]: m for m in msgs}
    assert by_type["response.output_text.done"]["text"] == whole
    assert by_type["response.content_part.done"]["part"] == {"type": "text", "text": whole}
    item = by_type["response.output_item.done"]["item"]
    assert item["content"] == [{"type": "output_text", "text": whole}]  # type: ignore[index]
    assert by_type["response.done"]["response"]["output"] == [item]  # type: ignore[index]
