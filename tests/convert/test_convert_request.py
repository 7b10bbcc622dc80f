"""``ms.convert_request``: the whole request across protocols, the model's limits, the drop policy.

The per-protocol field mappings have their own tests (``test_request_<protocol>.py``); these
check the rules that hold for every pair: what changes the answer is refused unless dropped,
everything else is reported, the same protocol passes through untouched, and the target model's
capabilities are applied.
"""

from __future__ import annotations

import copy
import json
import logging
import subprocess
import sys
from typing import TYPE_CHECKING, Any

import pytest

import maas_stream as ms
from maas_stream._envelope import budget_effort, effort_budget
from maas_stream._models import DEFAULT_CAPS, model_caps

if TYPE_CHECKING:
    from pathlib import Path

HTTP = ["openai-chat", "openai-responses", "anthropic", "gemini"]

CHAT: dict[str, Any] = {
    "model": "gpt-4.1",
    "messages": [{"role": "user", "content": "hi"}],
    "temperature": 0.3,
    "top_p": 0.8,
    "max_completion_tokens": 50,
}


@pytest.mark.parametrize("target", HTTP)
def test_a_plain_request_reaches_every_target_valid(target: str) -> None:
    out = ms.convert_request(CHAT, protocol="openai-chat", to=target, path_model=None)
    assert ms.validate(out.body, target) == []
    again = ms.read_envelope(out.body, target, model="gpt-4.1")
    assert (again.max_tokens, again.temperature, again.top_p) == (50, 0.3, 0.8)
    assert out.envelope.origin == "openai-chat"


def test_the_same_protocol_passes_through_untouched() -> None:
    body = {**CHAT, "logit_bias": {"50256": -100}, "prediction": {"type": "content", "content": "x"}}
    before = copy.deepcopy(body)
    out = ms.convert_request(body, protocol="openai-chat", to="openai-chat")
    assert out.body == before  # nothing added, nothing lost
    assert out.dropped == []
    assert body == before  # not mutated


def test_the_same_protocol_gets_the_new_model_and_the_stream_switch() -> None:
    out = ms.convert_request(CHAT, protocol="openai-chat", to="openai-chat", model="gpt-4o", stream=True)
    assert out.body["model"] == "gpt-4o"
    assert out.body["stream"] is True
    assert out.body["stream_options"] == {"include_usage": True}  # the upstream always reports usage


def test_a_native_field_of_another_protocol_is_reported_not_refused() -> None:
    # A prompt-cache hint changes no answer (logit_bias would: Chat lists it as answer-changing).
    body = {**CHAT, "prompt_cache_key": "k"}
    out = ms.convert_request(body, protocol="openai-chat", to="anthropic")
    assert "prompt_cache_key" not in out.body
    assert [(d.kind, d.what) for d in out.dropped] == [("request_field", "request field prompt_cache_key")]


def test_what_changes_the_answer_is_refused_naming_the_clients_field() -> None:
    body = {**CHAT, "tools": [{"type": "retrieval"}]}
    with pytest.raises(ms.UnsupportedParamsError) as caught:
        ms.convert_request(body, protocol="openai-chat", to="gemini")
    assert caught.value.fields == ["tools"]
    assert "tools[0]" in str(caught.value)
    assert isinstance(caught.value, ms.ValidationError)  # callers catching ValidationError still do
    out = ms.convert_request(body, protocol="openai-chat", to="gemini", drop_params=True)
    assert "tools" not in out.body
    assert [d.where for d in out.dropped] == [("tools[0]",)]


def test_drops_are_logged_once_each(caplog: pytest.LogCaptureFixture) -> None:
    body = {**CHAT, "prompt_cache_key": "k", "seed": 3}
    with caplog.at_level(logging.WARNING, logger="maas_stream"):
        out = ms.convert_request(body, protocol="openai-chat", to="anthropic")
    lines = [r.getMessage() for r in caplog.records]
    assert len(out.dropped) >= 1
    for rec in out.dropped:
        assert len([line for line in lines if str(rec) in line]) == 1


# ------------------------------------------------------------------ the target model's limits


def test_a_model_that_takes_temperature_or_top_p_keeps_temperature() -> None:
    out = ms.convert_request(CHAT, protocol="openai-chat", to="anthropic", model="claude-sonnet-4-5-20250929")
    assert out.body["temperature"] == 0.3
    assert "top_p" not in out.body
    assert any("top_p" in d.what and "not both" in d.what for d in out.dropped)


@pytest.mark.parametrize("model", ["gpt-5", "o3-mini", "gpt-5-mini-2025-08-07"])
def test_a_reasoning_model_gets_no_sampling(model: str) -> None:
    body = {**CHAT, "model": "x"}
    out = ms.convert_request(body, protocol="openai-chat", to="openai-chat", model=model)
    assert "temperature" not in out.body
    assert "top_p" not in out.body
    assert len(out.dropped) == 2


def test_gemini_sampling_under_generation_config_is_removed_for_a_reasoning_model() -> None:
    body = {"contents": [], "generationConfig": {"temperature": 1.0, "topP": 0.9, "maxOutputTokens": 8}}
    out = ms.convert_request(body, protocol="gemini", to="gemini", model="o3")
    assert out.body["generationConfig"] == {"maxOutputTokens": 8}


