"""HTTP-level cassettes for the real SDK providers: vcrpy, and pytest-recording compatible.

Replay a recorded session through ``OpenAIProvider`` or ``AnthropicProvider`` and the real SDK::

    with use_http_cassette("cassettes/weather.yaml") as cassette:
        final = agent.execute(state)        # every request answered from the file
    # leaving the block checks that no request missed and every interaction was played

Two cassette shapes load: stock vcrpy YAML (``request.body`` a string, ``response.body.string``,
gzip bodies as ``!!binary``) and pydantic-ai's, whose JSON bodies are YAML mappings under
``parsed_body:`` (turned back into JSON text here). Files are written in the stock shape.

Requests match on method, scheme, host, port and path (the query is ignored: pydantic-ai's
Anthropic cassettes carry ``?beta=true``, which current SDKs do not send) and on
:func:`llm_request`: the parts of an LLM request body that decide the answer (model, streaming,
system prompt, the conversation with its tool calls and results, tool names) and the
:data:`SETTINGS` the recording has (tool schemas and ``strict``, ``tool_choice``, temperature,
max tokens, response format, thinking settings, the reasoning sent back). Tool-call ids count only
by their order of first appearance. What SDKs add or spell differently (``n``,
``stream_options``, spacing inside argument JSON, empty assistant texts) is ignored, and so are
the settings named in ``ignore=``. Each interaction plays once.

With pytest-recording, in ``conftest.py``::

    from agentrig.harness.cassettes import http as http_cassettes

    def pytest_recording_configure(config, vcr):
        http_cassettes.configure_vcr(vcr)

    @pytest.fixture(scope="module")
    def vcr_config():
        return http_cassettes.vcr_config()

Needs ``vcrpy`` (``pip install './agentrig[vcr]'`` from a checkout).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, ExitStack, contextmanager
from pathlib import Path
from typing import Any

from agentrig.errors import MissingDependencyError
from agentrig.harness.cassettes.errors import CassetteError

SERIALIZER = "yaml"
"""The serializer name registered: a superset of vcrpy's own ``yaml`` serializer, so cassette
files keep their ``.yaml`` suffix under pytest-recording."""
MATCHER = "llm_request"
MATCH_ON = ("method", "scheme", "host", "port", "path", MATCHER)


class UnplayedInteractionsError(CassetteError, AssertionError):
    """A replay ended before every recorded interaction was played."""

    def __init__(self, path: str, unplayed: list[str], total: int) -> None:
        self.path = path
        self.unplayed = unplayed
        listed = "\n".join(f"  {entry}" for entry in unplayed)
        super().__init__(
            f"{len(unplayed)} of {total} recorded interaction(s) in {path} were not played:\n"
            f"{listed}\nThe code under test sent fewer requests than were recorded; re-record "
            "the cassette or pass check_all_played=False."
        )


class HttpCassetteMismatchError(CassetteError, AssertionError):
    """Requests sent while replaying matched no recorded interaction. Raised when the block
    ends, since the caller (the agent loop, a retry) may have caught the provider error;
    ``misses`` holds vcrpy's report of each, naming the closest recordings and what differs."""

    def __init__(self, path: str, misses: list[str]) -> None:
        self.path = path
        self.misses = misses
        super().__init__(
            f"{len(misses)} request(s) matched no recorded interaction of {path}; the first:\n"
            f"{misses[0]}"
        )


