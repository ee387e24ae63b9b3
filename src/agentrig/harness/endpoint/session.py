"""One scenario played to one agent: which turn a request belongs to, which scripted reply
answers it, what the invariants say of it, and the result once the agent is done."""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field, replace

from agentrig._text import counted
from agentrig.harness.checks.expectations import (
    ObservedTurn,
    ReturnedResult,
    check_observed,
)
from agentrig.harness.checks.trajectory import Call
from agentrig.harness.endpoint.auto_model import auto_reply
from agentrig.harness.endpoint.compatibility import check_endpoint_scenario
from agentrig.harness.endpoint.function import ReplyFunction, ReplyRequest, reply_of
from agentrig.harness.endpoint.invariant_names import (
    SCRIPT_NOT_EXCEEDED,
    TOOL_RESULTS_AS_SCRIPTED,
)
from agentrig.harness.endpoint.invariants import (
    WIRE_INVARIANTS,
    Violation,
    WireCheck,
    WireView,
    prompt_passes,
    repeated_prefix,
    selected,
)
from agentrig.harness.endpoint.memo import remembered
from agentrig.harness.endpoint.network import drawn_fault, drawn_latency
from agentrig.harness.endpoint.retries import retries_turn
from agentrig.harness.endpoint.tool_replies import (
    SentResult,
    checked_results,
    scripted_result_problems,
)
from agentrig.harness.endpoint.wire import response_id
from agentrig.harness.endpoint.wire._common import adopt_call_ids, seal_of
from agentrig.harness.endpoint.wire._common import message as wire_message
from agentrig.harness.endpoint.wire.base import (
    FormatName,
    TokenLogprobs,
    WireAnswer,
    WireRequest,
)
from agentrig.harness.results import (
    Failure,
    FailureKind,
    InvariantOutcome,
    ScenarioResult,
    TranscriptEntry,
    TurnResult,
)
from agentrig.harness.scenarios.model import FaultSpec, ModelReply, RetryRule, Scenario
from agentrig.harness.scenarios.yaml_source import FieldPath
from agentrig.messages import Message, Role, ToolCall
from agentrig.state import ToolSchema, Usage
from agentrig.state.status import FinishReason
from agentrig.state.usage import ZERO_USAGE

# The records made for each request (Plan, Exchange, and the wire's WireRequest, WireAnswer,
# WireView, EndpointReply) are plain slotted dataclasses, not frozen: built on every model call
# and never changed, they skip the frozen dataclass's ``object.__setattr__`` per field. A plan
# and its answer (and the reply made of them) are shared by every session that plays the same
# reply as the same request number: nothing may change them (a plan makes its message once).


@dataclass(slots=True)
class Plan:
    """How the endpoint answers one request: a scripted answer (possibly with a stream fault),
    or an HTTP error with its message."""

    response_id: str
    answer: WireAnswer | None = None
    status: int = 200
    error: str | None = None
    retry_after: float | None = None
    fault: FaultSpec | None = None
    latency: float = 0.0
    chunk_latency: float = 0.0
    """Seconds between a streamed answer's chunks."""
    shared: bool = True
    """Whether every session that plays this reply as this request number plays this plan
    (a scripted reply), so that its wire reply is made once; a reply function's plan is not."""
    _message: Message | None = None

    def message(self) -> Message:
        """The answer as the assistant message the agent should send back (made once: a plan
        is shared by the sessions that play it). Only for a plan with an answer."""
        if self._message is None:
            assert self.answer is not None, "a plan without an answer has no message"
            self._message = _assistant(self.answer)
        return self._message


@dataclass(slots=True)
class Exchange:
    """One request and how it was answered: what later requests and the result read of it.

    Only this much of a request is kept (not its tools or settings): a session lives until the
    end of the run, and every object it keeps is one more for the garbage collector to visit."""

    number: int
    turn: int
    format: FormatName
    system: str | None
    """The system prompt in force for the request (its own, or the one it continues)."""
    conversation: tuple[Message, ...]
    plan: Plan
    reply: int | None = None
    """The index of the scripted reply that answered, among those of its turn; None for an
    answer the script did not give (a request past the script or the scenario's turns)."""
    received: bool = True
    """Whether the reply reached the client: false while a delayed reply waits (it counts once
    delivered), and for good when the client gave up first."""
    abandoned: bool = False
    """Whether the client gave up before the reply reached it (its timeout, or a disconnect)."""
    begun: bool = False
    """Whether a streamed reply began to go out (then a client that gave up, gave up
    mid-stream)."""

    @property
    def answered(self) -> bool:
        """Whether the agent received a complete scripted answer."""
        return self.received_answer is not None

    @property
    def received_answer(self) -> WireAnswer | None:
        """The scripted answer the agent received complete; None for none (an error, a fault,
        a reply the client gave up on): only this counts as a model call of the agent's."""
        if self.plan.fault is None and self.received:
            return self.plan.answer
        return None

    @property
    def awaited(self) -> bool:
        """Whether the reply may never reach the client: one that waits first (``latency``),
        waits between its chunks (``chunk_latency``) or sends nothing (a ``timeout`` fault);
        the player reports what became of it."""
        plan = self.plan
        return (
            plan.latency > 0
            or plan.chunk_latency > 0
            or (plan.fault is not None and bool(plan.fault.timeout))
        )


