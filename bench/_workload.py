"""The workload W(N), on agentrig and on a bare-Python floor.

W(N): one user message; the model answers N times with one tool call ``add(a=i, b=1)``; the tool
returns ``a + b``; then the model answers with the final text ``"done"``. That is N + 1 model
calls (steps) and N tool executions.

Each ``prepare_*`` function builds everything a run needs (outside any timing) and returns a
zero-argument callable that runs the workload once; each ``check_*`` function verifies a run's
result (outside any timing) and raises ``AssertionError`` when it is wrong.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import agentrig as ar
from agentrig.fakes import ScriptedLLM, call, calls, reply

USER_MESSAGE = "Add one to each number, starting from 0."
FINAL_TEXT = "done"


@ar.tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@ar.tool(name="add")
async def add_async(a: int, b: int) -> int:
    """Add two integers (the async twin of ``add``)."""
    return a + b


_RUNNER: asyncio.Runner | None = None


def event_loop() -> asyncio.Runner:
    """One event loop for every async run of the process (made once, outside any timing)."""
    global _RUNNER
    if _RUNNER is None:
        _RUNNER = asyncio.Runner()
    return _RUNNER


# --- agentrig -----------------------------------------------------------------------------


def prepare_agentrig(n: int) -> Callable[[], ar.AgentState]:
    """W(n) on agentrig: default builder, execution buffer on, guards that never trigger."""
    agent = _agent(n, add)
    state = ar.AgentState().with_user_message(USER_MESSAGE)
    return lambda: agent.execute(state)


def prepare_agentrig_async(n: int) -> Callable[[], ar.AgentState]:
    """W(n) through ``aexecute`` on one event loop, with the tool ``async def``."""
    return _prepare_async(n, add_async)


def prepare_agentrig_async_sync_tool(n: int) -> Callable[[], ar.AgentState]:
    """W(n) through ``aexecute``, with the sync tool (run in a worker thread)."""
    return _prepare_async(n, add)


def _prepare_async(n: int, tool: ar.Tool) -> Callable[[], ar.AgentState]:
    agent = _agent(n, tool)
    state = ar.AgentState().with_user_message(USER_MESSAGE)
    loop = event_loop().get_loop()
    # run_until_complete, not Runner.run: a server is inside its event loop already, and
    # Runner.run adds about 100 us per run (signal handling) that no step pays.
    return lambda: loop.run_until_complete(agent.aexecute(state))


def _agent(n: int, tool: ar.Tool) -> ar.AgentLoop:
    llm = ScriptedLLM([*(call("add", a=i, b=1) for i in range(n)), reply(FINAL_TEXT)])
    return (
        ar.AgentBuilder.base()
        .with_tools([tool])
        .with_capability(ar.UseLlmConfig(llm))
        .with_capability(ar.UseGuards(max_steps=n + 10, max_tokens=10**9))
        .build()
    )


def check_agentrig(n: int, final: ar.AgentState) -> None:
    """The run made n + 1 steps and n correct tool executions, then answered "done"."""
    assert final.status() is ar.ExecutionStatus.COMPLETED, final.debug()
    assert final.last_stop_reason() is ar.StopReason.COMPLETED, final.debug()
    assert final.step_count() == n + 1, (final.step_count(), n + 1)
    assert final.final_response().to_text() == FINAL_TEXT
    executions = [e for step in final.steps() for e in step.tool_executions]
    assert len(executions) == n, (len(executions), n)
    assert [e.value for e in executions] == [i + 1 for i in range(n)]
    assert not any(e.has_error for e in executions)
    assert final.messages().roles() == (ar.Role.USER, ar.Role.ASSISTANT)
    assert not final.store().messages_of("execution_buffer"), "the buffer was not cleared"


# --- parallel tools -----------------------------------------------------------------------

PARALLEL_CALLS = 10
WAIT_SECONDS = 0.01


@ar.tool
async def wait(number: int) -> int:
    """Wait 10 ms of real time (an I/O-bound tool), then answer."""
    await asyncio.sleep(WAIT_SECONDS)
    return number


@ar.tool(name="wait")
def wait_sync(number: int) -> int:
    """The sync twin of ``wait``."""
    time.sleep(WAIT_SECONDS)
    return number


def prepare_parallel(use_async: bool) -> Callable[[], ar.AgentState]:
    """One step with ``PARALLEL_CALLS`` calls of a tool that waits ``WAIT_SECONDS`` of real
    time, then the final answer: through ``aexecute`` (async tool) or ``execute`` (sync tool)."""
    turns = [
        calls(*(("wait", {"number": i}) for i in range(PARALLEL_CALLS))),
        reply(FINAL_TEXT),
    ]
    agent = (
        ar.AgentBuilder.base()
        .with_tools([wait if use_async else wait_sync])
        .with_capability(ar.UseLlmConfig(ScriptedLLM(turns)))
        .build()
    )
    state = ar.AgentState().with_user_message(USER_MESSAGE)
    if not use_async:
        return lambda: agent.execute(state)
    loop = event_loop().get_loop()
    return lambda: loop.run_until_complete(agent.aexecute(state))


def check_parallel(final: ar.AgentState) -> None:
    """Every call answered, in call order."""
    assert final.status() is ar.ExecutionStatus.COMPLETED, final.debug()
    executions = final.steps()[0].tool_executions
    assert [e.value for e in executions] == list(range(PARALLEL_CALLS))


# --- bare-Python floor ----------------------------------------------------------------------


def _new_id() -> str:
    return os.urandom(16).hex()


def _now() -> datetime:
    return datetime.now(UTC)


def _plain_add(a: int, b: int) -> int:
    return a + b


_FLOOR_TOOLS: dict[str, tuple[Callable[..., Any], dict[str, type]]] = {
    "add": (_plain_add, {"a": int, "b": int})
}


def prepare_floor(n: int) -> Callable[[], dict[str, Any]]:
    """W(n) as the least a Python agent loop does, on plain dicts and lists.

    Per step it does the same work as the runtime, minus immutability and validation machinery:
    check the step and token budgets, call a scripted model that returns a response dict with a
    tool call (new id), append the assistant message (id, time, tags) to a trace list, check the
    arguments' names and types, call the tool, record the execution (id, value, text, times),
    append the tool message, record the step; stop on a reply without tool calls, move the final
    answer to the conversation and clear the trace.
    """
    script: list[dict[str, Any]] = [
        {"content": "", "tool_calls": [{"name": "add", "arguments": {"a": i, "b": 1}}]}
        for i in range(n)
    ]
    script.append({"content": FINAL_TEXT, "tool_calls": []})
    max_steps, max_tokens = n + 10, 10**9

    def run() -> dict[str, Any]:
        position = 0

        def model(messages: list[dict[str, Any]]) -> dict[str, Any]:
            nonlocal position
            turn = script[position]
            position += 1
            return {
                "content": turn["content"],
                "tool_calls": [
                    {"id": _new_id(), "name": c["name"], "arguments": dict(c["arguments"])}
                    for c in turn["tool_calls"]
                ],
                "usage": {"input": 0, "output": 0},
            }

        execution_id = _new_id()
        conversation: list[dict[str, Any]] = [
            {"id": _new_id(), "role": "user", "content": USER_MESSAGE, "created_at": _now()}
        ]
        trace: list[dict[str, Any]] = []
        steps: list[dict[str, Any]] = []
        tokens = 0
        stop_reason = "unknown"
        while True:
            if len(steps) >= max_steps:
                stop_reason = "steps_limit"
                break
            if tokens >= max_tokens:
                stop_reason = "token_limit"
                break
            step_id, started = _new_id(), _now()
            response = model(conversation + trace if trace else conversation)
            tokens += response["usage"]["input"] + response["usage"]["output"]
            tags = {"step_id": step_id, "execution_id": execution_id}
            message = {
                "id": _new_id(),
                "role": "assistant",
                "content": response["content"],
                "tool_calls": response["tool_calls"],
                "created_at": _now(),
                "metadata": tags,
            }
            executions = []
            for tool_call in response["tool_calls"]:
                executions.append(_floor_execute(tool_call))
            step = {
                "id": step_id,
                "response": response,
                "executions": executions,
                "started_at": started,
                "completed_at": _now(),
            }
            steps.append(step)
            if not response["tool_calls"]:
                conversation.append(message)
                stop_reason = "completed"
                break
            trace.append(message)
            for execution in executions:
                trace.append(
                    {
                        "id": _new_id(),
                        "role": "tool",
                        "content": execution["content"],
                        "call_id": execution["call"]["id"],
                        "created_at": _now(),
                        "metadata": tags,
                    }
                )
        trace.clear()
        return {"conversation": conversation, "steps": steps, "stop_reason": stop_reason}

    return run


def _floor_execute(tool_call: dict[str, Any]) -> dict[str, Any]:
    started = _now()
    entry = _FLOOR_TOOLS.get(tool_call["name"])
    arguments = tool_call["arguments"]
    error = None
    value = None
    if entry is None:
        error = f"unknown tool {tool_call['name']}"
    else:
        function, params = entry
        if arguments.keys() != params.keys() or not all(
            type(arguments[key]) is kind for key, kind in params.items()
        ):
            error = "invalid arguments"
        else:
            value = function(**arguments)
    return {
        "id": _new_id(),
        "call": tool_call,
        "value": value,
        "content": str(value) if error is None else f"Error in tool call: {error}",
        "error": error,
        "started_at": started,
        "completed_at": _now(),
    }


def check_floor(n: int, result: dict[str, Any]) -> None:
    """The floor made the same n + 1 steps and n tool executions."""
    assert result["stop_reason"] == "completed", result["stop_reason"]
    assert len(result["steps"]) == n + 1
    assert result["conversation"][-1]["content"] == FINAL_TEXT
    values = [e["value"] for step in result["steps"] for e in step["executions"]]
    assert values == [i + 1 for i in range(n)], values[:5]
