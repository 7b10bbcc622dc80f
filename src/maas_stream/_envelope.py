"""Request envelopes: the fields around a conversation that a provider needs to answer at all.

A request body is a conversation (``messages``, ``input``, ``contents``..., converted by each
protocol's history codec) inside an envelope: the model, the streaming switch, the
output-token limit, the sampling ``temperature`` and ``top_p``, and function-tool declarations.
Each protocol package describes its envelope with one :class:`EnvelopeCodec` (its ``ENVELOPE``,
which its spec carries as ``spec.envelope``); the bridge reads a client's envelope with the
client protocol's codec and writes the upstream request with the upstream protocol's codec.
Everything of a request that is neither conversation nor envelope is listed as not carried
(:attr:`Envelope.dropped`), never silently lost.

It must not know any wire protocol (each codec's arguments say where its fields live), convert
conversations (that is the history codecs' job) or do IO.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, TypeAlias

__all__ = ["Envelope", "EnvelopeCodec", "FunctionTool", "ToolReader", "ToolWriter", "Unread", "other_tool"]

_EMPTY_SCHEMA: Final[Mapping[str, Any]] = {"type": "object", "properties": {}}


@dataclass(frozen=True)
class FunctionTool:
    """A client-declared function tool (the only kind of tool carried across protocols)."""

    name: str
    description: str | None = None
    parameters: Any = None
    """The JSON schema of the arguments, as declared."""

    @classmethod
    def of(cls, decl: Mapping[str, Any], *schema_keys: str) -> FunctionTool:
        """A tool from a declaration object holding ``name``, ``description`` and a schema.

        Args:
            decl: The declaration.
            schema_keys: The keys the schema may be under, the first present one wins.
        """
        schema = next((decl[k] for k in schema_keys if k in decl), None)
        name = decl.get("name")
        description = decl.get("description")
        return cls(
            name if isinstance(name, str) else "",
            description if isinstance(description, str) else None,
            schema,
        )

    def declaration(self, schema_key: str, *, empty_schema: bool = True) -> dict[str, Any]:
        """The declaration object: ``name``, ``description`` (when set) and the schema.

        Args:
            schema_key: The key the schema goes under.
            empty_schema: Write an empty object schema when the tool declared none (providers
                that require one); otherwise leave the key out.
        """
        out: dict[str, Any] = {"name": self.name}
        if self.description is not None:
            out["description"] = self.description
        if self.parameters is not None:
            out[schema_key] = self.parameters
        elif empty_schema:
            out[schema_key] = dict(_EMPTY_SCHEMA)
        return out


@dataclass(frozen=True)
class Unread:
    """Something of a request that the envelope does not carry (a ``request_field`` drop)."""

    what: str
    """What it is, for humans (``"request field seed"``); never a provider id."""
    where: str | None = None
    """Where it was (``"tools[2]"``), when that helps."""


@dataclass
class Envelope:
    """The request fields besides the conversation that are carried to another protocol."""

    model: str | None = None
    stream: bool = False
    """Whether the client asked for a stream."""
    max_tokens: int | None = None
    """The output-token limit."""
    temperature: float | None = None
    top_p: float | None = None
    tools: list[FunctionTool] = field(default_factory=list)
    dropped: list[Unread] = field(default_factory=list)
    """What of the request is neither conversation nor envelope: not carried."""


ToolReader: TypeAlias = Callable[[Mapping[str, Any]], tuple[list[FunctionTool], list[str]]]
"""One ``tools[]`` entry → the function tools it declares, and what else it holds (not carried)."""
ToolWriter: TypeAlias = Callable[[list[FunctionTool]], list[Any]]
"""Function tools → the protocol's ``tools`` list."""


