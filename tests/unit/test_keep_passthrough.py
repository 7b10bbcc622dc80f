"""``StreamAggregator(keep_passthrough=False)``: a session's pass-through messages counted, not kept.

A relay's record (the bridge) needs a session's responses and counts; keeping every relayed
message for the session's life would grow its memory with every message. Everything else of
the session must be exactly what the default keeps.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import maas_stream as ms
from maas_stream._stream_aggregator import chunks_of

ROOT = Path(__file__).resolve().parents[2] / "recordings"
SESSIONS = sorted(p for proto in ("openai-realtime", "google-live") for p in (ROOT / proto).glob("*.jsonl"))


def _session(data: bytes, protocol: str, keep: bool, emit: bool) -> ms.Session:
    agg = ms.StreamAggregator(protocol, emit=emit, keep_passthrough=keep)
    for chunk in chunks_of(data):
        agg.feed(chunk)
    agg.finish()
    return agg.session()


def _passthrough(entry: object) -> bool:
    return isinstance(entry, ms.SessionEvent) and entry.kind in ("client", "server")


@pytest.mark.parametrize("emit", [False, True], ids=["direct", "events"])
@pytest.mark.parametrize("path", SESSIONS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_forgotten_passthrough_changes_nothing_else(path: Path, emit: bool) -> None:
    data = path.read_bytes()
    protocol = path.parent.name
    kept = _session(data, protocol, keep=True, emit=emit)
    lean = _session(data, protocol, keep=False, emit=emit)
    assert lean.responses == kept.responses
    assert lean.unknown == kept.unknown  # still counted, by type
    assert [e for e in lean.events if not _passthrough(e)] == [e for e in kept.events if not _passthrough(e)]
    assert not any(_passthrough(e) for e in lean.events)


def test_some_recording_has_passthrough_messages() -> None:
    """The comparison above is not empty: the recordings hold pass-through messages to forget."""
    total = 0
    for path in SESSIONS:
        kept = _session(path.read_bytes(), path.parent.name, keep=True, emit=False)
        total += sum(1 for e in kept.events if _passthrough(e))
    assert total > 0


def test_the_default_keeps_them() -> None:
    """``aggregate_session`` (the default) keeps pass-through messages as session events."""
    found = False
    for path in SESSIONS:
        session = ms.aggregate_session(path.read_bytes(), protocol=path.parent.name)
        found = found or any(_passthrough(e) for e in session.events)
    assert found


@pytest.mark.parametrize("keep", [True, False])
def test_only_unknown_types_are_logged_as_unknown(keep: bool, caplog: pytest.LogCaptureFixture) -> None:
    """A pass-through message is a type the protocol knows: counted, never logged as unknown.

    A voice session sends dozens of client audio messages a second; a type the library does not
    know is still logged once per message, as before.
    """
    agg = ms.StreamAggregator("openai-realtime", keep_passthrough=keep)
    caplog.set_level("INFO", logger="maas_stream")
    agg.feed_message('{"type":"session.created","event_id":"e0","session":{"model":"m"}}')
    for _ in range(3):
        agg.feed_message('{"type":"input_audio_buffer.append","audio":"AAAA"}', direction="client")
        agg.feed_message('{"type":"rate_limits.updated","event_id":"e1","rate_limits":[]}')
    agg.feed_message('{"type":"some.new_event","event_id":"e2"}')
    agg.finish()
    unknown = agg.session().unknown
    assert unknown["client.input_audio_buffer.append"] == 3
    assert unknown["rate_limits.updated"] == 3
    assert unknown["some.new_event"] == 1
    logged = [r.getMessage() for r in caplog.records if "unknown" in r.getMessage()]
    assert logged == ["unknown openai-realtime type 'some.new_event' (model m)"]
