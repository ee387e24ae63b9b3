"""Full-loop cost of agentrig on W(N), against a bare-Python floor measured in the same process.

W(N): one user message, N model replies each calling ``add(a=i, b=1)``, then the final text
"done" (N + 1 steps, N tool executions). The agent is ``AgentBuilder.base()`` with the tool,
``UseLlmConfig(ScriptedLLM(...))`` and ``UseGuards`` limits that never trigger; the execution
buffer is on (the default). The floor does the same work on plain dicts and lists.

    .venv/bin/python bench/loop.py                 # N = 10, 100, 300, 1000
    .venv/bin/python bench/loop.py --quick         # a smoke run (samples of 2 ms, not 20)
    .venv/bin/python bench/loop.py --sizes 10,1000 --repeats 9 --json results/loop.json
    .venv/bin/python bench/loop.py --sync-only     # the sync path and the floor alone

Beside the sync path (``execute``) it times the async path (``aexecute`` on one event loop) with
the tool as ``async def`` and with the sync tool (run in a worker thread), and a parallel-tools
workload: one step with 10 calls of a tool that waits 10 ms of real time, each path.
``--sync-only`` times the sync path and the floor alone, as earlier versions of this script did:
``rounds.py --against`` compares revisions that way, since timing the async samples in between
moves the sync figures by a few percent (the caches and the collector see other work).

Prints the median µs per step over samples (a sample runs the workload back to back until it
lasts at least 20 ms, as pyperf does: a single run of W(10) takes about a millisecond, which
mostly times cold caches), peak memory (a separate run under tracemalloc), the ratio
agentrig/floor for each N, and the growth ratio: µs/step at the largest N divided by µs/step at
the smallest (N=1000 vs N=10 by default; linear cost gives about 1).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import _common as common
import _workload as workload

SIZES = (10, 100, 300, 1000)
QUICK_SIZES = (3, 5)
REPEATS = 7
QUICK_REPEATS = 2
TARGET_GROWTH = 1.5
ASYNC_TARGET_RATIO = 1.5
"""The async path's target: at most this times the sync path's µs per step, at every N."""
PARALLEL_TARGET_MS = 15.0
"""The parallel-tools target: the step with 10 calls of 10 ms takes at most this in the async path."""
REFERENCE_FLOOR_US = 8.0
"""The upper end of the floor quoted for the reference 2-core machine (5-8 µs/step)."""


CONTENDERS: dict[str, Callable[[int], Callable[[], Any]]] = {
    "agentrig": workload.prepare_agentrig,
    "async": workload.prepare_agentrig_async,
    "async_sync_tool": workload.prepare_agentrig_async_sync_tool,
    "floor": workload.prepare_floor,
}
"""What each sample times: the sync path, the async path (async tool; and the sync tool in a
worker thread), and the bare-Python floor."""

SYNC_ONLY = ("agentrig", "floor")
"""What ``--sync-only`` times."""


def check(name: str, n: int, result: Any) -> None:
    """The run's result is right (the floor's, or the agent's on any path)."""
    if name == "floor":
        workload.check_floor(n, result)
    else:
        workload.check_agentrig(n, result)


def calibrate(n: int, names: Sequence[str], sample_ns: int) -> dict[str, int]:
    """Runs per sample of each contender named on W(n), from one checked warm-up run each: as
    many as last ``sample_ns``."""
    loops = {}
    for name in names:
        prepare = CONTENDERS[name]
        elapsed, result = common.timed_ns(lambda prepare=prepare: prepare(n))
        check(name, n, result)
        loops[name] = common.loops_for(elapsed, sample_ns)
    return loops


def sample(n: int, loops: dict[str, int]) -> dict[str, float]:
    """One checked sample of each contender calibrated in ``loops`` on W(n): ns per run."""
    timings = {}
    for name in loops:
        prepare = CONTENDERS[name]
        ns, results = common.timed_loops_ns(lambda prepare=prepare: prepare(n), loops[name])
        for result in results:
            check(name, n, result)
        timings[name] = ns
    return timings


def measure(
    sizes: Sequence[int],
    repeats: int,
    names: Sequence[str] = tuple(CONTENDERS),
    sample_ns: int = common.MIN_SAMPLE_NS,
) -> list[dict[str, Any]]:
    """Median µs/step and peak memory of agentrig and of the floor on W(n) for each size (and
    of the async paths, unless ``names`` leaves them out).

    Samples take turns: each contender, for every size, then the next round. A spell of machine
    load then hits all alike and every size alike, rather than the sizes measured during it
    (this machine's speed drifts by up to 2x over minutes).
    """
    loops = {n: calibrate(n, names, sample_ns) for n in sizes}
    samples: dict[int, list[dict[str, float]]] = {n: [] for n in sizes}
    for _ in range(repeats):
        for n in sizes:
            samples[n].append(sample(n, loops[n]))
    return [row(n, repeats, loops[n], samples[n]) for n in sizes]


