"""In process the fuzzed agent's sleeps return at once, and only while it runs."""

from __future__ import annotations

import asyncio
import time

import anyio

from agentrig.harness.endpoint.handle import EndpointHandle
from agentrig.harness.fuzz.offer import probe_scenario
from agentrig.harness.fuzz.waits import agent_waits, skipped_waits

HOUR = 3600.0
REAL_SLEEP = time.sleep


def test_sleeps_return_at_once_inside_and_are_restored_after():
    original, original_async = time.sleep, asyncio.sleep
    started = time.monotonic()
    with skipped_waits():
        time.sleep(HOUR)

        async def waits() -> str:
            await anyio.sleep(HOUR)
            return await asyncio.sleep(HOUR, "done")

        assert asyncio.run(waits()) == "done"
    assert time.monotonic() - started < HOUR  # the test would hang for hours otherwise
    assert time.sleep is original
    assert asyncio.sleep is original_async


def test_a_sleep_bound_by_name_inside_sleeps_for_real_after():
    with skipped_waits():
        bound = time.sleep  # as a module imported during a run binds it
        with skipped_waits():  # nested: the outer block still skips
            bound(HOUR)
        bound(HOUR)
        assert time.sleep is bound
    started = time.monotonic()
    bound(0.01)
    assert time.monotonic() - started >= 0.01


def test_a_timer_still_fires_at_its_time():
    async def timed_out() -> bool:
        try:
            await asyncio.wait_for(asyncio.Event().wait(), 0.01)
        except TimeoutError:
            return True
        return False

    with skipped_waits():
        started = time.monotonic()
        assert asyncio.run(timed_out())
    assert time.monotonic() - started >= 0.01


def test_an_agent_in_process_skips_its_waits_and_one_over_a_live_server_does_not():
    with agent_waits(EndpointHandle(probe_scenario("Hi"))):
        assert time.sleep is not REAL_SLEEP
    with EndpointHandle(probe_scenario("Hi"), live=True) as live, agent_waits(live):
        assert time.sleep is REAL_SLEEP


def test_a_skipped_sleep_takes_no_time_at_all():
    async def within_a_timer() -> None:
        # a skipped sleep of any length ends before a timer of half a second fires
        await asyncio.wait_for(asyncio.sleep(HOUR), 0.5)

    with skipped_waits():
        started = time.monotonic()
        for _ in range(10):
            time.sleep(HOUR)
        assert time.monotonic() - started < 10  # ten sleeps of even a second would take 10 s
        asyncio.run(within_a_timer())


def test_an_async_sleep_bound_by_name_inside_sleeps_for_real_after():
    with skipped_waits():
        bound = asyncio.sleep

    async def cut_short() -> bool:
        try:
            await asyncio.wait_for(bound(HOUR), 0.01)
        except TimeoutError:
            return True
        return False

    assert asyncio.run(cut_short())
