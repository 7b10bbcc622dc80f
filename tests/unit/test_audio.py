"""Audio for the realtime bridge: streaming resampling (soxr) and G.711 (the ITU tables).

G.711 is checked against the standard library's ``audioop`` (the reference implementation,
removed in Python 3.13; skipped there). Resampling is checked for what a bridge depends on:
exact lengths over a whole stream however it is chunked (odd byte counts included), the same
samples whatever the chunking (no clicks at chunk boundaries), and a tone kept at its pitch.
"""

from __future__ import annotations

import random
import warnings

import numpy as np
import pytest

from maas_stream._audio import (
    AudioConverter,
    Resampler,
    alaw_decode,
    alaw_encode,
    ulaw_decode,
    ulaw_encode,
)
from maas_stream._client_model import AudioFormat

ALL_SAMPLES = np.arange(-32768, 32768, dtype="<i2").tobytes()


def _audioop() -> object:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            import audioop
        except ImportError:
            pytest.skip("audioop (the G.711 reference) is gone from this Python")
    return audioop


def test_g711_matches_the_reference_for_every_sample() -> None:
    audioop = _audioop()
    every_byte = bytes(range(256))
    assert ulaw_encode(ALL_SAMPLES) == audioop.lin2ulaw(ALL_SAMPLES, 2)  # type: ignore[attr-defined]
    assert alaw_encode(ALL_SAMPLES) == audioop.lin2alaw(ALL_SAMPLES, 2)  # type: ignore[attr-defined]
    assert ulaw_decode(every_byte) == audioop.ulaw2lin(every_byte, 2)  # type: ignore[attr-defined]
    assert alaw_decode(every_byte) == audioop.alaw2lin(every_byte, 2)  # type: ignore[attr-defined]


def test_g711_round_trip_is_close_and_one_byte_a_sample() -> None:
    tone = (np.sin(np.arange(8000) * 2 * np.pi * 440 / 8000) * 12000).astype("<i2")
    for encode, decode in ((ulaw_encode, ulaw_decode), (alaw_encode, alaw_decode)):
        coded = encode(tone.tobytes())
        assert len(coded) == 8000
        back = np.frombuffer(decode(coded), dtype="<i2").astype(np.int32)
        # G.711 keeps ~13 bits: the error grows with the level, never past 1/16 of it.
        assert np.all(np.abs(back - tone) <= np.abs(tone.astype(np.int32)) // 16 + 16)


def _tone(rate: int, seconds: float = 1.0, freq: float = 440.0) -> bytes:
    t = np.arange(int(rate * seconds)) / rate
    return (np.sin(2 * np.pi * freq * t) * 10000).astype("<i2").tobytes()


def _chunked(resampler: Resampler, data: bytes, seed: int) -> bytes:
    rng = random.Random(seed)
    out, i = [], 0
    while i < len(data):
        n = rng.randint(1, 4001)
        out.append(resampler.feed(data[i : i + n]))
        i += n
    out.append(resampler.flush())
    return b"".join(out)


@pytest.mark.parametrize(("src", "dst"), [(16000, 24000), (24000, 16000), (24000, 8000), (8000, 24000)])
def test_resampled_length_is_exact_over_a_stream(src: int, dst: int) -> None:
    data = _tone(src)
    for seed in range(3):
        out = _chunked(Resampler(src, dst), data, seed)
        assert len(out) == dst * 2  # one second of PCM16 at the target rate


def _samples(data: bytes) -> np.ndarray[tuple[int], np.dtype[np.int32]]:
    return np.frombuffer(data, dtype="<i2").astype(np.int32)


def test_chunking_does_not_change_the_samples() -> None:
    # libsoxr's int16 output may differ in the last bit (rounding inside its blocks); a click at
    # a chunk boundary would be thousands.
    data = _tone(16000, 0.5)
    whole = Resampler(16000, 24000)
    reference = _samples(whole.feed(data) + whole.flush())
    for seed in range(3):
        chunked = _samples(_chunked(Resampler(16000, 24000), data, seed))
        assert len(chunked) == len(reference)
        assert np.max(np.abs(chunked - reference)) <= 2


def test_a_tone_keeps_its_pitch() -> None:
    out = np.frombuffer(_chunked(Resampler(16000, 24000), _tone(16000, freq=1000.0), 1), dtype="<i2")
    spectrum = np.abs(np.fft.rfft(out.astype(np.float64)))
    peak_hz = np.argmax(spectrum) * 24000 / len(out)
    assert abs(peak_hz - 1000.0) < 2.0


def test_the_same_rate_passes_through_and_keeps_an_odd_byte() -> None:
    r = Resampler(24000, 24000)
    assert r.feed(b"\x01\x02\x03") == b"\x01\x02"
    assert r.feed(b"\x04") == b"\x03\x04"
    assert r.flush() == b""


def test_a_stream_starts_over_after_flush() -> None:
    r = Resampler(16000, 24000)
    first = _samples(r.feed(_tone(16000, 0.1)) + r.flush())
    second = _samples(r.feed(_tone(16000, 0.1)) + r.flush())
    assert len(first) == len(second) == 2400
    assert np.max(np.abs(first - second)) <= 2  # no tail of the first stream in the second


def test_converter_from_realtime_pcm_to_live_and_to_g711() -> None:
    pcm24 = _tone(24000)
    to_live = AudioConverter(AudioFormat(rate=24000), AudioFormat(rate=16000))
    assert len(to_live.feed(pcm24) + to_live.flush()) == 16000 * 2
    to_ulaw = AudioConverter(AudioFormat(rate=24000), AudioFormat(encoding="g711_ulaw", rate=8000))
    assert len(to_ulaw.feed(pcm24) + to_ulaw.flush()) == 8000
    from_alaw = AudioConverter(AudioFormat(encoding="g711_alaw", rate=8000), AudioFormat(rate=16000))
    assert len(from_alaw.feed(alaw_encode(_tone(8000))) + from_alaw.flush()) == 16000 * 2
    same = AudioConverter(AudioFormat(), AudioFormat())
    assert same.identity
    assert same.feed(b"abc") == b"abc"


def test_rates_must_be_positive() -> None:
    from maas_stream import LocalProtocolError

    with pytest.raises(LocalProtocolError, match="positive"):
        Resampler(0, 16000)
