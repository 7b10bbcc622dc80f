"""The fuzz contract in CI (a short, fixed budget): every mutated input of every protocol ends in
a result or in the ``MaasStreamError`` it deserves (``tests/fuzz/harness.py`` says which).

Hypothesis draws the seed of each input (derandomized, no example database, so CI runs the same
inputs every time); ``scripts/fuzz.py --inputs N`` runs the long version. Protocols whose
inputs still break the contract on this branch are ``xfail(strict=True)`` with the sites, so a
fix shows up as an unexpected pass (and the mark must then go).
"""

from __future__ import annotations

import random
from functools import cache

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.fuzz import harness as h

SETTINGS = settings(
    max_examples=100,
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
SEEDS = st.integers(min_value=0, max_value=2**32 - 1)


@cache
def seeds() -> h.Seeds:
    return h.load_seeds()


def _assert_kept(tally: h.Tally) -> None:
    assert not tally.broken, "\n\n".join(f"{n} x {key}\n{first}" for key, (n, first) in tally.broken.items())


def _marked(protocols: tuple[str, ...], known: dict[str, str]) -> list[object]:
    return [
        pytest.param(p, marks=[pytest.mark.xfail(strict=True, reason=known[p])] if p in known else [])
        for p in protocols
    ]


KNOWN_STREAMS: dict[str, str] = {}


@pytest.mark.parametrize("protocol", _marked(h.PROTOCOLS, KNOWN_STREAMS))
@SETTINGS
@given(seed=SEEDS)
def test_streams(protocol: str, seed: int) -> None:
    """aggregate whole == fed one byte at a time (or the same error); convert to every target."""
    tally = h.Tally()
    data = h.stream_input(seeds(), protocol, random.Random(seed))
    h.check_stream(data, protocol, tally)
    _assert_kept(tally)


@SETTINGS
@given(seed=SEEDS)
def test_streams_of_unnamed_protocol(seed: int) -> None:
    """No protocol given: a result, RemoteProtocolError or ProtocolDetectionError, alike whole
    and one byte at a time."""
    r = random.Random(seed)
    tally = h.Tally()
    h.check_detected(h.stream_input(seeds(), r.choice(h.PROTOCOLS), r), tally)
    _assert_kept(tally)


KNOWN_BODIES: dict[str, str] = {}


@pytest.mark.parametrize("protocol", _marked(h.BODY_PROTOCOLS, KNOWN_BODIES))
@settings(SETTINGS, max_examples=400)
@given(seed=SEEDS)
def test_response_bodies(protocol: str, seed: int) -> None:
    """decode_response on mutated encode_response bodies: a response or RemoteProtocolError."""
    r = random.Random(seed)
    tally = h.Tally()
    body = h.materialize(h.mutate_value(r.choice(seeds().responses[protocol]), r, r.choice([1, 2, 3])))
    h.check_response_body(body, protocol, tally)
    _assert_kept(tally)


KNOWN_HISTORY: dict[str, str] = {}


@pytest.mark.parametrize("protocol", _marked(h.PROTOCOLS, KNOWN_HISTORY))
@settings(SETTINGS, max_examples=250)
@given(seed=SEEDS)
def test_request_bodies(protocol: str, seed: int) -> None:
    """to_canonical / validate / convert_history to every target: a result or ValidationError."""
    r = random.Random(seed)
    tally = h.Tally()
    body = h.materialize(h.mutate_value(r.choice(seeds().bodies[protocol]), r, r.choice([1, 2, 3])))
    h.check_history(body, protocol, tally)
    _assert_kept(tally)
