"""Invariants: named checks run after every state the loop yields and at the end of each execution.

An invariant is a small subclass of ``Invariant`` whose ``check`` yields problem descriptions;
its class name gives its ``name`` and its docstring its ``description``. Invariants are registered by name (the built-ins in
:mod:`~agentrig.harness.checks.builtin_invariants`); users add their own with
``@register_invariant``. ``InvariantChecker`` feeds them one execution at a time.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from difflib import get_close_matches
from typing import Any, ClassVar, TypeVar

from agentrig import (
    AgentState,
    AgentStep,
    ExecutionBudget,
    InferenceRequest,
    TraceMode,
)
from agentrig._model import Serializable, json_text
from agentrig.events import (
    AgentEvent,
)
from agentrig.harness.errors import InvariantError


@dataclass(frozen=True)
class Violation:
    """One invariant failure: which check, in which turn and step, and what broke."""

    invariant: str
    turn: int
    step: int
    message: str

    def __str__(self) -> str:
        return f"[{self.invariant}] turn {self.turn}, step {self.step}: {self.message}"


@dataclass
class Observation:
    """What an invariant sees: the state just yielded and the execution so far."""

    turn: int
    state: AgentState
    initial: AgentState
    states: Sequence[AgentState]
    snapshots: Sequence[str]
    events: Sequence[AgentEvent]
    is_final: bool
    trace_mode: TraceMode = TraceMode.SEPARATED
    budget: ExecutionBudget | None = None
    next_request: Callable[[AgentState], InferenceRequest | None] | None = None
    """The agent's ``AgentLoop.next_request`` (what a step from a state sends the model, None
    when it sends nothing), when the checker knows the loop; None otherwise."""
    foreseen: Mapping[int, tuple[AgentState, InferenceRequest | None]] = field(default_factory=dict)
    """``next_request`` of each state, asked while the loop waited at it, by ``id(state)``
    (see ``InvariantChecker.foresee``)."""
    serialized: dict[str, Any] | None = None
    """``state.to_dict()`` as taken with the last snapshot (the snapshot is its JSON text),
    when the checker was given it: checks that need the dict read it instead of serializing
    the state again. None when the state did not serialize or no dict was given."""

    def request_after(self, state: AgentState) -> InferenceRequest | None:
        """What the step from ``state`` sent or will send: ``next_request(state)`` as asked
        while the loop waited at ``state`` (the hooks it runs read the clock and ids of that
        moment), else asked now. Only when ``next_request`` is set."""
        assert self.next_request is not None
        known = self.foreseen.get(id(state))
        if known is not None and known[0] is state:
            return known[1]
        return self.next_request(state)

    @property
    def step(self) -> int:
        """The state's step count."""
        return self.state.step_count()

    @property
    def previous(self) -> AgentState | None:
        """The state yielded before this one in the same execution."""
        return self.states[-2] if len(self.states) > 1 else None

    def all_steps(self) -> tuple[AgentStep, ...]:
        """Completed steps plus the one in progress."""
        current = self.state.current_step()
        return self.state.steps() + ((current,) if current is not None else ())

    def own_events(self) -> list[AgentEvent]:
        """Events of this agent (not of its subagents)."""
        return [event for event in self.events if event.agent_id == self.state.agent_id]


class Invariant(ABC):
    """A named check. ``check`` yields one string per problem (returning one string or None
    also works); nothing means it holds.

    ``name`` defaults to the class name in snake_case (``CleanMessages`` is
    ``clean_messages``), ``description`` to the class docstring; set either to override it.
    """

    name: ClassVar[str]
    description: ClassVar[str]
    final_only: ClassVar[bool] = False
    """Run only at the end of an execution (checks over the whole execution)."""

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        if "name" not in cls.__dict__:
            cls.name = _snake_case(cls.__name__)
        if "description" not in cls.__dict__:
            cls.description = " ".join((cls.__doc__ or "").split())

    @abstractmethod
    def check(self, observation: Observation) -> Iterable[str]:
        """Problems found in ``observation``."""