@dataclass(slots=True)
class Delivery:
    """What became of a reply that may never reach the client (``Exchange.awaited``): the
    player that sends it calls ``delivered`` once it sends it, or ``abandoned`` when the
    client gave up first (its timeout, a disconnect). Until then the reply does not count."""

    session: EndpointSession
    exchange: Exchange

    def began(self) -> None:
        """The first chunk of a streamed reply is being sent (the rest is still to come)."""
        with self.session._lock:
            self.exchange.begun = True

    def sending(self, index: int, count: int) -> None:
        """Chunk ``index`` of a paced stream's ``count`` is going out: the first begins the
        reply, the last delivers it."""
        if index == 0:
            self.began()
        if index == count - 1:
            self.delivered()

    def delivered(self) -> None:
        """The reply is being sent whole (a stream: its last chunk): the agent has it."""
        with self.session._lock:
            if not self.exchange.abandoned:
                self.exchange.received = True

    def abandoned(self) -> None:
        """The client gave up before the reply: it is no model call of the agent's, and what
        the agent sends next carries no answer to it."""
        with self.session._lock:
            self.exchange.received = False  # pragma: no mutate (only its truth is read)
            self.exchange.abandoned = True


@dataclass(slots=True)
class EndpointSession:
    """The state of one agent's conversation with the endpoint (one API key)."""

    scenario: Scenario
    key: str
    name: str = ""
    """What reports call the session (``ScenarioResult.session``): the ``x-agentrig-trial``
    header its client sent, else its API key; empty: the key."""
    replies: ReplyFunction | None = None
    """A function deciding each reply in place of the turns' ``model:`` scripts."""
    checked: bool = False
    """Whether ``scenario`` was already found fit for the endpoint (``ScenarioEndpoint`` checks
    each of its scenarios once, not once a session)."""
    exchanges: list[Exchange] = field(default_factory=list)
    failures: list[Failure] = field(default_factory=list)
    _cursor: dict[int, int] = field(default_factory=dict)
    """Requests each turn's script answered (past its length once a repeating reply repeats)."""
    _bases: dict[int, tuple[Message, ...] | None] = field(default_factory=dict)
    """Per turn whose repeating reply answered: the conversation it first answered, which each
    request it answers must carry (``history_grows``): a stateless role asks fresh questions."""
    _branches: dict[int, int] = field(default_factory=dict)
    """Per ``mixture`` turn played so far: the branch this session plays."""
    _requests_checked: int = 0
    """Requests the per-request checks checked (each selected one checks every such request)."""
    _script_checked: int = 0
    """Requests ``script_not_exceeded`` checked."""
    _results_checked: int = 0
    """Tool results ``tool_results_as_scripted`` checked."""
    _failed: dict[str, int] = field(default_factory=dict)
    """Violations of each selected invariant (str to int: a dict the collector skips)."""
    offered: tuple[ToolSchema, ...] | None = None
    """The tools the session's first request offered (None before it came)."""
    _groups: dict[tuple[str, FieldPath, str, str], tuple[int, list[int]]] = field(
        default_factory=dict
    )
    """Per violation said (its text, field and both sides): its failure's index in
    ``failures`` and the requests that broke it."""
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _started: float = field(default_factory=time.perf_counter)
    _finished: ScenarioResult | None = None
    _wire_checks: tuple[tuple[str, WireCheck], ...] = ()

    def __post_init__(self) -> None:
        if not self.checked:
            check_endpoint_scenario(self.scenario, function=self.replies is not None)
        chosen = self.scenario.invariants
        names, self._wire_checks = _selection(
            tuple(chosen.only) if chosen.only is not None else None, tuple(chosen.exclude or ())
        )
        self._failed = dict.fromkeys(names, 0)

    # --- answering -----------------------------------------------------------------------

    def plan(self, request: WireRequest) -> Plan:
        """Decide the answer to ``request``, check it, and remember the exchange."""
        return self.exchange(request).plan

    def exchange(self, request: WireRequest) -> Exchange:
        """Decide the answer to ``request``, check it, and remember the exchange (returned: a
        reply that may never arrive, ``Exchange.awaited``, counts once a ``Delivery`` of it
        says it was delivered)."""
        with self._lock:
            if request.anonymous_calls:  # calls sent back without ids: those they repeat
                request = adopt_call_ids(request, self._expected_history() or ())
            number = len(self.exchanges) + 1
            if number == 1:
                self.offered = request.tools
            continued = self._continued(request)
            conversation = self._conversation(request, continued)
            system = request.system
            if system is None and continued is not None:  # the API keeps the stored one
                system = continued.system
            turn, newest, retried = self._turn_of(conversation)
            plan, reply = self._decide(
                number, turn, _with_context(request, conversation, system), retried
            )
            history = self._expected_history()
            if self._bases and turn in self._bases:  # a repeating reply answers
                history = self._bases[turn]
            repeated = repeated_prefix(history or (), conversation)
            if turn <= len(self.scenario.turns):
                request = _with_context(request, conversation, system)
                self._check(number, turn, request, history, repeated, plan, reply, newest)
            # Each message the request repeats is kept as history's own object: a session keeps
            # a message once, not once for every later request that carries it again.
            if repeated:
                conversation = (*(history or ())[:repeated], *conversation[repeated:])
            exchange = Exchange(number, turn, request.format, system, conversation, plan, reply)
            if exchange.awaited:
                exchange.received = False  # pragma: no mutate (only its truth is read)
            self.exchanges.append(exchange)
            return exchange

    def unreadable(self, message: str) -> None:
        """Record a request the endpoint could not read (it is answered with HTTP 400)."""
        with self._lock:
            number = len(self.exchanges) + 1
            self._fail("script", f"request {number} could not be read: {message}", ())

    def _continued(self, request: WireRequest) -> Exchange | None:
        """The exchange whose answer a Responses ``previous_response_id`` names, if any."""
        previous = request.settings.get("previous_response_id")
        if not isinstance(previous, str):
            return None
        for exchange in self.exchanges:
            if response_id(exchange.format, exchange.plan.response_id) == previous:
                return exchange
        return None

    def _conversation(
        self, request: WireRequest, continued: Exchange | None
    ) -> tuple[Message, ...]:
        """The request's conversation, with a Responses ``previous_response_id`` (the exchange
        it ``continued``) expanded."""
        if continued is None:
            return request.messages
        return (*self._after(continued), *request.messages)

    def _turn_of(self, conversation: tuple[Message, ...]) -> tuple[int, Message | None, int]:
        """The turn a request of ``conversation`` belongs to, the user message that began it,
        and how many user messages since retried it: each user message begins a turn, but
        those that retry the turn before (``retries_turn``: a framework's retry, or what the
        turn's ``retries:`` names)."""
        turns = self.scenario.turns
        turn, newest, retried = 0, None, 0
        for message in conversation:
            if message.role is not Role.USER:
                continue
            if 0 < turn <= len(turns) and retries_turn(
                turns[turn - 1], turns[turn] if turn < len(turns) else None, message.content
            ):
                retried += 1
                continue
            turn, newest, retried = turn + 1, message, 0
        return max(turn, 1), newest, retried

    def _choose(self, number: int, turn: int, request: WireRequest) -> tuple[Plan, int | None]:
        """The plan that answers request ``number`` of ``turn``, and the index of the scripted
        reply it plays (None when none does)."""
        response_id = str(number)
        turns = self.scenario.turns
        if turn > len(turns):
            message = (
                f"request {number} carries {turn} user messages, but the scenario has "
                f"{len(turns)} turn(s)"
            )
            self._fail("script", message, ("turns",))
            return Plan(response_id, status=400, error=f"agentrig endpoint: {message}"), None
        spec = turns[turn - 1]
        if spec.is_auto:
            return self._auto(number, turn, request), None
        replies = spec.replies if spec.mixture is None else self._mixed(turn)
        used = index = self._cursor.get(turn, 0)
        if index >= len(replies):
            if not replies or not replies[-1].repeat:
                return self._overrun(number, turn, len(replies)), None
            index = len(replies) - 1  # the repeating reply answers again
        reply, sealed = replies[index], request.seals_reasoning
        if reply.repeat and used == index:  # its first answer: the base of those to come
            self._bases[turn] = self._expected_history()
        self._cursor[turn] = used + 1
        self._script_checked += 1
        # The same reply played as the same request number is the same plan in every session.
        plan: Plan = remembered(
            ("plan", id(reply), response_id, turn, sealed),
            reply,
            lambda: _plan_reply(reply, response_id, turn, sealed),
        )
        return plan, index

    def _auto(self, number: int, turn: int, request: WireRequest) -> Plan:
        """The answer of ``model: auto``: the next offered tool's call, then text."""
        used = self._cursor.get(turn, 0)
        self._cursor[turn] = used + 1
        self._script_checked += 1
        seed = self.scenario.turns[turn - 1].seed
        reply = auto_reply(
            request.tools, used, f"{seed}" if seed is not None else f"{self.scenario.name}/{turn}"
        )
        # An auto reply has no reasoning to seal.
        return _plan_reply(reply, str(number), turn, request.seals_reasoning)  # pragma: no mutate

    def _decide(
        self, number: int, turn: int, request: WireRequest, retried: int
    ) -> tuple[Plan, int | None]:
        """The answer to ``request`` (its conversation and system prompt in context): a fault
        ``agent.network`` draws (the script waits for the retry), else the reply function's or
        the script's reply, after any wait ``agent.network`` draws; and the index of the
        scripted reply it plays (None when none does)."""
        network = self.scenario.agent.network
        in_script = turn <= len(self.scenario.turns)
        fault, reply = None, None
        if network is not None and in_script:
            fault = drawn_fault(network, self.scenario.name, self.key, number)
        if in_script and retried > (self.scenario.turns[turn - 1].max_retries or 0):
            return self._too_many_retries(number, turn, retried), None
        if fault is not None:
            plan = _fault_plan(str(number), fault, 0.0, "agent.network's drawn fault")
        elif self.replies is not None and in_script:
            plan = self._from_function(self.replies, number, turn, request)
        else:
            plan, reply = self._choose(number, turn, request)
        if network is not None and network.latency is not None:
            wait = drawn_latency(network, self.scenario.name, self.key, number)
            # not mutated: only the truth of `shared` is read
            plan = replace(plan, latency=plan.latency + wait, shared=False)  # pragma: no mutate
        return plan, reply

    def _from_function(
        self, replies: ReplyFunction, number: int, turn: int, request: WireRequest
    ) -> Plan:
        """The reply function's answer to ``request``; HTTP 500, and a failure naming the
        request, when it raises or returns no reply."""
        asked = ReplyRequest(
            number=number,
            turn=turn,
            format=request.format,
            model=request.model,
            messages=request.messages,
            system=request.system,
            tools=request.tools,
            settings=request.settings,
        )
        try:
            reply = reply_of(replies(asked))
        except Exception as error:  # the user's function: any error is the session's failure
            message = (
                f"request {number}: the reply function failed: {type(error).__name__}: {error}"
            )
            self._fail("script", message, ("turns", turn - 1), turn=turn)
            return Plan(
                str(number),  # pragma: no mutate (an error's id is never sent: answers' are)
                status=500,
                error=f"agentrig endpoint: {message}",
            )
        self._cursor[turn] = self._cursor.get(turn, 0) + 1
        plan = _plan_reply(reply, str(number), turn, request.seals_reasoning)
        plan.shared = False
        return plan

    def _too_many_retries(self, number: int, turn: int, retried: int) -> Plan:
        """The answer to a request whose turn was retried more often than it allows: HTTP
        400, and a failure naming the turn's ``retries:`` (its line, or the turn's)."""
        spec = self.scenario.turns[turn - 1]
        allowed = spec.max_retries or 0
        rule = spec.retries
        explicit = type(rule) is int or (isinstance(rule, RetryRule) and rule.max is not None)
        limit = "by retries:" if explicit else "by default"
        message = (
            f"turn {turn}: request {number} retries the turn {counted(retried, 'time')} (user "
            f"messages after the turn's own), more than the {allowed} allowed {limit}; allow "
            "more (retries: N, or max: N beside a rule) or check why the agent keeps retrying"
        )
        path: FieldPath = ("turns", turn - 1)
        if spec.retries is not None:
            path = (*path, "retries")
        self._fail("script", message, path, turn=turn)
        return Plan(
            str(number),  # pragma: no mutate (an error's id is never sent: answers' are)
            status=400,
            error=f"agentrig endpoint: {message}",
        )

    def _overrun(self, number: int, turn: int, scripted: int) -> Plan:
        """The answer to a request that came after its turn's script was used up."""
        message = (
            f"turn {turn}: request {number} came after the script was used up (the turn "
            f"scripts {counted(scripted, 'reply')}); add a reply or check why the agent did not stop"
        )
        self._script_checked += 1
        self._record(
            SCRIPT_NOT_EXCEEDED,
            [Violation(SCRIPT_NOT_EXCEEDED, message)],
            turn,
            number,
            self._script_path(turn),
        )
        return Plan(
            str(number),  # pragma: no mutate (an error's id is never sent: answers' are)
            status=400,
            error=f"agentrig endpoint: {message}",
        )

    def _branch(self, turn: int) -> int:
        """The ``mixture`` branch this session plays in ``turn`` (drawn once, from its key)."""
        branch = self._branches.get(turn)
        if branch is None:
            found = self.scenario.branch_for(turn, self.key)
            assert found is not None, "only a mixture turn has branches"
            branch = self._branches[turn] = found
        return branch

    def _mixed(self, turn: int) -> tuple[ModelReply, ...]:
        """The replies of the ``mixture`` branch this session plays in ``turn``."""
        mixture = self.scenario.turns[turn - 1].mixture
        assert mixture is not None
        return mixture[self._branch(turn)].model

    def _replies(self, turn: int) -> tuple[ModelReply, ...]:
        """The replies this session plays in ``turn`` (1-based): none with a reply function."""
        if self.replies is not None:
            return ()
        spec = self.scenario.turns[turn - 1]
        return spec.replies if spec.mixture is None else self._mixed(turn)

    def _script_path(self, turn: int) -> FieldPath:
        """Where the replies this session plays in ``turn`` were written."""
        if self.scenario.turns[turn - 1].mixture is None:
            return ("turns", turn - 1, "model")
        return ("turns", turn - 1, "mixture", self._branch(turn), "model")

    def _reply_path(self, turn: int, reply: int | None) -> FieldPath:
        """Where scripted reply ``reply`` of ``turn`` was written (its ``model:`` when no
        scripted reply answered: ``model: auto``, a reply function)."""
        if reply is None:
            return self._script_path(turn)
        return (*self._script_path(turn), reply)

    def _reasoned_path(self) -> FieldPath:
        """Where the reply was written whose sealed reasoning a request must send back: that
        of the last answer the agent received (there is one: it reasoned), in whichever turn."""
        last = [exchange for exchange in self.exchanges if exchange.answered][-1]
        return self._reply_path(last.turn, last.reply)

    # --- checking ------------------------------------------------------------------------

    def _check(
        self,
        number: int,
        turn: int,
        request: WireRequest,
        history: tuple[Message, ...] | None,
        repeated: int,
        plan: Plan,
        reply: int | None,
        newest: Message | None,
    ) -> None:
        """Run the selected invariants on ``request`` (its conversation and system prompt as
        the endpoint understands them), answered by ``plan`` (scripted reply ``reply``)."""
        spec = self.scenario.turns[turn - 1]
        agent = self.scenario.agent
        view = WireView(
            request=request,
            expected_history=history,
            repeated=repeated,
            answer=plan.answer,
            expected_model=agent.model,
            expected_system=agent.system_prompt or None,
            expected_user=spec.user,
            declared_tools=agent.tools,
            user_message=newest,
        )
        if agent.agents:
            self._as_one_of_the_agents(view, number, turn)
        for name, check in self._wire_checks:
            found = check(view)
            if found:
                self._record(name, found, turn, number, self._path_of(name, turn, reply))
        self._requests_checked += 1

    def _as_one_of_the_agents(self, view: WireView, number: int, turn: int) -> None:
        """Hold ``view`` to the one of ``agent.agents`` whose system prompt its request sends:
        that agent's tools. A request that is none of them breaks ``system_prompt_sent`` here,
        and offers none but the tools of ``agent.tools``."""
        agents = self.scenario.agent.agents
        sent = view.request.system
        view.expected_system = None  # the agent is known by its prompt: it passes, or is none
        name = next((n for n, a in agents.items() if prompt_passes(a.system_prompt, sent)), None)
        if name is None:
            problem = (
                f"the system prompt sent is that of none of agent.agents ({', '.join(agents)})"
            )
            found = Violation("system_prompt_sent", problem, list(agents), sent)
            self._record("system_prompt_sent", [found], turn, number, ("agent", "agents"))
            view.declared_complete = False
            return
        tools = self.scenario.agent.tools
        view.declared_tools = {tool: tools[tool] for tool in agents[name].tools}
        view.declared_as = f"agent.agents.{name}.tools"
        view.declared_path = ("agent", "agents", name, "tools")

    def _path_of(self, invariant: str, turn: int, reply: int | None) -> FieldPath:
        """The scenario field a broken invariant points at (``reply``: the scripted reply
        answering the request)."""
        if invariant == "model_named":
            return ("agent", "model")
        if invariant == "system_prompt_sent":
            return ("agent", "system_prompt")
        if invariant == "user_turn_sent":
            return ("turns", turn - 1, "user")
        if invariant in ("tools_offered", "answer_allowed"):
            return self._reply_path(turn, reply)
        if invariant == "reasoning_sent_back":
            return self._reasoned_path()
        return ("turns", turn - 1)

    def _expected_history(self) -> tuple[Message, ...] | None:
        if not self.exchanges:
            return None
        return self._after(self.exchanges[-1])

    def _after(self, exchange: Exchange) -> tuple[Message, ...]:
        """The conversation as it stands after ``exchange`` was answered (an answer of no text
        carries nothing to send back: an agent may leave it out, as pydantic-ai does)."""
        if not exchange.answered or _says_nothing(exchange):
            return exchange.conversation
        return (*exchange.conversation, exchange.plan.message())

    def _record(
        self, name: str, violations: list[Violation], turn: int, number: int, path: FieldPath
    ) -> None:
        """Count what the selected invariant ``name`` found (``_check`` counts the checks)."""
        if name not in self._failed:
            return
        self._failed[name] += len(violations)
        for violation in violations:
            at = violation.path or path
            said = f"{violation.invariant}: {violation.message}"
            # The same violation of later requests (a tool schema sent again each time) is
            # said once, naming every request that broke it.
            same = (said, at, repr(violation.expected), repr(violation.observed))
            group = self._groups.get(same)
            if group is not None and number not in group[1]:
                group[1].append(number)
                index = group[0]
                message = f"{_requests_text(group[1])}: {said}"
                self.failures[index] = self.failures[index].model_copy(update={"message": message})
                continue
            self._groups.setdefault(same, (len(self.failures), [number]))
            self._fail(
                "invariant",
                f"request {number}: {said}",
                at,
                turn=turn,
                step=number,
                invariant=violation.invariant,
                expected=violation.expected,
                observed=violation.observed,
            )

    def _fail(
        self,
        kind: FailureKind,
        message: str,
        path: FieldPath,
        *,
        turn: int | None = None,
        **extra: object,
    ) -> None:
        self.failures.append(self._failure(kind, message, path, turn, **extra))

    # --- the result ----------------------------------------------------------------------

    @property
    def unused_replies(self) -> int:
        """Scripted replies no request has taken yet."""
        return sum(
            max(len(self._replies(index)) - self._cursor.get(index, 0), 0)
            for index in range(1, len(self.scenario.turns) + 1)
        )

    def result(self) -> ScenarioResult:
        """The scenario's outcome so far: expectations of every turn, unused script, invariants.

        The first call ends the session; later calls return the same result."""
        with self._lock:
            if self._finished is None:
                self._finished = self._result()
            return self._finished

    def _result(self) -> ScenarioResult:
        if TOOL_RESULTS_AS_SCRIPTED in self._failed:
            self._check_tool_results()
        failures = list(self.failures)
        turns: list[TurnResult] = []
        transcript: list[TranscriptEntry] = []
        last = self.exchanges[-1] if self.exchanges and self.unused_replies else None
        for index, spec in enumerate(self.scenario.turns, start=1):
            exchanges = [e for e in self.exchanges if e.turn == index]
            if last is not None and last.turn == index:
                failures.extend(self._unrecovered(last))
            failures.extend(self._turn_failures(index, exchanges))
            branch = self._branch_entry(index)
            turns.append(_turn_result(index, spec.user, exchanges, branch))
            if branch is not None and exchanges:
                transcript.append(branch)
            transcript.extend(_transcript(index, exchanges, self._previous_of(exchanges)))
        source = self.scenario.source
        return ScenarioResult(
            name=self.scenario.name,
            file=source.path if source is not None else "",
            line=source.line if source is not None else None,
            tags=self.scenario.tags,
            description=self.scenario.description,
            passed=not failures,
            turns=tuple(turns),
            failures=tuple(failures),
            invariants=tuple(
                InvariantOutcome(
                    name=name,
                    checks=self._checks_of(name),
                    failures=failures,
                )
                for name, failures in self._failed.items()
            ),
            transcript=tuple(transcript),
            wall_time_s=time.perf_counter() - self._started,
            session=self.name or self.key or None,
        )

    def _checks_of(self, invariant: str) -> int:
        """How often ``invariant`` was checked."""
        if invariant == SCRIPT_NOT_EXCEEDED:
            return self._script_checked
        if invariant == TOOL_RESULTS_AS_SCRIPTED:
            return self._results_checked
        return self._requests_checked

    def _check_tool_results(self) -> None:
        """``tool_results_as_scripted``, on every tool result the agent sent."""
        tools = self.scenario.agent.tools
        sent = list(_sent_results(self.exchanges))
        for result, violation in scripted_result_problems(tools, sent):
            # each violation names the tool reply it departs from: no path of the session's
            self._record(TOOL_RESULTS_AS_SCRIPTED, [violation], result.turn, result.request, ())
        self._results_checked = checked_results(tools, sent)

    def _branch_entry(self, turn: int) -> TranscriptEntry | None:
        """The transcript entry naming the ``mixture`` branch this session plays in ``turn``;
        None for a turn without a mixture."""
        spec = self.scenario.turns[turn - 1]
        if spec.mixture is None:
            return None
        branch = self._branch(turn)
        return TranscriptEntry.of_branch(
            turn, spec.mixture[branch].name(branch), branch + 1, spec.branch_shares()
        )

    def _previous_of(self, exchanges: list[Exchange]) -> Exchange | None:
        if not exchanges:
            return None
        first = exchanges[0].number
        return self.exchanges[first - 2] if first > 1 else None

    def _turn_failures(self, index: int, exchanges: list[Exchange]) -> Iterator[Failure]:
        spec = self.scenario.turns[index - 1]
        base: FieldPath = ("turns", index - 1)
        replies = self._replies(index)
        if not exchanges and (replies or spec.is_auto or self.replies is not None):
            yield self._failure(
                "script",
                f"turn {index} was never reached: no request carried its user message",
                base,
                index,
            )
            return
        used = self._cursor.get(index, 0)  # a repeating reply that answered once is used
        for unused in range(used + 1, len(replies) + 1):
            yield self._failure(
                "script",
                f"turn {index}: scripted model reply {unused} was never used",
                (*self._script_path(index), unused - 1),
                index,
            )
        for mismatch in check_observed(spec.expect, _observed(exchanges)):
            yield self._failure(
                "expectation",
                f"turn {index}: expect.{mismatch.field}: {mismatch.message}",
                (*base, "expect", *mismatch.path),
                index,
                field=f"expect.{mismatch.field}",
                expected=mismatch.expected,
                observed=mismatch.observed,
            )

    def _unrecovered(self, last: Exchange) -> Iterator[Failure]:
        """The failure naming the scripted fault or error that answered ``last``, the session's
        last request, when the script goes on after it: the agent gave up where the script
        expects it to recover (nothing when the last request was answered)."""
        plan = last.plan
        if last.answered or last.reply is None:
            return
        if plan.fault is not None:
            what = f"got the scripted fault ({plan.fault.describe()})"
        elif plan.answer is None:
            what = f"got the scripted error (HTTP {plan.status}: {plan.error})"
        elif last.begun:  # the client gave up mid-stream
            what = (
                "received the scripted reply only in part (chunk_latency: "
                f"{plan.chunk_latency:g} between chunks)"
            )
        else:  # the client gave up first (or still waits)
            what = f"never received the scripted reply (latency: {plan.latency:g})"
        path = (*self._script_path(last.turn), last.reply)
        where = self.scenario.locate(path)
        line = f" (line {where.line})" if where is not None else ""
        yield self._failure(
            "script",
            f"turn {last.turn}: request {last.number} {what}{line} and no request followed: "
            "the agent gave up where the script has it recover",
            path,
            last.turn,
        )

    def _failure(
        self, kind: FailureKind, message: str, path: FieldPath, turn: int | None, **extra: object
    ) -> Failure:
        return Failure.model_validate(
            {
                "kind": kind,
                "message": message,
                "turn": turn,
                "location": self.scenario.nearest_location(path),
                **extra,
            }
        )