class HttpCassetteFileError(CassetteError, ValueError):
    """A cassette file that cannot be read as a vcrpy cassette in either shape."""

    def __init__(self, path: str, reason: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__(
            f"HTTP cassette {path}: {reason}\nFix the file, or delete it and record it again."
        )


class HttpCassetteNotFoundError(CassetteError, FileNotFoundError):
    """Replaying (record mode ``none``) a cassette file that does not exist."""

    def __init__(self, path: str) -> None:
        self.path = path
        super().__init__(
            f"HTTP cassette {path} does not exist. Record it once with record_mode='once' in a "
            "test marked @pytest.mark.agentrig_real_llm, then replay it."
        )


# --- serializer (vcrpy's interface: a module or object with deserialize/serialize) ------------


def deserialize(cassette_string: str) -> dict[str, Any]:
    """Load a cassette in either shape into vcrpy's dict form (``parsed_body`` → JSON body).

    Anything that is not a cassette vcrpy can play raises ``ValueError`` naming the part:
    YAML errors, alias bombs and deep nesting (the limits of scenario files), and every field
    of the wrong type."""
    import yaml
    from vcr.serializers import yamlserializer

    from agentrig.harness.errors import ScenarioFileError
    from agentrig.harness.scenarios.yaml_source import check_yaml_limits

    if not isinstance(cassette_string, str):
        raise ValueError(f"expected YAML text, got {type(cassette_string).__name__}")
    try:
        check_yaml_limits(cassette_string)
    except ScenarioFileError as error:
        where = f"line {error.line}, column {error.column}: " if error.line else ""
        raise ValueError(f"{where}{error.reason}") from None
    try:
        data = yamlserializer.deserialize(cassette_string)
    except yaml.YAMLError as error:
        raise ValueError(f"invalid YAML: {error}") from None
    except Exception as error:  # PyYAML's constructors raise what a bad tagged value makes them
        raise ValueError(f"invalid YAML value: {type(error).__name__}: {error}") from None
    if not isinstance(data, dict) or not isinstance(data.get("interactions"), list):
        raise ValueError("not a vcrpy cassette: expected a mapping with an 'interactions' list")
    for number, interaction in enumerate(data["interactions"], start=1):
        if not isinstance(interaction, dict) or not {"request", "response"} <= interaction.keys():
            raise ValueError(f"interaction {number} needs a 'request' and a 'response'")
        where = f"interaction {number}"
        _request_body(interaction["request"], f"{where} request")
        _response_body(interaction["response"], f"{where} response")
    return data


def serialize(cassette_dict: dict[str, Any]) -> str:
    """Write a cassette in stock vcrpy YAML."""
    from vcr.serializers import yamlserializer

    return str(yamlserializer.serialize(cassette_dict))


_REQUEST_KEYS = ("method", "uri", "body", "headers")


def _request_body(request: Any, where: str) -> None:
    _mapping(request, where)
    if "parsed_body" in request:
        request["body"] = _json_text(request.pop("parsed_body"), f"{where} parsed_body")
    request.setdefault("body", None)
    request.setdefault("headers", {})
    unknown = sorted(str(key) for key in request if key not in _REQUEST_KEYS)
    if unknown:
        allowed = ", ".join((*_REQUEST_KEYS, "parsed_body"))
        raise ValueError(f"{where}: unknown key {unknown[0]!r}; allowed keys: {allowed}")
    for key in ("method", "uri"):
        if not isinstance(request.get(key), str):
            raise ValueError(f"{where}: {key} must be text, got {_kind(request.get(key))}")
    _body(request["body"], f"{where} body")
    _headers(request["headers"], f"{where} headers")


def _response_body(response: Any, where: str) -> None:
    _mapping(response, where)
    if "parsed_body" in response:
        text = _json_text(response.pop("parsed_body"), f"{where} parsed_body")
        response["body"] = {"string": text}
        headers = response.get("headers") or {}
        if isinstance(headers, dict):
            for name in headers:
                if isinstance(name, str) and name.lower() == "content-length":
                    headers[name] = [str(len(text.encode()))]
    response.setdefault("body", {"string": ""})
    response.setdefault("headers", {})
    status = response.get("status")
    _mapping(status, f"{where} status")
    code, message = status.get("code"), status.get("message")
    if isinstance(code, bool) or not isinstance(code, int) or not 100 <= code <= 999:
        raise ValueError(f"{where} status: code must be an HTTP status number, got {_kind(code)}")
    if not isinstance(message, str):
        raise ValueError(f"{where} status: message must be text, got {_kind(message)}")
    body = response["body"]
    _mapping(body, f"{where} body")
    _body(body.get("string"), f"{where} body string")
    _headers(response["headers"], f"{where} headers")


def _mapping(value: Any, where: str) -> None:
    if not isinstance(value, dict):
        raise ValueError(f"{where}: expected a mapping, got {_kind(value)}")


def _body(value: Any, where: str) -> None:
    if value is not None and not isinstance(value, str | bytes):
        raise ValueError(f"{where}: expected text or binary data, got {_kind(value)}")
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as error:
            raise ValueError(f"{where}: text that is not UTF-8 ({error.reason})") from None


def _headers(value: Any, where: str) -> None:
    _mapping(value, where)
    for name, values in value.items():
        if not isinstance(name, str):
            raise ValueError(f"{where}: header names must be text, got {_kind(name)}")
        listed = values if isinstance(values, list) else [values]
        if not listed or not all(isinstance(item, str) for item in listed):
            raise ValueError(
                f"{where} {name}: expected a non-empty list of texts, got {_kind(values)}"
            )
    for name, values in list(value.items()):
        if not isinstance(values, list):
            value[name] = [values]


def _json_text(value: Any, where: str) -> str:
    try:
        return json.dumps(value)
    except (TypeError, ValueError, RecursionError) as error:
        raise ValueError(f"{where}: not JSON data ({error})") from None


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, str | int | float | bool):
        return f"{type(value).__name__} {value!r}"[:60]
    if isinstance(value, dict | list):
        return "a mapping" if isinstance(value, dict) else "a list"
    return f"a {type(value).__name__}"


