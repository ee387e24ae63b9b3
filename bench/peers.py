"""W(N) on agentrig and on peer frameworks, in the same process, each with its own test double.

Peers: pydantic-ai (``FunctionModel``), LangGraph (prebuilt ReAct agent with a fake chat model
that supports tool calls) and the OpenAI Agents SDK (a scripted ``Model``); install them with
``pip install -e '.[bench]'``. A peer that is not installed is skipped, saying so.

    .venv/bin/python bench/peers.py                          # N = 10, 100, 300, 1000
    .venv/bin/python bench/peers.py --quick                  # a smoke run
    .venv/bin/python bench/peers.py --peers langgraph --sizes 10,300 --repeats 5

Each framework runs through its usual synchronous entry point (``AgentLoop.execute``,
``Agent.run_sync``, ``graph.invoke``, ``Runner.run_sync``). For every N the frameworks take turns,
run by run, so that a change in machine load hits all of them alike; the table shows the median
µs per step and the ratio peer/agentrig.
"""

from __future__ import annotations

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
INSTALL_HINT = "pip install 'agentrig[bench]'"

Framework = tuple[Callable[[int], Callable[[], Any]], Callable[[int, Any], None]]


def frameworks(selected: list[str] | None) -> tuple[dict[str, Framework], dict[str, str]]:
    """agentrig plus the installed peers; and the version of each."""
    found: dict[str, Framework] = {"agentrig": (workload.prepare_agentrig, workload.check_agentrig)}
    versions = {"agentrig": importlib.metadata.version("agentrig")}
    for name, (distribution, load) in peers.PEERS.items():
        if selected is not None and name not in selected:
            continue
        try:
            found[name] = load()
        except ImportError as error:
            print(f"skipped: {name} not installed ({INSTALL_HINT}): {error}")
            continue
        versions[name] = importlib.metadata.version(distribution)
    return found, versions


def measure(found: dict[str, Framework], n: int, repeats: int) -> dict[str, dict[str, Any]]:
    """Median µs per step of every framework on W(n), runs interleaved."""
    warm_up = min(n, 10)  # enough to warm every code path; large N would only cost time
    for prepare, check in found.values():
        check(warm_up, prepare(warm_up)())
    samples: dict[str, list[int]] = {name: [] for name in found}
    for _ in range(repeats):
        for name, (prepare, check) in found.items():
            elapsed, result = common.timed_ns(lambda prepare=prepare: prepare(n))
            check(n, result)
            samples[name].append(elapsed)
    steps = n + 1
    return {
        name: {
            "us_per_step": common.median(values) / 1000 / steps,
            "us_per_step_min": min(values) / 1000 / steps,
            "total_ms": common.median(values) / 1e6,
        }
        for name, values in samples.items()
    }


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
    info = common.machine()
    print("bench/peers.py: W(N) on agentrig and peer frameworks (same process)")
    print(common.machine_line(info))
    found, versions = frameworks(selected)
    print("versions: " + ", ".join(f"{name} {version}" for name, version in versions.items()))
    print(f"median of {repeats} run(s) per framework and N\n")
    results = {n: measure(found, n, repeats) for n in sizes}
    rows = []
    for name in found:
        for n in sizes:
            us = results[n][name]["us_per_step"]
            ratio = us / results[n]["agentrig"]["us_per_step"]
            rows.append((name, n, us, f"{ratio:.1f}x"))
    print(common.table(("framework", "N", "us/step", "vs agentrig"), rows))
    smallest, largest = min(sizes), max(sizes)
    growth = {
        name: results[largest][name]["us_per_step"] / results[smallest][name]["us_per_step"]
        for name in found
    }
    print(
        f"\ngrowth ratio (us/step at N={largest} / us/step at N={smallest}): "
        + ", ".join(f"{name} {value:.2f}" for name, value in growth.items())
    )
    if len(found) == 1:
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
                {"framework": name, "n": n, **results[n][name]} for name in found for n in sizes
            ],
            "growth_ratio": {"from_n": smallest, "to_n": largest, **growth},
        },
    )


if __name__ == "__main__":
    main()
