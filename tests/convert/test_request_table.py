"""docs/convert.md's request-field tables are what the code does (scripts/request_table.py)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("request_table", ROOT / "scripts" / "request_table.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


TABLE = _script()


def test_every_http_protocol_has_a_full_sample_request() -> None:
    assert sorted(TABLE.bodies()) == sorted(TABLE.HTTP)


def test_the_document_is_what_the_code_does() -> None:
    text = TABLE.DOC.read_text()
    assert TABLE.BEGIN in text, "run: python scripts/request_table.py"
    written = text.split(TABLE.BEGIN, 1)[1].split(TABLE.END, 1)[0]
    made = TABLE.render(TABLE.bodies()).split(TABLE.BEGIN, 1)[1].split(TABLE.END, 1)[0]
    assert written == made, "docs/convert.md is stale: run python scripts/request_table.py"


# Reviewed: fields a writer takes and writes nothing for, because the value asks for what the
# target does anyway. Anything else in that state would be a silent loss.
DEFAULTS: dict[tuple[str, str], str] = {
    ("openai-chat", "parallel_tool_calls"): "true: Gemini may call several functions in one turn",
    ("openai-responses", "parallel_tool_calls"): "true: Gemini may call several functions in one turn",
    ("gemini", "generationConfig.responseMimeType"): "application/json: goes with the schema's mapping",
    ("openai-chat", "store"): "false: Anthropic stores nothing by default",
    ("openai-responses", "store"): "false: Anthropic stores nothing by default",
    ("gemini", "store"): "false: Anthropic stores nothing by default",
    ("anthropic", "service_tier"): "auto: Gemini's default tier",
    ("google-interactions", "background"): "false: the answer comes in the same exchange, as everywhere",
}


@pytest.mark.parametrize("protocol", TABLE.HTTP)
def test_every_field_has_a_definite_fate(protocol: str) -> None:
    samples = TABLE.bodies()
    if protocol not in samples:
        pytest.fail(f"no sample request for {protocol}")
    table = TABLE.render({protocol: samples[protocol]})
    unwritten = {
        line.split("`")[1]
        for line in table.splitlines()
        if TABLE.UNWRITTEN in line and line.startswith("| `")
    }
    assert unwritten <= {field for client, field in DEFAULTS if client == protocol}
