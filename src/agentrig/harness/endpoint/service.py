"""The endpoint itself, apart from any HTTP stack: one request in (method, path, headers, body),
one reply out. The ASGI app, the in-process transports and the pytest fixture all wrap it.

Sessions are keyed by the API key the agent sends (``Authorization: Bearer KEY``, ``x-api-key:
KEY``, ``x-goog-api-key: KEY`` or ``?key=KEY``), and by the ``x-agentrig-trial`` header when a
request carries one (each live trial of ``agentrig run --live`` sends its own, so one key serves
every trial). A session is named in every report by that header when sent, else by its key.
With one scenario, every distinct key is a session of it. With several, a
key names its scenario: ``SCENARIO`` or ``SCENARIO/ANYTHING`` (the part after ``/`` tells
concurrent sessions of one scenario apart). Two sessions never share a script.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Protocol
from urllib.parse import parse_qs

from agentrig.errors import AgentrigError
from agentrig.harness.endpoint.capture import CapturedRequest, captured, keep
from agentrig.harness.endpoint.function import ReplyFunction
from agentrig.harness.endpoint.memo import remembered
from agentrig.harness.endpoint.session import Delivery, EndpointSession, Plan
from agentrig.harness.endpoint.wire import (
    CREATED,
    FORMATS,
    WireError,
    WireFormat,
    format_for_path,
    json_bytes,
    response_id,
)
from agentrig.harness.endpoint.wire.gemini import GEMINI
from agentrig.harness.results import ScenarioResult
from agentrig.harness.scenarios.model import Scenario

JSON = "application/json"
EVENT_STREAM = "text/event-stream"
MALFORMED_EVENT = b'data: {"this is": not json\n\n'
"""What a ``malformed_at`` fault sends in place of an event."""


TRIAL_HEADER = "x-agentrig-trial"
"""The header naming the live trial a request belongs to: with the API key, it keys the session."""


class RequestHandler(Protocol):
    """Anything that answers the endpoint's HTTP requests: ``ScenarioEndpoint``, or
    ``RecordThrough`` forwarding to a real provider."""

    def handle(
        self, method: str, path: str, headers: Mapping[str, str], body: bytes
    ) -> EndpointReply:
        """Answer one HTTP request. ``headers``: a ``dict`` with names in any case, or a
        mapping that looks names up without regard to case (httpx's or starlette's ``Headers``,
        which the transports and the ASGI app hand over as they are)."""
        ...


class ProviderBaseUrls:
    """The base URLs the SDKs take, from ``base_url`` (``http://host:port``)."""

    @property
    def base_url(self) -> str:
        """``http://host:port``."""
        raise NotImplementedError

    @property
    def openai_base_url(self) -> str:
        """``BASE/v1``: the ``base_url`` for the OpenAI SDK (Chat Completions and Responses)."""
        return f"{self.base_url}/v1"

    @property
    def anthropic_base_url(self) -> str:
        """``BASE``: the ``base_url`` for the Anthropic SDK."""
        return self.base_url

    @property
    def gemini_base_url(self) -> str:
        """``BASE``: the ``base_url`` for the google-genai SDK (``HttpOptions(base_url=...)``),
        which adds ``/v1beta/models/...`` itself."""
        return self.base_url


class EndpointKeyError(AgentrigError):
    """A request's API key names no scenario the endpoint serves."""


@dataclass(slots=True)
class EndpointReply:
    """What to send back: a status, headers, and a body or a stream of events.

    ``drop`` means the connection is cut after ``chunks`` (or instead of a body): the client sees
    a broken connection, as when a provider's stream dies. ``delay`` is the seconds to wait first;
    ``hang``: send nothing until the client gives up (a ``timeout`` fault); ``interval``: the
    seconds between ``chunks``. A player that waits (``delay``, ``hang``, ``interval``) tells
    ``delivery`` whether the reply went out (a stream: when it begins, and when its last chunk
    goes) or the client gave up first, and never waits past the client's own timeout
    (``play_wait``).
    """

    status: int
    headers: dict[str, str]
    body: bytes = b""
    chunks: tuple[bytes, ...] | None = None
    drop: bool = False
    delay: float = 0.0
    hang: bool = False
    delivery: Delivery | None = None
    interval: float = 0.0

    @property
    def paced(self) -> bool:
        """Whether this is a stream with waits between its chunks (its player tells
        ``delivery`` of it chunk by chunk)."""
        return self.interval > 0 and self.chunks is not None


HANG_LIMIT = 600.0
"""The longest a ``timeout`` fault waits for a client without a timeout of its own (the OpenAI
and Anthropic SDKs' default timeout)."""


def play_wait(reply: EndpointReply, client_timeout: float | None) -> tuple[float | None, bool]:
    """How long a player waits before it sends ``reply`` to a client that gives up after
    ``client_timeout`` seconds (None: never, or not known), and whether the client gives up
    first (then nothing is sent: the player raises the client's timeout error, or sees it
    disconnect). The wait is None for a ``hang`` whose client has no known timeout."""
    if reply.hang:
        return client_timeout, True
    if client_timeout is not None and reply.delay > client_timeout:
        return client_timeout, True
    return reply.delay, False


@dataclass
class ScenarioEndpoint:
    """Serves ``scenarios`` over the OpenAI Chat, OpenAI Responses, Anthropic Messages and
    Gemini APIs."""

    scenarios: Sequence[Scenario]
    sessions: dict[str, EndpointSession] = field(default_factory=dict)
    capture: bool = False
    """Whether each session's requests are kept whole, for ``requests()`` (``EndpointHandle``
    keeps them; ``agentrig serve`` does not, as a session keeps only what its checks need)."""
    replies: ReplyFunction | None = None
    """A function that decides each reply instead of the turns' ``model:`` scripts."""
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _captured: dict[str, list[object]] = field(default_factory=dict)
    _names: set[str] = field(default_factory=set)
    """The names of the sessions (kept, not gathered: a run may hold thousands)."""

    def __post_init__(self) -> None:
        if not self.scenarios:
            raise ValueError("a ScenarioEndpoint needs at least one scenario")
        self._by_name = {scenario.name: scenario for scenario in self.scenarios}
        for scenario in self.scenarios:  # refuse what the endpoint cannot honour, up front
            EndpointSession(scenario, key="", replies=self.replies)

    # --- sessions --------------------------------------------------------------------------

    def session(self, key: str, trial: str | None = None) -> EndpointSession:
        """The session of ``key`` (and of ``trial``, the ``x-agentrig-trial`` header a live
        trial sends, when given), made on first use; ``EndpointKeyError`` if the key names no
        scenario."""
        session_key = key if not trial else f"{key}#{trial}"
        with self._lock:
            found = self.sessions.get(session_key)
            if found is None:
                name = self._unused_name(trial or shown_key(key))
                found = EndpointSession(
                    self._scenario_for(key),
                    key=session_key,
                    checked=True,
                    name=name,
                    replies=self.replies,
                )
                self.sessions[session_key] = found
            return found

    def start_session(self, scenario: Scenario, key: str) -> EndpointSession:
        """A fresh session of ``scenario`` for ``key``, in place of the key's earlier one: the
        next request sent with ``key`` plays it. ``scenario`` may be any scenario, built in
        memory or loaded, not only one the endpoint was made with: one hypothesis example is
        one such session, on an endpoint (and server) that stays up."""
        with self._lock:
            replaced = self.sessions.pop(key, None)
            if replaced is not None:
                self._names.discard(replaced.name)
            session = EndpointSession(scenario, key=key, name=self._unused_name(shown_key(key)))
            self.sessions[key] = session
        return session

    def _unused_name(self, name: str) -> str:
        """``name``, or ``name#2``, ``name#3``... when a session is called that already (taken
        from now on)."""
        found, number = name, 1
        while found in self._names:
            number += 1
            found = f"{name}#{number}"
        self._names.add(found)
        return found

    def _scenario_for(self, key: str) -> Scenario:
        if len(self.scenarios) == 1:
            return self.scenarios[0]
        name = key.split("/", 1)[0]
        scenario = self._by_name.get(name)
        if scenario is None:
            names = ", ".join(sorted(self._by_name))
            raise EndpointKeyError(
                f"the API key {key!r} names no scenario; use the scenario's name, or "
                f"NAME/ANYTHING for one of several sessions, with NAME one of: {names}"
            )
        return scenario

    def results(self) -> list[ScenarioResult]:
        """The result of every session so far, ending each (in the order they began)."""
        with self._lock:
            sessions = list(self.sessions.values())
        return [session.result() for session in sessions]

    # --- requests --------------------------------------------------------------------------

    def handle(
        self, method: str, path: str, headers: Mapping[str, str], body: bytes
    ) -> EndpointReply:
        """Answer one HTTP request (``headers`` as ``RequestHandler.handle`` takes them). Never
        raises for a bad request: it gets an error reply."""
        lowered = case_insensitive(headers)
        target = path
        path, _, query = path.partition("?")
        fmt = format_for_path(path)
        if fmt is None or method != "POST":  # no model call: a model list, or no such route
            return self._not_a_call(method, path, lowered, fmt)
        key = _api_key(lowered, query)
        if key is None:
            return _error(
                fmt, 401, "agentrig endpoint: no API key (Authorization, x-api-key, x-goog-api-key)"
            )
        try:
            session = self.session(key, lowered.get(TRIAL_HEADER))
        except EndpointKeyError as error:
            return _error(fmt, 401, str(error))
        reply = self._answer(fmt, session, target, body)
        if self.capture:
            with self._lock:
                record = self._captured.setdefault(session.key, [])
                keep(record, method, path, lowered, body, reply.status)
        return reply

    def requests(self, key: str, trial: str | None = None) -> list[CapturedRequest]:
        """The requests the session of ``key`` (and ``trial``) sent so far, in order (only
        with ``capture``; none before the first)."""
        session_key = key if not trial else f"{key}#{trial}"
        with self._lock:
            record = list(self._captured.get(session_key, ()))
        return captured(record)

    def _answer(
        self, fmt: WireFormat, session: EndpointSession, target: str, body: bytes
    ) -> EndpointReply:
        """The reply to a request of ``session`` in format ``fmt``, posted to ``target`` (its
        path and query)."""
        try:
            request = fmt.read(target, body)
        except WireError as error:
            session.unreadable(f"{fmt.path}: {error.message}")
            return _error(fmt, 400, f"agentrig endpoint: {error.message}", param=error.param)
        exchange = session.exchange(request)
        plan = exchange.plan
        stream, include_usage, model = request.stream, request.include_usage, request.model
        answer = plan.answer
        top = fmt.logprobs_asked(request) if answer is not None and answer.logprobs else None
        hidden = answer is not None and bool(answer.reasoning) and not request.reasoning_shown

        array = request.json_array

        def made() -> EndpointReply:
            return _reply(
                fmt,
                plan,
                stream=stream,
                include_usage=include_usage,
                model=model,
                top=top,
                hidden=hidden,
                array=array,
            )

        # A cache: ``_reply`` is a function of what the key holds (no clock, no randomness),
        # so a reply made afresh equals one shared; which plans share is only memory's concern
        if answer is None or not plan.shared:  # pragma: no mutate (made for this request alone)
            reply = made()
        else:  # the same for every session that plays this plan (see ``EndpointSession.plan``)
            key = ("reply", fmt.name, id(plan), stream, include_usage, model, top, hidden, array)
            reply = remembered(key, plan, made)
        if exchange.awaited:  # made for this request: it reports what became of the reply
            reply = replace(reply, delivery=Delivery(session, exchange))
        chunking = session.scenario.agent.wire_chunking
        if reply.chunks is None or chunking == "events":
            return reply
        return replace(reply, chunks=tuple(cut_chunks(reply.chunks, chunking)))

    def _not_a_call(
        self, method: str, path: str, headers: Mapping[str, str], fmt: WireFormat | None
    ) -> EndpointReply:
        """The answer to a request that is no model call: the model list in the shape of the
        API the request is meant for (its path, or its headers), or HTTP 404 in that shape.
        (Only here are the headers read for it: a model call's path says its API.)"""
        anthropic = fmt is FORMATS["anthropic"] or "anthropic-version" in headers
        errors = FORMATS["anthropic"] if anthropic else FORMATS["chat"]
        if fmt is FORMATS["gemini"] or _is_gemini(path, headers):
            errors = FORMATS["gemini"]
        if method == "GET" and path.rstrip("/").endswith("/models"):
            return self._models(anthropic, gemini=errors is FORMATS["gemini"])
        served = ", ".join(f"POST {f.path}" for f in FORMATS.values())
        message = f"Invalid URL ({method} {path}): the agentrig endpoint serves {served}"
        return _error(errors, 404, message)

    def _models(self, anthropic: bool, *, gemini: bool) -> EndpointReply:
        names = sorted({s.agent.model for s in self.scenarios if s.agent.model} or {"agentrig"})
        if gemini:
            body = GEMINI.models_body(names)
        elif anthropic:
            data = [
                {
                    "type": "model",
                    "id": name,
                    "display_name": name,
                    "created_at": "2026-01-01T00:00:00Z",
                }
                for name in names
            ]
            body = {"data": data, "has_more": False, "first_id": names[0], "last_id": names[-1]}
        else:
            body = {
                "object": "list",
                "data": [
                    {"id": name, "object": "model", "created": CREATED, "owned_by": "agentrig"}
                    for name in names
                ],
            }
        return EndpointReply(200, {"content-type": JSON}, json_bytes(body))


def cut_chunks(chunks: Iterable[bytes], chunking: str) -> Iterator[bytes]:
    """A stream's chunks cut as ``chunking`` says: ``bytes``, one byte per chunk; ``utf8``,
    each chunk cut after the first byte of every multi-byte UTF-8 character in it (so the
    character's bytes arrive in two reads, as a network may deliver them); else as they are."""
    for chunk in chunks:
        if chunking == "bytes":
            yield from (chunk[at : at + 1] for at in range(len(chunk)))
        elif chunking == "utf8":
            start = 0
            for at, byte in enumerate(chunk):
                if byte >= 0xC0:  # the lead byte of a multi-byte character
                    yield chunk[start : at + 1]
                    start = at + 1
            if start < len(chunk):
                yield chunk[start:]
        else:
            yield chunk


def case_insensitive(headers: Mapping[str, str]) -> Mapping[str, str]:
    """``headers`` to look names up in lower case: a ``dict`` (or a subclass) lowered; any other
    mapping as it is (httpx's and starlette's ``Headers`` ignore case, and lowering one would
    decode all its headers, three times the work of the three lookups a request needs)."""
    if isinstance(headers, dict):
        return {name.lower(): value for name, value in headers.items()}
    return headers


def shown_key(key: str) -> str:
    """``key`` as reports show it: as it is, unless it looks like a real provider's key (it
    starts with ``sk-`` or ``sk_``, or is 40 characters or more), which is shown in part
    (``sk-…Wxyz``): an agent sent the endpoint its real key, and reports are shared."""
    if key.startswith(("sk-", "sk_")) or len(key) >= 40:
        return f"{key[:3]}…{key[-4:]}"
    return key


def _api_key(headers: Mapping[str, str], query: str = "") -> str | None:
    bearer = headers.get("authorization", "")
    if bearer.lower().startswith("bearer ") and bearer[7:].strip():
        return bearer[7:].strip()
    key = (headers.get("x-api-key") or headers.get("x-goog-api-key") or "").strip()
    if not key and "key=" in query:  # Gemini's ?key=KEY
        key = parse_qs(query).get("key", [""])[-1].strip()
    return key or None


def _is_gemini(path: str, headers: Mapping[str, str]) -> bool:
    """Whether a request that is no model call is meant for the Gemini API (its error shape and
    model list): it carries Google's key header, or goes to a ``/v1beta`` path."""
    return "x-goog-api-key" in headers or "/v1beta/" in path + "/"


def _error(
    fmt: WireFormat,
    status: int,
    message: str,
    *,
    param: str | None = None,
    retry_after: float | None = None,
    delay: float = 0.0,
) -> EndpointReply:
    headers = {"content-type": JSON}
    if retry_after is not None:
        headers["retry-after"] = f"{retry_after:g}"
    body = json_bytes(fmt.error_body(status, message, param=param))
    return EndpointReply(status, headers, body, delay=delay)


def _reply(
    fmt: WireFormat,
    plan: Plan,
    *,
    stream: bool,
    include_usage: bool,
    model: str,
    top: int | None = None,
    hidden: bool = False,
    array: bool = False,
) -> EndpointReply:
    """The reply that plays ``plan``; ``top``: the likeliest tokens to send beside each token's
    log probability (None: the request asked for none); ``hidden``: the reasoning goes without
    its text, as reasoning that shows none (the request did not ask to see it); ``array``: a
    stream goes as one JSON array (Gemini without ``alt=sse``), not as server-sent events."""
    answer = plan.answer
    if answer is not None and top is not None:
        answer = replace(answer, logprobs_top=top)
    if answer is not None and hidden:
        answer = replace(answer, redacted=True)
    if plan.fault is not None and plan.fault.timeout:
        hung = _error(fmt, plan.status, plan.error or "", delay=plan.latency)
        return replace(hung, hang=True)
    if answer is None:
        return _error(
            fmt,
            plan.status,
            plan.error or f"HTTP {plan.status}",
            retry_after=plan.retry_after,
            delay=plan.latency,
        )
    fault = plan.fault
    answer_id = response_id(fmt.name, plan.response_id)
    if stream:
        chunks = list(
            fmt.stream_chunks(
                answer, model=model, response_id=answer_id, include_usage=include_usage
            )
        )
        drop = False
        if fault is not None and fault.cut_after is not None:
            chunks, drop = chunks[: fault.cut_after], True
        elif fault is not None and fault.malformed_at is not None:
            at = min(fault.malformed_at, len(chunks)) - 1
            chunks[at] = MALFORMED_EVENT
        headers = {"content-type": EVENT_STREAM, "cache-control": "no-cache"}
        if array:
            chunks = GEMINI.json_array(chunks, closed=not drop)
            headers = {"content-type": JSON}
        return EndpointReply(
            200,
            headers,
            chunks=tuple(chunks),
            drop=drop,
            delay=plan.latency,
            interval=plan.chunk_latency,
        )
    body = json_bytes(fmt.response_body(answer, model=model, response_id=answer_id))
    if fault is not None and fault.cut_after is not None:
        dropped = {"content-type": JSON}  # pragma: no mutate (header names are case-blind)
        return EndpointReply(200, dropped, drop=True, delay=plan.latency)
    if fault is not None and fault.malformed_at is not None:
        body = body[: max(1, len(body) // 2)]
    return EndpointReply(200, {"content-type": JSON}, body, delay=plan.latency)
