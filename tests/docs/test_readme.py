"""Every example in README.md runs as written (tests/docs/runner.py says how), offline.

The provider in the async example is a loopback fake on 127.0.0.1 answering with a bundled
Anthropic recording (only its URL is replaced); the bridge example's server runs on a free port.
The literal comments of the examples (``response.status  # "completed"``) are checked.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import pytest

import maas_stream as ms

from ..conftest import ROOT
from ..io.loopback import send_recording, serve
from .runner import blocks, run_bash, run_python

if TYPE_CHECKING:
    from pathlib import Path

README = ROOT / "README.md"
ANTHROPIC = ROOT / "recordings" / "anthropic" / "thinking_parallel_tools.sse"
PYTHON = [b for b in blocks(README) if b.lang == "python"]
BASH = [b for b in blocks(README) if b.lang == "bash"]


def answer_text(path: Path) -> str:
    response = ms.aggregate(path.read_bytes())
    return "".join(p.text for m in response.messages for p in m.content if isinstance(p, ms.TextPart))


def test_the_readme_has_examples() -> None:
    assert len(PYTHON) >= 5
    assert len(BASH) >= 4
    assert all(b.skip is None for b in PYTHON)  # no python example needs a real provider


@pytest.mark.anyio
async def test_python_examples_run(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-readme-test")
    namespace: dict[str, Any] = {"__name__": "__readme__"}
    async with serve(send_recording(ANTHROPIC.read_bytes())) as server:
        for block in PYTHON:
            await run_python(block, namespace, subs={"https://api.anthropic.com": server.url})
    assert server.errors == []
    assert [r.target for r in server.requests] == ["/v1/messages"]
    assert server.requests[0].headers["x-api-key"] == "sk-ant-readme-test"
    assert json.loads(server.requests[0].body)["stream"] is True
    assert namespace["__checked__"] >= 6  # the literal comments were checked, not skipped


@pytest.mark.parametrize("block", [pytest.param(b, id=f"line{b.line}") for b in BASH])
def test_shell_examples_run(block: Any, tmp_path: Path) -> None:
    if block.skip:
        pytest.skip(f"{block.where}: {block.skip}")
    done = run_bash(block, tmp_path)
    if done is None:
        pytest.skip(f"{block.where}: install steps only (this environment is installed)")
    assert done.returncode == 0, f"{block.where}: exit {done.returncode}\n{done.stderr}"
    assert done.stdout.strip(), f"{block.where}: printed nothing\n{done.stderr}"
    assert " object at 0x" not in done.stdout
    if "serve --recording" in block.code:  # the bridge example prints the recorded answer's text
        assert done.stdout.strip() == answer_text(ANTHROPIC).strip()
    if "--version" in block.code:
        assert f"maas-stream {ms.__version__}" in done.stdout
