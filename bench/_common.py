"""Shared helpers for the benchmark scripts: timing, memory, tables, machine facts, options.

Timing rules: ``time.perf_counter_ns``; the garbage collector is collected before and disabled
during each timed sample; a sample of a short workload spans back-to-back runs, so that it lasts
at least 20 ms; a benchmark reports the median of its samples. Peak memory comes from a
separate, untimed run under ``tracemalloc`` (tracing slows code down, so it never overlaps a
timed run). Setup (building an agent, its script and its input) and result checks happen outside
the timed region.
"""

from __future__ import annotations

import argparse
import datetime
import gc
import json
import os
import platform
import statistics
import sys
import time
import tracemalloc
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

Prepared = Callable[[], Any]
"""A zero-argument callable that runs the workload once and returns its result."""


def timed_ns(prepare: Callable[[], Prepared]) -> tuple[int, Any]:
    """Collect garbage, build a run with ``prepare()`` (untimed), then time the run with the GC
    disabled; ``(elapsed ns, result)``.

    Collecting before the preparation rather than right before the run keeps the run from paying
    for the memory a full collection hands back to the system.
    """
    elapsed, results = timed_loops_ns(prepare, 1)
    return round(elapsed), results[0]


def timed_loops_ns(prepare: Callable[[], Prepared], loops: int) -> tuple[float, list[Any]]:
    """Like ``timed_ns``, for ``loops`` runs prepared up front and timed back to back:
    ``(elapsed ns per run, every run's result)``.

    A run of a millisecond or so, timed alone, mostly measures cold caches and the timer; as
    pyperf does, one sample then spans several runs (see ``loops_for``).
    """
    gc.collect()
    # What survived is moved out of the collector's sight, so that the next sample's collection
    # walks only what came since: a full one walked every imported SDK module again (0.6 s a
    # sample once the endpoint benchmark had imported three SDKs, more than its --quick work).
    gc.freeze()
    runs = [prepare() for _ in range(loops)]
    results: list[Any] = []
    enabled = gc.isenabled()
    gc.disable()
    try:
        started = time.perf_counter_ns()
        for run in runs:
            results.append(run())
        elapsed = time.perf_counter_ns() - started
    finally:
        if enabled:
            gc.enable()
    return elapsed / loops, results


TARGET_US_PER_STEP = 100.0
"""The performance target for the full loop (docs/design.md#performance-targets): at most this many µs per step, at every N up to 1000."""

MIN_SAMPLE_NS = 20_000_000
"""Shortest timed sample (20 ms): shorter workloads are run back to back within one sample."""


QUICK_SAMPLE_NS = 2_000_000
"""Shortest sample of a ``--quick`` run (2 ms): a smoke run checks that a script works, and its
samples of 20 ms were most of its time."""


def loops_for(run_ns: float, minimum_ns: int = MIN_SAMPLE_NS) -> int:
    """How many back-to-back runs of ``run_ns`` one sample needs to last ``minimum_ns``."""
    return max(1, min(1000, -(-minimum_ns // max(1, int(run_ns)))))


def peak_bytes(prepare: Callable[[], Prepared]) -> tuple[int, Any]:
    """Peak traced allocation (bytes above the start) of one untimed run, and its result."""
    gc.collect()
    run = prepare()
    tracemalloc.start()
    try:
        baseline, _ = tracemalloc.get_traced_memory()
        result = run()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return max(0, peak - baseline), result


def median(values: Sequence[float]) -> float:
    """The median of ``values``."""
    return float(statistics.median(values))


def machine() -> dict[str, Any]:
    """What the numbers were measured on."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        load = os.getloadavg()[0]
    except OSError:
        load = None
    return {
        "cpu": cpu,
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "executable": sys.executable,
        "python_build": " ".join(platform.python_build()),
        "libpython": libpython_linkage(),
        "platform": platform.platform(),
        "load_average_1m": load,
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
    }


def libpython_linkage() -> str:
    """``"shared"`` when the interpreter runs from a ``libpython*.so`` (as pyenv builds it),
    ``"static"`` when the executable holds the interpreter (as Debian's ``/usr/bin/python3``
    does), ``"unknown"`` off Linux. Builds differ in speed, so a run names its own."""
    try:
        maps = Path("/proc/self/maps").read_text()
    except OSError:
        return "unknown"
    return "shared" if "/libpython" in maps else "static"


def machine_line(info: dict[str, Any]) -> str:
    """One line describing the machine, and one describing the interpreter."""
    load = info["load_average_1m"]
    load_text = f", load {load:.1f}" if load is not None else ""
    return (
        f"machine: {info['cpu']}, {info['cpus']} CPUs, {info['platform']}{load_text}; "
        f"{info['date']}\n"
        f"python: {info['implementation']} {info['python']} ({info['python_build']}), "
        f"{info['executable']}, libpython {info['libpython']}"
    )


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A plain-text table: right-aligned columns, a rule under the headers."""
    cells = [[str(h) for h in headers], *[[_cell(value) for value in row] for row in rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    lines = [
        "  ".join(cell.rjust(width) for cell, width in zip(row, widths, strict=True))
        for row in cells
    ]
    lines.insert(1, "  ".join("-" * width for width in widths))
    return "\n".join(lines)


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        if value >= 100:
            return f"{value:,.0f}"
        if value >= 10:
            return f"{value:.1f}"
        return f"{value:.2f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def sizes_option(text: str) -> tuple[int, ...]:
    """Parse ``--sizes 10,100,300``."""
    try:
        sizes = tuple(int(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected integers separated by commas: {text!r}"
        ) from None
    if not sizes or any(size < 1 for size in sizes):
        raise argparse.ArgumentTypeError(f"sizes must be positive integers: {text!r}")
    return sizes


def parser(description: str) -> argparse.ArgumentParser:
    """An argument parser with the options every script shares."""
    result = argparse.ArgumentParser(description=description)
    result.add_argument(
        "--quick", action="store_true", help="tiny sizes and few repeats (a smoke run for CI)"
    )
    result.add_argument(
        "--sizes", type=sizes_option, default=None, help="comma-separated sizes, e.g. 10,100"
    )
    result.add_argument("--repeats", type=int, default=None, help="timed runs per size")
    result.add_argument("--json", type=Path, default=None, metavar="PATH", help="save results")
    return result


def resolve(
    args: argparse.Namespace,
    *,
    sizes: tuple[int, ...],
    quick_sizes: tuple[int, ...],
    repeats: int,
    quick_repeats: int,
) -> tuple[tuple[int, ...], int]:
    """The sizes and repeat count chosen by ``--sizes``, ``--repeats`` and ``--quick``."""
    chosen_sizes = args.sizes or (quick_sizes if args.quick else sizes)
    chosen_repeats = args.repeats or (quick_repeats if args.quick else repeats)
    if chosen_repeats < 1:
        raise SystemExit("--repeats must be >= 1")
    return chosen_sizes, chosen_repeats


def save_json(path: Path | None, data: dict[str, Any]) -> None:
    """Write ``data`` to ``path`` (when given) and say so."""
    if path is None:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    print(f"\nresults saved to {path}")


def command_line() -> str:
    """The command that produced the output (for the record)."""
    return " ".join([Path(sys.executable).name, *sys.argv])