def test_an_anthropic_upstream_gets_the_models_own_limit() -> None:
    body = {"model": "claude-opus-4-1", "messages": [{"role": "user", "content": "hi"}]}
    out = ms.convert_request(body, protocol="openai-chat", to="anthropic")
    assert out.body["max_tokens"] == model_caps("claude-opus-4-1").max_output == 32000
    unknown = ms.convert_request({**body, "model": "my-model"}, protocol="openai-chat", to="anthropic")
    assert unknown.body["max_tokens"] == 4096  # the protocol's fallback for a model no one knows


def test_caps_overrides_win_over_the_table() -> None:
    caps = {"claude-*": ms.ModelCaps(sampling=frozenset({"temperature", "top_p"}))}
    assert model_caps("claude-sonnet-4-5", caps).one_of_temperature_top_p is False
    assert model_caps("unheard-of") is DEFAULT_CAPS
    out = ms.convert_request(
        CHAT, protocol="openai-chat", to="anthropic", model="claude-sonnet-4-5", caps=caps
    )
    assert out.body["top_p"] == 0.8


# ------------------------------------------------------------------ stream switch and usage


def test_the_stream_switch_follows_the_client_unless_asked() -> None:
    plain = ms.convert_request(CHAT, protocol="openai-chat", to="anthropic")
    assert "stream" not in plain.body
    asked = ms.convert_request({**CHAT, "stream": True}, protocol="openai-chat", to="anthropic")
    assert asked.body["stream"] is True
    forced = ms.convert_request(CHAT, protocol="openai-chat", to="openai-responses", stream=True)
    assert forced.body["stream"] is True
    # Chat's streaming options only go with a stream (OpenAI refuses them otherwise).
    assert "stream_options" not in ms.convert_request(CHAT, protocol="anthropic", to="openai-chat").body


@pytest.mark.parametrize("asked", [True, False])
def test_include_usage_is_read(asked: bool) -> None:
    body = {**CHAT, "stream": True, "stream_options": {"include_usage": asked}}
    env = ms.convert_request(body, protocol="openai-chat", to="anthropic").envelope
    assert env.include_usage is asked
    assert env.source("include_usage") == "stream_options.include_usage"


# ------------------------------------------------------------------ reasoning effort <-> budget


@pytest.mark.parametrize("effort", ["minimal", "low", "medium", "high", "xhigh", "none"])
def test_effort_survives_a_round_trip_through_a_budget(effort: Any) -> None:
    back = budget_effort(effort_budget(effort))
    assert back == ("low" if effort == "minimal" else effort)


def test_budgets_map_to_the_nearest_effort_up() -> None:
    assert [budget_effort(b) for b in (-1, 0, 1, 1024, 1025, 4096, 10_000)] == [
        "medium",
        "none",
        "low",
        "low",
        "medium",
        "high",
        "xhigh",
    ]


# ------------------------------------------------------------------ the command line


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "maas_stream", *args], capture_output=True, text=True, check=False
    )


def test_cli_history_refuses_then_drops_with_a_line_each(tmp_path: Path) -> None:
    body = {**CHAT, "tools": [{"type": "retrieval"}], "seed": 2}
    path = tmp_path / "req.json"
    path.write_text(json.dumps(body))
    refused = _cli("history", "--from", "openai-chat", "--to", "gemini", str(path))
    assert refused.returncode == 1
    assert refused.stdout == ""
    assert "tools[0]" in refused.stderr
    assert "drop_params" in refused.stderr
    dropped = _cli("history", "--from", "openai-chat", "--to", "gemini", "--drop-params", str(path))
    assert dropped.returncode == 0, dropped.stderr
    out = json.loads(dropped.stdout)
    assert "tools" not in out
    lines = dropped.stderr.splitlines()
    assert len(lines) == 1
    assert all("dropped" in line for line in lines)
    assert "tools[0]" in lines[0]
    assert out["generationConfig"]["seed"] == 2  # carried: Gemini has a seed


def test_an_anthropic_body_is_told_by_its_envelope() -> None:
    body = {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]}
    assert ms.detect_body_protocol(body) == "openai-chat"  # plain text is valid Chat alike
    for extra in ({"stop_sequences": ["x"]}, {"tools": [{"name": "f", "input_schema": {}}]}):
        assert ms.detect_body_protocol({**body, **extra}) == "anthropic"


def test_reasoning_for_a_model_without_it_is_dropped_and_reported() -> None:
    body = {
        "contents": [{"role": "user", "parts": [{"text": "hi"}]}],
        "generationConfig": {"thinkingConfig": {"thinkingBudget": 1024}, "maxOutputTokens": 9},
    }
    same = ms.convert_request(body, protocol="gemini", to="gemini", path_model="gemini-2.0-flash")
    assert same.body["generationConfig"] == {"maxOutputTokens": 9}
    assert [f.path for f in same.lost_fields] == ["generationConfig.thinkingConfig"]
    kept = ms.convert_request(body, protocol="gemini", to="gemini", path_model="gemini-2.5-pro")
    assert kept.body == body


def test_a_second_name_of_the_limit_is_reported_not_lost() -> None:
    body = {**CHAT, "max_tokens": 70}
    out = ms.convert_request(body, protocol="openai-chat", to="anthropic")
    assert out.body["max_tokens"] == 50  # the first name (max_completion_tokens) wins
    assert [f.path for f in out.lost_fields] == ["max_tokens"]
    same = ms.convert_request(body, protocol="openai-chat", to="openai-chat")
    assert same.body == body


def test_a_native_field_is_named_by_its_own_path() -> None:
    body = {**CHAT, "safety_identifier": "u-1", "user": "u-2"}
    out = ms.convert_request(body, protocol="openai-chat", to="gemini", drop_params=True)
    assert "user" in [f.path for f in out.lost_fields]
