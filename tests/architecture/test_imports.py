"""The layer table of DESIGN.md as code: which modules of ``src/maas_stream`` may import what.

Every ``import`` / ``from ... import`` statement is read with :mod:`ast` (module level, function
level, ``TYPE_CHECKING`` blocks alike), relative imports are resolved against the importing
module, and ``from package import name`` counts as importing ``package.name`` when that is a
module of the source tree. A broken rule fails with ``file:line: imports X`` for every offence.

This module owns the rules and the checker; it must not import ``maas_stream`` (the rules hold
for the source files, whatever importing them would do).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping

REPO = Path(__file__).resolve().parents[2]
SRC = REPO / "src"
PACKAGE = "maas_stream"


@dataclass(frozen=True)
class Module:
    """One source file: its dotted name, whether it is a package ``__init__``, its text."""

    name: str
    path: str
    source: str
    is_package: bool = False


@dataclass(frozen=True)
class Import:
    """One imported module, where it is imported."""

    path: str
    line: int
    module: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: imports {self.module}"


@dataclass(frozen=True)
class Rule:
    """Modules matching ``applies`` must not import a module matching ``forbidden``."""

    name: str
    applies: Callable[[str], bool]
    forbidden: Callable[[str], bool]
    why: str


def source_modules(root: Path = SRC / PACKAGE) -> dict[str, Module]:
    """Every ``.py`` file under ``root`` by dotted module name."""
    out: dict[str, Module] = {}
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root.parent).with_suffix("")
        parts = list(rel.parts)
        is_package = parts[-1] == "__init__"
        if is_package:
            parts.pop()
        name = ".".join(parts)
        shown = str(path.relative_to(REPO)) if REPO in path.parents else str(path)
        out[name] = Module(name, shown, path.read_text(encoding="utf-8"), is_package)
    return out


def _resolve(module: Module, level: int, target: str | None) -> str:
    """The absolute name of ``from <level dots><target> import ...`` inside ``module``."""
    if level == 0:
        return target or ""
    base = module.name.split(".")
    if not module.is_package:
        base = base[:-1]  # a plain module's package
    if level > 1:
        base = base[: len(base) - (level - 1)]
    return ".".join([*base, target] if target else base)


def imports_of(module: Module, known: Iterable[str] = ()) -> list[Import]:
    """Every module ``module`` imports, with its line, relative imports made absolute.

    ``from pkg import name`` yields ``pkg.name`` when that is one of the ``known`` modules,
    otherwise ``pkg``.
    """
    modules = set(known)
    out: list[Import] = []
    for node in ast.walk(ast.parse(module.source, filename=module.path)):
        if isinstance(node, ast.Import):
            out += [Import(module.path, node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _resolve(module, node.level, node.module)
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                out.append(Import(module.path, node.lineno, sub if sub in modules else base))
    return sorted(out, key=lambda i: (i.line, i.module))


def violations(rule: Rule, modules: Mapping[str, Module]) -> list[str]:
    """``file:line: imports X`` for every import in ``modules`` that breaks ``rule``."""
    return [
        f"{found}  [{rule.why}]"
        for name, module in sorted(modules.items())
        if rule.applies(name)
        for found in imports_of(module, modules)
        if found.module != name and rule.forbidden(found.module)
    ]


# ------------------------------------------------------------------------------------- rules


def _under(*prefixes: str) -> Callable[[str], bool]:
    """True for a module equal to one of ``prefixes`` or inside one of them."""
    return lambda name: any(name == p or name.startswith(p + ".") for p in prefixes)


def _protocol_packages(root: Path = SRC / PACKAGE / "protocols") -> list[str]:
    return sorted(
        p.name for p in root.iterdir() if (p / "__init__.py").is_file() and not p.name.startswith("_")
    )


PROTOCOLS = [f"{PACKAGE}.protocols.{name}" for name in _protocol_packages()]
CORE = _under(
    *(
        f"{PACKAGE}.{name}"
        for name in (
            "_model",
            "events",
            "sse",
            "_drops",
            "_registry",
            "_aggregate",
            "_convert",
            "_stream_aggregator",
            "_split",
            "_bodies",
            "_request",
            "_models",
            "_usage",
            "_interfaces",
            "_exceptions",
            "_envelope",
            "_client_model",
            "_audio",
            "_session_bridge",
            "_session_config",
            "_session_input",
            "_session_output",
            "_session_http",
            "protocols",
        )
    )
)
OUTER = _under(f"{PACKAGE}.io", f"{PACKAGE}.bridge", f"{PACKAGE}._cli", f"{PACKAGE}._cli_serve")
IO_LIBRARIES = _under("anyio", "httpx", "httpx2", "httpx_sse", "websockets")


RULES = [
    Rule(
        "core-does-no-io",
        CORE,
        lambda name: OUTER(name) or IO_LIBRARIES(name),
        "the core (model, events, sse, drops, registry, aggregate, convert, interfaces, exceptions,"
        " the session bridge and its modules, protocols) imports no io/, bridge/, _cli, anyio, httpx, httpx2, httpx_sse or websockets",
    ),
    Rule(
        "protocols-below-the-aggregator",
        _under(f"{PACKAGE}.protocols"),
        _under(
            f"{PACKAGE}._aggregate",
            f"{PACKAGE}._convert",
            f"{PACKAGE}._stream_aggregator",
            f"{PACKAGE}._split",
            f"{PACKAGE}._bodies",
            f"{PACKAGE}._request",
        ),
        "protocols/** imports none of the pipelines (_aggregate, _convert, _stream_aggregator, _split,"
        " _bodies, _request)",
    ),
    Rule(
        "outer-layers-use-the-registry",
        OUTER,
        _under(*PROTOCOLS),
        "io/, bridge/ and _cli reach a protocol only through _registry, never protocols.<name>",
    ),
    Rule(
        "model-knows-no-protocol",
        _under(f"{PACKAGE}._model", f"{PACKAGE}.events"),
        _under(f"{PACKAGE}.protocols", f"{PACKAGE}._registry"),
        "_model and events know no protocol",
    ),
]
"""The layer table (DESIGN.md, "Layers"): each rule is one "must not" column entry."""


@pytest.mark.parametrize("rule", RULES, ids=[r.name for r in RULES])
def test_layer_rule_holds(rule: Rule) -> None:
    modules = source_modules()
    assert any(rule.applies(name) for name in modules), f"{rule.name} matches no module"
    found = violations(rule, modules)
    assert not found, f"{rule.name}: {len(found)} forbidden import(s):\n" + "\n".join(found)


def test_protocol_packages_import_no_other_protocol() -> None:
    modules = source_modules()
    found = [
        message
        for own in PROTOCOLS
        for message in violations(
            Rule(
                "protocols-are-separate",
                _under(own),
                _under(*(p for p in PROTOCOLS if p != own)),
                "a protocol package imports no other protocol package; share through protocols/_*.py",
            ),
            modules,
        )
    ]
    assert not found, "\n".join(found)


def test_the_tree_is_what_the_rules_expect() -> None:
    modules = source_modules()
    assert f"{PACKAGE}._aggregate" in modules
    assert f"{PACKAGE}.protocols" in modules
    assert modules[f"{PACKAGE}.protocols"].is_package
    assert len(PROTOCOLS) >= 7, PROTOCOLS
    assert all(p in modules for p in PROTOCOLS)


# --------------------------------------------------------------------- the checker checked


def _synthetic(name: str, source: str, *, is_package: bool = False) -> dict[str, Module]:
    modules = {n: Module(n, "", "") for n in (f"{PACKAGE}.io", *PROTOCOLS, f"{PACKAGE}.protocols._base")}
    path = "src/" + name.replace(".", "/") + ("/__init__.py" if is_package else ".py")
    return {**modules, name: Module(name, path, source, is_package)}


def _only(rule_name: str) -> Rule:
    return next(r for r in RULES if r.name == rule_name)


@pytest.mark.parametrize(
    ("rule", "name", "source", "expected"),
    [
        pytest.param(
            "core-does-no-io",
            f"{PACKAGE}._aggregate",
            "import logging\n\ndef f():\n    import httpx\n",
            "src/maas_stream/_aggregate.py:4: imports httpx",
            id="function-level-third-party",
        ),
        pytest.param(
            "core-does-no-io",
            f"{PACKAGE}.protocols.anthropic._decode",
            "from ...io import aconnect\n",
            "src/maas_stream/protocols/anthropic/_decode.py:1: imports maas_stream.io",
            id="relative-io-from-a-protocol",
        ),
        pytest.param(
            "core-does-no-io",
            f"{PACKAGE}.sse",
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import anyio.abc\n",
            "src/maas_stream/sse.py:3: imports anyio.abc",
            id="type-checking-block",
        ),
        pytest.param(
            "protocols-below-the-aggregator",
            f"{PACKAGE}.protocols.gemini",
            "from .. import _base\nfrom ..._aggregate import Aggregator\n",
            "src/maas_stream/protocols/gemini/__init__.py:2: imports maas_stream._aggregate",
            id="package-init-relative",
        ),
        pytest.param(
            "outer-layers-use-the-registry",
            f"{PACKAGE}.bridge._app",
            "from ..protocols import anthropic\n",
            "src/maas_stream/bridge/_app.py:1: imports maas_stream.protocols.anthropic",
            id="from-package-import-protocol",
        ),
        pytest.param(
            "outer-layers-use-the-registry",
            f"{PACKAGE}._cli",
            "import maas_stream.protocols.gemini._wire as w\n",
            "src/maas_stream/_cli.py:1: imports maas_stream.protocols.gemini._wire",
            id="absolute-deep-import",
        ),
        pytest.param(
            "model-knows-no-protocol",
            f"{PACKAGE}.events",
            "from .protocols._names import OPENAI_CHAT\n",
            "src/maas_stream/events.py:1: imports maas_stream.protocols._names",
            id="model-layer",
        ),
    ],
)
def test_the_checker_flags_a_forbidden_import(rule: str, name: str, source: str, expected: str) -> None:
    is_package = name == f"{PACKAGE}.protocols.gemini"
    found = violations(_only(rule), _synthetic(name, source, is_package=is_package))
    assert [f.split("  [")[0] for f in found] == [expected]
    with pytest.raises(AssertionError, match=expected.replace(".", r"\.")):
        assert not found, "\n".join(found)


@pytest.mark.parametrize(
    ("name", "source"),
    [
        pytest.param(f"{PACKAGE}._aggregate", "import msgspec\nfrom ._model import Response\n", id="core"),
        pytest.param(f"{PACKAGE}.bridge._app", "from .._registry import get_protocol\n", id="registry"),
        pytest.param(f"{PACKAGE}.io._stream", "import anyio\nfrom .._convert import x\n", id="io-may-do-io"),
        pytest.param(f"{PACKAGE}.protocols.anthropic._decode", "from .._base import B\n", id="shared-base"),
    ],
)
def test_the_checker_allows_what_the_table_allows(name: str, source: str) -> None:
    modules = _synthetic(name, source)
    assert [v for rule in RULES for v in violations(rule, modules)] == []


# ------------------------------------------------------------------ the tests' own rule

TESTS = REPO / "tests"
SDKS = _under("openai", "anthropic", "google")
SDK_GATEWAY = "tests.oracles"
SDK_DIRECT = {
    "tests.bridge.test_count_tokens": "each SDK's own count-tokens call through the bridge",
    "tests.bridge.test_faults": "each SDK must raise on a broken upstream behind the bridge",
    "tests.bridge.test_limits": "the SDKs' typed errors for 503/413/500 from the bridge",
    "tests.bridge.test_gemini_chats": "google-genai's chat helper through the bridge (function responses)",
    "tests.bridge.test_auth": "drives the bridge with the real SDK clients (their auth errors)",
    "tests.bridge.test_metrics": "drives the bridge with the real SDK clients",
    "tests.bridge.test_ops": "drives the bridge with the real SDK clients over loopback",
    "tests.bridge.test_routes": "drives a routed bridge with the real SDK clients",
    "tests.bridge.test_serve": "drives the bridge with the real SDK clients",
    "tests.bridge.test_http_direct": "the openai client reading the direct write path from a real uvicorn server",
    "tests.bridge.test_serve_tls": "the openai client over the bridge's https (serve --ssl-certfile)",
    "tests.bridge.test_realtime_bridge": "the SDKs' own realtime clients through the bridge's websockets",
    "tests.bridge.test_stateful_processes": "two serve processes driven with the openai client",
    "tests.bridge.test_realtime_cross": "each SDK's realtime client against an upstream of the other protocol",
    "tests.bridge.test_stateful": "drives the stored-Responses endpoints with the real openai client",
    "tests.bridge.test_stateful_interactions": "drives the stored Interactions with google-genai's client",
    "tests.convert.test_request_gemini": "google-genai request types accept every written Gemini body",
    "tests.convert.test_request_interactions": "google-genai's Interactions request model accepts every written body",
    "tests.bridge.test_interactions_bridge": "google-genai's Interactions client and the openai SDK through the bridge",
    "tests.io.test_plugin": "the httpx plugin under the openai client",
    "tests.protocols.gemini_oracle": "the google-genai streaming oracle behind tests/oracles.py",
    "tests.protocols.test_anthropic": "anthropic stream accumulator as oracle",
    "tests.protocols.test_anthropic_body": "anthropic BetaMessage model and accumulator as oracles",
    "tests.protocols.test_google_live": "google-genai Live server message model",
    "tests.protocols.test_google_live_session": "google-genai Live server message model",
    "tests.protocols.test_openai_chat": "openai chat stream oracle",
    "tests.protocols.test_openai_realtime": "openai realtime server event models",
    "tests.protocols.test_openai_realtime_session": "openai realtime server event models",
    "tests.protocols.test_openai_responses": "openai responses stream oracle",
}
"""Test modules that still import an SDK directly (to move behind tests/oracles.py)."""


def test_tests_reach_the_sdks_only_through_the_oracles() -> None:
    modules = source_modules(TESTS)
    rule = Rule(
        "sdk-only-through-oracles",
        lambda name: name != SDK_GATEWAY and name not in SDK_DIRECT,
        SDKS,
        "tests import openai / anthropic / google only in tests/oracles.py",
    )
    found = violations(rule, modules)
    assert not found, "\n".join(found)
    stale = [n for n in SDK_DIRECT if not any(SDKS(i.module) for i in imports_of(modules[n], modules))]
    assert not stale, f"no longer import an SDK, remove from SDK_DIRECT: {stale}"
