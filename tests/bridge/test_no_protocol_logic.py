"""The bridge, the CLI, the IO layer and ``testing`` hold no protocol logic: they dispatch on the specs.

A grep over their code (string literals and comments; docstrings are prose and may show usage
examples) for the seven protocol names, for the protocol packages and for the names module: an
``if protocol == "gemini"`` or a table keyed by protocol names must not come back.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

import pytest

import maas_stream as ms
from maas_stream.protocols import _names

SRC = Path(ms.__file__).resolve().parent
CHECKED = sorted(
    [*(SRC / "bridge").rglob("*.py"), SRC / "_cli.py", SRC / "testing.py", *(SRC / "io").rglob("*.py")]
)

NAMES = sorted({getattr(_names, n) for n in _names.__all__})
PACKAGES = [*sorted(n.replace("-", "_") for n in NAMES), "_names"]
# A name inside a longer one (``anthropic-version``, ``GEMINI_API_KEY``) is protocol knowledge too.
_NAME = re.compile("|".join(re.escape(n) for n in NAMES), re.IGNORECASE)
_TEXT = {tokenize.STRING, tokenize.COMMENT, getattr(tokenize, "FSTRING_MIDDLE", tokenize.STRING)}


def _docstrings(tree: ast.AST) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                doc = body[0].value
                if isinstance(doc.value, str):
                    lines.update(range(doc.lineno, (doc.end_lineno or doc.lineno) + 1))
    # Attribute docstrings: a bare string right after an assignment.
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Expr)
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
        ):
            lines.update(range(node.lineno, (node.end_lineno or node.lineno) + 1))
    return lines


def offences(source: str) -> list[str]:
    """Protocol knowledge in ``source``'s code: names in strings or comments, protocol imports."""
    tree = ast.parse(source)
    docs = _docstrings(tree)
    found = []
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type in _TEXT and tok.start[0] not in docs and _NAME.search(tok.string):
            found.append(f"line {tok.start[0]}: {tok.string}")
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            parts = (node.module or "").split(".")
            imported = [*parts, *(a.name for a in node.names)]
            hit = [p for p in imported if p in PACKAGES]
            if hit:
                found.append(f"line {node.lineno}: imports {', '.join(hit)}")
    return found


@pytest.mark.parametrize("path", [pytest.param(p, id=str(p.relative_to(SRC))) for p in CHECKED])
def test_no_protocol_names_in_code(path: Path) -> None:
    assert offences(path.read_text()) == []


@pytest.mark.parametrize(
    "snippet",
    [
        pytest.param('if protocol == "gemini":\n    pass\n', id="compare"),
        pytest.param('KEYS = {"openai-chat": "OPENAI_API_KEY"}\n', id="table"),
        pytest.param('headers = {"anthropic-version": "2023-06-01"}\n', id="header"),
        pytest.param('x = f"{p} is google-live"\n', id="fstring"),
        pytest.param("x = 1  # only for openai-realtime\n", id="comment"),
        pytest.param("from ..protocols._names import GEMINI\n", id="names_module"),
        pytest.param("from ..protocols import openai_responses\n", id="package"),
    ],
)
def test_the_check_finds_protocol_logic(snippet: str) -> None:
    assert offences(snippet)


def test_the_check_allows_docstrings_and_dispatch() -> None:
    source = '''"""Example: ``ms.aconvert(resp, protocol="openai-chat")``."""


def f(spec):
    """Serve ``anthropic`` clients."""
    return spec.error_body(400, "bad") if spec.framing == "sse" else None
'''
    assert offences(source) == []
