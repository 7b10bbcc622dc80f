"""Release hygiene: the version, the JSON Schema of the contract, the license, the changelog, logging."""

from __future__ import annotations

import logging
import tomllib
from typing import Any

import jsonschema
import msgspec
import pytest

import maas_stream as ms
from maas_stream._cli import json_schema, main, schema_types

from ..conftest import recordings
from .project import ROOT

PROTOCOLS = ["openai-chat", "openai-responses", "anthropic", "gemini", "google-interactions"]
CASES = [p for name in PROTOCOLS for p in recordings(name)]


def test_version_matches_the_project_metadata(capsys: pytest.CaptureFixture[str]) -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert ms.__version__ == project["version"]
    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0
    assert capsys.readouterr().out == f"maas-stream {project['version']}\n"


def validator(*names: str) -> Any:
    schema = json_schema(names)
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def test_every_response_and_event_of_the_recordings_validates() -> None:
    responses, events = validator("Response"), validator("Event")
    assert len(CASES) > 40
    for path in CASES:
        data = path.read_bytes()
        agg = ms.StreamAggregator(path.parent.name, emit=True)
        try:
            emitted = agg.feed(data) + agg.finish_events()
        except ms.RemoteProtocolError:
            continue  # a recording of a broken stream: nothing to validate
        response = msgspec.to_builtins(agg.finish())
        responses.validate(response)
        for event in emitted:
            events.validate(msgspec.to_builtins(event))


def test_the_schema_refuses_what_the_contract_refuses() -> None:
    responses = validator("Response")
    good = msgspec.to_builtins(ms.aggregate(CASES[0].read_bytes(), protocol=CASES[0].parent.name))
    for bad in ({**good, "status": "done"}, {k: v for k, v in good.items() if k != "protocol"}):
        assert not responses.is_valid(bad)
    events = validator("Event")
    assert events.is_valid({"event": "text.delta", "message": 0, "part": 0, "text": "hi"}) is events.is_valid(
        msgspec.to_builtins(ms.events.TextDelta(message=0, part=0, text="hi"))
    )
    assert not events.is_valid({"event": "no.such.event"})


def test_schema_command_prints_every_type_and_refuses_an_unknown_one(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["schema", "--compact"]) == 0
    schema = msgspec.json.decode(capsys.readouterr().out)
    assert schema["anyOf"] == [{"$ref": f"#/$defs/{name}"} for name in schema_types()]
    assert {"Response", "Event", "Message", "TextPart", "ToolCallPart", "Usage"} <= set(schema["$defs"])
    with pytest.raises(SystemExit, match="unknown type 'Nope'"):
        main(["schema", "Nope"])


def test_license_changelog_and_null_handler() -> None:
    license_text = (ROOT / "LICENSE").read_text()
    assert "Apache License" in license_text
    assert "Version 2.0, January 2004" in license_text
    assert "END OF TERMS AND CONDITIONS" in license_text
    changelog = (ROOT / "CHANGELOG.md").read_text()
    assert f"## {ms.__version__}" in changelog
    handlers = logging.getLogger("maas_stream").handlers
    assert any(isinstance(h, logging.NullHandler) for h in handlers)