# --- matcher ------------------------------------------------------------------------------

SETTINGS = (
    "tools",
    "strict",
    "tool_choice",
    "temperature",
    "max_tokens",
    "response_format",
    "thinking",
    "reasoning",
)
"""The request settings :func:`llm_request` compares besides the conversation, by the names
``ignore=`` takes: ``tools`` (each tool's description and parameter schema), ``strict`` (each
tool's), ``tool_choice``, ``temperature``, ``max_tokens`` (``max_tokens``,
``max_completion_tokens`` or ``max_output_tokens``), ``response_format`` (Responses
``text.format``, Anthropic ``output_config.format`` / ``output_format``), ``thinking`` (Anthropic
``thinking``, ``reasoning_effort``, Responses ``reasoning``) and ``reasoning`` (the reasoning
sent back: Responses reasoning items, Anthropic thinking blocks, ``reasoning_content`` /
``reasoning`` of chat messages). A setting the recording does not have is not compared, so a
hand-written cassette needs only what it means to check."""


def llm_request(live: Any, recorded: Any) -> None:
    """vcrpy matcher: raise ``AssertionError`` naming the first part of the LLM request body that
    differs (see the module docstring and :data:`SETTINGS` for what counts); non-JSON bodies
    must be equal bytes."""
    _compare(live, recorded, frozenset())


def llm_request_ignoring(*names: str) -> Any:
    """An :func:`llm_request` matcher that does not compare the :data:`SETTINGS` ``names``; an
    unknown name raises ``ValueError`` listing the valid ones."""
    unknown = sorted(set(names) - set(SETTINGS))
    if unknown:
        raise ValueError(
            f"cannot ignore {', '.join(map(repr, unknown))}: the settings are {', '.join(SETTINGS)}"
        )
    ignored = frozenset(names)

    def matcher(live: Any, recorded: Any) -> None:
        _compare(live, recorded, ignored)

    matcher.__name__ = MATCHER  # vcrpy names a matcher by its function in its reports
    return matcher


