"""Raw mono audio for the realtime bridge: resampling PCM16 and G.711 μ-law / A-law ↔ PCM16.

Google Live takes PCM16 input at 16 kHz and writes PCM16 at 24 kHz; OpenAI Realtime takes and
writes PCM16 at 24 kHz, or G.711 (8 kHz). A bridge between them converts every chunk, and a
conversation's audio arrives in many small chunks: :class:`Resampler` keeps the resampler's
state from one chunk to the next (``soxr.ResampleStream``), so chunk boundaries do not click and
the output length follows the input's exactly (a chunk split inside a sample is held). The
resampling is libsoxr's (the ``soxr`` package, the ``realtime`` extra), not ours; G.711 is the
ITU-T table, applied with numpy lookups.

Sans-IO and synchronous. ``soxr`` and ``numpy`` are imported on first use, with a clear error
when the extra is not installed.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

from ._exceptions import LocalProtocolError

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from ._client_model import AudioFormat

__all__ = ["AudioConverter", "Resampler", "alaw_decode", "alaw_encode", "ulaw_decode", "ulaw_encode"]

_EXTRA = "audio conversion needs the 'realtime' extra: pip install 'maas-stream[realtime]' (soxr, numpy)"


def _numpy() -> Any:
    try:
        import numpy
    except ImportError as exc:  # pragma: no cover - the extra is installed in the tests
        raise LocalProtocolError(_EXTRA) from exc
    return numpy


def _soxr() -> Any:
    try:
        import soxr  # type: ignore[import-untyped]
    except ImportError as exc:  # pragma: no cover - the extra is installed in the tests
        raise LocalProtocolError(_EXTRA) from exc
    return soxr


# ---------------------------------------------------------------------- G.711 (ITU-T G.711 tables)


@functools.cache
def _ulaw_table() -> npt.NDArray[np.int16]:
    xp = _numpy()
    u = ~xp.arange(256, dtype=xp.int32) & 0xFF
    exponent = (u >> 4) & 0x07
    mantissa = u & 0x0F
    magnitude = (((mantissa << 3) + 0x84) << exponent) - 0x84
    out: npt.NDArray[np.int16] = xp.where(u & 0x80, -magnitude, magnitude).astype(xp.int16)
    return out


@functools.cache
def _alaw_table() -> npt.NDArray[np.int16]:
    xp = _numpy()
    a = xp.arange(256, dtype=xp.int32) ^ 0x55
    exponent = (a >> 4) & 0x07
    mantissa = a & 0x0F
    magnitude = xp.where(
        exponent == 0, (mantissa << 4) + 8, ((mantissa << 4) + 0x108) << xp.maximum(exponent - 1, 0)
    )
    out: npt.NDArray[np.int16] = xp.where(a & 0x80, magnitude, -magnitude).astype(xp.int16)
    return out


def _top_bit(values: Any) -> Any:
    """The index of the highest set bit of each positive value (0 for 0)."""
    xp = _numpy()
    return xp.floor(xp.log2(xp.maximum(values, 1))).astype(xp.int32)


@functools.cache
def _ulaw_encoder() -> npt.NDArray[np.uint8]:
    xp = _numpy()
    s = xp.arange(-32768, 32768, dtype=xp.int32) >> 2  # 14-bit, as G.711 defines it
    mask = xp.where(s < 0, 0x7F, 0xFF)
    magnitude = xp.minimum(xp.abs(s), 8159) + 33
    segment = xp.maximum(_top_bit(magnitude) - 5, 0)
    value = xp.where(
        segment >= 8, 0x7F, (xp.minimum(segment, 7) << 4) | ((magnitude >> (segment + 1)) & 0x0F)
    )
    out: npt.NDArray[np.uint8] = ((value ^ mask) & 0xFF).astype(xp.uint8)
    return out


@functools.cache
def _alaw_encoder() -> npt.NDArray[np.uint8]:
    xp = _numpy()
    s = xp.arange(-32768, 32768, dtype=xp.int32)
    sign = xp.where(s >= 0, 0x80, 0)
    magnitude = xp.minimum(xp.where(s >= 0, s, -s - 1), 32767) >> 3
    exponent = xp.where(magnitude >= 32, xp.clip(_top_bit(magnitude) - 4, 1, 7), 0)
    mantissa = xp.where(exponent == 0, magnitude >> 1, magnitude >> exponent) & 0x0F
    out: npt.NDArray[np.uint8] = ((sign | (exponent << 4) | mantissa) ^ 0x55).astype(xp.uint8)
    return out


def ulaw_decode(data: bytes) -> bytes:
    """G.711 μ-law bytes → PCM16 little-endian (two bytes per input byte)."""
    xp = _numpy()
    return bytes(_ulaw_table()[xp.frombuffer(data, dtype=xp.uint8)].astype("<i2").tobytes())


def alaw_decode(data: bytes) -> bytes:
    """G.711 A-law bytes → PCM16 little-endian (two bytes per input byte)."""
    xp = _numpy()
    return bytes(_alaw_table()[xp.frombuffer(data, dtype=xp.uint8)].astype("<i2").tobytes())


def ulaw_encode(pcm: bytes) -> bytes:
    """PCM16 little-endian → G.711 μ-law (one byte per sample; an odd last byte is ignored)."""
    xp = _numpy()
    samples = xp.frombuffer(pcm[: len(pcm) & ~1], dtype="<i2").astype(xp.int32) + 32768
    return bytes(_ulaw_encoder()[samples].tobytes())


def alaw_encode(pcm: bytes) -> bytes:
    """PCM16 little-endian → G.711 A-law (one byte per sample; an odd last byte is ignored)."""
    xp = _numpy()
    samples = xp.frombuffer(pcm[: len(pcm) & ~1], dtype="<i2").astype(xp.int32) + 32768
    return bytes(_alaw_encoder()[samples].tobytes())


# ---------------------------------------------------------------------- resampling


class Resampler:
    """Streaming PCM16 (mono, little-endian) resampling, one instance per audio stream.

    :meth:`feed` takes chunks of any size (a chunk may end inside a sample: the odd byte waits
    for the next one) and returns what the resampler produced so far; :meth:`flush` returns the
    rest at the end of the stream (a turn). Over a whole stream the output holds
    ``round(samples * out_rate / in_rate)`` samples.

    Args:
        in_rate: The input sample rate (Hz).
        out_rate: The output sample rate (Hz).

    Raises:
        LocalProtocolError: The ``realtime`` extra (soxr, numpy) is not installed, or a rate is
            not positive.
    """

    __slots__ = ("_carry", "_stream", "in_rate", "out_rate")

    def __init__(self, in_rate: int, out_rate: int) -> None:
        if in_rate <= 0 or out_rate <= 0:
            raise LocalProtocolError(f"sample rates must be positive, not {in_rate} → {out_rate}")
        self.in_rate = in_rate
        self.out_rate = out_rate
        self._carry = b""
        self._stream: Any = None
        if in_rate != out_rate:
            self._stream = _soxr().ResampleStream(in_rate, out_rate, 1, dtype="int16")

    def feed(self, pcm: bytes) -> bytes:
        """Resample one chunk; return the samples ready so far (maybe fewer, the filter's delay)."""
        data = self._carry + pcm if self._carry else pcm
        cut = len(data) & ~1
        self._carry = data[cut:]
        data = data[:cut]
        if self._stream is None:
            return data
        xp = _numpy()
        samples = xp.frombuffer(data, dtype="<i2")
        return bytes(self._stream.resample_chunk(samples).astype("<i2").tobytes())

    def flush(self) -> bytes:
        """End the stream: return the samples the filter still holds, and start over."""
        self._carry = b""
        if self._stream is None:
            return b""
        xp = _numpy()
        out = bytes(
            self._stream.resample_chunk(xp.zeros(0, dtype=xp.int16), last=True).astype("<i2").tobytes()
        )
        self._stream.clear()
        return out


class AudioConverter:
    """Convert one audio stream between formats as it goes: decode G.711, resample, encode G.711.

    Args:
        source: The format the chunks arrive in.
        target: The format to write.
    """

    __slots__ = ("_resampler", "source", "target")

    def __init__(self, source: AudioFormat, target: AudioFormat) -> None:
        self.source = source
        self.target = target
        self._resampler = Resampler(source.rate, target.rate)

    @property
    def identity(self) -> bool:
        """Whether the two formats are the same (chunks pass unchanged)."""
        return self.source == self.target

    def feed(self, data: bytes) -> bytes:
        """Convert one chunk; return the converted audio ready so far."""
        if self.identity:
            return data
        return self._encode(self._resampler.feed(self._decode(data)))

    def flush(self) -> bytes:
        """End the stream (a turn): return the rest of the converted audio."""
        if self.identity:
            return b""
        return self._encode(self._resampler.flush())

    def _decode(self, data: bytes) -> bytes:
        match self.source.encoding:
            case "g711_ulaw":
                return ulaw_decode(data)
            case "g711_alaw":
                return alaw_decode(data)
            case _:
                return data

    def _encode(self, pcm: bytes) -> bytes:
        match self.target.encoding:
            case "g711_ulaw":
                return ulaw_encode(pcm)
            case "g711_alaw":
                return alaw_encode(pcm)
            case _:
                return pcm
