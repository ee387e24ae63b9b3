"""Throughput of the live-trial traffic control (``agentrig.harness.live.limits``) under rate
limits, simulated in virtual time: deterministic, load-free, and a second or so of real time.

Each scenario sends N calls to one provider capped at CAP concurrent calls; a successful attempt
takes 1 s, a rate-limited one 0.1 s. It prints, per configuration of the limits:

- ``busy``: the slots' utilisation, attempt-seconds / (CAP x makespan);
- ``done/ideal``: the calls answered per second over CAP per second (what CAP slots would
  answer if no attempt failed);
- ``min limit``: the lowest concurrency AIMD cut to, ``429s`` the rate limits met, and
  ``lost`` the calls that met one on all of their attempts (20).

Scenarios: ``noise`` answers 429 to a random 30% of attempts whatever the load (with
``Retry-After: 0``, or none); ``server C`` answers 429 to every attempt beyond C in flight
(the provider's true capacity), where the ideal is C, not CAP.

    .venv/bin/python bench/live_limits.py
    .venv/bin/python bench/live_limits.py --calls 2000 --cap 16
"""

from __future__ import annotations

import argparse
import asyncio
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from agentrig.harness.live.limits import ProviderLimits, Traffic
from agentrig.harness.live.virtual_time import run_in_virtual_time


class RateLimited(Exception):
    def __init__(self, retry_after: float | None) -> None:
        super().__init__("HTTP 429")
        self.status_code = 429
        self.retry_after = retry_after


@dataclass
class Outcome:
    makespan: float
    busy: float
    rate_limited: int
    min_limit: int
    lost: int


Refuse = Callable[[int], bool]
"""Whether the server refuses an attempt, given the attempts in flight at the server."""


def simulate(
    limits: ProviderLimits, calls: int, refuse: Refuse, retry_after: float | None
) -> Outcome:
    traffic = Traffic(limits)
    in_flight = 0
    busy = 0.0

    async def attempt() -> None:
        nonlocal in_flight, busy
        in_flight += 1
        try:
            if refuse(in_flight):
                busy += 0.1
                await asyncio.sleep(0.1)
                raise RateLimited(retry_after)
            busy += 1.0
            await asyncio.sleep(1.0)
        finally:
            in_flight -= 1

    async def main() -> float:
        await asyncio.gather(
            *(traffic.call("p", attempt, lambda _: 0.0) for _ in range(calls)),
            return_exceptions=True,  # counted below as the calls given up
        )
        return asyncio.get_running_loop().time()

    makespan = run_in_virtual_time(main())
    stats = traffic.stats()["p"]
    rate_limited = sum(stats.rate_limited.values())
    return Outcome(makespan, busy, rate_limited, stats.min_limit, stats.gave_up)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--cap", type=int, default=8)
    parser.add_argument("--seed", type=int, default=2026)
    options = parser.parse_args()
    cap, calls = options.cap, options.calls
    configurations: dict[str, dict[str, Any]] = {
        "defaults (x0.7, +1 a success)": {},
        "decrease=0.5, recover_after=4": {"decrease": 0.5, "recover_after": 4},
        "decrease=1 (no AIMD cut)": {"decrease": 1.0},
    }
    capacity = max(1, cap * 5 // 8)

    def noise() -> Refuse:
        rng = random.Random(options.seed)
        return lambda _in_flight: rng.random() < 0.3

    scenarios: list[tuple[str, Callable[[], Refuse], float | None, int]] = [
        ("noise 30%, Retry-After: 0", noise, 0.0, cap),
        ("noise 30%, no Retry-After", noise, None, cap),
        (f"server {capacity}, Retry-After: 0", lambda: lambda n: n > capacity, 0.0, capacity),
        (f"server {capacity}, no Retry-After", lambda: lambda n: n > capacity, None, capacity),
    ]
    print(f"{calls} calls, cap {cap}; success 1 s, rate limit 0.1 s (virtual time)")
    header = f"{'scenario':34} {'limits':32} {'busy':>6} {'done/ideal':>10} {'min limit':>9}"
    print(header + f" {'429s':>6} {'lost':>5}")
    for name, refuse, retry_after, ideal in scenarios:
        for label, settings in configurations.items():
            limits = ProviderLimits({"p": cap}, seed=options.seed, **settings)
            out = simulate(limits, calls, refuse(), retry_after)
            busy = out.busy / (cap * out.makespan)
            done = (calls - out.lost) / out.makespan / ideal
            print(
                f"{name:34} {label:32} {busy:6.1%} {done:10.1%} {out.min_limit:9d} "
                f"{out.rate_limited:6d} {out.lost:5d}"
            )


if __name__ == "__main__":
    main()
