"""A realtime session's configuration, mapped between OpenAI Realtime and Google Live (sans-IO).

The :class:`~maas_stream.SessionBridge` keeps the client's configuration as one canonical
:class:`~maas_stream._client_model.SessionConfig`; this module owns what is done with it:

* :func:`merge`: a client's update (Realtime ``session.update``, Live ``setup``) over the
  configuration so far (a field the update leaves ``None`` stays as it was);
* :func:`live_setup`: the configuration as a Live ``setup`` (voice through :data:`VOICES`);
* :func:`realtime_update`: the configuration as a Realtime ``session.update`` (voice back
  through :data:`VOICES`, audio at Realtime's PCM16 rate);
* :func:`session_object`: the ``session`` of a Realtime ``session.created`` /
  ``session.updated`` the bridge writes to a Realtime client;
* the defaults: :data:`REALTIME_DEFAULT` (what a Realtime client is told before it configures
  anything), :class:`SampleRates` (each side's PCM16 rate) and :data:`SESSION_PROTOCOLS`.

A field with no counterpart is appended to the caller's ``lost`` list (the bridge refuses or
reports it); it is never replaced silently. It must not decide refusals, hold session state,
translate server events or do IO.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

import msgspec

from ._client_model import AudioFormat, SessionConfig, Transcription, TurnDetection
from .protocols._names import GOOGLE_LIVE, OPENAI_REALTIME
from .protocols.google_live import _client as live
from .protocols.openai_realtime import _client as realtime

__all__ = [
    "REALTIME_DEFAULT",
    "SESSION_PROTOCOLS",
    "VOICES",
    "SampleRates",
    "live_setup",
    "merge",
    "realtime_update",
    "session_object",
]

SESSION_PROTOCOLS: Final = frozenset({OPENAI_REALTIME, GOOGLE_LIVE})

VOICES: Final[dict[str, str]] = {
    "alloy": "Puck",
    "ash": "Charon",
    "ballad": "Orus",
    "coral": "Aoede",
    "echo": "Fenrir",
    "sage": "Kore",
    "shimmer": "Leda",
    "verse": "Zephyr",
    "marin": "Despina",
    "cedar": "Algenib",
}
"""Realtime voice → Live prebuilt voice, one to one (each default, ``alloy`` and ``Puck``, is the
other's counterpart). A voice outside this table has no counterpart: it is refused (or dropped
with ``drop_params``), never replaced silently by another."""

_LIVE_VOICES: Final = {live_voice.lower(): rt for rt, live_voice in VOICES.items()}


@dataclass(frozen=True)
class SampleRates:
    """The PCM16 sample rates of each side (the protocols' documented rates by default)."""

    live_input: int = 16000
    """What a Live upstream is sent (``audio/pcm;rate=16000``)."""
    live_output: int = 24000
    """What Live writes, and what a Live client is sent."""
    realtime: int = 24000
    """Realtime's PCM16 rate, both ways."""


REALTIME_DEFAULT: Final = SessionConfig(
    instructions="",
    tools=[],
    tool_choice="auto",
    modalities=["audio"],
    voice="alloy",
    input_format=AudioFormat(),
    output_format=AudioFormat(),
    input_transcription=Transcription(enabled=False),
    turn_detection=TurnDetection(mode="server_vad"),
)
"""What a Realtime client is told the session is before it says anything (``session.created``)."""

_CONFIG_FIELDS: Final = tuple(
    f for f in SessionConfig.__struct_fields__ if f not in ("event_id", "unsupported")
)


def merge(base: SessionConfig, update: SessionConfig) -> SessionConfig:
    """``base`` with every field ``update`` says (not ``None``) replaced."""
    changes = {name: getattr(update, name) for name in _CONFIG_FIELDS if getattr(update, name) is not None}
    return msgspec.structs.replace(base, **changes) if changes else base


def live_setup(c: SessionConfig, *, model: str, lost: list[str]) -> dict[str, Any]:
    """The Live ``setup`` message of ``c`` for ``model``; what it cannot carry goes to ``lost``."""
    voice = c.voice
    if voice is not None:
        mapped = VOICES.get(voice.lower())
        if mapped is None:
            lost.append("voice")
        voice = mapped
    upstream = msgspec.structs.replace(
        c, voice=voice, input_format=None, output_format=None, modalities=c.modalities or ["audio"]
    )
    return live.encode_client(upstream, model=model, lost=lost)[0]


def realtime_update(c: SessionConfig, *, rate: int, lost: list[str]) -> dict[str, Any]:
    """The Realtime ``session.update`` of ``c`` (PCM16 at ``rate`` both ways); losses to ``lost``."""
    voice = c.voice
    if voice is not None:
        mapped = _LIVE_VOICES.get(voice.lower())
        if mapped is None:
            lost.append("voice")
        voice = mapped
    fmt = AudioFormat(rate=rate)
    upstream = msgspec.structs.replace(
        c,
        voice=voice,
        input_format=fmt,
        output_format=fmt,
        modalities=c.modalities or ["audio"],
        output_transcription=None,
    )
    return realtime.encode_client(upstream, lost=lost)[0]


def session_object(c: SessionConfig, *, model: str, beta: bool) -> dict[str, Any]:
    """The ``session`` of a Realtime ``session.created`` / ``session.updated`` for ``c``."""
    session = realtime.encode_client(c, beta=beta)[0]["session"]
    if not beta:  # (the beta types take only OpenAI model names; GA has no session id)
        session["model"] = model
        audio = session.setdefault("audio", {})
        audio.setdefault("input", {}).setdefault("turn_detection", None)
        audio["input"].setdefault("transcription", None)
    return dict(session)
