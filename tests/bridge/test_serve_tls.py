"""``maas-stream serve --ssl-certfile/--ssl-keyfile``: the bridge over https (and wss).

google-genai's Live client connects only with ``wss``, so the command itself must be able to
serve TLS. One test runs the real command as a subprocess with a self-signed certificate for
127.0.0.1 and asks it for a completion with the openai SDK trusting that certificate; one checks
that a certificate without its key is refused before anything starts.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from typing import TYPE_CHECKING

import httpx2
import openai
import pytest

from tests.bridge.realtime_fakes import tls_files
from tests.bridge.test_auth import HI
from tests.bridge.test_ops import ANTHROPIC_REC, KEY, free_port
from tests.bridge.test_serve import expected

if TYPE_CHECKING:
    from pathlib import Path

pytest.importorskip("uvicorn")
pytest.importorskip("cryptography")


def test_serve_answers_over_https_with_the_given_certificate(tmp_path: Path) -> None:
    cert, key, context = tls_files(tmp_path)
    port = free_port()
    cmd = [
        sys.executable,
        "-m",
        "maas_stream",
        "serve",
        "--recording",
        str(ANTHROPIC_REC),
        "--port",
        str(port),
        "--bridge-key",
        KEY,
        "--ssl-certfile",
        str(cert),
        "--ssl-keyfile",
        str(key),
        "--log-level",
        "warning",
    ]
    env = {**os.environ, "NO_PROXY": "127.0.0.1"}
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        base = f"https://127.0.0.1:{port}"
        with httpx2.Client(trust_env=False, verify=context, timeout=5) as http:
            for _ in range(300):  # up to 30 s for the interpreter to start
                try:
                    if http.get(f"{base}/health").status_code == 200:
                        break
                except httpx2.TransportError:
                    pass
                if proc.poll() is not None:
                    break
                time.sleep(0.1)
            client = openai.OpenAI(api_key=KEY, base_url=f"{base}/v1", http_client=http, max_retries=0)
            chat = client.chat.completions.create(model="any", messages=HI)
        with httpx2.Client(trust_env=False, timeout=5) as plain, pytest.raises(httpx2.TransportError):
            plain.get(f"http://127.0.0.1:{port}/health")  # TLS only: plain http is not answered
    finally:
        proc.terminate()
        try:
            _, err = proc.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            _, err = proc.communicate()
    assert chat.choices[0].message.content == expected(ANTHROPIC_REC)[0]
    assert f"on https://127.0.0.1:{port}" in err.decode()


def test_a_certificate_without_its_key_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from maas_stream._cli import main

    cert, _, _ = tls_files(tmp_path)
    with pytest.raises(SystemExit) as info:
        main(["serve", "--recording", str(ANTHROPIC_REC), "--ssl-certfile", str(cert)])
    assert "--ssl-keyfile" in str(info.value)
