r"""JSON values that an input can hold but Python cannot process: the one list of such faults.

A JSON document can nest past the interpreter's recursion limit (``RecursionError`` when it is
decoded, re-encoded, compared or printed), and a ``str`` can hold a lone surrogate (``"\\ud800"``
is valid JSON text but not valid Unicode: msgspec encodes a ``str`` as UTF-8 and raises
``UnicodeEncodeError``). Both are faults of the input, never of this library, so the entry
points (``_convert.py``: ``to_canonical``, ``decode_response``, ``validate``) turn them into the
library's own errors once, and text that should hold a JSON object is read with
:func:`object_from_text`.

It must not import any protocol package.
"""

from __future__ import annotations

from typing import Any, Final

import msgspec

__all__ = ["NOT_JSON", "UNREADABLE", "object_from_text"]

UNREADABLE: Final = (RecursionError, UnicodeEncodeError)
"""Faults a decoded JSON value can cause in Python: nested too deep, or a lone surrogate."""

NOT_JSON: Final = (msgspec.DecodeError, *UNREADABLE)
"""Faults of text that should be JSON: invalid, nested too deep, or with a lone surrogate."""

_decoder: Final = msgspec.json.Decoder()


def object_from_text(text: str) -> dict[str, Any] | None:
    """Text that should hold a JSON object (call arguments, a tool result) as that object.

    Empty or blank text is ``{}``; text that is not JSON, or is JSON of another type, or cannot
    be read (:data:`NOT_JSON`) is ``None``: the caller decides how to carry it.
    """
    if not text.strip():
        return {}
    try:
        value = _decoder.decode(text)
    except NOT_JSON:
        return None
    return value if isinstance(value, dict) else None
