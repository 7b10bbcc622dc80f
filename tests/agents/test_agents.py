"""The agent CLIs people point at a gateway, run headless through the bridge: Claude Code, Codex, Gemini CLI.

Each CLI talks to the bridge in its own protocol; behind the bridge a fake provider of ANOTHER
protocol (``tests/agents/upstreams.py``) plays a tool loop: turn 1 calls a read-only tool the CLI
really runs in a temporary folder (read a file, ``cat`` it), turn 2 must carry the tool result
(the file's marker) and gets the final text. The test asserts the CLI printed that text and
exited 0, and that the provider saw the tool result. A second test per CLI cuts the provider's
stream mid-way: the CLI must fail (nonzero exit, an error), never print a clean half answer.

Every CLI runs with a temporary HOME, telemetry and update checks off, and every proxy variable
pointing at a loopback canary that records what it is asked: the bridge and the fake are on
127.0.0.1 (``NO_PROXY``), so the canary must see nothing.

Which request fields each CLI sends that an upstream cannot carry (so the bridge needs
``drop_params``) is listed per case and in docs/agents.md.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pytest

from tests.agents.harness import Run, base_env, bridge_over_fake, cli_path, run_cli
from tests.agents.upstreams import CUT_TEXT, FINAL_TEXT, FakeProvider, ToolCall
from tests.io.loopback import Conn, serve

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

pytestmark = [pytest.mark.agents, pytest.mark.anyio]

MARKER = "MAAS-AGENT-MARKER-7f3a"
"""What the file the tool reads holds; the provider must see it in the tool result."""

PROMPT = "Read notes.txt and tell me what it says."


@dataclass(frozen=True)
class Agent:
    """How to run one CLI headless against a bridge."""

    binary: str
    tool: Callable[[Path], ToolCall]
    """The read-only call the fake makes, given the working folder."""
    command: Callable[[Path], list[str]]
    """The command line, given the CLI's path."""
    setup: Callable[[Path, str], dict[str, str]]
    """Writes the CLI's config under HOME for the bridge URL; returns its environment variables."""


def _claude_setup(home: Path, url: str) -> dict[str, str]:
    return {
        "ANTHROPIC_BASE_URL": url,
        "ANTHROPIC_API_KEY": "sk-ant-test-not-a-key",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_ERROR_REPORTING": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "CLAUDE_CODE_MAX_RETRIES": "0",  # a failed stream fails the run instead of backing off 10 times
    }


def _codex_setup(home: Path, url: str) -> dict[str, str]:
    codex_home = home / ".codex"
    codex_home.mkdir(parents=True, exist_ok=True)
    (codex_home / "config.toml").write_text(
        f"""model = "gpt-5-codex"
model_provider = "bridge"
check_for_update_on_startup = false

[analytics]
enabled = false

[features]
plugins = false

[model_providers.bridge]
name = "maas-stream bridge"
base_url = "{url}/v1"
wire_api = "responses"
env_key = "BRIDGE_API_KEY"
request_max_retries = 0
stream_max_retries = 0
""",
        encoding="utf-8",
    )
    return {"CODEX_HOME": str(codex_home), "BRIDGE_API_KEY": "sk-test-not-a-key"}


def _gemini_setup(home: Path, url: str) -> dict[str, str]:
    settings = {
        # With GOOGLE_GEMINI_BASE_URL set and no configured auth type, 0.61.0 picks "gateway",
        # which its non-interactive auth check then rejects ("Invalid auth method selected").
        "security": {"auth": {"selectedType": "gemini-api-key"}},
        "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
        "privacy": {"usageStatisticsEnabled": False},
        "telemetry": {"enabled": False},
    }
    (home / ".gemini").mkdir(parents=True, exist_ok=True)
    (home / ".gemini" / "settings.json").write_text(json.dumps(settings), encoding="utf-8")
    return {
        "GEMINI_API_KEY": "test-not-a-key",
        "GOOGLE_GEMINI_BASE_URL": url,
        "GEMINI_CLI_TRUST_WORKSPACE": "true",
    }


AGENTS = {
    "claude-code": Agent(
        "claude",
        lambda work: ToolCall("Read", {"file_path": str(work / "notes.txt")}),
        lambda exe: [str(exe), "-p", PROMPT, "--model", "claude-sonnet-4-5"],
        _claude_setup,
    ),
    "codex": Agent(
        "codex",
        lambda work: ToolCall("exec_command", {"cmd": "cat notes.txt"}),
        lambda exe: [str(exe), "exec", "--skip-git-repo-check", "--sandbox", "read-only", PROMPT],
        _codex_setup,
    ),
    "gemini-cli": Agent(
        "gemini",
        lambda work: ToolCall("read_file", {"file_path": "notes.txt"}),
        lambda exe: [str(exe), "-p", PROMPT, "-m", "gemini-2.5-flash"],
        _gemini_setup,
    ),
}

