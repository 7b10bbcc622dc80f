"""The direct fold's shared output list (``_lifecycle._UNUSED``) is never appended to.

``open_message`` / ``end_message`` hand the handlers one shared list when nothing is emitted: an
event appended to it would leak into every stream of the process.
"""

from __future__ import annotations

from pathlib import Path

import maas_stream as ms
from maas_stream import _lifecycle

ROOT = Path(__file__).resolve().parents[2] / "recordings"


def test_no_recording_appends_to_the_shared_output_list() -> None:
    folded = 0
    for path in sorted(ROOT.glob("*/*")):
        if path.suffix not in (".sse", ".jsonl"):
            continue
        try:
            ms.aggregate_session(path.read_bytes(), protocol=path.parent.name)
        except ms.ProtocolError:
            pass  # a recording of a broken stream: what it folded counts too
        folded += 1
    assert folded > 50
    assert _lifecycle._UNUSED == []