def _compare(live: Any, recorded: Any, ignored: frozenset[str]) -> None:
    ours, theirs = request_fingerprint(live.body), request_fingerprint(recorded.body)
    if ours is None or theirs is None:
        if live.body != recorded.body:
            raise AssertionError("bodies differ (not both JSON LLM requests)")
        return
    for key, value in ours.items():
        if key == "settings":
            continue
        if value != theirs[key]:
            raise AssertionError(_difference(key, value, theirs[key]))
    for name, (field, value) in _settings_differing(ours["settings"], theirs["settings"]):
        if name not in ignored:
            raise AssertionError(
                f"{field}: sent {value[0]!r}, recorded {value[1]!r} (not compared with "
                f"ignore=[{name!r}])"
            )


def _settings_differing(
    ours: dict[str, Any], theirs: dict[str, Any]
) -> Iterator[tuple[str, tuple[str, tuple[Any, Any]]]]:
    """``(setting, (field, (sent, recorded)))`` for each setting the recording has and the live
    request sends differently (``_ABSENT`` when it does not send it)."""
    for name in SETTINGS:
        if name == "tools":
            yield from _tools_differing(ours["tools"], theirs["tools"])
        elif name == "strict":
            continue  # compared with the tools
        elif name in theirs and ours.get(name, _ABSENT) != theirs[name]:
            yield name, (name, (ours.get(name, _ABSENT), theirs[name]))


def _tools_differing(
    ours: dict[str, dict[str, Any]], theirs: dict[str, dict[str, Any]]
) -> Iterator[tuple[str, tuple[str, tuple[Any, Any]]]]:
    for tool, recorded in theirs.items():
        sent = ours.get(tool, {})
        for key, value in recorded.items():
            if sent.get(key, _ABSENT) != value:
                setting = "strict" if key == "strict" else "tools"
                yield setting, (f"tool {tool!r} {key}", (sent.get(key, _ABSENT), value))


class _Absent:
    def __repr__(self) -> str:
        return "(not sent)"


_ABSENT = _Absent()


def request_fingerprint(body: bytes | str | None) -> dict[str, Any] | None:
    """What :func:`llm_request` compares of a Chat Completions, Messages or Responses request
    body."""
    data = _json(body)
    if not isinstance(data, dict):
        return None
    conversation = _conversation(data)
    return {
        "model": data.get("model"),
        "stream": bool(data.get("stream")),
        "system": _system(data),
        "conversation": _numbered_ids([item for m in conversation for item in _items(m)]),
        "tools": sorted(_tool_name(tool) for tool in _list(data.get("tools"))),
        "settings": _settings(data, conversation),
    }


def _settings(data: dict[str, Any], conversation: list[Any]) -> dict[str, Any]:
    """The :data:`SETTINGS` the body has (``tools`` always: schema details by tool name)."""
    found: dict[str, Any] = {"tools": _tool_schemas(data.get("tools") or ())}
    if data.get("temperature") is not None:
        found["temperature"] = data["temperature"]
    if data.get("tools"):
        found["tool_choice"] = _tool_choice(data.get("tool_choice"))
    for name in ("max_tokens", "max_completion_tokens", "max_output_tokens"):
        if data.get(name) is not None:
            found["max_tokens"] = data[name]
            break
    output_config = data.get("output_config")
    text = data.get("text")
    formats = (
        data.get("response_format"),
        text.get("format") if isinstance(text, dict) else None,
        output_config.get("format") if isinstance(output_config, dict) else None,
        data.get("output_format"),
    )
    given = [f for f in formats if f is not None]
    if given:
        found["response_format"] = given[0]
    thinking = {k: data[k] for k in ("thinking", "reasoning_effort", "reasoning") if k in data}
    if thinking:
        found["thinking"] = thinking
    reasoning = _reasoning_sent(conversation)
    if reasoning:
        found["reasoning"] = reasoning
    return found


