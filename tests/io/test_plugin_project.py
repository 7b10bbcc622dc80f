"""The pytest plugin as a user's project sees it: run pytest in a temporary project (a subprocess).

Covers where recordings are found (ini option, marker, beside the test), asyncio_mode strict
and auto and trio, non-streaming SDK calls served from stream recordings, and record mode
against a loopback fake provider (no network beyond 127.0.0.1).
"""

from __future__ import annotations

import http.server
import os
import subprocess
import sys
import threading
from typing import TYPE_CHECKING, Any

import msgspec
import pytest

from ..packaging.project import RECORDINGS, ROOT, write_project

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

SRC = ROOT / "src"
KEY_VARS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY")


def run_pytest(
    folder: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if k not in KEY_VARS and not k.startswith("PYTEST_")}
    base["PYTHONPATH"] = str(SRC)
    base.pop("COV_CORE_SOURCE", None)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cov", *args],
        cwd=folder,
        env={**base, **(env or {})},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


@pytest.mark.parametrize("mode", ["strict", "auto", "trio"])
def test_a_project_runs_each_sdk_against_recordings(tmp_path: Path, mode: Any) -> None:
    write_project(tmp_path, mode)
    result = run_pytest(tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "3 passed" in result.stdout


MARKED = """
import pytest

pytestmark = pytest.mark.maas_recordings("../cassettes")


def test_folder(maas_recordings_dir, maas_replay):
    assert maas_recordings_dir.name == "cassettes"
    assert maas_replay.load("openai-chat/tool_call_no_arguments").data.startswith(b"data:")
"""

BESIDE = """
def test_folder(maas_recordings_dir, maas_replay):
    assert maas_recordings_dir == __import__("pathlib").Path(__file__).parent / "recordings"
    maas_replay.load("anthropic/tool_no_args")
"""

MISSING = """
def test_missing(maas_replay):
    maas_replay.client("openai-chat/never_recorded")
"""


def test_recordings_folder_from_marker_or_beside_the_test(tmp_path: Path) -> None:
    (tmp_path / "pytest.ini").write_text("[pytest]\naddopts = --strict-markers -p no:cacheprovider\n")
    for folder, name in (
        ("cassettes", "openai-chat/tool_call_no_arguments"),
        ("b/recordings", "anthropic/tool_no_args"),
    ):
        target = tmp_path / folder / f"{name}.sse"
        target.parent.mkdir(parents=True)
        target.write_bytes((RECORDINGS / f"{name}.sse").read_bytes())
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "test_marked.py").write_text(MARKED)
    (tmp_path / "b" / "test_beside.py").write_text(BESIDE)
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "test_missing.py").write_text(MISSING)
    result = run_pytest(tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "1 failed, 2 passed" in result.stdout
    assert "no recording 'openai-chat/never_recorded'" in result.stdout
    assert "run pytest with --maas-record" in result.stdout


# ------------------------------------------------------------------ record mode


class FakeProvider(http.server.BaseHTTPRequestHandler):
    """A loopback provider: answers every POST with the stream in ``self.server.answer``."""

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        server: Any = self.server
        server.seen.append((self.path, dict(self.headers.items()), self.rfile.read(length)))
        status, data = server.answer
        self.send_response(status)
        self.send_header("content-type", "text/event-stream" if status == 200 else "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def provider() -> Iterator[Any]:
    server: Any = http.server.ThreadingHTTPServer(("127.0.0.1", 0), FakeProvider)
    server.seen = []
    server.answer = (200, (RECORDINGS / "openai-chat/readme_text_then_parallel_tools.sse").read_bytes())
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()
    thread.join()


RECORD = """
import openai


def test_records_then_replays(maas_replay):
    client = openai.OpenAI(api_key="dummy", base_url="http://replay.test/v1", max_retries=0,
                           http_client=maas_replay.client("openai-chat/new_case"))
    body = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
    assert [t.id for t in body.choices[0].message.tool_calls] == ["call_P1", "call_O2"]
"""


def record_project(folder: Path) -> Path:
    (folder / "pytest.ini").write_text("[pytest]\naddopts = -p no:cacheprovider\n")
    (folder / "test_record.py").write_text(RECORD)
    return folder / "recordings" / "openai-chat" / "new_case.sse"


def test_record_mode_writes_a_missing_recording_then_replays_it_offline(
    tmp_path: Path, provider: Any
) -> None:
    target = record_project(tmp_path)
    url = f"http://127.0.0.1:{provider.server_address[1]}"
    key = "sk-test-0123456789abcdef"
    result = run_pytest(tmp_path, "--maas-record", "--maas-record-url", url, env={"OPENAI_API_KEY": key})
    assert result.returncode == 0, result.stdout + result.stderr
    assert target.read_bytes() == provider.answer[1]
    path, headers, body = provider.seen[0]
    assert path == "/v1/chat/completions"
    assert headers["authorization"] == f"Bearer {key}"  # the real key, not the test's dummy
    assert msgspec.json.decode(body)["stream"] is True  # recorded as a stream, though asked without
    meta = target.with_name("new_case.meta.json").read_text()
    assert key not in meta
    assert "[REDACTED]" in meta
    # Now offline: no record flag, no key, the provider gone from the URL.
    again = run_pytest(tmp_path)
    assert again.returncode == 0, again.stdout + again.stderr
    assert len(provider.seen) == 1


def test_record_mode_without_a_key_fails_clearly(tmp_path: Path, provider: Any) -> None:
    target = record_project(tmp_path)
    url = f"http://127.0.0.1:{provider.server_address[1]}"
    result = run_pytest(tmp_path, "--maas-record", "--maas-record-url", url)
    assert result.returncode == 1
    assert "does not exist and OPENAI_API_KEY is not set" in result.stdout
    assert provider.seen == []
    assert not target.exists()


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        pytest.param(
            "anthropic",
            "recorded as openai-chat, but the provider sent a stream of anthropic",
            id="wrong-protocol",
        ),
        pytest.param("401", "answered: provider answered 401", id="error-status"),
    ],
)
def test_record_mode_keeps_nothing_that_is_not_the_named_stream(
    tmp_path: Path, provider: Any, answer: str, message: str
) -> None:
    if answer == "anthropic":
        provider.answer = (200, (RECORDINGS / "anthropic/tool_no_args.sse").read_bytes())
    else:
        provider.answer = (
            401,
            b'{"error": {"message": "Incorrect API key provided", "type": "invalid_request_error"}}',
        )
    target = record_project(tmp_path)
    url = f"http://127.0.0.1:{provider.server_address[1]}"
    result = run_pytest(tmp_path, "--maas-record", "--maas-record-url", url, env={"OPENAI_API_KEY": "sk-x"})
    assert result.returncode == 1
    assert message in result.stdout, result.stdout
    assert not target.exists()
    assert not target.with_name("new_case.meta.json").exists()
