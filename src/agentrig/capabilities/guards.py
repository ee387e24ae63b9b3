"""``UseGuards``: enforce every limit of an ``ExecutionBudget`` and optional finish reasons (D4)."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import TYPE_CHECKING, Any

from agentrig import clock
from agentrig.budget import ExecutionBudget
from agentrig.continuation import StopReason, StopSignal
from agentrig.errors import ConfigurationError, InvalidInputError
from agentrig.hooks import HookContext, HookTrigger
from agentrig.state import AgentState, FinishReason
from agentrig.state.usage import ZERO_USAGE

if TYPE_CHECKING:
    from agentrig.builder import AgentBuilder

GUARD_PRIORITY = 200
FINISH_REASON_PRIORITY = -200


class UseGuards:
    """Stop before a step when a budget limit is reached.

    Checked at the checkpoint before every step: exactly ``max_steps`` steps run; the step that
    crosses a token, cost or time limit completes and the next one does not start. Time and
    deadline read the injected clock, and also bound the inference retries inside a step: an
    attempt in flight completes, but no retry starts once the limit is reached (the step fails
    with ``RetryLimitExceededError``, stop reason ``retry_limit``, naming the limit). ``finish_reasons`` stops (as a natural ending) when the
    model's finish reason is one of them.
    """

    def __init__(
        self,
        budget: ExecutionBudget | dict[str, Any] | None = None,
        *,
        max_steps: int | None = None,
        max_tokens: int | None = None,
        max_seconds: float | None = None,
        max_cost: float | None = None,
        deadline: datetime | None = None,
        finish_reasons: Iterable[FinishReason | str] | None = (),
    ) -> None:
        limits: dict[str, Any] = {
            "max_steps": max_steps,
            "max_tokens": max_tokens,
            "max_seconds": max_seconds,
            "max_cost": max_cost,
            "deadline": deadline,
        }
        given = {key: value for key, value in limits.items() if value is not None}
        if budget is None and not given and not finish_reasons:
            raise ConfigurationError(
                "UseGuards() without limits guards nothing: give limits such as "
                "UseGuards(max_steps=20, max_tokens=32_768, max_seconds=300) (the original "
                "runtime's defaults), or a budget (ExecutionBudget.unlimited() for none)"
            )
        base = _budget(budget)
        self.budget = base.evolve(**given)
        self.finish_reasons = _finish_reasons(finish_reasons)
        self._limits = _limits(self.budget)

    def install(self, builder: AgentBuilder) -> None:
        """Register the guard hooks, and the time limits as a retry check: a step's inference is
        not retried once ``max_seconds`` or the ``deadline`` is reached."""
        if self.budget.max_seconds is not None or self.budget.deadline is not None:
            builder.add_retry_check(self._time_exceeded)
        if not self.budget.is_empty():
            builder.add_hook(
                self._check_budget,
                (HookTrigger.BEFORE_EXECUTION, HookTrigger.BEFORE_STEP),
                priority=GUARD_PRIORITY,
                name="guard:budget",
            )
        if self.finish_reasons:
            builder.add_hook(
                self._check_finish_reason,
                HookTrigger.AFTER_STEP,
                priority=FINISH_REASON_PRIORITY,
                name="guard:finish_reason",
            )

    def exceeded(self, state: AgentState) -> StopSignal | None:
        """The signal for the first limit ``state`` has reached, or None."""
        limits = self._limits
        # Read once per budget, as this runs before every step. A cache: reading every time
        # gives the same answer, so no test can tell (hence no mutation).
        if limits[0] is not self.budget:  # pragma: no mutate
            limits = self._limits = _limits(self.budget)
        _, max_steps, max_tokens, max_cost, timed = limits
        execution = state.execution  # read directly: this runs before every step
        if max_steps is not None:
            steps = execution.step_count() if execution is not None else 0
            if steps >= max_steps:
                return _signal(
                    StopReason.STEPS_LIMIT,
                    f"Step limit reached: {steps}/{max_steps}",
                    current_steps=steps,
                    max_steps=max_steps,
                )
        if max_tokens is not None or max_cost is not None:
            usage = execution.usage() if execution is not None else ZERO_USAGE
            if max_tokens is not None and usage.total() >= max_tokens:
                return _signal(
                    StopReason.TOKEN_LIMIT,
                    f"Token limit reached: {usage.total()}/{max_tokens}",
                    total_tokens=usage.total(),
                    max_tokens=max_tokens,
                )
            if max_cost is not None and usage.cost >= max_cost:
                return _signal(
                    StopReason.TOKEN_LIMIT,
                    # .10g: a sum of prices such as 0.1 + 0.2 reads 0.3, not 0.30000000000000004
                    f"Cost limit reached: {usage.cost:.10g}/{max_cost:.10g}",
                    cost=usage.cost,
                    max_cost=max_cost,
                )
        return self._time_exceeded(state) if timed else None

    def _time_exceeded(self, state: AgentState) -> StopSignal | None:
        budget = self.budget
        now = clock.now()
        if budget.max_seconds is not None and state.execution is not None:
            elapsed = (now - state.execution.started_at).total_seconds()
            if elapsed >= budget.max_seconds:
                return _signal(
                    StopReason.TIME_LIMIT,
                    f"Execution time limit reached: {elapsed:.2f}s/{budget.max_seconds:.2f}s",
                    elapsed_seconds=elapsed,
                    max_seconds=budget.max_seconds,
                )
        if budget.deadline is not None and now >= budget.deadline:
            return _signal(
                StopReason.TIME_LIMIT,
                f"Deadline reached: {budget.deadline.isoformat()}",
                deadline=budget.deadline.isoformat(),
            )
        return None

    def _check_budget(self, context: HookContext) -> HookContext | None:
        signal = self.exceeded(context.state)
        if signal is None or _already_signalled(context.state, signal.reason):
            return None
        return context.with_state(context.state.with_stop_signal(signal))

    def _check_finish_reason(self, context: HookContext) -> HookContext | None:
        step = context.state.current_step()
        # after_step always has a step; the None case is defence only (no test can reach it)
        reason = step.finish_reason() if step is not None else None  # pragma: no mutate
        if reason is None or reason not in self.finish_reasons:
            return None
        signal = _signal(
            StopReason.FINISH_REASON,
            f'Finish reason "{reason.value}" matched stop condition',
            finish_reason=reason.value,
        )
        return context.with_state(context.state.with_stop_signal(signal))

    def __repr__(self) -> str:
        return f"UseGuards({self.budget!r})"


def _budget(budget: object) -> ExecutionBudget:
    """``budget`` as an ``ExecutionBudget`` (None is no budget; a dict holds its fields)."""
    if budget is None:
        return ExecutionBudget()
    if isinstance(budget, ExecutionBudget):
        return budget
    if isinstance(budget, dict):
        return ExecutionBudget(**{str(key): value for key, value in budget.items()})
    reason = f"expected an ExecutionBudget or a dict of its fields, got {type(budget).__name__}"
    raise InvalidInputError("UseGuards", [("budget", reason)])


def _finish_reasons(reasons: object) -> frozenset[FinishReason]:
    """The finish reasons as enum members (a single string is one reason; None is none)."""
    if reasons is None:
        return frozenset()
    if isinstance(reasons, str):
        reasons = (reasons,)
    if not isinstance(reasons, Iterable):
        reason = f"expected finish reasons such as ['length'], got {type(reasons).__name__}"
        raise InvalidInputError("UseGuards finish reasons", [("finish_reasons", reason)])
    parsed: list[FinishReason] = []
    for index, reason in enumerate(reasons):
        try:
            parsed.append(FinishReason(reason))
        except ValueError:
            valid = ", ".join(member.value for member in FinishReason)
            problem = (f"finish_reasons[{index}]", f"{reason!r} is not one of: {valid}")
            raise InvalidInputError("UseGuards finish reasons", [problem]) from None
    return frozenset(parsed)


_Limits = tuple[ExecutionBudget, int | None, int | None, float | None, bool]


def _limits(budget: ExecutionBudget) -> _Limits:
    """The budget, its step, token and cost limits, and whether it limits time."""
    timed = budget.max_seconds is not None or budget.deadline is not None
    return budget, budget.max_steps, budget.max_tokens, budget.max_cost, timed


def _signal(reason: StopReason, message: str, **context: Any) -> StopSignal:
    return StopSignal(reason=reason, message=message, context=context, source="UseGuards")


def _already_signalled(state: AgentState, reason: StopReason) -> bool:
    return any(signal.reason is reason for signal in state.continuation().stop_signals)