def _snake_case(name: str) -> str:
    """``StableExecutionId`` -> ``stable_execution_id``; ``HTTPStatus`` -> ``http_status``."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", name).lower()


_REGISTRY: dict[str, type[Invariant]] = {}
InvariantT = TypeVar("InvariantT", bound=type[Invariant])


def register_invariant(cls: InvariantT) -> InvariantT:
    """Class decorator: make an invariant available by its ``name``."""
    holder = _REGISTRY.get(cls.name)
    if holder is not None and holder is not cls:
        raise InvariantError(
            f"an invariant named {cls.name!r} is already registered "
            f"({holder.__module__}.{holder.__qualname__}); give yours another name"
        )
    _REGISTRY[cls.name] = cls
    return cls


def unregister_invariant(name: str) -> None:
    """Remove a registered invariant (for tests and plugins)."""
    _REGISTRY.pop(name, None)


def invariant_names() -> tuple[str, ...]:
    """Names of every registered invariant, in registration order."""
    return tuple(_REGISTRY)


def select_invariants(
    only: Iterable[str] | None = None, exclude: Iterable[str] = ()
) -> list[Invariant]:
    """Instances of the selected invariants; unknown names raise an error listing the valid ones."""
    names = list(only) if only is not None else list(_REGISTRY)
    excluded = list(exclude)
    unknown = [name for name in (*names, *excluded) if name not in _REGISTRY]
    if unknown:
        close = [m for name in unknown for m in get_close_matches(name, _REGISTRY, n=1)]
        hint = f"; did you mean {', '.join(map(repr, close))}?" if close else ""
        raise InvariantError(
            f"unknown invariant(s): {', '.join(unknown)}; valid: {', '.join(_REGISTRY)}{hint}; "
            "a custom invariant must be registered with @register_invariant in a module that is "
            "imported first (agentrig run --plugin MODULE, or conftest.py under pytest)"
        )
    return [_REGISTRY[name]() for name in names if name not in excluded]


class InvariantChecker:
    """Runs invariants over one execution at a time and collects violations."""

    def __init__(
        self,
        invariants: Sequence[Invariant] | None = None,
        *,
        trace_mode: TraceMode = TraceMode.SEPARATED,
        budget: ExecutionBudget | None = None,
        next_request: Callable[[AgentState], InferenceRequest | None] | None = None,
    ) -> None:
        self.invariants = list(invariants) if invariants is not None else select_invariants()
        self.trace_mode = trace_mode
        self.budget = budget
        self.next_request = next_request
        self.violations: list[Violation] = []
        self.checks: dict[str, int] = {inv.name: 0 for inv in self.invariants}
        self.failures: dict[str, int] = {inv.name: 0 for inv in self.invariants}
        self._turn = 0
        self._initial: AgentState | None = None
        self._states: list[AgentState] = []
        self._snapshots: list[str] = []
        self._foreseen: dict[int, tuple[AgentState, InferenceRequest | None]] = {}
        self.events: list[AgentEvent] = []

    def begin(self, turn: int, initial: AgentState) -> None:
        """Start observing execution ``turn`` (1-based) that begins from ``initial``; call it
        before the run starts (it foresees the first step)."""
        self._turn = turn
        self._initial = initial
        self._states = []
        self._snapshots = []
        self._foreseen = {}
        self.events = []
        self.foresee(initial)

    def foresee(self, state: AgentState) -> None:
        """Ask ``next_request`` what the step from ``state`` will send, now, while the loop
        waits at ``state``: the hooks it runs (a budget guard, say) read the clock and ids of
        this moment, which the run moves on from. ``observe`` does it for a state not foreseen
        yet; call it when the loop yields a state you will ``observe`` only later."""
        if self.next_request is not None and id(state) not in self._foreseen:
            self._foreseen[id(state)] = (state, self.next_request(state))

    def record_event(self, event: AgentEvent) -> None:
        """Give the checker an event of the current execution (use as a wiretap)."""
        self.events.append(event)

    def observe(
        self,
        state: AgentState,
        *,
        is_final: bool,
        snapshot: str | None = None,
        serialized: dict[str, Any] | None = None,
    ) -> list[Violation]:
        """Check ``state``; returns the new violations.

        ``snapshot`` is ``snapshot_of(state)`` taken when the state was yielded; pass it when
        checking a state later (after the loop went on), so that ``earlier_states_unchanged``
        also catches a mutation made by the very next step. ``serialized`` is the
        ``state.to_dict()`` that snapshot was written from (``serialize(state)`` gives both),
        so that the round trip does not serialize the state a second time.
        """
        if self._initial is None:
            raise InvariantError("InvariantChecker.observe() called before begin()")
        if not is_final:
            self.foresee(state)
        if snapshot is None:
            serialized, snapshot = serialize(state)
        self._states.append(state)
        self._snapshots.append(snapshot)
        observation = Observation(
            turn=self._turn,
            state=state,
            initial=self._initial,
            states=self._states,
            snapshots=self._snapshots,
            events=self.events,
            is_final=is_final,
            trace_mode=self.trace_mode,
            budget=self.budget,
            next_request=self.next_request,
            foreseen=self._foreseen,
            serialized=serialized,
        )
        found: list[Violation] = []
        for invariant in self.invariants:
            if invariant.final_only and not is_final:
                continue
            self.checks[invariant.name] += 1
            for message in _run(invariant, observation):
                self.failures[invariant.name] += 1
                found.append(Violation(invariant.name, self._turn, observation.step, message))
        self.violations.extend(found)
        return found


def _run(invariant: Invariant, observation: Observation) -> Iterator[str]:
    try:
        problems: Iterable[object] | str | None = invariant.check(observation)
        if isinstance(problems, str):  # a check that returns its one problem
            problems = (problems,)
        for problem in problems or ():
            yield str(problem)
    except Exception as error:
        yield f"the check itself raised {type(error).__name__}: {error}"


def serialize(state: AgentState) -> tuple[dict[str, Any] | None, str]:
    """``state.to_dict()`` and its JSON text, ``state.to_json()``, from one serialization
    (None and a marker text when the state does not serialize): the snapshot the immutability
    check compares against and the dict the round trip reads back."""
    try:
        data = state.to_dict()
        if type(state).to_json is not Serializable.to_json:  # a subclass's own JSON form
            return data, state.to_json()
        return data, json_text(data)
    except Exception as error:
        return None, f"<unserializable: {error}>"


def snapshot_of(state: AgentState) -> str:
    """The serialized form the immutability check compares against (``state.to_json()``)."""
    return serialize(state)[1]


__all__ = [
    "Invariant",
    "InvariantChecker",
    "Observation",
    "Violation",
    "invariant_names",
    "register_invariant",
    "select_invariants",
    "serialize",
    "snapshot_of",
    "unregister_invariant",
]
