"""``VirtualTimeLoop``: time moves only when every task waits, straight to the next timer."""

from __future__ import annotations

import asyncio
import socket
import time
from typing import Any

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


def test_a_deadlock_says_when_and_why() -> None:
    async def main() -> None:
        await asyncio.sleep(2.5)
        await asyncio.Event().wait()

    with pytest.raises(VirtualTimeDeadlock) as raised:
        run_in_virtual_time(main(), grace=0)
    assert str(raised.value) == (
        "deadlock at virtual time 2.5s: every task is waiting, and no timer, I/O or worker "
        "thread can wake any of them"
    )
    assert raised.value.now == 2.5


def test_waiting_on_nothing_after_worker_threads_is_still_a_deadlock(bounded: Any) -> None:
    """Each worker thread is counted while it runs and no longer once it is done (a count left
    above 0 would make the loop wait for a thread forever: a hang)."""

    async def main() -> None:
        assert await asyncio.to_thread(lambda: 1) == 1
        loop = asyncio.get_running_loop()
        assert await loop.run_in_executor(None, divmod, 7, 2) == (3, 1)
        await loop.shutdown_default_executor()
        await asyncio.Event().wait()

    with pytest.raises(VirtualTimeDeadlock):
        bounded(lambda: run_in_virtual_time(main(), grace=0.01))


def test_the_default_executors_shutdown_is_waited_for_as_a_worker_thread(bounded: Any) -> None:
    # with no grace at all, a wait not counted as a worker's is a deadlock at once
    def work() -> str:
        time.sleep(0.02)
        return "done"

    async def main() -> str:
        return await asyncio.to_thread(work)

    assert bounded(lambda: run_in_virtual_time(main(), grace=0)) == "done"


def test_io_ready_runs_before_time_moves_to_the_next_timer() -> None:
    received: list[tuple[bytes, float]] = []

    async def main() -> None:
        loop = asyncio.get_running_loop()
        reading, writing = socket.socketpair()
        reading.setblocking(False)
        writing.setblocking(False)

        async def receive() -> None:
            # sent once this task waits on the socket, by a plain callback: when the loop next
            # looks, nothing else is ready, and a timer is 10 s away
            loop.call_soon(writing.send, b"x")
            data = await loop.sock_recv(reading, 1)
            received.append((data, loop.time()))

        try:
            await asyncio.gather(receive(), asyncio.sleep(10))
        finally:
            reading.close()
            writing.close()

    run_in_virtual_time(main())
    assert received == [(b"x", 0.0)]


def test_a_socket_watched_for_reading_and_writing_is_seen_writable() -> None:
    async def main() -> list[str]:
        loop = asyncio.get_running_loop()
        seen: list[str] = []
        done = asyncio.Event()
        reading, writing = socket.socketpair()

        def writable() -> None:
            seen.append("writable")
            loop.remove_writer(reading)
            done.set()

        loop.add_reader(reading, lambda: seen.append("readable"))
        loop.add_writer(reading, writable)  # the selector's modify(): both events now
        try:
            await done.wait()
        finally:
            loop.remove_reader(reading)
            reading.close()
            writing.close()
        return seen

    assert run_in_virtual_time(main()) == ["writable"]


@pytest.mark.parametrize("grace", [0, 0.5, 999_999.9])
def test_a_grace_from_0_to_under_a_million_seconds_is_taken(grace: float) -> None:
    loop = VirtualTimeLoop(grace=grace)
    loop.close()


@pytest.mark.parametrize("grace", [-1, 1e6])
def test_a_bad_grace_says_what_it_takes(grace: float) -> None:
    with pytest.raises(InvalidInputError) as raised:
        VirtualTimeLoop(grace=grace)
    assert str(raised.value) == (
        f"invalid VirtualTimeLoop: grace: expected real seconds >= 0 and < 1e6, got {grace!r}"
    )
    main = asyncio.sleep(0)
    with pytest.raises(InvalidInputError, match=r"^invalid VirtualTimeLoop: grace: "):
        run_in_virtual_time(main, grace=grace)
    main.close()


def test_the_loop_sleeper_reads_and_sleeps_on_the_running_loop() -> None:
    sleeper = LoopSleeper()

    async def main() -> tuple[float, float]:
        before = sleeper.now()
        await sleeper.sleep(90)
        return before, sleeper.now()

    assert run_in_virtual_time(main()) == (0.0, 90.0)
    assert repr(sleeper) == "LoopSleeper()"


def test_the_loop_waits_for_every_worker_thread_not_just_the_last_started(bounded: Any) -> None:
    def work(seconds: float) -> float:
        time.sleep(seconds)
        return seconds

    async def main() -> list[float]:
        loop = asyncio.get_running_loop()
        slow = asyncio.ensure_future(asyncio.to_thread(work, 0.1))
        await asyncio.sleep(0)
        fast = await loop.run_in_executor(None, work, 0.0)  # done while the slow one runs
        return [fast, await slow]

    assert bounded(lambda: run_in_virtual_time(main(), grace=0)) == [0.0, 0.1]


def test_shutting_the_executor_down_waits_for_the_work_still_running(bounded: Any) -> None:
    def work() -> str:
        time.sleep(0.1)
        return "done"

    async def main() -> str:
        running = asyncio.ensure_future(asyncio.to_thread(work))
        await asyncio.sleep(0)
        await asyncio.get_running_loop().shutdown_default_executor()
        return await running

    assert bounded(lambda: run_in_virtual_time(main(), grace=0)) == "done"


def test_work_sent_to_an_executor_given_runs_there() -> None:
    import threading
    from concurrent.futures import ThreadPoolExecutor

    async def main() -> str:
        with ThreadPoolExecutor(thread_name_prefix="given") as executor:
            loop = asyncio.get_running_loop()
            return await loop.run_in_executor(executor, lambda: threading.current_thread().name)

    assert run_in_virtual_time(main()).startswith("given")


def test_a_thread_of_another_origin_may_wake_the_loop_within_the_grace(bounded: Any) -> None:
    import threading

    async def main() -> str:
        loop = asyncio.get_running_loop()
        woken: asyncio.Future[str] = loop.create_future()

        def later() -> None:
            time.sleep(0.05)
            loop.call_soon_threadsafe(woken.set_result, "woken")

        threading.Thread(target=later, daemon=True).start()
        return await woken

    assert bounded(lambda: run_in_virtual_time(main(), grace=5)) == "woken"
