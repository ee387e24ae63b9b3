"""``VirtualTimeLoop``: time moves only when every task waits, straight to the next timer."""

from __future__ import annotations

import asyncio
import time

import pytest

from agentrig.errors import InvalidInputError
from agentrig.harness.live.virtual_time import (
    LoopSleeper,
    Sleeper,
    VirtualTimeDeadlock,
    VirtualTimeLoop,
    run_in_virtual_time,
)


def test_sleeps_end_in_order_of_wake_up_time_at_once() -> None:
    sleeper = LoopSleeper()
    woke: list[tuple[str, float]] = []

    async def nap(name: str, seconds: float) -> None:
        await sleeper.sleep(seconds)
        woke.append((name, sleeper.now()))

    async def main() -> None:
        await asyncio.gather(nap("day", 86_400), nap("hour", 3_600), nap("none", 0))

    run_in_virtual_time(main())  # in real time this test would take a day
    assert woke == [("none", 0.0), ("hour", 3_600.0), ("day", 86_400.0)]


def test_time_waits_for_a_task_woken_by_another() -> None:
    # A wakes B through an event, several loop passes before B sleeps: B's sleep still starts at
    # A's wake-up time (agentrig.fakes.FakeClock would have moved on to t=5 in between).
    event = asyncio.Event()
    starts: list[float] = []

    async def a() -> None:
        await asyncio.sleep(1)
        event.set()

    async def b() -> None:
        await event.wait()
        for _ in range(5):
            await asyncio.sleep(0)
        starts.append(asyncio.get_running_loop().time())
        await asyncio.sleep(1)

    async def main() -> float:
        await asyncio.gather(a(), b(), asyncio.sleep(5))
        return asyncio.get_running_loop().time()

    assert run_in_virtual_time(main()) == 5.0
    assert starts == [1.0]


def test_worker_threads_take_no_virtual_time() -> None:
    def work() -> str:
        time.sleep(0.01)
        return "done"

    async def main() -> tuple[str, float]:
        answer = await asyncio.to_thread(work)
        return answer, asyncio.get_running_loop().time()

    assert run_in_virtual_time(main()) == ("done", 0.0)


def test_waiting_on_nothing_is_a_deadlock() -> None:
    async def main() -> None:
        await asyncio.sleep(2)
        await asyncio.Event().wait()

    with pytest.raises(VirtualTimeDeadlock, match="deadlock at virtual time 2s"):
        run_in_virtual_time(main(), grace=0.01)


def test_timeouts_fire_in_virtual_time() -> None:
    async def main() -> float:
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(asyncio.Event().wait(), timeout=30)
        return asyncio.get_running_loop().time()

    assert run_in_virtual_time(main()) == 30.0


def test_the_loop_sleeper_is_a_sleeper() -> None:
    assert isinstance(LoopSleeper(), Sleeper)


@pytest.mark.parametrize("grace", [-1, "1", True, float("inf")])
def test_a_bad_grace_names_the_field(grace: object) -> None:
    with pytest.raises(InvalidInputError) as raised:
        VirtualTimeLoop(grace=grace)  # type: ignore[arg-type]
    assert raised.value.field == "grace"
