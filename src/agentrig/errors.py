"""Errors raised by agentrig: the one tree of every error the runtime, the fakes and the harness
raise.

Every error derives from one root, so ``except AgentrigError`` catches them all. This module
sits below every other one (it imports nothing of agentrig); the fakes' and the harness's errors
live next to their code, in the module named on the right::

    AgentrigError
    ├── InvalidInputError          bad data: a message, a budget, a state dict, tool arguments
    │   ├── InvalidToolArgumentsError
    │   └── ForeignClockError      a state stamped on another clock or ids than the agent's
    ├── ToolError                  a tool call that could not run (the model sees it as a failed result)
    │   └── ToolNotFoundError
    ├── SubagentError              spawn_subagent failures (the parent model sees a failed result)
    │   ├── SubagentNotFoundError
    │   ├── SubagentDepthExceededError
    │   └── SubagentFailedError
    ├── SessionError               a session store operation failed
    │   ├── SessionNotFoundError
    │   ├── SessionExistsError
    │   ├── SessionConflictError   a save with a stale version (optimistic locking)
    │   └── SessionCorruptError    a stored session that cannot be read back
    ├── HookContractViolationError a hook changed a field its trigger does not allow
    ├── EventListenerError         an event listener raised (it propagates: the run stops)
    ├── ConfigurationError         a builder, loop or scenario agent that cannot work as configured
    ├── ProviderError              an inference provider failed
    │   ├── RetryLimitExceededError
    │   ├── RealLlmCallBlockedError  a test reached for a real LLM API without allowing it
    │   └── ReplayedProviderError    a recorded provider failure, raised again   harness.cassettes
    ├── MissingDependencyError     an optional extra is not installed
    ├── StepInterrupted            internal: carries a cut step's parts to the loop, never seen
    ├── AgentStop                  raised by tools, hooks or drivers to stop the execution
    │                              (not a failure: it ends with reason ``stop_requested``)
    ├── ScriptError                a fake used differently from its script        fakes.errors
    │   ├── InvalidScriptError
    │   ├── ScriptExhaustedError
    │   ├── UnusedTurnsError
    │   └── UnexpectedToolCallError
    ├── DataFileError              a harness file that cannot be read or is invalid;
    │   │                          str() is ``path:line:column: field: reason``   harness.errors
    │   ├── ScenarioFileError      a scenario file                               harness.errors
    │   └── CassetteFileError      a cassette file                         harness.cassettes
    ├── CassetteError              record or replay went wrong                 harness.cassettes
    │   ├── CassetteNotFoundError  replay asked for a cassette that does not exist
    │   ├── CassetteMismatchError  a live request matches no recorded interaction
    │   ├── UnusedInteractionsError  recorded interactions were never played
    │   ├── CassetteConversionError  a cassette that cannot become a scenario
    │   ├── HttpCassetteFileError  an HTTP cassette file that cannot be read    (ValueError)
    │   ├── HttpCassetteNotFoundError  replaying an absent HTTP cassette (FileNotFoundError)
    │   ├── HttpCassetteMismatchError  requests no HTTP recording matched   (AssertionError)
    │   └── UnplayedInteractionsError  HTTP recordings never played         (AssertionError)
    ├── InvariantError             an invariant that cannot be registered or selected, or the
    │                              checker used out of order                  harness.errors
    ├── PluginError                a plugin module that cannot be imported     harness.errors
    ├── SuiteError                 a suite that cannot run as asked            harness.errors
    ├── ShardMergeError            report folders that are not the shards of one run  harness.errors
    ├── SelectionError             a malformed ``-k`` expression or ``--shard``  harness.scenarios
    ├── BudgetExhausted            a live run's budget is spent: no model call admitted  harness.live
    ├── VirtualTimeDeadlock        a virtual-time loop's tasks all wait, nothing can wake them
    │                                                                (RuntimeError) harness.live
    └── UnknownWriterError         no report writer by that name   (LookupError) harness.reporting

A replay miss is deliberately *not* a ``ProviderError``: code that catches provider failures
(fallbacks, retries) must not swallow it. Errors carry their context as attributes and say what
to do next in their message.
"""

from __future__ import annotations

from typing import Any, ClassVar

_StatePart = Any
"""The type of the parts of a step an error carries (an ``AgentStep``, ``ToolExecutions``, or
None): this module sits below the state, so it does not name the state's types."""


class AgentrigError(Exception):
    """Root of every error agentrig raises."""


class InvalidInputError(AgentrigError, ValueError):
    """Input data is invalid; ``field`` names the offending field path (``""`` for the whole value).

    ``problems`` lists every ``(field, reason)`` found, so a caller can fix all of them in one pass.
    """

    def __init__(self, what: str, problems: list[tuple[str, str]]) -> None:
        self.what = what
        self.problems = problems
        self.field = problems[0][0] if problems else ""
        lines = [f"{field or '<root>'}: {reason}" for field, reason in problems]
        super().__init__(f"invalid {what}: " + "; ".join(lines))


