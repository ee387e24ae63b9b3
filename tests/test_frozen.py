"""Frozen dataclasses built by ``fast_init`` stay what ``@dataclass(frozen=True)`` makes them."""

from __future__ import annotations

import dataclasses
import inspect
from dataclasses import FrozenInstanceError, InitVar, dataclass, field
from typing import Any

import pytest

from agentrig import (
    AgentState,
    EventBus,
    HookContext,
    HookStack,
    HookTrigger,
    ToolCall,
    ToolContext,
    ToolExecutor,
    ToolOutput,
    Tools,
    TraceMode,
    Usage,
)
from agentrig._frozen import fast_init
from agentrig.drivers.base import StepRuntime


@dataclass(frozen=True, slots=True)
class Plain:
    a: int
    b: dict[str, int] = field(default_factory=dict)
    c: str = "c"
    d: int = field(default=4, kw_only=True)


@fast_init
@dataclass(frozen=True, slots=True)
class Fast:
    a: int
    b: dict[str, int] = field(default_factory=dict)
    c: str = "c"
    d: int = field(default=4, kw_only=True)


@fast_init
@dataclass(frozen=True)
class FastUnslotted:
    a: int
    b: dict[str, int] = field(default_factory=dict)
    c: str = "c"
    d: int = field(default=4, kw_only=True)


@dataclass(frozen=True)
class PlainUnslotted:
    a: int
    b: dict[str, int] = field(default_factory=dict)
    c: str = "c"
    d: int = field(default=4, kw_only=True)


def step_runtime() -> StepRuntime:
    tools = Tools()
    return StepRuntime(tools, ToolExecutor(tools), HookStack(), EventBus(), TraceMode.SEPARATED, 1)


def samples() -> list[Any]:
    state = AgentState()
    return [
        ToolContext(state, ToolCall(name="f")),
        ToolOutput(1, "one", Usage(input_tokens=1)),
        HookContext(HookTrigger.BEFORE_STEP, state),
        step_runtime(),
        Fast(1),
        FastUnslotted(1),
    ]


class TestFastInit:
    def test_same_signature_as_the_dataclass(self) -> None:
        assert str(inspect.signature(Fast)) == str(inspect.signature(Plain))

    def test_same_values_equality_and_repr(self) -> None:
        for args, kwargs in [((1,), {}), ((1, {"x": 1}, "z"), {"d": 9}), ((), {"a": 2, "c": "q"})]:
            fast, plain = Fast(*args, **kwargs), Plain(*args, **kwargs)
            assert repr(fast) == repr(plain).replace("Plain", "Fast")
            assert dataclasses.astuple(fast) == dataclasses.astuple(plain)
            assert fast == Fast(*args, **kwargs)
            assert fast != Fast(7)

    def test_an_unslotted_class_is_built_the_same_through_its_dict(self) -> None:
        assert str(inspect.signature(FastUnslotted)) == str(inspect.signature(PlainUnslotted))
        for args, kwargs in [((1,), {}), ((1, {"x": 1}, "z"), {"d": 9}), ((), {"a": 2, "c": "q"})]:
            fast, plain = FastUnslotted(*args, **kwargs), PlainUnslotted(*args, **kwargs)
            assert repr(fast) == repr(plain).replace("PlainUnslotted", "FastUnslotted")
            assert fast.__dict__ == plain.__dict__
            assert fast == FastUnslotted(*args, **kwargs)
        assert FastUnslotted(1).b is not FastUnslotted(1).b
        assert dataclasses.replace(FastUnslotted(1), c="new").c == "new"

    def test_a_default_factory_runs_per_instance(self) -> None:
        assert Fast(1).b == {}
        assert Fast(1).b is not Fast(1).b
        given: dict[str, int] = {"k": 1}
        assert Fast(1, given).b is given

    def test_bad_calls_fail_as_before(self) -> None:
        with pytest.raises(TypeError):
            Fast()  # type: ignore[call-arg]
        with pytest.raises(TypeError):
            Fast(1, {}, "c", 4)  # type: ignore[misc]
        with pytest.raises(TypeError):
            Fast(1, e=5)  # type: ignore[call-arg]

    def test_replace_and_hash_work(self) -> None:
        changed = dataclasses.replace(Fast(1), c="new")
        assert (changed.a, changed.c, changed.d) == (1, "new", 4)
        assert hash(ToolOutput(1, "one")) == hash(ToolOutput(1, "one"))

    @pytest.mark.parametrize("sample", samples(), ids=lambda s: type(s).__name__)
    def test_instances_stay_immutable(self, sample: Any) -> None:
        name = dataclasses.fields(sample)[0].name
        with pytest.raises(FrozenInstanceError):
            setattr(sample, name, None)
        with pytest.raises(FrozenInstanceError):
            delattr(sample, name)
        with pytest.raises((AttributeError, TypeError)):
            sample.unknown = 1
        if "__slots__" in type(sample).__dict__:
            assert not hasattr(sample, "__dict__")

    def test_hook_context_keeps_its_defaults(self) -> None:
        context = HookContext(HookTrigger.AFTER_STEP, AgentState())
        assert (context.metadata, context.errors) == ({}, ())
        assert context.metadata is not HookContext(HookTrigger.AFTER_STEP, AgentState()).metadata
        assert (context.tool_call, context.is_tool_execution_blocked) == (None, False)

    def test_refuses_what_it_cannot_build(self) -> None:
        @dataclass(slots=True)
        class Mutable:
            a: int

        @dataclass(frozen=True, slots=True)
        class PostInit:
            a: int

            def __post_init__(self) -> None:
                pass

        @dataclass(frozen=True, slots=True)
        class WithInitVar:
            a: int
            b: InitVar[int] = 0

        @dataclass(frozen=True, slots=True)
        class NotInInit:
            a: int
            b: int = field(default=0, init=False)

        for cls in (Mutable, PostInit, WithInitVar, NotInInit):
            with pytest.raises(TypeError):
                fast_init(cls)
