"""Which agent is running: the root agent, or a subagent by name and depth.

``UseSubagents`` runs each child under ``running_as(...)``; code the agent calls (a provider, a
tool) reads ``current_agent()``, as the state mutators read the clock from the runtime context.
Scripted fakes use it to keep one script per agent and to name the agent in their errors.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class AgentIdentity:
    """An agent in the tree of a run: ``name`` None and ``depth`` 0 for the root agent; a
    subagent's definition name, its depth (its parent's plus one) and ``parents``, the names
    of the subagents above it (outermost first; empty for a child of the root agent)."""

    name: str | None = None
    depth: int = 0
    parents: tuple[str, ...] = ()

    def is_root(self) -> bool:
        """True for the agent the run started with."""
        return self.name is None

    @property
    def path(self) -> str:
        """Where the agent sits in the tree: its parents' names and its own, joined by ``/``
        (``"planner/research"`` for ``research`` spawned by ``planner``); ``""`` for the root."""
        return "/".join((*self.parents, self.name)) if self.name is not None else ""

    def child(self, name: str) -> AgentIdentity:
        """The identity of subagent ``name`` spawned by this agent."""
        parents = (*self.parents, self.name) if self.name is not None else ()
        return AgentIdentity(name=name, depth=self.depth + 1, parents=parents)

    def __str__(self) -> str:
        if self.name is None:
            return "the top-level agent"
        return f"subagent '{self.path}' (depth {self.depth})"


ROOT_AGENT = AgentIdentity()
_current: ContextVar[AgentIdentity] = ContextVar("agentrig_agent", default=ROOT_AGENT)


def current_agent() -> AgentIdentity:
    """The agent running in the current context (the root agent outside any subagent)."""
    return _current.get()


@contextmanager
def running_as(identity: AgentIdentity) -> Iterator[None]:
    """Run the block as ``identity`` (``UseSubagents`` wraps each child run in one)."""
    token = _current.set(identity)
    try:
        yield
    finally:
        _current.reset(token)
