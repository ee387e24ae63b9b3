"""Fixtures for the session store tests: every store kind, and real states the loop produced."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from agentrig import (
    AgentState,
    FileSessionStore,
    InMemorySessionStore,
    SessionConflictError,
    SessionStore,
    SqliteSessionStore,
    SubagentDefinition,
    UseSubagents,
)
from agentrig.fakes import FakeClock, ScriptedLLM, call, calls, reply

STORE_KINDS = ("memory", "file", "sqlite")

MakeStore = Callable[[], SessionStore]
"""Opens a store of the test's kind; for file and SQLite, every call opens the same storage."""


def lookup(q: str) -> str:
    """Look something up."""
    return f"found {q}"


def broken(q: str) -> str:
    """Always fails."""
    raise RuntimeError(f"cannot look up {q}")


@pytest.fixture
def store_clock() -> FakeClock:
    """The clock the stores stamp ``created_at`` and ``updated_at`` from."""
    return FakeClock()


@pytest.fixture(params=STORE_KINDS)
def store_kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def open_store(store_kind: str, tmp_path: Path, store_clock: FakeClock) -> Iterator[MakeStore]:
    opened: list[SqliteSessionStore] = []
    memory = InMemorySessionStore(clock=store_clock)

    def make() -> SessionStore:
        if store_kind == "memory":
            return memory
        if store_kind == "file":
            return FileSessionStore(tmp_path / "sessions", clock=store_clock)
        store = SqliteSessionStore(tmp_path / "sessions.db", clock=store_clock)
        opened.append(store)
        return store

    yield make
    for store in opened:
        store.close()


@pytest.fixture
def store(open_store: MakeStore) -> SessionStore:
    return open_store()


@pytest.fixture
def real_states(make_agent, start) -> dict[str, AgentState]:
    """States the real loop produced: finished, mid-execution, failed, inline, with subagents."""
    tool_then_answer = [call("lookup", q="x"), reply("The answer.")]
    separated = make_agent(ScriptedLLM(tool_then_answer), [lookup])
    middle, finished = list(separated.iterate(start("first question")))
    inline = make_agent(ScriptedLLM(tool_then_answer), [lookup], inline=True).execute(start())
    failed = make_agent(ScriptedLLM([call("broken", q="y"), reply("Sorry.")]), [broken]).execute(
        start()
    )
    child = ScriptedLLM([call("lookup", q="deep"), reply("child found deep")])
    researcher = SubagentDefinition(
        name="researcher", description="Finds things.", system_prompt="Research.", provider=child
    )
    spawn = calls(("spawn_subagent", {"subagent": "researcher", "prompt": "find it"}))
    parent = make_agent(
        ScriptedLLM([spawn, reply("parent done")]), [lookup], UseSubagents([researcher])
    )
    return {
        "fresh": start(),
        "mid-execution": middle,
        "finished": finished,
        "next-execution": finished.for_next_execution().with_user_message("second question"),
        "failed": failed,
        "inline": inline,
        "subagent": parent.execute(start("delegate this")),
    }


def increment_counter(store: SessionStore, session_id: str, rounds: int) -> None:
    """Add 1 to the session's ``count`` metadata ``rounds`` times, retrying on conflicts."""
    done = 0
    while done < rounds:
        loaded = store.load(session_id)
        count = loaded.state.metadata()["count"]
        assert isinstance(count, int)
        try:
            store.save(
                loaded.state.with_metadata("count", count + 1), expected_version=loaded.version
            )
        except SessionConflictError:
            continue
        done += 1


def run_in_threads(work: Callable[[], None], count: int) -> None:
    """Run ``work`` in ``count`` threads at once; fail if any of them raised."""
    errors: list[BaseException] = []

    def guarded() -> None:
        try:
            work()
        except BaseException as error:  # surfaced below, in the test's thread
            errors.append(error)

    threads = [threading.Thread(target=guarded) for _ in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert errors == []


@pytest.fixture
def increment() -> Callable[[SessionStore, str, int], None]:
    return increment_counter


@pytest.fixture
def in_threads() -> Callable[[Callable[[], None], int], None]:
    return run_in_threads