# --- helpers ------------------------------------------------------------------------------

_ID_PREFIX = {
    "chat": "chatcmpl-agentrig-",
    "responses": "resp_agentrig_",
    "anthropic": "msg_agentrig_",
}


@functools.lru_cache(maxsize=64)
def _selection(
    only: tuple[str, ...] | None, exclude: tuple[str, ...]
) -> tuple[tuple[str, ...], tuple[tuple[str, WireCheck], ...]]:
    """The invariants a scenario's ``invariants:`` selects, and the per-request checks among
    them (worked out once per selection, not once per session)."""
    names = selected(only, exclude)
    return names, tuple((name, WIRE_INVARIANTS[name]) for name in names if name in WIRE_INVARIANTS)


def _requests_text(numbers: list[int]) -> str:
    """``request 3``, ``requests 1 and 2``, ``requests 1, 2 and 4``."""
    if len(numbers) == 1:
        return f"request {numbers[0]}"
    *first, last = numbers
    return f"requests {', '.join(map(str, first))} and {last}"


def _plan_reply(reply: ModelReply, response_id: str, turn: int, sealed: bool) -> Plan:
    fault = reply.fault
    if reply.error is not None:
        status = 503 if reply.retryable else 400
        return Plan(response_id, status=status, error=reply.error, latency=reply.latency)
    if fault is not None and fault.timeout:
        message = "agentrig endpoint: no answer (a scripted timeout), and the client waited on"
        return Plan(response_id, status=504, error=message, fault=fault, latency=reply.latency)
    if fault is not None and fault.status is not None:
        return _fault_plan(response_id, fault, reply.latency, "scripted fault")
    answer = _answer(reply, turn, response_id, sealed)
    return Plan(
        response_id,
        answer=answer,
        fault=fault,
        latency=reply.latency,
        chunk_latency=reply.chunk_latency,
    )


