"""The runners of effect generators: ``Resumed``, ``run_sync`` and ``run_async``."""

from __future__ import annotations

import asyncio
from collections.abc import Generator
from dataclasses import dataclass
from typing import Any

import pytest

from agentrig._effects import Resumed, run_async, run_sync


@dataclass
class Double:
    """An effect: twice ``number``, or a ``ValueError`` for a negative one."""

    number: int

    def perform(self) -> int:
        if self.number < 0:
            raise ValueError(f"negative: {self.number}")
        return 2 * self.number

    async def aperform(self) -> int:
        return self.perform()


def doubling(*numbers: int) -> Generator[Double, Any, list[Any]]:
    """Yields one effect per number; keeps each result, or the error raised at its yield."""
    seen: list[Any] = []
    for number in numbers:
        try:
            seen.append((yield Double(number)))
        except ValueError as error:
            seen.append(str(error))
    return seen


class TestResumed:
    def test_sends_what_is_resolved_and_keeps_what_is_returned(self) -> None:
        run = Resumed(doubling(1, 2))
        items = []
        for item in run:
            items.append(item)
            run.resolve(item.number * 10)
        assert items == [Double(1), Double(2)]
        assert run.returned == [10, 20]

    def test_raises_what_failed_at_the_yield(self) -> None:
        run = Resumed(doubling(1, 2))
        for item in run:
            if item.number == 1:
                run.fail(ValueError("refused"))
            else:
                run.resolve("ok")
        assert run.returned == ["refused", "ok"]

    def test_an_error_the_generator_does_not_catch_comes_out_of_the_loop(self) -> None:
        run = Resumed(doubling(1))
        next(run)
        run.fail(KeyError("not caught"))
        with pytest.raises(KeyError):
            next(run)
        assert run.returned is None

    def test_close_runs_the_generators_finally(self) -> None:
        closed = []

        def guarded() -> Generator[int, Any, None]:
            try:
                yield 1
                yield 2
            finally:
                closed.append(True)

        run = Resumed(guarded())
        assert next(run) == 1
        run.close()
        assert closed == [True]


def test_run_sync_and_run_async_give_the_same_results() -> None:
    assert run_sync(doubling(1, -2, 3)) == [2, "negative: -2", 6]
    assert asyncio.run(run_async(doubling(1, -2, 3))) == [2, "negative: -2", 6]
