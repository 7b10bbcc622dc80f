"""Request envelopes: everything of a request body around the conversation, in canonical terms.

A request body is a conversation (``messages``, ``input``, ``contents``..., converted by each
protocol's history codec) inside an envelope: the model, the streaming switch, generation
settings (limit, sampling, stop sequences, seed, ``n``), tools and the tool choice, reasoning
settings, the output format, usage reporting, storage and metadata. :class:`Envelope` is the
canonical form of all of it (the canonical request is a conversation plus an envelope).

Each protocol package describes its envelope with one :class:`EnvelopeCodec` (its ``ENVELOPE``,
which its spec carries as ``spec.envelope``): the shared fields are data (where the limit and
sampling live), the rest is the protocol's own :data:`ReadHook` and :data:`WriteHook`. A reader
records where each canonical field came from (:attr:`Envelope.sources`, the client's own field
path) so that a writer that cannot carry a field is reported in the client's terms; fields of
the protocol with no canonical counterpart travel in :attr:`Envelope.native` and are written back
only to the protocol they came from. Nothing is silently lost: what a writer cannot carry is an
:class:`Unread` record, and :data:`AFFECTS_OUTPUT` names the canonical fields whose loss changes
what the model does (a conversion refuses those unless the caller allowed drops).

It must not know any wire protocol (each codec's arguments say where its fields live), convert
conversations (that is the history codecs' job) or do IO.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal, TypeAlias

__all__ = [
    "AFFECTS_OUTPUT",
    "HOOK_FIELDS",
    "Envelope",
    "EnvelopeCodec",
    "FunctionTool",
    "NativeTool",
    "OutputFormat",
    "ReadHook",
    "Reasoning",
    "ToolChoice",
    "ToolReader",
    "ToolWriter",
    "Unread",
    "WriteHook",
    "budget_effort",
    "effort_budget",
    "other_tool",
]

_EMPTY_SCHEMA: Final[Mapping[str, Any]] = {"type": "object", "properties": {}}


@dataclass(frozen=True)
class FunctionTool:
    """A client-executed tool declaration: a function (JSON-schema arguments) or a custom tool.

    ``kind="custom"`` is a free-form tool whose input is text, optionally constrained by
    :attr:`format` (OpenAI Responses/Chat custom tools with a grammar); targets without custom
    tools carry it as a function taking ``{"input": string}`` or refuse (their writer decides
    and reports).
    """

    name: str
    description: str | None = None
    parameters: Any = None
    """The JSON schema of the arguments, as declared."""
    strict: bool | None = None
    """Strict schema adherence, as the client said it; ``None``: not said (provider default)."""
    kind: ToolKind = "function"
    format: Any = None
    """A custom tool's input format (``{"type": "grammar", ...}``), as declared."""
    cache_control: Any = None
    """An Anthropic prompt-cache breakpoint on this declaration, as declared."""

    @classmethod
    def of(cls, decl: Mapping[str, Any], *schema_keys: str) -> FunctionTool:
        """A tool from a declaration object holding ``name``, ``description`` and a schema.

        ``strict`` and ``cache_control`` are read when present (as booleans / as they are).

        Args:
            decl: The declaration.
            schema_keys: The keys the schema may be under, the first present one wins.
        """
        schema = next((decl[k] for k in schema_keys if k in decl), None)
        name = decl.get("name")
        description = decl.get("description")
        strict = decl.get("strict")
        return cls(
            name if isinstance(name, str) else "",
            description if isinstance(description, str) else None,
            schema,
            strict if isinstance(strict, bool) else None,
            cache_control=decl.get("cache_control"),
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


ToolKind: TypeAlias = Literal["function", "custom"]


@dataclass(frozen=True)
class NativeTool:
    """A provider-executed (built-in) tool: web search, code execution, file search, URL context...

    Written as declared to the protocol that declared it; another protocol's writer maps
    :attr:`category` to its own equivalent where it has one, and reports it otherwise.
    """

    protocol: str
    """The protocol whose declaration :attr:`decl` is."""
    decl: Mapping[str, Any]
    """The declaration, as the client sent it."""
    category: str
    """What it does, across protocols: ``web_search``, ``code_execution``, ``file_search``,
    ``url_context``, ``computer_use``, ``mcp``, or the declaration's own type when no other."""


ToolChoiceMode: TypeAlias = Literal["auto", "none", "required", "validated"]


@dataclass(frozen=True)
class ToolChoice:
    """Whether and which tools the model must call.

    ``mode``: ``auto`` (may call), ``none`` (must not), ``required`` (must call one; Anthropic
    ``any``, Gemini ``ANY``), ``validated`` (Gemini ``VALIDATED``: may call, schema-checked).
    ``names`` narrows the choice to those tools: one name with ``required`` is a named tool
    (Chat ``{"type": "function", ...}``, Anthropic ``{"type": "tool"}``); several are OpenAI's
    ``allowed_tools`` or Gemini's ``allowedFunctionNames``.
    """

    mode: ToolChoiceMode
    names: tuple[str, ...] = ()


ReasoningEffort: TypeAlias = Literal["none", "minimal", "low", "medium", "high", "xhigh"]


@dataclass(frozen=True)
class Reasoning:
    """Reasoning (thinking) settings.

    A request names an :attr:`effort` (OpenAI ``reasoning_effort`` / ``reasoning.effort``,
    Gemini ``thinkingLevel``) or a :attr:`budget_tokens` (Anthropic ``thinking.budget_tokens``,
    Gemini ``thinkingBudget``) or both; writers convert one into the other with
    :func:`effort_budget` / :func:`budget_effort` (one table, documented in docs/convert.md).
    """

    enabled: bool | None = None
    """Thinking explicitly on (``True``) or off (``False``); ``None``: not said."""
    effort: ReasoningEffort | None = None
    budget_tokens: int | None = None
    """Thinking-token budget; ``-1`` is Gemini's dynamic budget."""
    summary: str | None = None
    """Reasoning text returned to the client: Responses ``reasoning.summary`` (``auto``,
    ``concise``, ``detailed``); Gemini ``includeThoughts: true`` and Anthropic thinking read as
    ``auto``."""
    include_encrypted: bool | None = None
    """Responses ``include: ["reasoning.encrypted_content"]`` (stateless reasoning replay)."""


OutputType: TypeAlias = Literal["text", "json_object", "json_schema"]


@dataclass(frozen=True)
class OutputFormat:
    """The format of the answer: plain text, any JSON object, or JSON matching a schema."""

    type: OutputType
    schema: Any = None
    """The JSON schema (``json_schema`` only)."""
    name: str | None = None
    description: str | None = None
    strict: bool | None = None


@dataclass(frozen=True)
class Unread:
    """Something of a request that a codec could not carry (a ``request_field`` drop)."""

    what: str
    """What it is, for humans (``"request field seed"``); never a provider id."""
    where: str | None = None
    """Where it was (``"tools[2]"``), when that helps."""
    field: str | None = None
    """The canonical field (an :class:`Envelope` attribute, ``tools.strict``...) a writer could
    not carry, or the client's own field path for what a reader did not understand; the
    conversion names the client's field from :attr:`Envelope.sources`."""
    affects_output: bool = False
    """Whether losing it changes what the model does (refused unless drops are allowed)."""
    native: bool = False
    """:attr:`field` is a native field path of the client's (:attr:`Envelope.native`), not a
    canonical field."""


@dataclass(slots=True)
class Envelope:
    """A request's fields besides the conversation, in canonical terms (see the module doc)."""

    model: str | None = None
    stream: bool = False
    """Whether the client asked for a stream."""
    max_tokens: int | None = None
    """The output-token limit (including reasoning tokens where the provider counts them)."""
    temperature: float | None = None
    top_p: float | None = None
    top_k: int | None = None
    seed: int | None = None
    n: int | None = None
    """How many alternative answers (Chat ``n``, Gemini ``candidateCount``)."""
    stop: list[str] | None = None
    presence_penalty: float | None = None
    frequency_penalty: float | None = None
    tools: list[FunctionTool] = field(default_factory=list)
    native_tools: list[NativeTool] = field(default_factory=list)
    tool_choice: ToolChoice | None = None
    parallel_tool_calls: bool | None = None
    """Whether the model may call several tools in one turn (Anthropic's
    ``disable_parallel_tool_use`` is its negation)."""
    reasoning: Reasoning | None = None
    output: OutputFormat | None = None
    include_usage: bool | None = None
    """Chat ``stream_options.include_usage``: whether the client wants the usage chunk."""
    store: bool | None = None
    """Whether the provider may store the request and answer (Responses/Chat ``store``)."""
    metadata: dict[str, str] | None = None
    user: str | None = None
    """An end-user id for abuse monitoring (OpenAI ``user``/``safety_identifier``, Anthropic
    ``metadata.user_id``)."""
    service_tier: str | None = None
    origin: str | None = None
    """The protocol the envelope was read from."""
    native: dict[str, Any] = field(default_factory=dict)
    """Fields of :attr:`origin` with no canonical counterpart (Gemini ``safetySettings``, OpenAI
    ``logit_bias``...; a dotted path names a field inside an object, ``reasoning.context``),
    written back only to the same protocol."""
    native_affects_output: frozenset[str] = frozenset()
    """The keys of :attr:`native` whose loss changes what the model does."""
    sources: dict[str, str] = field(default_factory=dict)
    """Canonical field → the client's own field path it was read from (``"reasoning"`` →
    ``"thinking"``), so that a loss is named in the client's terms."""
    dropped: list[Unread] = field(default_factory=list)
    """What of the request the reader could not read at all (malformed or unknown entries)."""

    def source(self, name: str) -> str:
        """The client's field path for canonical field ``name`` (``name`` itself when unrecorded)."""
        return self.sources.get(name, name)


AFFECTS_OUTPUT: Final[frozenset[str]] = frozenset(
    {
        "tools",
        "tools.strict",
        "tools.custom",
        "native_tools",
        "tool_choice",
        "parallel_tool_calls",
        "reasoning",
        "output",
        "stop",
        "n",
    }
)
"""Canonical fields whose loss changes what the model does: a conversion that cannot carry them
refuses unless the caller allowed drops (``drop_params``). The rest (sampling, seed, metadata,
usage reporting, service tier...) drop with a report."""


_EFFORT_BUDGETS: Final[dict[str, int]] = {
    "none": 0,
    "minimal": 1024,
    "low": 1024,
    "medium": 2048,
    "high": 4096,
    "xhigh": 16384,
}
"""Effort → thinking budget, LiteLLM's mapping (docs.litellm.ai "reasoning_content":
low 1024, medium 2048, high 4096), with ``minimal`` as ``low`` and ``xhigh`` four times
``high``."""


def effort_budget(effort: ReasoningEffort) -> int:
    """The thinking-token budget that stands for ``effort`` (``0`` for ``none``)."""
    return _EFFORT_BUDGETS[effort]


def budget_effort(budget: int) -> ReasoningEffort:
    """The effort that stands for a thinking budget (``-1``, dynamic, is ``medium``)."""
    if budget < 0:
        return "medium"
    if budget == 0:
        return "none"
    if budget <= _EFFORT_BUDGETS["low"]:
        return "low"
    if budget <= _EFFORT_BUDGETS["medium"]:
        return "medium"
    if budget <= _EFFORT_BUDGETS["high"]:
        return "high"
    return "xhigh"


ToolReader: TypeAlias = Callable[[Mapping[str, Any]], tuple[list["FunctionTool | NativeTool"], list[str]]]
"""One ``tools[]`` entry → the tools it declares (client-executed or built-in), and what else it
holds that cannot be read (reported)."""
ToolWriter: TypeAlias = Callable[[list[FunctionTool], list[NativeTool], list[Unread]], list[Any]]
"""Client tools and built-in tools → the protocol's ``tools`` list; what a declaration cannot
carry (``strict``, a custom tool, a built-in without equivalent, ``cache_control``) is appended
to the third argument with ``field`` set (``tools.strict``, ``tools.custom``, ``native_tools``,
``tools.cache_control``)."""
ReadHook: TypeAlias = Callable[[Mapping[str, Any], Envelope], Iterable[str]]
"""A protocol's own fields → the envelope (setting :attr:`Envelope.sources` for each); gives the
field paths it consumed (``"tool_choice"``, ``"generationConfig.stopSequences"``). What no one
consumed goes to :attr:`Envelope.native`."""
WriteHook: TypeAlias = Callable[[dict[str, Any], Envelope, list[Unread]], Iterable[str]]
"""The envelope's canonical fields → a protocol's body (in place); appends what it cannot carry
(with ``field`` set) and gives the canonical field names it handled, written or reported. A
set field that no hook handled is reported by the codec itself, so nothing is lost silently.
It may also give nested (dotted) native paths of :attr:`Envelope.native` it wrote back itself
where the codec's merge cannot (inside a list: Anthropic's ``tools.input_examples``, by tool
name); the codec then leaves them alone. A plain name is always a canonical field."""

HOOK_FIELDS: Final = (
    "top_k",
    "seed",
    "n",
    "stop",
    "presence_penalty",
    "frequency_penalty",
    "tool_choice",
    "parallel_tool_calls",
    "reasoning",
    "output",
    "store",
    "metadata",
    "user",
    "service_tier",
)
"""The canonical fields a protocol's :data:`WriteHook` writes (the codec writes the rest).
``include_usage`` is not one: it asks the CLIENT's stream encoder for a usage chunk (see the
specs' ``encoder_options``), and every upstream is asked for usage anyway."""


def _read_nothing(body: Mapping[str, Any], env: Envelope) -> Iterable[str]:
    return ()


def _write_nothing(body: dict[str, Any], env: Envelope, lost: list[Unread]) -> Iterable[str]:
    return ()


@dataclass(frozen=True)
class EnvelopeCodec:
    """Where one protocol keeps the envelope fields of a request body.

    The settings (limit, temperature, ``top_p``) are each read from the first present of their
    names and written under the first name, at the top level or inside :attr:`settings_in`;
    tools go through :attr:`read_tool` / :attr:`write_tools`; everything else through the
    protocol's :attr:`read_hook` / :attr:`write_hook`.
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
    """The object the settings live in (its names, the first is written); top level when empty."""
    default_max_tokens: int | None = None
    """The limit written when the request names none (for providers that require one); a
    model's own maximum (see ``_models``) wins over it."""
    model_field: str = "model"
    """The body field naming the model (read when the path names none)."""
    writes_model: bool = True
    """The upstream body names the model (``False`` when the upstream URL does)."""
    stream_field: str | None = "stream"
    """The body's streaming switch; ``None`` when the path decides (and nothing is written)."""
    tools_field: str = "tools"
    fixed: Mapping[str, Any] = field(default_factory=dict)
    """Fields every upstream request carries as they are (a client's own values are ignored)."""
    protocol: str = ""
    """The protocol whose codec this is (native fields are written back only to it)."""
    read_hook: ReadHook = _read_nothing
    write_hook: WriteHook = _write_nothing
    affects_output: frozenset[str] = frozenset()
    """This protocol's own field paths with no canonical counterpart whose loss changes what
    the model does (refused when another protocol cannot carry them)."""

    @functools.cached_property
    def fields(self) -> frozenset[str]:
        """The top-level fields this codec reads itself (besides the conversation and hooks)."""
        names = {self.model_field, self.tools_field, *self.fixed}
        if self.stream_field is not None:
            names.add(self.stream_field)
        if self.settings_in:
            names.update(self.settings_in)
        else:
            names.update(self.max_tokens + self.temperature + self.top_p)
        return frozenset(names)

    @functools.cached_property
    def _known(self) -> frozenset[str]:
        """The top-level fields read by the codec or the conversation (the rest is native)."""
        return self.conversation | self.fields

    def read(
        self, body: Mapping[str, Any], *, model: str | None = None, stream: bool | None = None
    ) -> Envelope:
        """A request's envelope: canonical fields, native fields, and what could not be read.

        Args:
            body: The request body (a JSON object).
            model: The model the request path names (it wins over the body's).
            stream: Whether the request path asks for a stream; the body's switch when ``None``.
        """
        env = Envelope(model=model or _opt(body.get(self.model_field), str), origin=self.protocol or None)
        if stream is None and self.stream_field is not None:
            stream = body.get(self.stream_field) is True
        env.stream = bool(stream)
        consumed = set(self.read_hook(body, env))
        settings = self._read_settings(body, env)
        self._read_tools(body.get(self.tools_field), env)
        known = self._known
        for k in body:
            if k not in known and k not in consumed:
                env.native[k] = body[k]
        if settings is not None:
            own = set(self.max_tokens + self.temperature + self.top_p)
            prefix = self.settings_in[0]
            for k in settings:
                path = f"{prefix}.{k}"
                if k not in own and path not in consumed:
                    env.native[path] = settings[k]
        affected = [k for k in env.native if k in self.affects_output]
        if affected:  # (else the shared empty default: an empty frozenset costs 216 bytes)
            env.native_affects_output = frozenset(affected)
        return env

    def _read_settings(self, body: Mapping[str, Any], env: Envelope) -> Mapping[str, Any] | None:
        where = body
        found: Mapping[str, Any] | None = None
        if self.settings_in:
            raw = _first(body, self.settings_in)
            if not isinstance(raw, dict):
                return None
            where = found = raw
        for attr, names in (
            ("max_tokens", self.max_tokens),
            ("temperature", self.temperature),
            ("top_p", self.top_p),
        ):
            present = [n for n in names if n in where]
            if not present:
                continue
            name = present[0]
            for other in present[1:]:  # a second name of the same setting: kept natively, not lost
                path = f"{self.settings_in[0]}.{other}" if self.settings_in else other
                env.native[path] = where[other]
            value = _opt(where[name], int if attr == "max_tokens" else float)
            if value is not None:
                setattr(env, attr, value)
                env.sources[attr] = f"{self.settings_in[0]}.{name}" if self.settings_in else name
        return found

    def _read_tools(self, raw: Any, env: Envelope) -> None:
        if not isinstance(raw, list):
            return
        env.sources.setdefault("tools", self.tools_field)
        for i, tool in enumerate(raw):
            where = f"{self.tools_field}[{i}]"
            if not isinstance(tool, dict):
                env.dropped.append(Unread("a tool that is not an object", where, self.tools_field, True))
                continue
            tools, others = self.read_tool(tool)
            for t in tools:
                (env.tools if isinstance(t, FunctionTool) else env.native_tools).append(t)  # type: ignore[arg-type]
            env.dropped.extend(Unread(what, where, self.tools_field, True) for what in others)

    def build(
        self, conversation: Mapping[str, Any], env: Envelope, lost: list[Unread] | None = None
    ) -> dict[str, Any]:
        """A streaming request body: the (converted) conversation inside ``env`` in this protocol's terms.

        Args:
            conversation: The conversation fields, already in this protocol's terms.
            env: The envelope (of any protocol).
            lost: Receives what this protocol cannot carry, with ``field`` set to the canonical
                field (or the native field path) and ``affects_output`` decided.
        """
        out: list[Unread] = []
        body = dict(conversation)
        if self.writes_model and env.model is not None:
            body[self.model_field] = env.model
        if self.stream_field is not None:
            body[self.stream_field] = True
        if self.fixed:
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
        if env.tools or env.native_tools:
            written = self.write_tools(env.tools, env.native_tools, out)
            if written:
                body[self.tools_field] = written
        handled = set(self.write_hook(body, env, out))
        for name in HOOK_FIELDS:
            value = getattr(env, name)
            if value is not None and name not in handled:
                out.append(Unread(f"request field {env.source(name)}", field=name))
        self._write_native(body, env, out, handled)
        if lost is not None:
            lost.extend(
                Unread(
                    u.what,
                    u.where,
                    u.field,
                    u.affects_output or (not u.native and u.field in AFFECTS_OUTPUT),
                    u.native,
                )
                for u in out
            )
        return body

    def _write_native(
        self, body: dict[str, Any], env: Envelope, lost: list[Unread], handled: set[str]
    ) -> None:
        same = bool(self.protocol) and env.origin == self.protocol
        for path, value in env.native.items():
            if same and "." in path and path in handled:
                continue  # the protocol's write hook put it back where it belongs
            if not same:
                affects = path in env.native_affects_output
                lost.append(Unread(f"request field {path}", field=path, affects_output=affects, native=True))
                continue
            # A dotted path is a field inside an object (``generationConfig.seed``,
            # ``reasoning.context``), merged into what the hooks wrote there.
            head, _, rest = path.partition(".")
            inner = body.setdefault(head, {}) if rest else None
            if isinstance(inner, dict):
                inner[rest] = copy.deepcopy(value)
            else:
                body[path] = copy.deepcopy(value)


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