def row(
    n: int, repeats: int, loops: dict[str, int], samples: list[dict[str, float]]
) -> dict[str, Any]:
    """The result row of W(n), with peak memory from a separate traced run of each."""
    steps = n + 1
    ns = {name: [timing[name] for timing in samples] for name in loops}
    agentrig_peak, final = common.peak_bytes(lambda: workload.prepare_agentrig(n))
    workload.check_agentrig(n, final)
    floor_peak, result = common.peak_bytes(lambda: workload.prepare_floor(n))
    workload.check_floor(n, result)
    us = {name: common.median(values) / 1000 / steps for name, values in ns.items()}
    timed_async = "async" in us
    return {
        "n": n,
        "steps": steps,
        "repeats": repeats,
        "agentrig_runs_per_sample": loops["agentrig"],
        "floor_runs_per_sample": loops["floor"],
        "agentrig_us_per_step": us["agentrig"],
        "agentrig_us_per_step_min": min(ns["agentrig"]) / 1000 / steps,
        "async_us_per_step": us["async"] if timed_async else None,
        "async_sync_tool_us_per_step": us["async_sync_tool"] if timed_async else None,
        "async_ratio": us["async"] / us["agentrig"] if timed_async else None,
        "async_sync_tool_ratio": us["async_sync_tool"] / us["agentrig"] if timed_async else None,
        "floor_us_per_step": us["floor"],
        "floor_us_per_step_min": min(ns["floor"]) / 1000 / steps,
        "ratio": us["agentrig"] / us["floor"],
        "agentrig_peak_kib": agentrig_peak / 1024,
        "floor_peak_kib": floor_peak / 1024,
        "agentrig_total_ms": common.median(ns["agentrig"]) / 1e6,
    }


def measure_parallel(repeats: int) -> dict[str, Any]:
    """The parallel-tools workload: ms for the run whose first step makes 10 calls of a tool
    that waits 10 ms (the second step only answers), each path, median of ``repeats``."""
    timings: dict[str, list[float]] = {"async": [], "sync": []}
    for _ in range(repeats):
        for name in timings:
            elapsed, final = common.timed_ns(
                lambda name=name: workload.prepare_parallel(name == "async")
            )
            workload.check_parallel(final)
            timings[name].append(elapsed / 1e6)
    return {
        "calls": workload.PARALLEL_CALLS,
        "wait_ms": workload.WAIT_SECONDS * 1000,
        "async_ms": common.median(timings["async"]),
        "sync_ms": common.median(timings["sync"]),
        "target_ms": PARALLEL_TARGET_MS,
        "met": common.median(timings["async"]) <= PARALLEL_TARGET_MS,
    }


def growth(results: list[dict[str, Any]], key: str) -> float:
    """µs/step at the largest N over µs/step at the smallest."""
    ordered = sorted(results, key=lambda row: row["n"])
    return float(ordered[-1][key] / ordered[0][key])


def target_check(results: list[dict[str, Any]], agentrig_growth: float) -> dict[str, Any]:
    """The performance targets (docs/design.md) against this run, measured and scaled to the reference machine.

    The reference estimate multiplies each N's agentrig µs/step by how much faster the reference
    floor is than the floor measured here in the same process; it uses the slowest reference
    floor (8 µs/step), so it is the least favourable reading of the targets' figures.
    """
    worst = max(results, key=lambda row: row["agentrig_us_per_step"])
    scaled = [
        row["agentrig_us_per_step"] * REFERENCE_FLOOR_US / row["floor_us_per_step"]
        for row in results
    ]
    measured_ok = worst["agentrig_us_per_step"] <= common.TARGET_US_PER_STEP
    scaled_ok = max(scaled) <= common.TARGET_US_PER_STEP
    growth_ok = agentrig_growth <= TARGET_GROWTH

    def verdict(ok: bool) -> str:
        return "met" if ok else "MISSED"

    lines = [
        f"target <= {common.TARGET_US_PER_STEP:.0f} us/step, measured here: worst "
        f"{worst['agentrig_us_per_step']:.0f} us/step at N={worst['n']} -> {verdict(measured_ok)}",
        f"  scaled to the reference machine (floor {REFERENCE_FLOOR_US:.0f} us/step; here "
        f"{min(r['floor_us_per_step'] for r in results):.1f}-"
        f"{max(r['floor_us_per_step'] for r in results):.1f}): worst {max(scaled):.0f} us/step "
        f"-> {verdict(scaled_ok)} (an estimate, not a measurement)",
        f"target growth ratio <= {TARGET_GROWTH}: {agentrig_growth:.2f} -> {verdict(growth_ok)}",
    ]
    return {
        "us_per_step_target": common.TARGET_US_PER_STEP,
        "worst_us_per_step": worst["agentrig_us_per_step"],
        "met_as_measured": measured_ok,
        "reference_floor_us": REFERENCE_FLOOR_US,
        "worst_us_per_step_scaled_to_reference": max(scaled),
        "met_scaled_to_reference": scaled_ok,
        "growth_target": TARGET_GROWTH,
        "growth_met": growth_ok,
        "lines": lines,
    }


