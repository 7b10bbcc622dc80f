"""What a target model accepts: sampling parameters, reasoning, output limit, by model family.

A request converted for another provider must also suit the MODEL it goes to: current Claude
models refuse ``temperature`` and ``top_p`` together, OpenAI reasoning models refuse sampling
parameters, and Anthropic requires ``max_tokens``, which should be the model's own maximum, not
an arbitrary constant. LiteLLM keeps a per-model capability map for this; this is a small
built-in table of model families (first matching glob wins) that a bridge route can override.

Sources (checked 2026-12): Anthropic "Models overview" (max output per model; "temperature and
top_p cannot both be specified" for Claude 4.5-class models), OpenAI "Reasoning models"
(reasoning models do not support ``temperature``, ``top_p``, penalties, ``logprobs``), Gemini
"Models" (output token limits; thinking on 2.5 and later).

It must not know any wire protocol (canonical field names only) or do IO.
"""

from __future__ import annotations

import fnmatch
import functools
from dataclasses import dataclass
from typing import Final

__all__ = ["DEFAULT_CAPS", "ModelCaps", "model_caps"]

_ALL_SAMPLING: Final = frozenset(
    {"temperature", "top_p", "top_k", "seed", "presence_penalty", "frequency_penalty"}
)


@dataclass(frozen=True)
class ModelCaps:
    """What one model (family) accepts.

    Attributes:
        sampling: The sampling parameters (canonical names: ``temperature``, ``top_p``,
            ``top_k``, ``seed``, ``presence_penalty``, ``frequency_penalty``) it accepts.
        one_of_temperature_top_p: It refuses ``temperature`` and ``top_p`` together (the
            conversion keeps ``temperature`` and reports ``top_p``).
        reasoning: It takes reasoning (thinking) settings (a model that does not gets none:
            dropped and reported, as the model would refuse them).
        max_output: Its largest output-token limit (the default limit where the protocol
            requires one); ``None``: unknown.
    """

    sampling: frozenset[str] = _ALL_SAMPLING
    one_of_temperature_top_p: bool = False
    reasoning: bool = True
    max_output: int | None = None


DEFAULT_CAPS: Final = ModelCaps()
"""A model the table does not know: every parameter is passed on (the provider decides)."""

_NO_SAMPLING: Final = frozenset({"seed"})

_FAMILIES: Final[tuple[tuple[str, ModelCaps], ...]] = (
    # Anthropic (max output from the models overview).
    ("claude-opus-4-5*", ModelCaps(_ALL_SAMPLING - {"seed"}, True, True, 64000)),
    ("claude-sonnet-4-5*", ModelCaps(_ALL_SAMPLING - {"seed"}, True, True, 64000)),
    ("claude-haiku-4-5*", ModelCaps(_ALL_SAMPLING - {"seed"}, True, True, 64000)),
    ("claude-opus-4-1*", ModelCaps(_ALL_SAMPLING - {"seed"}, True, True, 32000)),
    ("claude-opus-4*", ModelCaps(_ALL_SAMPLING - {"seed"}, False, True, 32000)),
    ("claude-sonnet-4*", ModelCaps(_ALL_SAMPLING - {"seed"}, False, True, 64000)),
    ("claude-3-7-sonnet*", ModelCaps(_ALL_SAMPLING - {"seed"}, False, True, 64000)),
    ("claude-3-5-haiku*", ModelCaps(_ALL_SAMPLING - {"seed"}, False, False, 8192)),
    ("claude-*", ModelCaps(_ALL_SAMPLING - {"seed"}, False, False, 4096)),
    # OpenAI reasoning models: no sampling parameters.
    ("gpt-5-chat*", ModelCaps(_ALL_SAMPLING - {"top_k"}, False, False, 16384)),
    ("gpt-5*", ModelCaps(_NO_SAMPLING, False, True, 128000)),
    ("o1*", ModelCaps(_NO_SAMPLING, False, True, 100000)),
    ("o3*", ModelCaps(_NO_SAMPLING, False, True, 100000)),
    ("o4*", ModelCaps(_NO_SAMPLING, False, True, 100000)),
    ("gpt-4.1*", ModelCaps(_ALL_SAMPLING - {"top_k"}, False, False, 32768)),
    ("gpt-4o*", ModelCaps(_ALL_SAMPLING - {"top_k"}, False, False, 16384)),
    # Gemini.
    ("gemini-3*", ModelCaps(_ALL_SAMPLING, False, True, 65536)),
    ("gemini-2.5*", ModelCaps(_ALL_SAMPLING, False, True, 65536)),
    ("gemini-2.0*", ModelCaps(_ALL_SAMPLING, False, False, 8192)),
)


def model_caps(model: str | None, overrides: dict[str, ModelCaps] | None = None) -> ModelCaps:
    """What ``model`` accepts: the first matching family (``overrides`` first), else everything.

    Args:
        model: The target model name (a ``models/`` prefix is ignored).
        overrides: Glob pattern → capabilities, tried before the built-in table (a route's
            own knowledge of its models).
    """
    if not model:
        return DEFAULT_CAPS
    name = model.removeprefix("models/").lower()
    for pattern, caps in (overrides or {}).items():
        if fnmatch.fnmatchcase(name, pattern.lower()):
            return caps
    return _family_caps(name)


@functools.lru_cache(maxsize=1024)
def _family_caps(name: str) -> ModelCaps:
    """The built-in table's answer for a lower-case model name (cached: one glob per family)."""
    for pattern, caps in _FAMILIES:
        if fnmatch.fnmatchcase(name, pattern):
            return caps
    return DEFAULT_CAPS
