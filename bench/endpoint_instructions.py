"""Instructions per model call of the scenario endpoint in process, beside the SDK's own floor,
counted by valgrind's callgrind: figures that do not move with the machine's load.

The turn is ``bench/endpoint.py``'s (two model calls through the official SDK's synchronous
client, each session with its own API key); the floor answers with the endpoint's own bytes from
an ``httpx2.MockTransport``. Under callgrind the script warms both up, turns the garbage collector
off and dumps the counters around ``--turns`` turns of each: the floor, the endpoint, and the
endpoint with its remembered plans forgotten before every turn (what a suite whose sessions each
play a different scenario pays). It re-runs itself under ``valgrind --tool=callgrind``; without
valgrind it says so and exits 0.

    .venv/bin/python bench/endpoint_instructions.py                 # every SDK, 100 turns each
    .venv/bin/python bench/endpoint_instructions.py --sdk anthropic --turns 20
"""

from __future__ import annotations

import argparse
import gc
import itertools
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import _endpoint_workload as workload

UNDER_CALLGRIND = "AGENTRIG_BENCH_UNDER_CALLGRIND"
PARTS = ("floor", "endpoint", "endpoint, nothing remembered")
WARM_UP = 30


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sdk", choices=[sdk.name for sdk in workload.SDKS], action="append")
    parser.add_argument("--turns", type=int, default=100, help="turns counted of each (100)")
    options = parser.parse_args(argv)
    names = options.sdk or [sdk.name for sdk in workload.SDKS]
    if os.environ.get(UNDER_CALLGRIND):
        _count(names[0], options.turns)
        return 0
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        print("skipped: valgrind is not installed (apt-get install -y valgrind)")
        return 0
    rows = [(name, _measured(valgrind, name, options.turns)) for name in names]
    print(table(rows))
    return 0


def _measured(valgrind: str, sdk: str, turns: int) -> dict[str, float]:
    """Run this script under callgrind for ``sdk``; instructions per model call of each part."""
    with tempfile.TemporaryDirectory() as folder:
        command = [
            valgrind,
            "--tool=callgrind",
            f"--callgrind-out-file={folder}/cg.%p",
            sys.executable,
            __file__,
            "--sdk",
            sdk,
            "--turns",
            str(turns),
        ]
        env = {**os.environ, UNDER_CALLGRIND: "1", "PYTHONHASHSEED": "0"}
        done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise SystemExit(f"the callgrind run failed:\n{done.stderr[-2000:]}")
        dumps = [path.read_text(errors="replace") for path in Path(folder).glob("cg.*")]
    return per_call(dumps, turns * workload.CALLS_PER_TURN)


def per_call(dumps: list[str], calls: int) -> dict[str, float]:
    """Instructions per model call of each part, from callgrind's dump files (each names the
    part that ended in its trigger line and totals its instructions)."""
    counted: dict[str, float] = {}
    for text in dumps:
        trigger = re.search(r"^desc: Trigger: (?:Client Request: )?(?:dump )?(.+)$", text, re.M)
        total = re.search(r"^(?:summary|totals): (\d+)", text, re.M)
        if trigger is None or total is None:
            continue
        part = trigger.group(1).strip().replace("_", " ")
        if part in PARTS:
            counted[part] = int(total.group(1)) / calls
    missing = [part for part in PARTS if part not in counted]
    if missing:
        raise SystemExit(f"callgrind wrote no count of: {', '.join(missing)}")
    return counted


def table(rows: list[tuple[str, dict[str, float]]]) -> str:
    """Instructions per call, and each over the floor."""
    lines = [
        f"{'sdk':<10} {'answered by':<30} {'k instr/call':>12} {'vs floor':>9}",
        f"{'-' * 10} {'-' * 30} {'-' * 12} {'-' * 9}",
    ]
    for sdk, counted in rows:
        floor = counted["floor"]
        for part in PARTS:
            value = counted[part]
            lines.append(f"{sdk:<10} {part:<30} {value / 1000:>12,.1f} {value / floor:>8.3f}x")
    return "\n".join(lines)


def _count(name: str, turns: int) -> None:
    """Under callgrind: the turns of each part between counter dumps."""
    from agentrig.harness.endpoint import memo
    from agentrig.harness.endpoint.handle import EndpointHandle

    sdk = next(sdk for sdk in workload.SDKS if sdk.name == name)
    captured = workload.capture(sdk)
    floor = sdk.client(
        "http://floor.invalid" + sdk.url_suffix, workload.floor_http_client(sdk, captured)
    )
    handle = EndpointHandle(workload.SCENARIO)
    endpoint = sdk.client(handle.base_url + sdk.url_suffix, handle.httpx2_client())
    keys = (f"k{n}" for n in itertools.count())

    def turn(client: Any, before: Callable[[], object] = lambda: None) -> None:
        before()
        sdk.check(sdk.turn(client, next(keys)))

    for _ in range(WARM_UP):
        turn(floor)
        turn(endpoint)
    gc.collect()
    gc.disable()
    _dump("start")
    for part, client, before in (
        ("floor", floor, lambda: None),
        ("endpoint", endpoint, lambda: None),
        ("endpoint,_nothing_remembered", endpoint, memo.forget),
    ):
        for _ in range(turns):
            turn(client, before)
        _dump(part)


def _dump(part: str) -> None:
    subprocess.run(
        ["callgrind_control", "-d", part, str(os.getpid())], capture_output=True, check=True
    )


if __name__ == "__main__":
    raise SystemExit(main())