def _tool_schemas(tools: Any) -> dict[str, dict[str, Any]]:
    """Each tool's description, parameter schema and ``strict`` flag, where the body has them."""
    schemas: dict[str, dict[str, Any]] = {}
    for tool in tools:
        if not isinstance(tool, dict):
            continue
        function = tool.get("function")
        spec: dict[str, Any] = function if isinstance(function, dict) else tool
        schema = {
            key: spec[key]
            for key in ("description", "parameters", "input_schema", "strict")
            if spec.get(key) not in (None, "")
        }
        if "input_schema" in schema:
            schema["parameters"] = schema.pop("input_schema")
        schemas[_tool_name(tool)] = schema
    return schemas


def _tool_choice(choice: Any) -> Any:
    """``tool_choice`` in one spelling: ``auto`` (also when absent), ``none``, ``required``
    (Anthropic ``any``) or the name of the one tool to call."""
    if choice is None:
        return "auto"
    if isinstance(choice, dict):
        kind = choice.get("type")
        function = choice.get("function")
        if isinstance(function, dict):
            return function.get("name")
        if kind in ("tool", "function"):
            return choice.get("name")
        return "required" if kind == "any" else kind
    return choice


def _reasoning_sent(conversation: list[Any]) -> list[Any]:
    """The reasoning the request sends back, in order."""
    sent: list[Any] = []
    for message in conversation:
        if not isinstance(message, dict):
            continue
        if message.get("type") == "reasoning":
            sent.append({k: v for k, v in message.items() if k in ("encrypted_content", "summary")})
        for field in ("reasoning_content", "reasoning"):
            if isinstance(message.get(field), str) and message[field]:
                sent.append(message[field])
        content = message.get("content")
        for block in content if isinstance(content, list) else ():
            if isinstance(block, dict) and block.get("type") in ("thinking", "redacted_thinking"):
                sent.append({k: v for k, v in block.items() if k != "type"})
    return sent


def _numbered_ids(items: list[tuple[str, ...]]) -> list[tuple[str, ...]]:
    """``items`` with each tool-call id replaced by its order of first appearance (``#1``,
    ``#2``...): ids are made up (by the SDK, by agentrig when a provider sends none, by another
    framework), so only which result answers which call counts."""
    numbers: dict[str, str] = {}
    numbered = []
    for item in items:
        if item[0] in ("tool_call", "tool_result"):
            number = numbers.setdefault(item[1], f"#{len(numbers) + 1}")
            item = (item[0], number, *item[2:])
        numbered.append(item)
    return numbered


def _conversation(data: dict[str, Any]) -> list[Any]:
    """The messages of a Chat Completions or Messages body, or the ``input`` items of a
    Responses body (a bare string is one user message)."""
    if "messages" in data:
        return _list(data.get("messages"))
    given = data.get("input")
    if isinstance(given, str):
        return [{"role": "user", "content": given}]
    return list(given) if isinstance(given, list) else []


def _difference(key: str, ours: Any, theirs: Any) -> str:
    if key == "conversation":
        at = next(
            (i for i, (a, b) in enumerate(zip(ours, theirs, strict=False)) if a != b),
            min(len(ours), len(theirs)),
        )
        mine = ours[at] if at < len(ours) else "(nothing)"
        recorded = theirs[at] if at < len(theirs) else "(nothing)"
        return f"conversation item {at + 1}: sent {mine!r}, recorded {recorded!r}"
    return f"{key}: sent {ours!r}, recorded {theirs!r}"


def _json(body: bytes | str | None) -> Any:
    if not body or not isinstance(body, bytes | str):
        return None
    try:
        return json.loads(body)
    except (ValueError, RecursionError):
        return None


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(block.get("text", "") for block in content if isinstance(block, dict))
    return ""


def _system(data: dict[str, Any]) -> str:
    parts = [_text(data.get("system")), _text(data.get("instructions"))]
    parts.extend(
        _text(m.get("content"))
        for m in _conversation(data)
        if isinstance(m, dict) and m.get("role") in ("system", "developer")
    )
    return "\n".join(part for part in parts if part)