def main() -> None:
    parser = common.parser(__doc__.splitlines()[0])
    parser.add_argument(
        "--sync-only",
        action="store_true",
        help="time the sync path and the floor only (no async path, no parallel tools)",
    )
    args = parser.parse_args()
    sizes, repeats = common.resolve(
        args, sizes=SIZES, quick_sizes=QUICK_SIZES, repeats=REPEATS, quick_repeats=QUICK_REPEATS
    )
    sample_ns = common.QUICK_SAMPLE_NS if args.quick else common.MIN_SAMPLE_NS
    info = common.machine()
    print("bench/loop.py: W(N) full loop, agentrig vs bare-Python floor (same process)")
    print(common.machine_line(info))
    print(
        f"median of {repeats} samples per N (a sample: runs back to back for at least "
        f"{sample_ns // 1_000_000} ms); peak memory from a separate tracemalloc run\n"
    )
    names = SYNC_ONLY if args.sync_only else tuple(CONTENDERS)
    results = measure(sizes, repeats, names, sample_ns)
    print(common.table(*_table(results, with_async=not args.sync_only)))
    smallest, largest = min(sizes), max(sizes)
    agentrig_growth = growth(results, "agentrig_us_per_step")
    floor_growth = growth(results, "floor_us_per_step")
    print(
        f"\ngrowth ratio (us/step at N={largest} / us/step at N={smallest}): "
        f"agentrig {agentrig_growth:.2f}, floor {floor_growth:.2f}"
    )
    targets = target_check(results, agentrig_growth)
    parallel = None
    if not args.sync_only:
        parallel = measure_parallel(repeats)
        worst_async = max(row["async_ratio"] for row in results)
        targets["lines"] += [
            f"target async <= {ASYNC_TARGET_RATIO}x the sync us/step at every N: worst "
            f"{worst_async:.2f}x -> {'met' if worst_async <= ASYNC_TARGET_RATIO else 'MISSED'}",
            f"parallel tools ({parallel['calls']} calls of {parallel['wait_ms']:.0f} ms in one "
            f"step): async {parallel['async_ms']:.1f} ms, sync {parallel['sync_ms']:.1f} ms; "
            f"target async <= {PARALLEL_TARGET_MS:.0f} ms -> "
            f"{'met' if parallel['met'] else 'MISSED'}",
        ]
    print()
    for line in targets["lines"]:
        print(line)
    common.save_json(
        args.json,
        {
            "benchmark": "loop",
            "command": common.command_line(),
            "machine": info,
            "results": results,
            "growth_ratio": {
                "from_n": smallest,
                "to_n": largest,
                "agentrig": agentrig_growth,
                "floor": floor_growth,
            },
            "targets": {key: value for key, value in targets.items() if key != "lines"},
            "parallel_tools": parallel,
        },
    )


def _table(
    results: list[dict[str, Any]], *, with_async: bool
) -> tuple[tuple[str, ...], list[tuple[Any, ...]]]:
    """The headers and rows of the result table (the async columns only when timed)."""
    headers = ["N", "steps", "agentrig us/step", "floor us/step", "agentrig/floor"]
    if with_async:
        headers += [
            "async us/step",
            "async/sync",
            "async (sync tool) us/step",
            "async (sync tool)/sync",
        ]
    headers += ["agentrig peak KiB", "floor peak KiB"]
    rows = []
    for row in results:
        cells: list[Any] = [
            row["n"],
            row["steps"],
            row["agentrig_us_per_step"],
            row["floor_us_per_step"],
            f"{row['ratio']:.1f}x",
        ]
        if with_async:
            cells += [
                row["async_us_per_step"],
                f"{row['async_ratio']:.2f}x",
                row["async_sync_tool_us_per_step"],
                f"{row['async_sync_tool_ratio']:.2f}x",
            ]
        cells += [row["agentrig_peak_kib"], row["floor_peak_kib"]]
        rows.append(tuple(cells))
    return tuple(headers), rows


if __name__ == "__main__":
    main()