def _fault_plan(response_id: str, fault: FaultSpec, latency: float, what: str) -> Plan:
    """The plan of a ``status`` fault (``what`` names it when it has no message): its HTTP
    error, after ``latency`` seconds."""
    assert fault.status is not None
    message = fault.message or f"{what}: HTTP {fault.status}"
    return Plan(
        response_id,
        status=fault.status,
        error=message,
        retry_after=fault.retry_after,
        fault=fault,
        latency=latency,
    )


def _answer(reply: ModelReply, turn: int, response_id: str, sealed: bool) -> WireAnswer:
    # The scripted values were validated when the scenario was loaded: built without a second
    # validation, as the wire formats build what they read.
    calls = tuple(
        ToolCall._trusted(
            id=spec.id or f"call_{turn}_{response_id}_{index}",
            name=spec.name,
            arguments=dict(spec.args),
        )
        for index, spec in enumerate(reply.tool_calls, start=1)
    )
    if reply.finish_reason is not None:
        finish = FinishReason(reply.finish_reason)
    elif reply.refuse is not None:
        finish = FinishReason.CONTENT_FILTER
    else:
        finish = FinishReason.TOOL_CALLS if calls else FinishReason.STOP
    return WireAnswer(
        text=reply.say or "",
        tool_calls=calls,
        refusal=reply.refuse,
        usage=reply.usage.to_usage() if reply.usage else ZERO_USAGE,
        finish_reason=finish,
        reasoning=reply.think_text,
        redacted=reply.think_redacted,
        seal=seal_of(response_id) if sealed and reply.think is not None else "",
        logprobs=tuple(
            TokenLogprobs(entry.token, entry.logprob, entry.ranked())
            for entry in reply.logprobs or ()
        ),
    )


