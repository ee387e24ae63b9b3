"""``VirtualTimeLoop``: time moves only when every task waits, straight to the next timer."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Callable, Coroutine
from concurrent.futures import ThreadPoolExecutor
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

    with pytest.raises(VirtualTimeDeadlock) as raised:
        run_in_virtual_time(main(), grace=0.01)
    assert raised.value.now == 2.0
    assert str(raised.value) == (
        "deadlock at virtual time 2s: every task is waiting, and no timer, I/O or worker thread "
        "can wake any of them"
    )


def test_timeouts_fire_in_virtual_time() -> None:
    async def main() -> float:
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(asyncio.Event().wait(), timeout=30)
        return asyncio.get_running_loop().time()

    assert run_in_virtual_time(main()) == 30.0


def test_the_loop_sleeper_is_a_sleeper() -> None:
    assert isinstance(LoopSleeper(), Sleeper)
    assert repr(LoopSleeper()) == "LoopSleeper()"


@pytest.mark.parametrize("grace", [-1, "1", True, float("inf")])
def test_a_bad_grace_names_the_field(grace: object) -> None:
    with pytest.raises(InvalidInputError) as raised:
        VirtualTimeLoop(grace=grace)  # type: ignore[arg-type]
    assert raised.value.field == "grace"


def test_a_grace_of_up_to_a_million_seconds_is_taken() -> None:
    VirtualTimeLoop(grace=0).close()
    VirtualTimeLoop(grace=999_999.5).close()
    never_run = asyncio.sleep(0)
    with pytest.raises(InvalidInputError) as raised:
        run_in_virtual_time(never_run, grace=1e6)
    never_run.close()
    assert str(raised.value) == (
        "invalid VirtualTimeLoop: grace: expected real seconds >= 0 and < 1e6, got 1000000.0"
    )


def deadlocked(main: Callable[[], Coroutine[Any, Any, None]], *, grace: float = 0.01) -> bool:
    """Whether ``main()`` ends in ``VirtualTimeDeadlock``; a watchdog thread wakes the loop
    after 2 real seconds, so a loop that would wait forever returns False instead of hanging."""
    loop = VirtualTimeLoop(grace=grace)
    watchdog = threading.Timer(2.0, lambda: loop.call_soon_threadsafe(loop.stop))
    watchdog.start()
    try:
        loop.run_until_complete(main())
    except VirtualTimeDeadlock:
        return True
    except RuntimeError:  # stopped by the watchdog
        return False
    finally:
        watchdog.cancel()
        for task in asyncio.all_tasks(loop):
            task.cancel()
        loop.close()
    return False


def test_a_deadlock_is_seen_once_worker_threads_are_done() -> None:
    reached: list[str] = []

    async def main() -> None:
        loop = asyncio.get_running_loop()

        def later(value: int) -> int:
            time.sleep(0.02)
            return value

        both = (loop.run_in_executor(None, later, 1), loop.run_in_executor(None, pow, 2, 10))
        assert await asyncio.gather(*both) == [1, 1024]
        reached.append("work done")
        await asyncio.Event().wait()

    assert deadlocked(main, grace=0)
    assert reached == ["work done"]


def test_a_worker_thread_is_waited_for_however_long_it_takes() -> None:
    # A grace of 0: any real wait that is not for a counted worker is a deadlock at once.
    async def main() -> float:
        await asyncio.to_thread(time.sleep, 0.05)
        return asyncio.get_running_loop().time()

    assert run_in_virtual_time(main(), grace=0) == 0.0


def test_the_executor_given_runs_the_work_and_its_shutdown_is_waited_for() -> None:
    # The default executor's shutdown, mid-run and while work of one's own executor runs, waits
    # on a thread (counted, with a grace of 0); the work still running is counted after it, and
    # once everything is done a wait on nothing is a deadlock again.
    reached: list[str] = []

    async def main() -> None:
        loop = asyncio.get_running_loop()
        await asyncio.to_thread(time.sleep, 0.01)
        with ThreadPoolExecutor(thread_name_prefix="own") as pool:
            name = await loop.run_in_executor(pool, lambda: threading.current_thread().name)
            assert name.startswith("own")
            slow = loop.run_in_executor(pool, time.sleep, 0.1)
            await loop.shutdown_default_executor()
            reached.append("shut down")
            await slow
            reached.append("slow work done")
        await loop.shutdown_default_executor()  # again: nothing left to wait for
        await asyncio.Event().wait()

    assert deadlocked(main, grace=0)
    assert reached == ["shut down", "slow work done"]


def test_a_thread_of_other_origin_may_wake_the_loop_within_the_grace() -> None:
    async def main() -> str:
        loop = asyncio.get_running_loop()
        woken: asyncio.Future[str] = loop.create_future()
        threading.Timer(0.05, lambda: loop.call_soon_threadsafe(woken.set_result, "woken")).start()
        return await woken

    assert run_in_virtual_time(main(), grace=5) == "woken"


def test_ready_io_runs_before_time_moves() -> None:
    async def main() -> list[tuple[bytes, float]]:
        loop = asyncio.get_running_loop()
        near, far = socket.socketpair()
        near.setblocking(False)
        got: list[tuple[bytes, float]] = []

        async def read() -> None:
            got.append((await loop.sock_recv(near, 10), loop.time()))

        with near, far:
            reader = asyncio.create_task(read())
            await asyncio.sleep(0)  # the reader now waits on the socket
            far.send(b"ping")
            await asyncio.sleep(10)  # the loop finds the socket ready and a timer 10 s away
            await reader
        return got

    assert run_in_virtual_time(main()) == [(b"ping", 0.0)]


def test_a_socket_read_and_written_at_once() -> None:
    # A reader and a writer on one socket: the loop's selector modifies the registration.
    async def main() -> list[str]:
        loop = asyncio.get_running_loop()
        near, far = socket.socketpair()
        done: list[str] = []
        both = asyncio.Event()

        def on(what: str) -> None:
            done.append(what)
            (loop.remove_reader if what == "read" else loop.remove_writer)(near.fileno())
            if len(done) == 2:
                both.set()

        with near, far:
            far.send(b"ping")
            loop.add_reader(near.fileno(), on, "read")
            loop.add_writer(near.fileno(), on, "write")
            await both.wait()
        return sorted(done)

    assert run_in_virtual_time(main()) == ["read", "write"]
