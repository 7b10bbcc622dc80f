"""The request-field tables of docs/convert.md, made by running the conversions.

For each HTTP client protocol, its full sample request (``tests/convert/request_bodies/*.json``:
every documented field set) is converted to each upstream protocol with
:func:`maas_stream.convert_request`; each top-level field (and each field of Gemini's
``generationConfig``) is then:

* ``carried``: the upstream body has it under the same name, untouched;
* ``mapped → X``: carried under the upstream's own name ``X`` (found by reading the upstream
  body back into canonical terms);
* ``conversation``: converted by the history codecs (``messages``, ``contents``...);
* ``honoured by the client's stream encoder``: an option of the client's own stream (Chat's
  ``stream_options.include_usage``), not an upstream field;
* ``dropped``: not carried, reported (a ``request_field`` drop) — ``partly dropped`` when
  only part of it is lost (a tool's ``strict``, say);
* ``refused``: not carried, and it changes the answer: a 400 / ``UnsupportedParamsError``
  unless ``drop_params``.

``python scripts/request_table.py`` rewrites the part of docs/convert.md between the markers;
``tests/convert/test_request_table.py`` fails when the document and the code disagree.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import maas_stream as ms

ROOT = Path(__file__).resolve().parent.parent
BODIES = ROOT / "tests" / "convert" / "request_bodies"
DOC = ROOT / "docs" / "convert.md"
BEGIN = "<!-- request-table: begin (scripts/request_table.py writes this part) -->"
END = "<!-- request-table: end -->"
HTTP = ("openai-chat", "openai-responses", "anthropic", "gemini", "google-interactions")
_NESTED = ("generationConfig", "generation_config")
UNWRITTEN = "read, not written (the target's default)"
"""A field the target's writer took and wrote nothing for (its value is the target's default
behaviour); the test keeps a reviewed list of these, since a silent loss would look the same."""


def bodies() -> dict[str, dict[str, Any]]:
    """The sample request of each protocol that has one, by protocol name."""
    out: dict[str, dict[str, Any]] = {}
    for protocol in HTTP:
        path = BODIES / f"{protocol.replace('-', '_')}.json"
        if path.exists():
            out[protocol] = json.loads(path.read_text())
    return out


def _paths(body: dict[str, Any]) -> list[str]:
    out: list[str] = []
    for key, value in body.items():
        if key in _NESTED and isinstance(value, dict):
            out.extend(f"{key}.{k}" for k in value)
        else:
            out.append(key)
    return out


def _has(body: dict[str, Any], path: str) -> Any:
    head, _, rest = path.partition(".")
    if head not in body:
        return _MISSING
    return body[head] if not rest else _has(body[head], rest) if isinstance(body[head], dict) else _MISSING


_MISSING: Any = object()


def _status(client: str, upstream: str, body: dict[str, Any], path: str) -> str:
    spec = ms.get_protocol(client)
    codec = spec.envelope
    assert codec is not None
    if path.split(".", 1)[0] in codec.conversation:
        return "conversation"
    model = body.get("model") if client != "gemini" else "gemini-2.5-pro"
    # The protocols' table, not a model's: every model accepts every parameter here.
    converted = ms.convert_request(
        body,
        protocol=client,
        to=upstream,
        path_model=model if client == "gemini" else None,
        drop_params=True,
        caps={"*": ms.ModelCaps()},
    )
    lost = [f for f in converted.lost_fields if f.path == path or f.path.startswith(f"{path}.")]
    # A field that is part of another's canonical setting (Interactions thinking_summaries of
    # the reasoning read from thinking_level) shares that field's losses.
    env = converted.envelope
    shared = {env.sources.get(n.split(".", 1)[0]) for n, s in env.sources.items() if s == path and "." in n}
    lost += [f for f in converted.lost_fields if f.path in shared]
    if lost:
        refused = any(f.affects_output for f in lost)
        whole = _has(converted.body, path) is _MISSING and not _mapped(converted, upstream, path)
        word = "refused" if refused else "dropped"
        return word if whole else f"partly {word}"
    if path in (codec.model_field, codec.stream_field):
        return "carried" if _has(converted.body, path) is not _MISSING else "in the URL"
    target = _mapped(converted, upstream, path)
    if target is None:
        if _has(converted.body, path) is not _MISSING:
            return "carried"
        if converted.envelope.sources.get("include_usage", "").startswith(f"{path}."):
            return "honoured by the client's stream encoder"
        return UNWRITTEN
    return "carried" if target == path else f"mapped → `{target}`"


def _mapped(converted: ms.ConvertedRequest, upstream: str, path: str) -> str | None:
    env = converted.envelope
    names = [name for name, source in env.sources.items() if source == path or source.startswith(f"{path}.")]
    if not names:
        return None
    back = ms.read_envelope(converted.body, upstream, model="m")
    for name in names:
        for found in (name, name.split(".", 1)[0]):  # a canonical sub-field maps with its field
            if found in back.sources:
                return back.sources[found]
        if name == "native_tools" and back.native_tools:  # a built-in tool joins the tools list
            return ms.get_protocol(upstream).envelope.tools_field  # type: ignore[union-attr]
    return None


def render(samples: dict[str, dict[str, Any]]) -> str:
    """The tables, one per client protocol with a sample."""
    lines: list[str] = [BEGIN, ""]
    for client, body in samples.items():
        targets = [t for t in HTTP if t != client]
        lines += [f"#### {client} clients", ""]
        lines.append("| field | " + " | ".join(targets) + " |")
        lines.append("| --- |" + " --- |" * len(targets))
        for path in _paths(body):
            cells = [_status(client, t, body, path) for t in targets]
            lines.append(f"| `{path}` | " + " | ".join(cells) + " |")
        lines.append("")
    lines.append(END)
    return "\n".join(lines)


def main() -> int:
    """Rewrite the tables in docs/convert.md."""
    text = DOC.read_text()
    table = render(bodies())
    if BEGIN in text:
        head, _, rest = text.partition(BEGIN)
        _, _, tail = rest.partition(END)
        text = head + table + tail
    else:
        text = text.rstrip("\n") + "\n\n### Request fields, client x upstream\n\n" + table + "\n"
    DOC.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