def _assistant(answer: WireAnswer) -> Message:
    return wire_message(
        Role.ASSISTANT,
        answer.text,
        tool_calls=answer.tool_calls,
        seal=answer.seal,
        redacted=answer.redacted,
    )


def _with_context(
    request: WireRequest, messages: tuple[Message, ...], system: str | None
) -> WireRequest:
    if messages is request.messages and system == request.system:
        return request
    return replace(request, messages=messages, system=system)


def _says_nothing(exchange: Exchange) -> bool:
    """Whether ``exchange`` was answered with no text, call, refusal or reasoning at all."""
    answer = exchange.plan.answer
    return (
        answer is not None
        and not answer.text
        and not answer.tool_calls
        and answer.refusal is None
        and not (answer.reasoning or answer.redacted or answer.seal)
    )


def _new_items(exchange: Exchange, previous: Exchange | None) -> tuple[Message, ...]:
    """What ``exchange`` added to the conversation since the one before (not the answer sent
    back, nor an empty one the agent may or may not send back)."""
    if previous is None:
        return exchange.conversation
    start = len(previous.conversation)
    if not previous.answered:
        return exchange.conversation[start:]
    if not _says_nothing(previous):
        return exchange.conversation[start + 1 :]
    new = exchange.conversation[start:]
    return new[1:] if new and new[0].role is Role.ASSISTANT else new


