"""Run the code blocks of a Markdown document as a reader would, so that the examples cannot drift.

* ```` ```python ```` blocks of one document run in order in one namespace (a reader's session),
  with top-level ``await`` allowed (as in ``python -m asyncio``), from the repository root (or a
  given folder).
  An expression followed by a comment that is a Python literal (``response.status  #
  "completed"``, or the literal alone on the next line) is checked: it must equal that literal.
* ```` ```bash ```` blocks run in bash from the repository root, with ``python`` and
  ``maas-stream`` pointing at this interpreter and this checkout; the install steps
  (``python -m pip install ...``) are left out, as the environment is installed already, and so
  is ``python -m pytest`` (the suite running this). A line
  ending in ``&`` starts a background server (its ``--port`` is replaced by a free one and waited
  for); the block's other lines then run as one script, and must exit 0 and print something.
* A block right after ``<!-- no-run: REASON -->`` is not run; the test reports it as skipped with
  that reason (for the few that need a real provider key).
* ``subs`` replaces text in the code before it runs: only a provider's URL by the loopback fake's.
"""

from __future__ import annotations

import ast
import contextlib
import inspect
import os
import re
import shlex
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio

from ..conftest import ROOT

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping
    from pathlib import Path

_FENCE = re.compile(r"^```(\w*)\s*$")
_NO_RUN = re.compile(r"^<!--\s*no-run:\s*(.+?)\s*-->\s*$")
_PIP = re.compile(r"^\s*python -m pip install\b")
_PYTEST = re.compile(r"^\s*python -m pytest\b")  # the suite that runs this: not again inside it


@dataclass(frozen=True)
class Block:
    """One fenced code block."""

    path: Path
    line: int
    """The line of its first code line (1-based)."""
    lang: str
    code: str
    skip: str | None
    """The ``no-run`` marker's reason, if the block has one."""

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def blocks(path: Path, langs: tuple[str, ...] = ("python", "bash")) -> list[Block]:
    """The fenced blocks of ``path`` in the languages ``langs``, in order."""
    lines = path.read_text(encoding="utf-8").splitlines()
    out: list[Block] = []
    i = 0
    while i < len(lines):
        fence = _FENCE.match(lines[i])
        if fence is None:
            i += 1
            continue
        end = i + 1
        while end < len(lines) and lines[end].rstrip() != "```":
            end += 1
        before = next((lines[j] for j in range(i - 1, -1, -1) if lines[j].strip()), "")
        marker = _NO_RUN.match(before)
        if fence[1] in langs:
            code = "\n".join(lines[i + 1 : end]) + "\n"
            out.append(Block(path, i + 2, fence[1], code, marker[1] if marker else None))
        i = end + 1
    return out


# ---------------------------------------------------------------- python


class _Checks(ast.NodeTransformer):
    """Wrap ``expr  # literal`` statements in a call that checks the value."""

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines
        self.values: list[Any] = []
        """The expected values, by index (a list or dict cannot be an AST constant)."""

    def expected(self, node: ast.stmt) -> tuple[bool, Any]:
        assert node.end_lineno is not None
        assert node.end_col_offset is not None
        rest = self.lines[node.end_lineno - 1][node.end_col_offset :].strip()
        if not rest and node.end_lineno < len(self.lines):
            rest = self.lines[node.end_lineno].strip()  # the literal alone on the next line
        if not rest.startswith("#"):
            return False, None
        try:
            return True, ast.literal_eval(rest[1:].strip())
        except (ValueError, SyntaxError):  # a comment in words, not a value
            return False, None

    def visit_Expr(self, node: ast.Expr) -> ast.stmt:
        found, value = self.expected(node)
        if not found or isinstance(node.value, ast.Await | ast.Constant):
            return node
        index = len(self.values)
        self.values.append(value)
        call = ast.Call(
            func=ast.Name("__check__", ast.Load()),
            args=[node.value, ast.Constant(index), ast.Constant(node.lineno)],
            keywords=[],
        )
        return ast.copy_location(ast.Expr(call), node)