class InvalidToolArgumentsError(InvalidInputError):
    """Arguments given to a tool do not match its parameters."""

    def __init__(self, tool: str, problems: list[tuple[str, str]]) -> None:
        self.tool = tool
        super().__init__(f"arguments for tool '{tool}'", problems)


class ForeignClockError(InvalidInputError):
    """A state carries times or ids the agent's clock and ids cannot have made: a time the clock
    has not reached or that precedes its start, an id its factory did not hand out. It was made
    on another clock or with other ids (outside the agent, on the system clock, say), so runs
    would not be byte-identical. ``AgentLoop.check_clock`` raises it; ``field`` names the first
    such time or id."""

    def __init__(self, problems: list[tuple[str, str]]) -> None:
        super().__init__("state for this agent's clock and ids", problems)


class ToolError(AgentrigError):
    """A tool call that could not produce a value."""


class _UnknownName(Exception):
    """Mixin for errors about a name not among ``available``: the message lists what is."""

    kind: ClassVar[str]

    def __init__(self, name: str, available: list[str]) -> None:
        self.name = name
        self.available = available
        names = ", ".join(sorted(available)) or "(none)"
        super().__init__(f"{self.kind} '{name}' not found. Available {self.kind.lower()}s: {names}")


class ToolNotFoundError(_UnknownName, ToolError):
    """The model called a tool the agent does not have."""

    kind = "Tool"


class SubagentError(AgentrigError):
    """A subagent could not be spawned or failed."""


class SubagentNotFoundError(_UnknownName, SubagentError):
    """No subagent with that name is defined."""

    kind = "Subagent"


class SubagentDepthExceededError(SubagentError):
    """Spawning would exceed ``SubagentPolicy.max_depth``."""

    def __init__(self, name: str, max_depth: int) -> None:
        self.name = name
        self.max_depth = max_depth
        super().__init__(f"Maximum nesting depth ({max_depth}) reached for subagent '{name}'.")


class SubagentFailedError(SubagentError):
    """The child execution ended with status failed."""


class SessionError(AgentrigError):
    """A session store operation failed; ``session_id`` names the session."""

    def __init__(self, session_id: str, message: str) -> None:
        self.session_id = session_id
        super().__init__(message)


class SessionNotFoundError(SessionError):
    """No session with that id is stored."""

    def __init__(self, session_id: str) -> None:
        super().__init__(
            session_id,
            f"Session '{session_id}' not found. Create it with store.create(state) first.",
        )


class SessionExistsError(SessionError):
    """``create`` was called for a session id that is already stored."""

    def __init__(self, session_id: str, stored_version: int) -> None:
        self.stored_version = stored_version
        super().__init__(
            session_id,
            f"Session '{session_id}' already exists (version {stored_version}). Load it and save "
            f"with expected_version={stored_version}, or delete it first.",
        )


class SessionConflictError(SessionError):
    """The stored version is not the one the caller expected: someone else saved in between."""

    def __init__(self, session_id: str, expected_version: int, stored_version: int) -> None:
        self.expected_version = expected_version
        self.stored_version = stored_version
        super().__init__(
            session_id,
            f"Session '{session_id}' is at version {stored_version}, not the expected version "
            f"{expected_version}: it was saved elsewhere in between. Load it again, reapply your "
            "change and save with the version you loaded.",
        )


class SessionCorruptError(SessionError):
    """A stored session cannot be read back; ``location`` names the file or row, ``field`` the
    offending field path. The stored data is left untouched."""

    def __init__(self, session_id: str, location: str, field: str, reason: str) -> None:
        self.location = location
        self.field = field
        self.reason = reason
        subject = (
            f"Session '{session_id}' in {location}" if session_id else f"Session store {location}"
        )
        super().__init__(
            session_id,
            f"{subject} is corrupt at field '{field or '<root>'}': {reason}. "
            "Nothing was changed; fix or delete the stored data.",
        )


class HookContractViolationError(AgentrigError):
    """A hook changed a field that its trigger does not let it change."""

    def __init__(self, hook: str, field: str, trigger: str, allowed: tuple[str, ...]) -> None:
        self.hook = hook
        self.field = field
        self.trigger = trigger
        super().__init__(
            f"Hook '{hook}' cannot change '{field}' on trigger '{trigger}'; "
            f"it may change only: {', '.join(allowed)}."
        )