def _sent_results(exchanges: list[Exchange]) -> Iterator[SentResult]:
    """Each tool result the agent sent, once (in the first request that carried it), that
    answers a call of an answer the endpoint gave."""
    calls: dict[str, ToolCall] = {}
    seen: set[str] = set()
    for exchange in exchanges:
        for message in exchange.conversation:
            result = message.tool_result
            if result is None or result.call_id in seen or result.call_id not in calls:
                continue
            seen.add(result.call_id)
            call = calls[result.call_id]
            yield SentResult(
                exchange.number,
                exchange.turn,
                call.name,
                call.arguments,
                result.content,
                result.is_error,
            )
        if (answer := exchange.received_answer) is not None:
            calls.update((call.id, call) for call in answer.tool_calls)


def _observed(exchanges: list[Exchange]) -> ObservedTurn:
    answers = [a for e in exchanges if (a := e.received_answer) is not None]
    tool_calls = [call for answer in answers for call in answer.tool_calls]
    calls = [Call(call.name, dict(call.arguments)) for call in tool_calls]
    names = {call.id: call.name for call in tool_calls}
    results: list[ReturnedResult] = []
    seen: set[str] = set()
    for exchange in exchanges:
        for message in exchange.conversation:
            result = message.tool_result
            if result is None or result.call_id not in names or result.call_id in seen:
                continue
            seen.add(result.call_id)
            tool = result.tool_name or names[result.call_id]
            results.append(ReturnedResult(tool, result.content, result.is_error))
    final = (answers[-1].text or answers[-1].refusal or "") if answers else ""
    return ObservedTurn(
        final_response=final, calls=calls, model_calls=len(answers), tool_results=results
    )


