"""W(N) on agentrig and on peer frameworks, in the same process, each with its own test double.

Peers: pydantic-ai (``FunctionModel``), LangGraph (prebuilt ReAct agent with a fake chat model
that supports tool calls) and the OpenAI Agents SDK (a scripted ``Model``); install them with
``pip install -e '.[bench]'``. A peer that is not installed is skipped, saying so.

    .venv/bin/python bench/peers.py                          # N = 10, 100, 300, 1000
    .venv/bin/python bench/peers.py --quick                  # a smoke run (samples of 2 ms)
    .venv/bin/python bench/peers.py --peers langgraph --sizes 10,300 --repeats 5

Each framework runs through its usual synchronous entry point (``AgentLoop.execute``,
``Agent.run_sync``, ``graph.invoke``, ``Runner.run_sync``) and through its async one
(``AgentLoop.aexecute``, ``Agent.run``, ``graph.ainvoke``, ``Runner.run``), awaited on one event
loop as a server awaits it; every framework runs the same sync ``add`` tool, each entry point
running it its own way (agentrig's async path in a worker thread). For every N the frameworks
and entry points take turns, sample by sample, so that a change in machine load hits all of them
alike; a sample lasts at least 20 ms, as in ``bench/loop.py``. The table shows the median µs per
step of each entry point, the ratios peer/agentrig (sync to sync, async to async) and each
framework's async/sync; where the performance targets (docs/design.md) quote the fastest
peer's figure for their reference machine, agentrig's sync path is also scaled to that machine by how much slower the fastest
peer's sync path ran here.
"""

from __future__ import annotations

import functools
import importlib.metadata
from collections.abc import Callable
from typing import Any

import _common as common
import _peers as peers
import _workload as workload

SIZES = (10, 100, 300, 1000)
QUICK_SIZES = (3, 5)
REPEATS = 3
QUICK_REPEATS = 1
INSTALL_HINT = "pip install -e '.[bench]'"
REFERENCE_FASTEST_PEER_US = {10: 2000.0, 300: 3100.0}
"""µs/step of the fastest peer on the reference 2-core machine of the performance targets
(docs/design.md#performance-targets), at the N they quote."""

Framework = tuple[Callable[[int], Callable[[], Any]], Callable[[int, Any], None]]


def frameworks(selected: list[str] | None) -> tuple[dict[str, Framework], dict[str, str]]:
    """agentrig plus the installed peers, each entry point as ``NAME`` (sync) and
    ``NAME async``; and the version of each framework."""
    found: dict[str, Framework] = {
        "agentrig": (workload.prepare_agentrig, workload.check_agentrig),
        "agentrig async": (workload.prepare_agentrig_async_sync_tool, workload.check_agentrig),
    }
    versions = {"agentrig": importlib.metadata.version("agentrig")}
    for name, (distribution, load) in peers.PEERS.items():
        if selected is not None and name not in selected:
            continue
        try:
            entries = load()
        except ImportError as error:
            print(f"skipped: {name} not installed ({INSTALL_HINT}): {error}")
            continue
        found[name], found[f"{name} async"] = entries["sync"], entries["async"]
        versions[name] = importlib.metadata.version(distribution)
    return found, versions


def split(found: dict[str, Framework]) -> list[str]:
    """The frameworks' names (``found`` holds each twice: ``NAME`` and ``NAME async``)."""
    return [name for name in found if not name.endswith(" async")]


def measure(
    found: dict[str, Framework], n: int, repeats: int, sample_ns: int = common.MIN_SAMPLE_NS
) -> dict[str, dict[str, Any]]:
    """Median µs per step of every framework on W(n), samples taking turns between frameworks.

    As in ``bench/loop.py``, a sample lasts at least ``sample_ns`` (20 ms; 2 ms with
    ``--quick``): a framework whose run of W(n) is
    shorter runs it back to back within one sample (agentrig at small N; a peer's run is longer).
    The number of runs per sample comes from a checked warm-up run of W(min(n, 10)), scaled to n.
    """
    warm_up = min(n, 10)  # enough to warm every code path; large N would only cost time
    loops: dict[str, int] = {}
    for name, (prepare, check) in found.items():
        warm_up_ns, result = common.timed_ns(functools.partial(prepare, warm_up))
        check(warm_up, result)
        loops[name] = common.loops_for(warm_up_ns * (n + 1) / (warm_up + 1), sample_ns)
    samples: dict[str, list[float]] = {name: [] for name in found}
    for _ in range(repeats):
        for name, (prepare, check) in found.items():
            elapsed, results = common.timed_loops_ns(functools.partial(prepare, n), loops[name])
            for result in results:
                check(n, result)
            samples[name].append(elapsed)
    steps = n + 1
    return {
        name: {
            "us_per_step": common.median(values) / 1000 / steps,
            "us_per_step_min": min(values) / 1000 / steps,
            "total_ms": common.median(values) / 1e6,
            "runs_per_sample": loops[name],
        }
        for name, values in samples.items()
    }


