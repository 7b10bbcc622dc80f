"""A fresh project: build the wheel, install it in a new virtualenv, run a user's tests there.

Nothing of this checkout is importable in that virtualenv: only the built wheel, pytest and
the official SDKs (from pip's cache, its configured wheel folders or PyPI). The project tests
one call per SDK through the pytest plugin (found by its entry point), and the installed
``maas-stream`` command runs the README's first command on a recording the project holds.
Marked ``packaging`` (deselect with ``-m "not packaging"`` for a quick run; CI runs it).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import TYPE_CHECKING

import pytest

from .project import CHAT, ROOT, write_project

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = pytest.mark.packaging

# What a user installs next to the wheel (the SDKs the project's tests call, and its runner).
USER_PACKAGES = ["pytest", "pytest-asyncio", "trio", "openai", "anthropic", "google-genai"]


def run(*args: str | Path, cwd: Path, env: dict[str, str] | None = None) -> str:
    result = subprocess.run(
        [str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600, check=False
    )
    assert result.returncode == 0, f"{args}:\n{result.stdout}\n{result.stderr}"
    return result.stdout


def clean_env(venv: Path) -> dict[str, str]:
    drop = ("PYTHONPATH", "VIRTUAL_ENV", "COV_CORE_SOURCE", "COV_CORE_CONFIG", "COV_CORE_DATAFILE")
    env = {k: v for k, v in os.environ.items() if k not in drop and not k.startswith("PYTEST_")}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    return env


def test_the_wheel_works_in_a_fresh_project(tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    run(sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", dist, ROOT, cwd=tmp_path)
    (wheel,) = dist.glob("maas_stream-*.whl")
    venv = tmp_path / "venv"
    run(sys.executable, "-m", "venv", venv, cwd=tmp_path)
    python = venv / "bin" / "python"
    env = clean_env(venv)
    run(python, "-m", "pip", "install", "--quiet", wheel, *USER_PACKAGES, cwd=tmp_path, env=env)

    project = write_project(tmp_path / "project", "strict")
    where = run(python, "-c", "import maas_stream, sys; print(maas_stream.__file__)", cwd=project, env=env)
    assert where.startswith(str(venv)), where  # the installed wheel, not this checkout

    out = run(python, "-m", "pytest", "-q", cwd=project, env=env)
    assert "3 passed" in out

    # The README's first command, from the installed console script, on the project's recording.
    response = json.loads(
        run(venv / "bin" / "maas-stream", "aggregate", f"fixtures/recordings/{CHAT}", cwd=project, env=env)
    )
    assert response["status"] == "completed"
    assert response["finish_reason"] == "tool_calls"
    version = run(venv / "bin" / "maas-stream", "--version", cwd=project, env=env)
    assert version.split() == [
        "maas-stream",
        run(python, "-c", "import maas_stream; print(maas_stream.__version__)", cwd=project, env=env).strip(),
    ]
