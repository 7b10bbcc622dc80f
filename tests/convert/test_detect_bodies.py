"""Request body detection (``ms.detect_body_protocol``, ``maas-stream history`` without ``--from``).

Google Interactions and OpenAI Responses both put the conversation in ``input`` and both have a
``function_call`` item, so each detector must look at the fields that really differ: an
Interactions ``function_call`` step has an ``id`` and an ``arguments`` object, Responses' a
``call_id`` and a JSON string; Interactions has ``function_result`` steps, ``model`` turns,
``system_instruction``, ``generation_config``, ``previous_interaction_id``; Responses has
``function_call_output``, ``instructions``, ``max_output_tokens``, ``previous_response_id``.
The openai SDK's Responses request type (``tests.oracles``) confirms which bodies are not
Responses ones.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pydantic
import pytest

import maas_stream as ms
from tests import oracles

BODIES = Path(__file__).parent / "request_bodies"

SAMPLES = {
    "anthropic.json": "anthropic",
    "gemini.json": "gemini",
    "google_interactions.json": "google-interactions",
    "openai_chat.json": "openai-chat",
    "openai_responses.json": "openai-responses",
}

IA = "google-interactions"
RESP = "openai-responses"


def _sample(name: str) -> dict[str, Any]:
    body: dict[str, Any] = json.loads((BODIES / name).read_text(encoding="utf-8"))
    return body


def _score(protocol: str, body: Any) -> int:
    detect = ms.get_protocol(protocol).detect_body
    assert detect is not None
    return detect(body)


def test_every_sample_body_is_listed() -> None:
    assert sorted(p.name for p in BODIES.glob("*.json")) == sorted(SAMPLES)


@pytest.mark.parametrize(("name", "protocol"), [pytest.param(n, p, id=p) for n, p in SAMPLES.items()])
def test_each_sample_body_is_detected_as_its_own_protocol(name: str, protocol: str) -> None:
    assert ms.detect_body_protocol(_sample(name)) == protocol


def test_the_interactions_sample_is_not_a_responses_body_for_either_side() -> None:
    body = _sample("google_interactions.json")
    assert _score(RESP, body) == 0
    assert _score(IA, body) == 2
    responses = _sample("openai_responses.json")
    assert _score(IA, responses) == 0
    assert _score(RESP, responses) == 2


INTERACTIONS_STEP = {
    "type": "function_call",
    "id": "fc_1",
    "name": "get_weather",
    "arguments": {"city": "Paris"},
}
INTERACTIONS_CALL = {"model": "gemini-3-flash-preview", "stream": True, "input": [INTERACTIONS_STEP]}
"""The ambiguous one: only the call's ``id`` and its ``arguments`` object say Interactions."""

RESPONSES_CALL = {
    "model": "gpt-5.5",
    "stream": True,
    "input": [
        {
            "type": "function_call",
            "call_id": "call_1",
            "name": "get_weather",
            "arguments": '{"city": "Paris"}',
        }
    ],
}


def test_the_sdk_confirms_which_function_call_body_is_a_responses_one() -> None:
    assert oracles.responses_request(RESPONSES_CALL) == RESPONSES_CALL
    with pytest.raises(pydantic.ValidationError):
        oracles.responses_request(INTERACTIONS_CALL)


def test_an_interactions_function_call_step_is_interactions() -> None:
    assert _score(IA, INTERACTIONS_CALL) == 2
    assert _score(RESP, INTERACTIONS_CALL) == 0
    assert ms.detect_body_protocol(INTERACTIONS_CALL) == IA


def test_a_responses_function_call_item_is_responses() -> None:
    assert _score(RESP, RESPONSES_CALL) == 2
    assert _score(IA, RESPONSES_CALL) == 0
    assert ms.detect_body_protocol(RESPONSES_CALL) == RESP
    # Either sign alone is enough: the call_id, or the arguments as a JSON string.
    only_string = {**RESPONSES_CALL, "input": [{"type": "function_call", "name": "f", "arguments": "{}"}]}
    assert ms.detect_body_protocol(only_string) == RESP


TEXT = [{"role": "user", "content": "What is the weather in Paris?"}]


