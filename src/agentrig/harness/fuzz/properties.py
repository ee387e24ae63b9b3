"""Properties every example is checked against: the endpoint's wire invariants, a few ready-made
properties of agents in general (each names the bug it catches), and the user's own assertions.

A property is a :class:`Property` or any function of the :class:`AgentRun` that raises
``AssertionError`` (or returns a list of problems) when the run is wrong.
"""

from __future__ import annotations

import functools
import json
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, ParamSpec, TypeVar

from pydantic import JsonValue

from agentrig.drivers._sdk import RAW_ARGUMENTS_KEY
from agentrig.errors import InvalidInputError
from agentrig.harness.fuzz.run import AgentRun
from agentrig.harness.results import Failure

__all__ = [
    "AnswersEveryToolCall",
    "NeverRepeats",
    "Property",
    "RaisesOnly",
    "SideEffects",
    "TerminatesWithin",
    "UserCheck",
    "WireInvariants",
    "answers_every_tool_call",
    "as_property",
    "never_repeats",
    "raises_only",
    "terminates_within",
]

P = ParamSpec("P")
R = TypeVar("R")


class Property:
    """A statement about every run; ``problems`` lists how a run breaks it (empty: it holds)."""

    name = "property"

    def begin(self) -> None:
        """Called before each example (a property that records the run resets here)."""

    def problems(self, run: AgentRun) -> list[str]:
        """How ``run`` breaks the property."""
        raise NotImplementedError


class WireInvariants(Property):
    """The endpoint's per-request checks (tool results answer the calls, the history only
    grows, reasoning is sent back, the user's message is the scenario's, the script is not
    overrun) and the requests it could not read. Always checked.

    One difference is not counted: a call whose arguments were not JSON coming back with them
    re-encoded (pydantic-ai sends ``{"INVALID_JSON": text}``): an API takes either, and the
    model sent nothing an agent could keep as it was."""

    name = "wire_invariants"

    def problems(self, run: AgentRun) -> list[str]:
        """Every wire check that failed during the run."""
        return [
            _described_failure(failure)
            for failure in run.wire_failures
            if not _reencoded_raw_arguments(failure)
        ]


_SHOWN = 300
"""The most characters of each side of a broken invariant a problem shows."""


def _described_failure(failure: Failure) -> str:
    if failure.expected is None and failure.observed is None:
        return failure.message
    expected = _short(failure.expected)
    observed = _short(failure.observed)
    return f"{failure.message} (expected {expected}, got {observed})"


def _short(value: JsonValue) -> str:
    text = json.dumps(value, ensure_ascii=False)  # pragma: no mutate (None is False here)
    return text if len(text) <= _SHOWN else text[: _SHOWN - 3] + "..."


def _reencoded_raw_arguments(failure: Failure) -> bool:
    """Whether ``failure`` is ``history_grows`` finding only the arguments of calls the model
    sent as text that is not JSON changed."""
    expected, observed = failure.expected, failure.observed
    if failure.invariant != "history_grows":
        return False
    if not (isinstance(expected, dict) and isinstance(observed, dict)):
        return False
    sent_calls, got_calls = expected.get("tool_calls"), observed.get("tool_calls")
    if not (isinstance(sent_calls, list) and isinstance(got_calls, list)):
        return False
    if len(sent_calls) != len(got_calls) or not sent_calls:
        return False
    if {**expected, "tool_calls": None} != {**observed, "tool_calls": None}:
        return False
    for sent, got in zip(sent_calls, got_calls, strict=True):  # pragma: no mutate (equal lengths)
        if not (isinstance(sent, dict) and isinstance(got, dict)):
            return False
        if sent == got:
            continue
        arguments = sent.get("arguments")
        raw = isinstance(arguments, dict) and list(arguments) == [RAW_ARGUMENTS_KEY]
        if not raw or {**sent, "arguments": None} != {**got, "arguments": None}:
            return False
    return True


@dataclass(frozen=True)
class RaisesOnly(Property):
    """The agent returns, or raises only the errors it documents (``errors``: exception types).

    Catches: a crash on an answer the agent did not expect (``KeyError`` on a refusal whose
    content is ``None``, ``json.JSONDecodeError`` on arguments that are not JSON,
    ``TypeError`` on parallel calls, an unhandled 429)."""

    errors: tuple[type[BaseException], ...] = ()
    name = "raises_only"

    def problems(self, run: AgentRun) -> list[str]:
        """The undocumented error the agent raised, if any."""
        if run.raised is None or isinstance(run.raised, self.errors):
            return []
        documented = ", ".join(error.__name__ for error in self.errors) or "none"
        error = run.raised
        return [
            f"the agent raised {type(error).__module__}.{type(error).__name__}: {error} "
            f"(documented errors: {documented})"
        ]


@dataclass(frozen=True)
class TerminatesWithin(Property):
    """The agent makes at most ``model_calls`` model calls (retries included).

    Catches: an agent that loops on an answer it cannot use (retries a refusal or a truncated
    answer forever, re-asks after every invalid tool call) or retries without a limit."""

    model_calls: int
    name = "terminates_within"

    def problems(self, run: AgentRun) -> list[str]:
        """A problem when the run took more model calls than allowed."""
        if run.model_calls <= self.model_calls:
            return []
        return [f"the agent made {run.model_calls} model calls, more than {self.model_calls}"]