@dataclass(frozen=True)
class EnvelopeCodec:
    """Where one protocol keeps the envelope fields of a request body.

    The settings (limit, temperature, ``top_p``) are each read from the first present of their
    names and written under the first name, at the top level or inside :attr:`settings_in`.
    """

    conversation: frozenset[str]
    """The top-level fields the protocol's history codec reads (the conversation)."""
    read_tool: ToolReader
    write_tools: ToolWriter
    max_tokens: tuple[str, ...]
    """The output-token limit's names (read in order; the first is written)."""
    temperature: tuple[str, ...] = ("temperature",)
    top_p: tuple[str, ...] = ("top_p",)
    settings_in: tuple[str, ...] = ()
    """The object the settings live in (its names, the first is written); top level when empty.
    Its other keys are reported as not carried."""
    default_max_tokens: int | None = None
    """The limit written when the request names none (for providers that require one)."""
    model_field: str = "model"
    """The body field naming the model (read when the path names none)."""
    writes_model: bool = True
    """The upstream body names the model (``False`` when the upstream URL does)."""
    stream_field: str | None = "stream"
    """The body's streaming switch; ``None`` when the path decides (and nothing is written)."""
    tools_field: str = "tools"
    fixed: Mapping[str, Any] = field(default_factory=dict)
    """Fields every upstream request carries as they are (a client's own values are ignored)."""

    @property
    def fields(self) -> frozenset[str]:
        """The top-level fields this codec reads (besides the conversation)."""
        names = {self.model_field, self.tools_field, *self.fixed}
        if self.stream_field is not None:
            names.add(self.stream_field)
        if self.settings_in:
            names.update(self.settings_in)
        else:
            names.update(self.max_tokens + self.temperature + self.top_p)
        return frozenset(names)

    def read(
        self, body: Mapping[str, Any], *, model: str | None = None, stream: bool | None = None
    ) -> Envelope:
        """A request's envelope, with everything that is neither envelope nor conversation listed.

        Args:
            body: The request body (a JSON object).
            model: The model the request path names (it wins over the body's).
            stream: Whether the request path asks for a stream; the body's switch when ``None``.
        """
        env = Envelope(model=model or _opt(body.get(self.model_field), str))
        if stream is None and self.stream_field is not None:
            stream = body.get(self.stream_field) is True
        env.stream = bool(stream)
        self._read_settings(body, env)
        self._read_tools(body.get(self.tools_field), env)
        known = self.conversation | self.fields
        env.dropped.extend(Unread(f"request field {k}") for k in sorted(body) if k not in known)
        return env

    def _read_settings(self, body: Mapping[str, Any], env: Envelope) -> None:
        where = body
        if self.settings_in:
            found = _first(body, self.settings_in)
            if not isinstance(found, dict):
                return
            where = found
            own = set(self.max_tokens + self.temperature + self.top_p)
            env.dropped.extend(
                Unread(f"request field {self.settings_in[0]}.{k}") for k in sorted(where) if k not in own
            )
        env.max_tokens = _opt(_first(where, self.max_tokens), int)
        env.temperature = _opt(_first(where, self.temperature), float)
        env.top_p = _opt(_first(where, self.top_p), float)

    def _read_tools(self, raw: Any, env: Envelope) -> None:
        if not isinstance(raw, list):
            return
        for i, tool in enumerate(raw):
            where = f"{self.tools_field}[{i}]"
            if not isinstance(tool, dict):
                env.dropped.append(Unread("a tool that is not an object", where))
                continue
            tools, others = self.read_tool(tool)
            env.tools.extend(tools)
            env.dropped.extend(Unread(what, where) for what in others)

    def build(self, conversation: Mapping[str, Any], env: Envelope) -> dict[str, Any]:
        """A streaming request body: the (converted) conversation inside ``env`` in this protocol's terms."""
        body = dict(conversation)
        if self.writes_model and env.model is not None:
            body[self.model_field] = env.model
        if self.stream_field is not None:
            body[self.stream_field] = True
        body.update(copy.deepcopy(dict(self.fixed)))
        limit = env.max_tokens if env.max_tokens is not None else self.default_max_tokens
        settings = {
            names[0]: value
            for names, value in (
                (self.max_tokens, limit),
                (self.temperature, env.temperature),
                (self.top_p, env.top_p),
            )
            if value is not None
        }
        if self.settings_in:
            if settings:
                body[self.settings_in[0]] = settings
        else:
            body.update(settings)
        if env.tools:
            body[self.tools_field] = self.write_tools(env.tools)
        return body


def other_tool(kind: Any) -> str:
    """What to report for a ``tools[]`` entry of a type that is no function tool."""
    return f"tool of type {kind!r} (only function tools are carried)"


def _first(obj: Mapping[str, Any], names: tuple[str, ...]) -> Any:
    for name in names:
        if name in obj:
            return obj[name]
    return None


def _opt(value: Any, kind: type[Any]) -> Any:
    # A JSON bool is no number; an int is a fine float.
    if isinstance(value, bool) or not isinstance(value, (int, float) if kind is float else kind):
        return None
    return kind(value)