async def run_python(
    block: Block, namespace: dict[str, Any], subs: Mapping[str, str] = {}, cwd: Path = ROOT
) -> None:
    """Run one python block in ``namespace`` (top-level await allowed), checking literal comments.

    A block without top-level ``await`` runs in a worker thread, as a script would (it may call
    ``anyio.run``), while the caller's event loop goes on serving the loopback fakes.

    Raises:
        AssertionError: An expression's value is not its comment's literal (with the line).
    """
    code = block.code
    for old, new in subs.items():
        code = code.replace(old, new)
    lines = code.splitlines()

    checks = _Checks(lines)

    def check(value: Any, index: int, line: int) -> None:
        expected = checks.values[index]
        where = f"{block.path.name}:{block.line + line - 1}"
        assert value == expected, f"{where}: {lines[line - 1].strip()!r} gives {value!r}, not {expected!r}"
        namespace["__checked__"] = namespace.get("__checked__", 0) + 1

    namespace["__check__"] = check
    tree = ast.fix_missing_locations(checks.visit(ast.parse(code)))
    compiled = compile(tree, block.where, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    with _cwd(cwd):
        if compiled.co_flags & inspect.CO_COROUTINE:
            await eval(compiled, namespace)
        else:
            await anyio.to_thread.run_sync(eval, compiled, namespace)


@contextlib.contextmanager
def _cwd(path: Path) -> Iterator[None]:
    old = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(old)


# ---------------------------------------------------------------- bash


def shell_env(tmp: Path) -> dict[str, str]:
    """An environment where ``python`` and ``maas-stream`` are this interpreter and this checkout."""
    bin_dir = tmp / "bin"
    bin_dir.mkdir(exist_ok=True)
    exe = shlex.quote(sys.executable)
    (bin_dir / "python").write_text(f'#!/bin/sh\nexec {exe} "$@"\n')
    (bin_dir / "maas-stream").write_text(f'#!/bin/sh\nexec {exe} -m maas_stream "$@"\n')
    for shim in bin_dir.iterdir():
        shim.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONPATH"] = str(ROOT / "src")
    env["NO_COLOR"] = "1"
    return env


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _wait_port(port: int, proc: subprocess.Popen[str], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"the background server exited with {proc.returncode}: {proc.stderr}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return
        time.sleep(0.1)
    raise AssertionError(f"the background server did not listen on port {port} within {timeout} s")


def shell_script(code: str) -> tuple[list[str], str]:
    """The block's background commands and the rest as one script, install steps left out."""
    background: list[str] = []
    kept: list[str] = []
    for line in code.splitlines():
        parts = [p for p in line.split(" && ") if not _PIP.match(p) and not _PYTEST.match(p)]
        if not parts:
            continue
        line = " && ".join(parts)
        if line.rstrip().endswith("&") and not line.rstrip().endswith("&&"):
            background.append(line.rstrip()[:-1].strip())
        else:
            kept.append(line)
    return background, "\n".join(kept) + "\n"


def run_bash(block: Block, tmp: Path) -> subprocess.CompletedProcess[str] | None:
    """Run one bash block as described in the module docstring; return the script's result.

    ``None`` when the block holds only install steps and test-suite runs.
    """
    env = shell_env(tmp)
    background, script = shell_script(block.code)
    if not background and not script.strip():
        return None
    procs: list[subprocess.Popen[str]] = []
    try:
        for command in background:
            port = _free_port()
            found = re.search(r"--port\s+(\d+)", command)
            assert found is not None, f"{block.where}: a background command without --port: {command}"
            script = script.replace(f":{found[1]}", f":{port}")
            command = command.replace(found[0], f"--port {port}")
            proc = subprocess.Popen(
                ["bash", "-c", f"exec {command}"],
                cwd=ROOT,
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                text=True,
            )
            procs.append(proc)
            _wait_port(port, proc)
        return subprocess.run(
            ["bash", "-euo", "pipefail", "-c", script],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            check=False,
            timeout=300,
        )
    finally:
        for proc in procs:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