def _arguments(value: Any) -> str:
    """Tool-call arguments (a JSON text or object) in one canonical spelling."""
    if isinstance(value, str):
        parsed = _json(value.encode())
        if parsed is None and value.strip():
            return value
        value = parsed or {}
    try:
        return json.dumps(value, sort_keys=True, separators=(",", ":"))
    except (TypeError, ValueError, RecursionError):
        return repr(value)


def _items(message: Any) -> list[tuple[str, ...]]:
    """One message (or Responses input item) as comparable items: texts by role, tool calls,
    tool results. Responses reasoning items are left out, like other providers' kept data."""
    if not isinstance(message, dict) or message.get("role") in ("system", "developer"):
        return []
    kind = message.get("type")
    if kind == "function_call":
        return [
            (
                "tool_call",
                str(message.get("call_id")),
                str(message.get("name")),
                _arguments(message.get("arguments")),
            )
        ]
    if kind == "function_call_output":
        return [("tool_result", str(message.get("call_id")), _text(message.get("output")))]
    if "role" not in message:  # reasoning and other items the answer does not depend on
        return []
    role = str(message.get("role"))
    if role == "tool":
        return [("tool_result", str(message.get("tool_call_id")), _text(message.get("content")))]
    items: list[tuple[str, ...]] = []
    content = message.get("content")
    blocks = content if isinstance(content, list) else [{"type": "text", "text": content or ""}]
    for block in blocks:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind in _TEXT_BLOCKS and str(block.get("text", "")).strip():
            items.append((role, str(block["text"])))
        elif kind == "tool_use":
            items.append(
                (
                    "tool_call",
                    str(block.get("id")),
                    str(block.get("name")),
                    _arguments(block.get("input")),
                )
            )
        elif kind == "tool_result":
            items.append(
                ("tool_result", str(block.get("tool_use_id")), _text(block.get("content")))
            )
    for call in _list(message.get("tool_calls")):
        function = call.get("function") if isinstance(call, dict) else None
        function = function if isinstance(function, dict) else {}
        call = call if isinstance(call, dict) else {}
        items.append(
            (
                "tool_call",
                str(call.get("id")),
                str(function.get("name")),
                _arguments(function.get("arguments")),
            )
        )
    return items


_TEXT_BLOCKS = frozenset({"text", "input_text", "output_text"})


def _tool_name(tool: Any) -> str:
    if not isinstance(tool, dict):
        return ""
    function = tool.get("function")
    return str(function.get("name") if isinstance(function, dict) else tool.get("name"))


# --- configuration ------------------------------------------------------------------------


def _vcr_module() -> Any:
    try:
        import vcr
    except ImportError:
        raise MissingDependencyError("vcrpy", "vcr") from None
    return vcr


def configure_vcr(vcr_instance: Any, *, ignore: Sequence[str] = ()) -> Any:
    """Register the serializer (as ``yaml``), the ``llm_request`` matcher and a strict file
    persister on a ``vcr.VCR`` (for pytest-recording: call it from
    ``pytest_recording_configure``); the matcher does not compare the :data:`SETTINGS` named in
    ``ignore``. Returns it.

    The persister reads cassette files as vcrpy's does, except that a file that exists but
    cannot be read or played (not UTF-8, not a cassette) raises :class:`HttpCassetteFileError`:
    vcrpy would treat an undecodable file as absent, and record it again from the real API.
    """
    vcr_instance.register_serializer(SERIALIZER, _Serializer())
    matcher = llm_request_ignoring(*ignore) if ignore else llm_request
    vcr_instance.register_matcher(MATCHER, matcher)
    if not getattr(vcr_instance.persister, "agentrig_strict", False):
        strict = _strict_persister(vcr_instance.persister)
        strict.agentrig_strict = True
        vcr_instance.register_persister(strict)
    return vcr_instance