def _turn_result(
    index: int, user: str, exchanges: list[Exchange], branch: TranscriptEntry | None
) -> TurnResult:
    total = Usage()
    for exchange in exchanges:
        if (answer := exchange.received_answer) is not None:
            total = total + answer.usage
    observed = _observed(exchanges)
    return TurnResult(
        index=index,
        user=user,
        status=None,
        stop_reason=None,
        steps=len(exchanges),
        final_response=observed.final_response,
        usage={key: int(value) for key, value in total.summary().items() if key != "cost"},
        cost=0.0,
        branch=branch.name if branch is not None else None,
    )


def _transcript(
    turn: int, exchanges: list[Exchange], previous: Exchange | None
) -> Iterator[TranscriptEntry]:
    for step, exchange in enumerate(exchanges, start=1):
        for message in _new_items(exchange, previous):
            yield _entry_of(turn, step, message)
        previous = exchange
        plan = exchange.plan
        if not exchange.received:
            why = f"fault: {plan.fault.describe()}" if plan.fault else f"latency {plan.latency:g} s"
            text = f"the client never got the reply ({why}): it gave up first"
            if exchange.begun:
                text = (
                    f"the client got only part of the reply (chunk_latency {plan.chunk_latency:g}"
                    " s between chunks): it gave up mid-stream"
                )
            yield TranscriptEntry(
                turn=turn, step=step, kind="event", role=None, text=text, is_error=True
            )
            continue
        if plan.answer is None:
            text = f"HTTP {plan.status}: {plan.error}"
            yield TranscriptEntry(
                turn=turn, step=step, kind="event", role=None, text=text, is_error=True
            )
            continue
        answer = plan.answer
        if answer.text or answer.refusal:
            text = answer.text or f"refusal: {answer.refusal}"
            yield TranscriptEntry(
                turn=turn, step=step, kind="assistant", role="assistant", text=text
            )
        for call in answer.tool_calls:
            yield TranscriptEntry.of_tool_call(turn, step, call)
        if plan.fault is not None:
            yield TranscriptEntry(
                turn=turn,
                step=step,
                kind="event",
                role=None,
                text=f"fault: {plan.fault.describe()}",
                is_error=True,
            )


def _entry_of(turn: int, step: int, message: Message) -> TranscriptEntry:
    # A request's system and developer messages are its system prompt (``WireRequest.system``):
    # the wire formats keep them out of the conversation, so a message here is the user's, a
    # tool result or the assistant's.
    if message.tool_result is not None:
        return TranscriptEntry.of_tool_result(turn, step, message.tool_result)
    if message.role is Role.USER:
        return TranscriptEntry(turn=turn, step=None, kind="user", role="user", text=message.content)
    text = message.content or ", ".join(str(c) for c in message.tool_calls)
    return TranscriptEntry(turn=turn, step=step, kind="assistant", role="assistant", text=text)
