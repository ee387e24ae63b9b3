"""Role models for the scale-out tests: ``refund_app``'s, answering after ``delay`` seconds
(latency-bound, as real models are), with the calls in flight counted across the workers of a
cluster without processes (they share this module and one event loop)."""

from __future__ import annotations

import asyncio
import contextlib
import functools
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


def _user(delay: float, context: TrialContext) -> Slow:
    from distributed import get_worker

    with contextlib.suppress(ValueError):  # not on a worker: a local run
        SESSIONS.append((get_worker().address, context.key))
    return Slow(refund_app.user_model, delay)


def _judge(delay: float, context: TrialContext) -> Slow:
    return Slow(refund_app.judge_model, delay)


def models(delay: float = 0.0) -> RoleModels:
    """The simulated user and the judge of ``refund_app``, each call taking ``delay`` s."""
    IN_FLIGHT.update(now=0, most=0)
    WORKERS.clear()
    SESSIONS.clear()
    return RoleModels(user=functools.partial(_user, delay), judge=functools.partial(_judge, delay))