def _strict_persister(inner: Any) -> Any:
    """``inner`` (vcrpy's file persister, or the one pytest-recording registered), with a file
    that exists but cannot be read or played raised as :class:`HttpCassetteFileError`."""
    from vcr.persisters.filesystem import CassetteDecodeError, CassetteNotFoundError

    class StrictPersister:
        @classmethod
        def load_cassette(cls, cassette_path: Any, serializer: Any) -> Any:
            where = str(cassette_path)
            _refuse_non_file(where)
            try:
                return inner.load_cassette(cassette_path, serializer)
            except (CassetteNotFoundError, HttpCassetteFileError):
                raise
            except CassetteDecodeError:
                raise HttpCassetteFileError(where, _not_utf8(cassette_path)) from None
            except Exception as error:  # vcrpy's own checks raise whatever they hit
                raise HttpCassetteFileError(where, str(error) or type(error).__name__) from None

        @classmethod
        def save_cassette(cls, cassette_path: Any, cassette_dict: Any, serializer: Any) -> None:
            _refuse_non_file(str(cassette_path))
            inner.save_cassette(cassette_path, cassette_dict, serializer)

    return StrictPersister


def _refuse_non_file(path: str) -> None:
    """:class:`HttpCassetteFileError` for a path that exists and is not a regular file (vcrpy
    would take a FIFO for an absent cassette, and block writing it) or is larger than
    :data:`~agentrig.harness.data_files.MAX_FILE_BYTES`."""
    from agentrig.harness.data_files import MAX_FILE_BYTES, not_a_regular_file

    kind = not_a_regular_file(path)
    if kind is not None:
        reason = f"not a regular file: it is {kind}; it is neither read nor recorded over"
        raise HttpCassetteFileError(path, reason)
    try:
        size = os.stat(path).st_size
    except OSError:
        return
    if size > MAX_FILE_BYTES:
        reason = f"the file is larger than {MAX_FILE_BYTES} bytes, the most a data file may hold"
        raise HttpCassetteFileError(path, reason)


def _not_utf8(path: Any) -> str:
    try:
        raw = Path(path).read_bytes()
        raw.decode("utf-8")
    except UnicodeDecodeError as error:
        line = raw.count(b"\n", 0, error.start) + 1
        return f"not UTF-8 text (byte 0x{raw[error.start]:02x} on line {line})"
    except OSError:
        pass
    return "not UTF-8 text"


class _Serializer:
    """This module's functions as the object vcrpy expects."""

    deserialize = staticmethod(deserialize)
    serialize = staticmethod(serialize)


def vcr_config(**overrides: Any) -> dict[str, Any]:
    """vcrpy options for replaying LLM cassettes (pytest-recording's ``vcr_config`` fixture):
    the matchers above, one play per interaction, and the API key headers filtered on record."""
    config: dict[str, Any] = {
        "serializer": SERIALIZER,
        "match_on": list(MATCH_ON),
        "allow_playback_repeats": False,  # pragma: no mutate (vcrpy's default: kept explicit)
        "filter_headers": [
            "authorization",
            "x-api-key",
            "api-key",
            "cookie",
            "openai-organization",
        ],
        "decode_compressed_response": False,
    }
    config.update(overrides)
    return config


def http_vcr(*, ignore: Sequence[str] = (), **options: Any) -> Any:
    """A ``vcr.VCR`` (built with ``options``) with the serializer and matcher registered
    (ignoring the :data:`SETTINGS` named in ``ignore``); pass :func:`vcr_config` to its
    ``use_cassette``."""
    vcr = _vcr_module()
    return configure_vcr(vcr.VCR(**options), ignore=ignore)


