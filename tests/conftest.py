"""Shared fixtures: where the recordings and the third-party corpus are.

The corpus (real captures, third-party data) is read in place from ``../shared/corpus`` or from
``$MAAS_CORPUS``; it is never copied into the repository. Tests that need it skip with a reason
when it is absent.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from collections.abc import Mapping

    import maas_stream as ms

ROOT = Path(__file__).resolve().parent.parent
RECORDINGS = ROOT / "recordings"
CORPUS = Path(os.environ.get("MAAS_CORPUS", ROOT.parent / "shared" / "corpus")).resolve()


def recordings(protocol: str) -> list[Path]:
    """This project's own recordings of one protocol (``.sse`` or ``.jsonl``), sorted."""
    folder = RECORDINGS / protocol
    return sorted(p for p in folder.glob("*") if p.suffix in (".sse", ".jsonl")) if folder.is_dir() else []


def corpus(protocol: str) -> list[Path]:
    """The real captured streams of one protocol in the corpus (empty when the corpus is absent)."""
    folder = CORPUS / protocol
    return sorted(p for p in folder.glob("*") if p.suffix in (".sse", ".jsonl")) if folder.is_dir() else []


def params(paths: list[Path], known: Mapping[str, str] | None = None) -> list[object]:
    """``pytest.param`` per file, with ``<protocol>/<file name>`` as id.

    ``known`` maps such ids to the reason they fail today: those are marked
    ``xfail(strict=True)``, so a fix shows up as an unexpected pass.
    """
    known = known or {}
    out: list[object] = []
    for p in paths:
        name = f"{p.parent.name}/{p.name}"
        marks = [pytest.mark.xfail(strict=True, reason=known[name])] if name in known else []
        out.append(pytest.param(p, id=name, marks=marks))
    return out


def need_corpus(protocol: str) -> list[object]:
    """Parameters over the corpus of ``protocol``, or one skipped parameter saying why."""
    found = corpus(protocol)
    if not found:
        return [
            pytest.param(
                None, marks=pytest.mark.skip(reason=f"corpus not found at {CORPUS} (set MAAS_CORPUS)")
            )
        ]
    return params(found)


def _uses_corpus(item: pytest.Item) -> bool:
    spec = getattr(item, "callspec", None)
    values = list(spec.params.values()) if spec is not None else []
    flat = [x for v in values for x in (v if isinstance(v, tuple | list) else (v,))]
    return any(isinstance(v, Path) and CORPUS in v.parents for v in flat)


def _corpus_skip(item: pytest.Item) -> bool:
    return any(
        m.name in ("skip", "skipif") and "corpus" in str(m.kwargs.get("reason", ""))
        for m in item.iter_markers()
    )


def pytest_report_collectionfinish(config: pytest.Config, items: list[pytest.Item]) -> str:
    """One line at the top of the run: how many corpus cases run, or that they are skipped and why."""
    files = (
        [p for name in sorted(p.name for p in CORPUS.iterdir() if p.is_dir()) for p in corpus(name)]
        if CORPUS.is_dir()
        else []
    )
    running = sum(1 for item in items if _uses_corpus(item))
    if files:
        return (
            f"corpus: {len(files)} captured streams at {CORPUS}; {running} of {len(items)} "
            "collected test cases read them"
        )
    skipped = sum(1 for item in items if _corpus_skip(item))
    return (
        f"corpus: NOT FOUND at {CORPUS} (set MAAS_CORPUS to the real captures): {skipped} corpus "
        "tests are skipped, each standing for every captured stream of its protocol"
    )


def parts(message: ms.Message) -> list[ms.Part]:
    """A message's content as a list of parts (failing the test when it is a plain string)."""
    assert isinstance(message.content, list), message.content
    return message.content


def status_both_ways(data: bytes, protocol: str) -> list[str]:
    """What ``ms.aggregate`` (the direct fold) and a converter (the event path) make of ``data``.

    Each the response's status, or ``"error: ..."`` for a ``RemoteProtocolError``: the two
    paths must agree on every input.
    """
    import maas_stream as ms

    seen: list[str] = []
    try:
        seen.append(ms.aggregate(data, protocol=protocol).status)
    except ms.RemoteProtocolError as exc:
        seen.append(f"error: {exc}")
    conv = ms.StreamConverter(protocol, protocol=protocol)
    try:
        conv.feed(data)
        conv.finish()
        response = conv.response
        assert response is not None
        seen.append(response.status)
    except ms.RemoteProtocolError as exc:
        seen.append(f"error: {exc}")
    return seen


def chat_chunk(delta: dict[str, Any], finish: str | None = None, *, model: str = "gpt-test") -> bytes:
    """One OpenAI Chat Completions stream chunk (an SSE event) of one choice's ``delta``."""
    import json

    body = {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    return b"data: " + json.dumps(body).encode() + b"\n\n"