@pytest.mark.parametrize(
    ("body", "protocol"),
    [
        pytest.param({"input": TEXT, "system_instruction": "Be brief."}, IA, id="system_instruction"),
        pytest.param(
            {"input": TEXT, "generation_config": {"max_output_tokens": 9}}, IA, id="generation_config"
        ),
        pytest.param({"input": "hi", "response_modalities": ["TEXT"]}, IA, id="response_modalities"),
        pytest.param({"input": "hi", "previous_interaction_id": "v1_x"}, IA, id="previous_interaction_id"),
        pytest.param(
            {"input": [{"type": "function_result", "call_id": "fc_1", "name": "f", "result": "18"}]},
            IA,
            id="function_result-step",
        ),
        pytest.param({"input": [{"role": "model", "content": "Hello."}]}, IA, id="model-turn"),
        pytest.param(
            {"input": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]},
            IA,
            id="turn-of-content",
        ),
        pytest.param({"input": [{"type": "text", "text": "hi"}]}, IA, id="content-list"),
        pytest.param({"input": TEXT, "instructions": "Be brief."}, RESP, id="instructions"),
        pytest.param({"input": TEXT, "max_output_tokens": 9}, RESP, id="max_output_tokens"),
        pytest.param({"input": "hi", "previous_response_id": "resp_x"}, RESP, id="previous_response_id"),
        pytest.param(
            {"input": [{"type": "function_call_output", "call_id": "c", "output": "18"}]},
            RESP,
            id="function_call_output",
        ),
        pytest.param(
            {"input": [{"role": "user", "content": [{"type": "input_text", "text": "hi"}]}]},
            RESP,
            id="input_text",
        ),
        pytest.param({"input": [{"role": "developer", "content": "Be brief."}, *TEXT]}, RESP, id="developer"),
    ],
)
def test_the_fields_that_differ_decide(body: dict[str, Any], protocol: str) -> None:
    other = RESP if protocol == IA else IA
    assert _score(protocol, body) == 2
    assert _score(other, body) == 0
    assert ms.detect_body_protocol(body) == protocol


def test_interactions_bodies_do_not_fit_the_responses_sdk_type() -> None:
    for body in (
        {"model": "m", "stream": True, "input": [{"role": "model", "content": "Hello."}]},
        {"model": "m", "stream": True, "input": [{"type": "function_result", "call_id": "c", "result": "1"}]},
    ):
        with pytest.raises(pydantic.ValidationError):
            oracles.responses_request(body)


@pytest.mark.parametrize(
    "body",
    [pytest.param({"input": "hi"}, id="string"), pytest.param({"input": TEXT}, id="user-text")],
)
def test_a_body_valid_in_both_is_only_a_responses_maybe(body: dict[str, Any]) -> None:
    assert _score(RESP, body) == 1
    assert _score(IA, body) == 0
    assert ms.detect_body_protocol(body) == RESP


def test_a_body_with_both_protocols_fields_is_refused_with_the_fix() -> None:
    body = {"input": "hi", "instructions": "Be brief.", "system_instruction": "Be brief."}
    assert _score(RESP, body) == 0
    assert _score(IA, body) == 0
    with pytest.raises(ms.ProtocolDetectionError, match="--from"):
        ms.detect_body_protocol(body)


def test_mixed_steps_are_neither() -> None:
    body = {
        "input": [
            INTERACTIONS_STEP,
            {"type": "function_call_output", "call_id": "c", "output": ""},
        ]
    }
    assert _score(RESP, body) == 0
    assert _score(IA, body) == 0


def test_cli_history_without_from_reads_an_interactions_call_as_interactions(tmp_path: Path) -> None:
    path = tmp_path / "req.json"
    path.write_text(json.dumps(INTERACTIONS_CALL), encoding="utf-8")
    run = subprocess.run(
        [sys.executable, "-m", "maas_stream", "history", "--to", "openai-responses", str(path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    (item,) = json.loads(run.stdout)["input"]
    # Read as an Interactions step: its object arguments became a Responses JSON string.
    assert item["type"] == "function_call"
    assert item["call_id"] == "fc_1"
    assert json.loads(item["arguments"]) == {"city": "Paris"}