def use_http_cassette(
    path: str | Path,
    *,
    record_mode: str = "none",
    check_all_played: bool = True,
    ignore: Sequence[str] = (),
    **overrides: Any,
) -> AbstractContextManager[Any]:
    """Replay (``record_mode="none"``) or record the cassette at ``path``; yields vcrpy's
    ``Cassette``. A replay that ends normally must have answered every request
    (``HttpCassetteMismatchError`` names each miss) and, unless ``check_all_played`` is false,
    played every interaction. ``ignore``
    names :data:`SETTINGS` not to compare (``ignore=("tools", "strict")`` replays a session
    recorded with other tool schemas). Its own errors (a miss, unplayed interactions, a
    missing or broken file) are raised without agentrig's frames: under pytest the traceback
    ends at the test's ``with`` line, and the message says the rest."""
    return _OwnFramesHidden(
        _http_cassette(
            path,
            record_mode=record_mode,
            check_all_played=check_all_played,
            ignore=ignore,
            **overrides,
        )
    )


class _OwnFramesHidden:
    """A context manager whose errors of agentrig's cassettes lose agentrig's frames (pytest
    hides the frames of this class's methods; ``with_traceback(None)`` drops the rest)."""

    def __init__(self, inner: AbstractContextManager[Any]) -> None:
        self.inner = inner

    def __enter__(self) -> Any:
        __tracebackhide__ = True
        try:
            return self.inner.__enter__()
        except CassetteError as error:
            raise error.with_traceback(None) from None

    def __exit__(self, kind: Any, error: Any, traceback: Any) -> bool | None:
        __tracebackhide__ = True
        try:
            return self.inner.__exit__(kind, error, traceback)
        except CassetteError as own:
            if own is error:  # the block's own exception, passing through
                raise
            raise own.with_traceback(None) from None


@contextmanager
def _http_cassette(
    path: str | Path,
    *,
    record_mode: str,
    check_all_played: bool,
    ignore: Sequence[str],
    **overrides: Any,
) -> Iterator[Any]:
    """The cassette block of :func:`use_http_cassette`."""
    where = str(path)
    _refuse_non_file(where)
    if record_mode == "none" and not Path(where).is_file():
        raise HttpCassetteNotFoundError(where)
    options = vcr_config(record_mode=record_mode, **overrides)
    with ExitStack() as stack:
        try:
            cassette = stack.enter_context(http_vcr(ignore=ignore).use_cassette(where, **options))
        except HttpCassetteFileError:
            raise
        except ValueError as error:  # what deserialize() refuses
            raise HttpCassetteFileError(where, str(error)) from None
        misses = record_misses(cassette)
        yield cassette
    if record_mode != "none":
        return
    if misses:
        raise HttpCassetteMismatchError(where, misses)
    if check_all_played and not cassette.all_played:
        raise UnplayedInteractionsError(where, unplayed(cassette), len(cassette))


def record_misses(cassette: Any) -> list[str]:
    """Note vcrpy's report of every request the cassette cannot answer (it raises it to the SDK,
    which the caller may swallow): the returned list fills as the cassette plays."""
    from vcr.errors import CannotOverwriteExistingCassetteException

    misses: list[str] = []
    can_play = cassette.can_play_response_for

    def noting(request: Any) -> bool:
        playable = bool(can_play(request))
        if not playable and cassette.write_protected:
            failure = CannotOverwriteExistingCassetteException(
                cassette=cassette, failed_request=request
            )
            misses.append(str(failure))
        return playable

    cassette.can_play_response_for = noting
    return misses


def is_configured(cassette: Any) -> bool:
    """Whether vcrpy's ``cassette`` was opened through a ``VCR`` that :func:`configure_vcr`
    set up (its strict persister is agentrig's)."""
    return bool(getattr(getattr(cassette, "_persister", None), "agentrig_strict", False))


def unplayed(cassette: Any) -> list[str]:
    """The interactions of ``cassette`` not played yet, as ``#n METHOD URI``."""
    return [
        f"#{index + 1} {request.method} {request.uri}"
        for index, request in enumerate(cassette.requests)
        if not cassette.play_counts[index]
    ]
