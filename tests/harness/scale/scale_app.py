"""Role models for the scale-out tests: ``refund_app``'s, answering after ``delay`` seconds
(latency-bound, as real models are), with the calls in flight counted across the workers of a
cluster without processes (they share this module and one event loop)."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
from collections.abc import Callable

import refund_app

from agentrig.fakes import FunctionLLM
from agentrig.fakes.llm import Turn
from agentrig.harness.live.run import RoleModels
from agentrig.harness.live.trial import TrialContext
from agentrig.state import InferenceRequest, InferenceResponse

IN_FLIGHT = {"now": 0, "most": 0}
WORKERS: set[str] = set()
"""The workers the calls were made on."""
SESSIONS: list[tuple[str, str]] = []
"""(worker, the trial's session key) of each simulated user made, in order."""


class Slow:
    """``function``'s answers, each ``delay`` seconds after it is asked."""

    def __init__(self, function: Callable[[InferenceRequest], Turn], delay: float) -> None:
        self.model = FunctionLLM(function)
        self.delay = delay

    def infer(self, request: InferenceRequest) -> InferenceResponse:
        return self.model.infer(request)

    async def ainfer(self, request: InferenceRequest) -> InferenceResponse:
        from distributed import get_worker

        with contextlib.suppress(ValueError):  # not on a worker: a local run
            WORKERS.add(get_worker().address)
        IN_FLIGHT["now"] += 1
        IN_FLIGHT["most"] = max(IN_FLIGHT["most"], IN_FLIGHT["now"])
        try:
            await asyncio.sleep(self.delay)
            return self.model.infer(request)
        finally:
            IN_FLIGHT["now"] -= 1


HELD_FROM = 10
"""The first trial from this index on to begin, with ``models(held=PATH)``, is held."""
HOLD_S = 60.0
"""How long a held trial's user waits before its first answer: far longer than a test waits."""


def _user(delay: float, held: str | None, context: TrialContext) -> Slow:
    from distributed import get_worker

    with contextlib.suppress(ValueError):  # not on a worker: a local run
        SESSIONS.append((get_worker().address, context.key))
    if held is not None and context.index >= HELD_FROM:
        try:
            with open(held, "x", encoding="utf-8") as mark:  # the first such trial, of all
                mark.write(f"{os.getpid()} {context.index}\n")
        except FileExistsError:
            pass
        else:
            return Slow(refund_app.user_model, HOLD_S)
    return Slow(refund_app.user_model, delay)


def _judge(delay: float, context: TrialContext) -> Slow:
    return Slow(refund_app.judge_model, delay)


def models(delay: float = 0.0, held: str | None = None) -> RoleModels:
    """The simulated user and the judge of ``refund_app``, each call taking ``delay`` s. With
    ``held`` (a file's path), the first trial of index :data:`HELD_FROM` or more to begin, in
    any process, writes its process's id and its index there (``PID INDEX``), then waits
    :data:`HOLD_S` for its user's first answer: a worker to kill with that trial in hand."""
    IN_FLIGHT.update(now=0, most=0)
    WORKERS.clear()
    SESSIONS.clear()
    return RoleModels(
        user=functools.partial(_user, delay, held), judge=functools.partial(_judge, delay)
    )