def reference_check(results: dict[int, dict[str, dict[str, Any]]]) -> dict[str, Any] | None:
    """agentrig scaled to the targets' reference machine by the fastest peer, where the targets
    quote a figure for that N: how much slower the fastest peer ran here than there is taken
    as how much slower this machine is. ``None`` when no peer ran at such an N."""
    rows = []
    for n, reference_us in REFERENCE_FASTEST_PEER_US.items():
        peers_here = {name: row for name, row in results.get(n, {}).items() if name != "agentrig"}
        if not peers_here:
            continue
        fastest = min(peers_here, key=lambda name: peers_here[name]["us_per_step"])
        slowdown = peers_here[fastest]["us_per_step"] / reference_us
        agentrig_us = results[n]["agentrig"]["us_per_step"]
        rows.append(
            {
                "n": n,
                "fastest_peer": fastest,
                "fastest_peer_us_per_step": peers_here[fastest]["us_per_step"],
                "reference_fastest_peer_us_per_step": reference_us,
                "machine_slowdown": slowdown,
                "agentrig_us_per_step": agentrig_us,
                "agentrig_us_per_step_scaled": agentrig_us / slowdown,
            }
        )
    if not rows:
        return None
    worst = max(row["agentrig_us_per_step_scaled"] for row in rows)
    return {
        "rows": rows,
        "target_us_per_step": common.TARGET_US_PER_STEP,
        "worst_scaled_us_per_step": worst,
        "met_scaled": worst <= common.TARGET_US_PER_STEP,
    }


def print_reference_check(check: dict[str, Any]) -> None:
    """The scaled figures, one line per N, and the verdict."""
    print("\nscaled to the targets' reference machine by its fastest-peer figures (an estimate):")
    for row in check["rows"]:
        print(
            f"  N={row['n']}: {row['fastest_peer']} {row['fastest_peer_us_per_step']:,.0f} us/step"
            f" here, {row['reference_fastest_peer_us_per_step']:,.0f} there"
            f" ({row['machine_slowdown']:.2f}x slower here); agentrig"
            f" {row['agentrig_us_per_step']:.0f} here -> {row['agentrig_us_per_step_scaled']:.0f}"
        )
    verdict = "met" if check["met_scaled"] else "MISSED"
    print(
        f"  target <= {common.TARGET_US_PER_STEP:.0f} us/step: worst"
        f" {check['worst_scaled_us_per_step']:.0f} us/step scaled -> {verdict}"
        " (an estimate, not a measurement)"
    )


def main() -> None:
    parser = common.parser(__doc__.splitlines()[0])
    parser.add_argument(
        "--peers",
        default=None,
        help=f"comma-separated subset of: {', '.join(peers.PEERS)} (default: all installed)",
    )
    args = parser.parse_args()
    sizes, repeats = common.resolve(
        args, sizes=SIZES, quick_sizes=QUICK_SIZES, repeats=REPEATS, quick_repeats=QUICK_REPEATS
    )
    selected = [name.strip() for name in args.peers.split(",")] if args.peers else None
    unknown = sorted(set(selected or ()) - set(peers.PEERS))
    if unknown:
        raise SystemExit(f"unknown peer(s): {', '.join(unknown)}; known: {', '.join(peers.PEERS)}")
    sample_ns = common.QUICK_SAMPLE_NS if args.quick else common.MIN_SAMPLE_NS
    info = common.machine()
    print("bench/peers.py: W(N) on agentrig and peer frameworks (same process)")
    print(common.machine_line(info))
    found, versions = frameworks(selected)
    print("versions: " + ", ".join(f"{name} {version}" for name, version in versions.items()))
    print(
        f"median of {repeats} samples per framework and N (a sample: runs back to back for at"
        f" least {sample_ns // 1_000_000} ms; frameworks take turns)\n"
    )
    measured = {n: measure(found, n, repeats, sample_ns) for n in sizes}
    names = split(found)
    results = {n: {name: measured[n][name] for name in names} for n in sizes}
    async_results = {n: {name: measured[n][f"{name} async"] for name in names} for n in sizes}
    rows = []
    for name in names:
        for n in sizes:
            sync_us = results[n][name]["us_per_step"]
            async_us = async_results[n][name]["us_per_step"]
            sync_ratio = sync_us / results[n]["agentrig"]["us_per_step"]
            async_ratio = async_us / async_results[n]["agentrig"]["us_per_step"]
            rows.append(
                (
                    name,
                    n,
                    sync_us,
                    async_us,
                    f"{sync_ratio:.1f}x",
                    f"{async_ratio:.1f}x",
                    f"{async_us / sync_us:.2f}",
                )
            )
    headers = (
        "framework",
        "N",
        "sync us/step",
        "async us/step",
        "sync vs agentrig",
        "async vs agentrig",
        "async/sync",
    )
    print(common.table(headers, rows))
    smallest, largest = min(sizes), max(sizes)
    growth = {
        name: results[largest][name]["us_per_step"] / results[smallest][name]["us_per_step"]
        for name in names
    }
    async_growth = {
        name: async_results[largest][name]["us_per_step"]
        / async_results[smallest][name]["us_per_step"]
        for name in names
    }
    for label, ratios in (("sync", growth), ("async", async_growth)):
        print(
            f"\n{label} growth ratio (us/step at N={largest} / us/step at N={smallest}): "
            + ", ".join(f"{name} {value:.2f}" for name, value in ratios.items())
        )
    reference = reference_check(results)
    if reference is not None:
        print_reference_check(reference)
    if len(names) == 1:
        print(f"\nno peer ran: install them with {INSTALL_HINT}")
    common.save_json(
        args.json,
        {
            "benchmark": "peers",
            "command": common.command_line(),
            "machine": info,
            "versions": versions,
            "repeats": repeats,
            "results": [
                {"framework": name, "entry": entry, "n": n, **table[n][name]}
                for entry, table in (("sync", results), ("async", async_results))
                for name in names
                for n in sizes
            ],
            "growth_ratio": {"from_n": smallest, "to_n": largest, **growth},
            "async_growth_ratio": {"from_n": smallest, "to_n": largest, **async_growth},
            "reference_check": reference,
        },
    )


if __name__ == "__main__":
    main()