# (CLI, upstream protocol, drop_params): each CLI against the three OTHER providers' protocols.
# drop_params is needed where the CLI sends a field the upstream's envelope cannot carry yet
# (docs/agents.md lists them): Codex sends tool_choice, parallel_tool_calls, reasoning and the
# built-in tools `namespace` and `web_search`; Gemini CLI sends generationConfig.thinkingConfig.
LOOPS = [
    pytest.param("claude-code", "openai-chat", False, id="claude-code-openai-chat"),
    pytest.param("claude-code", "openai-responses", False, id="claude-code-openai-responses"),
    pytest.param("claude-code", "gemini", False, id="claude-code-gemini"),
    pytest.param("codex", "anthropic", True, id="codex-anthropic"),
    pytest.param("codex", "gemini", True, id="codex-gemini"),
    pytest.param("codex", "openai-chat", True, id="codex-openai-chat"),
    pytest.param("gemini-cli", "anthropic", False, id="gemini-cli-anthropic"),
    pytest.param("gemini-cli", "openai-chat", False, id="gemini-cli-openai-chat"),
    pytest.param("gemini-cli", "openai-responses", False, id="gemini-cli-openai-responses"),
]


async def _refuse(conn: Conn) -> None:
    """The canary proxy every CLI is given: answers 403 (the loopback server records the target)."""
    await conn.start(403, {"content-type": "text/plain"})
    await conn.end()


async def _run_agent(
    agent_name: str, fake: FakeProvider, tmp_path: Path, *, drop_params: bool
) -> tuple[Run, int]:
    """Run the CLI through a bridge over ``fake``; returns the run and the bridge's stream errors."""
    agent = AGENTS[agent_name]
    exe = cli_path(agent.binary)
    home = tmp_path / "home"
    work = tmp_path / "work"
    home.mkdir()
    work.mkdir()
    (work / "notes.txt").write_text(MARKER + "\n", encoding="utf-8")
    async with serve(_refuse) as canary, bridge_over_fake(fake, drop_params=drop_params) as bridge:
        env = base_env(home)
        proxy = canary.url
        names = ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy")
        env.update(dict.fromkeys(names, proxy))
        env.update(agent.setup(home, bridge.url))
        run = await run_cli(agent.command(exe), cwd=work, env=env)
        stream_errors = bridge.app.stats.stream_errors
    called = [r.target for r in canary.requests]
    assert called == [], f"{agent_name} called out beyond 127.0.0.1: {called}\n{run}"
    return run, stream_errors


@pytest.mark.parametrize(("agent_name", "upstream", "drop_params"), LOOPS)
async def test_a_tool_loop_completes_through_the_bridge(
    agent_name: str, upstream: str, drop_params: bool, tmp_path: Path
) -> None:
    fake = FakeProvider(upstream, AGENTS[agent_name].tool(tmp_path / "work"))
    run, _ = await _run_agent(agent_name, fake, tmp_path, drop_params=drop_params)
    answers = [e.answer for e in fake.exchanges]
    assert run.returncode == 0, f"{answers}\n{run}"
    assert FINAL_TEXT in run.stdout, run
    assert "tool_call" in answers, answers
    finals = [e for e in fake.exchanges if e.answer == "final"]
    assert finals, f"the provider never saw a tool result: {answers}\n{run}"
    assert any(MARKER in result for result in finals[0].tool_results), finals[0].tool_results


# One cross-provider upstream per CLI; the failure is the bridge's in-band error in the CLI's protocol.
CUTS = [
    pytest.param("claude-code", "openai-chat", False, id="claude-code-openai-chat"),
    pytest.param("codex", "anthropic", True, id="codex-anthropic"),
    pytest.param(
        "gemini-cli",
        "openai-chat",
        True,
        id="gemini-cli-openai-chat",
        marks=pytest.mark.xfail(
            reason='the bridge\'s Gemini in-band error is an SSE `data: {"error": ...}` event, which '
            "google-genai for JS (under Gemini CLI) reads as an empty chunk: the CLI retries, prints the "
            "half answer and exits 0 (docs/agents.md)",
            strict=True,
        ),
    ),
]


@pytest.mark.parametrize(("agent_name", "upstream", "drop_params"), CUTS)
async def test_an_upstream_dying_mid_stream_fails_the_cli(
    agent_name: str, upstream: str, drop_params: bool, tmp_path: Path
) -> None:
    fake = FakeProvider(upstream, AGENTS[agent_name].tool(tmp_path / "work"), cut=True)
    run, stream_errors = await _run_agent(agent_name, fake, tmp_path, drop_params=drop_params)
    assert "cut" in [e.answer for e in fake.exchanges], run
    assert stream_errors >= 1
    assert FINAL_TEXT not in run.stdout
    assert run.returncode != 0, run
    assert "error" in (run.stdout + run.stderr).lower(), run
    assert CUT_TEXT not in run.stdout or "error" in run.stdout.lower(), run


async def test_without_drop_params_codex_is_refused_loudly(tmp_path: Path) -> None:
    # Codex sends built-in tools (`namespace`, `web_search`) and settings a Chat upstream cannot
    # carry. Without drop_params the bridge refuses them (400 naming the client's own fields) and
    # the CLI must show that and fail, with no request reaching the provider. When every field
    # Codex sends can be carried, this test fails: then drop the drop_params of the Codex LOOPS.
    fake = FakeProvider("openai-chat", AGENTS["codex"].tool(tmp_path / "work"))
    run, _ = await _run_agent("codex", fake, tmp_path, drop_params=False)
    assert run.returncode != 0, run
    assert "cannot be carried to openai-chat" in run.stderr, run
    assert "drop_params" in run.stderr, run
    assert fake.exchanges == []
