"""Turn shaping shared by history codecs: joining a Responses turn's output items.

OpenAI Responses keeps one assistant turn as several items (a reasoning item, a message item,
one item per function call); canonically each is its own :class:`~maas_stream.Message` with a
``type``. Chat Completions and Gemini carry a turn as ONE assistant message / model content, so
their ``from_canonical`` joins consecutive item-shaped assistant messages first.

It must not know any wire format.
"""

from __future__ import annotations

import msgspec

from .._model import Message, Part, TextPart

__all__ = ["join_items"]

_ASSISTANT = ("assistant", "model")


def _parts(msg: Message) -> list[Part]:
    if isinstance(msg.content, str):
        return [TextPart(text=msg.content)] if msg.content else []
    return list(msg.content)


def join_items(messages: list[Message]) -> list[Message]:
    """Join runs of consecutive assistant output items (messages with a ``type``) into one message.

    Messages without a ``type`` (Chat, Anthropic, Gemini turns) are never joined.
    """
    out: list[Message] = []
    for msg in messages:
        prev = out[-1] if out else None
        if (
            prev is not None
            and msg.type is not None
            and prev.type is not None
            and msg.role in _ASSISTANT
            and prev.role in _ASSISTANT
        ):
            out[-1] = msgspec.structs.replace(prev, content=_parts(prev) + _parts(msg))
        else:
            out.append(msg)
    return out
