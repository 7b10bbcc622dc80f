"""Shared fixtures: where the recordings and the third-party corpus are.

The corpus (real captures, third-party data) is read in place from ``../shared/corpus`` or from
``$MAAS_CORPUS``; it is never copied into the repository. Tests that need it skip with a reason
when it is absent.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

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


def params(paths: list[Path]) -> list[object]:
    """``pytest.param`` per file, with the file name as id."""
    return [pytest.param(p, id=f"{p.parent.name}/{p.name}") for p in paths]


def need_corpus(protocol: str) -> list[object]:
    """Parameters over the corpus of ``protocol``, or one skipped parameter saying why."""
    found = corpus(protocol)
    if not found:
        return [pytest.param(None, marks=pytest.mark.skip(reason=f"corpus not found at {CORPUS} (set MAAS_CORPUS)"))]
    return params(found)
