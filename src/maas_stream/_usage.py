"""The arithmetic of canonical usage that more than one protocol needs: ONE home.

Canonical usage has one meaning everywhere (docs/usage.md): ``input_tokens`` counts every
prompt token, cache reads and writes and tool-use prompts included; ``cache_read_tokens`` and
``cache_write_tokens`` are subsets of it; ``output_tokens`` counts every generated token,
reasoning included (``reasoning_tokens`` is a subset of it); ``total_tokens`` is
``input_tokens + output_tokens``.

Each protocol's mapping module owns its own direction of the mapping (``usage_from`` /
``usage_*wire``); what several of them share lives here:

* :func:`usage_of` builds canonical usage and derives the total, so that no decoder can state
  a total that disagrees with its own input and output.
* :func:`total_of` is the total an encoder writes.
* :func:`google_usage` and :func:`google_split` are the Gemini family's two directions
  (Gemini ``usageMetadata``, Google Live ``usageMetadata``, Google Interactions ``usage``):
  the prompt count there leaves the tool-use prompt out and the answer count leaves the
  thoughts out.

It must not know any wire format: callers hand it counts, never wire objects.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from ._model import Usage

__all__ = ["GoogleCounts", "google_split", "google_usage", "known_sum", "total_of", "usage_of"]


def known_sum(*counts: int | None) -> int | None:
    """The sum of the counts that are known; ``None`` when none is (unknown is never 0)."""
    total = None
    for count in counts:
        if count is not None:
            total = count if total is None else total + count
    return total


def usage_of(
    *,
    input_tokens: int | None,
    output_tokens: int | None,
    reasoning_tokens: int | None = None,
    cache_read_tokens: int | None = None,
    cache_write_tokens: int | None = None,
    reported_total: int | None = None,
    raw: Any = None,
) -> Usage:
    """Canonical usage from canonical counts, with ``total_tokens = input + output``.

    Args:
        input_tokens: Every prompt token (cache reads and writes, tool-use prompts included).
        output_tokens: Every generated token (reasoning included).
        reasoning_tokens: The reasoning part of ``output_tokens``.
        cache_read_tokens: The part of ``input_tokens`` read from a prompt cache.
        cache_write_tokens: The part of ``input_tokens`` written to a prompt cache.
        reported_total: The provider's own total. It is used only when neither the input nor
            the output is known; otherwise the total is their sum and the provider's figure
            stays in ``raw`` (Google Live's ``totalTokenCount`` leaves thoughts out, for one).
        raw: The provider's usage object.
    """
    total = known_sum(input_tokens, output_tokens)
    return Usage(
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        total_tokens=reported_total if total is None else total,
        reasoning_tokens=reasoning_tokens,
        cache_read_tokens=cache_read_tokens,
        cache_write_tokens=cache_write_tokens,
        raw=raw,
    )


def total_of(usage: Usage) -> int | None:
    """The total an encoder writes: ``total_tokens``, else input + output (``None``: unknown)."""
    if usage.total_tokens is not None:
        return usage.total_tokens
    return known_sum(usage.input_tokens, usage.output_tokens)


# ---------------------------------------------------------------------- the Gemini family


def google_usage(
    *,
    prompt: int | None,
    tool_use: int | None,
    answer: int | None,
    thoughts: int | None,
    cached: int | None,
    reported_total: int | None,
    raw: Any,
) -> Usage:
    """Gemini-family counts → canonical usage.

    Gemini reports ``totalTokenCount = prompt + candidates + toolUsePrompt + thoughts``
    (PROTOCOLS.md §4.5): the prompt count leaves out the tool-use prompt (the results of
    built-in tools fed back to the model, billed as input), and the answer count
    (``candidatesTokenCount`` / Live ``responseTokenCount`` / Interactions
    ``total_output_tokens``) leaves out the thoughts. ``cachedContentTokenCount`` is already
    part of ``promptTokenCount``.

    Args:
        prompt: ``promptTokenCount`` / ``total_input_tokens``.
        tool_use: ``toolUsePromptTokenCount`` / ``total_tool_use_tokens``.
        answer: ``candidatesTokenCount`` / ``responseTokenCount`` / ``total_output_tokens``.
        thoughts: ``thoughtsTokenCount`` / ``total_thought_tokens``.
        cached: ``cachedContentTokenCount`` / ``total_cached_tokens``.
        reported_total: ``totalTokenCount`` / ``total_tokens``.
        raw: The provider's usage object.
    """
    return usage_of(
        input_tokens=known_sum(prompt, tool_use),
        output_tokens=known_sum(answer, thoughts),
        reasoning_tokens=thoughts,
        cache_read_tokens=cached,
        reported_total=reported_total,
        raw=raw,
    )


class GoogleCounts(NamedTuple):
    """Canonical usage restated in the Gemini family's terms (``None``: leave the count out)."""

    prompt: int | None
    """The prompt without the tool-use prompt."""
    answer: int | None
    """The output without the thoughts."""
    thoughts: int | None
    """The thoughts, at most the output."""
    cached: int | None
    total: int | None


def google_split(usage: Usage, *, tool_use: int = 0) -> GoogleCounts:
    """Canonical usage → Gemini-family counts (the inverse of :func:`google_usage`).

    Args:
        usage: The canonical usage.
        tool_use: The tool-use prompt count the target object keeps apart (a Gemini-family
            source's own; 0 for any other source, whose input has no such part).
    """
    prompt = None if usage.input_tokens is None else max(usage.input_tokens - tool_use, 0)
    output, thoughts = usage.output_tokens, usage.reasoning_tokens
    answer = None
    if output is not None:
        if thoughts is not None and thoughts > output:
            # A source reporting more reasoning than output (an OpenAI-compatible server that
            # left the reasoning out of ``completion_tokens``, or a wrong count): the output
            # and total are kept, the reasoning is capped at the output.
            thoughts = output
        answer = output - (thoughts or 0)
    return GoogleCounts(prompt, answer, thoughts, usage.cache_read_tokens, total_of(usage))