class EventListenerError(AgentrigError):
    """An event listener raised while handling ``event`` (the listener's error is the cause).

    Listeners observe; an error in one is a bug in the listener, so it is not turned into a
    failed execution: it leaves ``execute``/``iterate`` wherever the event was dispatched.
    """

    def __init__(self, event: str, listener: str, error: BaseException) -> None:
        self.event = event
        self.listener = listener
        self.error = error
        advice = (
            "a listener cannot stop the run with AgentStop: install "
            "UseCooperativeCancellation(token) and call token.cancel() in the listener instead "
            "(token: a CancellationToken)"
            if isinstance(error, AgentStop)
            else "a listener's error stops the run: fix the listener, or catch the error inside it"
        )
        super().__init__(
            f"event listener {listener} raised {type(error).__name__} on {event}: {error}; {advice}"
        )


class ConfigurationError(AgentrigError):
    """The agent cannot be built or run as configured."""


class ProviderError(AgentrigError):
    """An inference provider failed; ``retryable`` says whether another attempt may succeed.

    Real providers also set ``status_code`` (the HTTP status, None when no response came back)
    and ``provider`` (``"openai"``, ``"anthropic"``). ``failed_generation`` is set when the
    failure is the model's: the API refused the tool call the model generated (an
    OpenAI-compatible ``tool_use_failed``) and sent back what the model wrote. Such an error is
    not retryable as is, but the ``ToolCallingDriver`` shows it to the model and asks again
    while it has attempts left.
    """

    def __init__(
        self,
        message: str,
        *,
        retryable: bool = False,
        status_code: int | None = None,
        provider: str = "",
        failed_generation: str | None = None,
    ) -> None:
        self.retryable = retryable
        self.status_code = status_code
        self.provider = provider
        self.failed_generation = failed_generation
        super().__init__(message)


class RetryLimitExceededError(ProviderError):
    """Every inference attempt failed: all that were allowed, or all that the budget left time
    for (``stopped_by``: why no further attempt was made, e.g. the time limit reached)."""

    def __init__(self, attempts: int, last: BaseException, *, stopped_by: str = "") -> None:
        self.attempts = attempts
        self.stopped_by = stopped_by
        why = f"; no further attempt ({stopped_by})" if stopped_by else ""
        super().__init__(f"inference failed after {attempts} attempt(s){why}: {last}")


class RealLlmCallBlockedError(ProviderError):
    """A real provider tried to reach its API while real calls are blocked (agentrig's pytest
    plugin blocks them in every test not marked ``agentrig_real_llm``)."""

    def __init__(self, provider: str, url: str) -> None:
        self.url = url
        super().__init__(
            f"Real {provider} call to {url} blocked: agentrig blocks real LLM calls in tests. "
            "Replay a recorded HTTP cassette (agentrig.harness.cassettes.http), use a fake "
            "(agentrig.fakes), or mark the test @pytest.mark.agentrig_real_llm to allow it.",
            provider=provider,
        )


class MissingDependencyError(AgentrigError, ImportError):
    """An optional dependency is missing; the message names the package and the extra that
    brings it (``install_hint``)."""

    def __init__(self, package: str, extra: str) -> None:
        self.package = package
        self.extra = extra
        super().__init__(f"{package} is not installed: {install_hint(package, extra)}")


def install_hint(package: str, extra: str) -> str:
    """How to install ``package``, which agentrig's ``extra`` brings: by itself from the package
    index, or with agentrig installed again from its checkout (agentrig is not on an index)."""
    return f"pip install '{package}', or agentrig with its extra: pip install './agentrig[{extra}]'"


class StepInterrupted(AgentrigError):  # carries ``error``; never the run's outcome
    """An error cut a step short after the model answered: a hook raised around inference or a
    tool call. It carries the original ``error`` and what the step had, so that nothing is lost:
    the ``ToolExecutor`` sets ``tool_executions`` (the calls that ran, the failed one, and those
    that did not run), the ``ToolCallingDriver`` sets ``step``. The loop records that step and
    fails the execution with ``error`` itself; code outside a step never sees this wrapper.
    """

    def __init__(
        self,
        error: Exception,
        *,
        tool_executions: _StatePart = None,
        step: _StatePart = None,
    ) -> None:
        self.error = error
        self.tool_executions = tool_executions
        self.step = step
        super().__init__(f"{type(error).__name__}: {error}")


class AgentStop(AgentrigError):
    """Raise anywhere in a step (tool, hook, driver) to stop the execution with ``stop_requested``.

    On its way out of a step agentrig attaches what the step did so far, so nothing is lost: the
    ``ToolExecutor`` sets ``tool_executions`` (the calls that ran, the stopped one, and those that
    did not run), the ``ToolCallingDriver`` sets ``step``, and the loop records that step before
    it stops. A driver of your own may set ``step`` too.
    """

    def __init__(
        self,
        message: str = "",
        *,
        context: dict[str, Any] | None = None,
        source: str | None = None,
    ) -> None:
        self.stop_message = message
        self.context = dict(context or {})
        self.source = source
        self.tool_executions: _StatePart = None
        self.step: _StatePart = None
        super().__init__(message or "stop_requested")