class AnswersEveryToolCall(Property):
    """Every tool call the model makes is answered: the agent asks the model again with a
    result for each call (the wire invariants check the results' ids), unless it raised.

    Catches: an agent that silently drops calls (runs only the first of parallel calls and
    stops, ignores a call to an unknown tool or with arguments it cannot parse)."""

    name = "answers_every_tool_call"

    def problems(self, run: AgentRun) -> list[str]:
        """The calls of the last answer when the agent returned without answering them."""
        if run.raised is not None:
            return []
        answered = [e for e in run.exchanges if e.answered and e.plan.answer is not None]
        if not answered or answered[-1] is not run.exchanges[-1]:
            return []
        answer = answered[-1].plan.answer
        assert answer is not None
        if not answer.tool_calls:
            return []
        calls = ", ".join(f"{call.name} (id {call.id!r})" for call in answer.tool_calls)
        number = answered[-1].number
        return [f"the agent returned without answering the tool calls of request {number}: {calls}"]


@dataclass
class SideEffects:
    """Records the calls of the agent's side-effecting tools: decorate each with
    :meth:`track` (or call :meth:`record`), and check :class:`NeverRepeats` of it."""

    executed: Counter[str] = field(default_factory=Counter)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def track(self, tool: Callable[P, R], *, name: str | None = None) -> Callable[P, R]:
        """``tool``, recording each call under ``name`` (default: the function's name)."""
        called = name or tool.__name__

        @functools.wraps(tool)
        def tracked(*args: P.args, **kwargs: P.kwargs) -> R:
            self.record(called)
            return tool(*args, **kwargs)

        return tracked

    def record(self, name: str) -> None:
        """Count one execution of the tool ``name``."""
        with self._lock:
            self.executed[name] += 1

    def reset(self) -> None:
        """Forget every recorded call."""
        with self._lock:
            self.executed.clear()


@dataclass(frozen=True)
class NeverRepeats(Property):
    """No side-effecting tool runs more often than the model called it (``effects`` records the
    executions; ``tools``: those to check, default every recorded one).

    Catches: an agent that re-runs a step's tools when the model call after them fails (a retry
    wrapped around "run the tools, then ask the model" on a 5xx or a cut stream): the refund is
    issued twice."""

    effects: SideEffects
    tools: tuple[str, ...] | None = None
    name = "never_repeats"

    def begin(self) -> None:
        """Forget the executions of the example before."""
        self.effects.reset()

    def problems(self, run: AgentRun) -> list[str]:
        """Each tool that ran more often than the model called it."""
        asked = Counter(call.name for _, call in run.answered_calls())
        found = []
        for name, count in sorted(self.effects.executed.items()):
            if self.tools is not None and name not in self.tools:
                continue
            if count > asked[name]:
                found.append(
                    f"the side-effecting tool {name} ran {count} time(s), but the model called "
                    f"it {asked[name]} time(s)"
                )
        return found


@dataclass(frozen=True)
class UserCheck(Property):
    """A user's assertion: a function of the run that raises ``AssertionError`` or returns a
    list of problems (None or an empty list: it holds)."""

    function: Callable[[AgentRun], Any]

    @property
    def name(self) -> str:  # type: ignore[override]
        """The function's name."""
        return getattr(self.function, "__name__", "check")

    def problems(self, run: AgentRun) -> list[str]:
        """What the function found."""
        try:
            found = self.function(run)
        except AssertionError as error:
            return [f"{self.name}: {error}" if str(error) else f"{self.name} failed"]
        if not found:
            return []
        return [f"{self.name}: {problem}" for problem in found]


def raises_only(*errors: type[BaseException]) -> RaisesOnly:
    """:class:`RaisesOnly` of ``errors`` (none: the agent must always return)."""
    for index, error in enumerate(errors):
        if not (isinstance(error, type) and issubclass(error, BaseException)):
            reason = f"expected an exception type, got {error!r}"
            raise InvalidInputError("raises_only", [(f"[{index}]", reason)])
    return RaisesOnly(tuple(errors))


def terminates_within(model_calls: int) -> TerminatesWithin:
    """:class:`TerminatesWithin` ``model_calls``."""
    if not isinstance(model_calls, int) or isinstance(model_calls, bool) or model_calls < 1:
        reason = f"expected a positive integer, got {model_calls!r}"
        raise InvalidInputError("terminates_within", [("model_calls", reason)])
    return TerminatesWithin(model_calls)


def answers_every_tool_call() -> AnswersEveryToolCall:
    """:class:`AnswersEveryToolCall`."""
    return AnswersEveryToolCall()


def never_repeats(effects: SideEffects, tools: Iterable[str] | None = None) -> NeverRepeats:
    """:class:`NeverRepeats` of the executions ``effects`` records."""
    return NeverRepeats(effects, None if tools is None else tuple(tools))


def as_property(value: Property | Callable[[AgentRun], Any]) -> Property:
    """``value`` as a :class:`Property` (a function becomes a :class:`UserCheck`)."""
    if isinstance(value, Property):
        return value
    if callable(value):
        return UserCheck(value)
    raise InvalidInputError(
        "properties", [("", f"expected a Property or a function of the run, got {value!r}")]
    )


def all_problems(run: AgentRun, properties: Sequence[Property]) -> list[str]:
    """Every problem any of ``properties`` finds in ``run``, each prefixed with its name."""
    return [
        problem if isinstance(prop, UserCheck) else f"{prop.name}: {problem}"
        for prop in properties
        for problem in prop.problems(run)
    ]
