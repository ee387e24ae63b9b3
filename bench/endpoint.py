"""µs per model call of the scenario endpoint through the official openai, anthropic and
google-genai SDKs, in-process and over loopback, beside two floors and the mock tools on PyPI,
in one run.

The turn (an agent's, as a test suite runs it many times): two model calls through the SDK's
synchronous client (OpenAI Chat Completions; Anthropic Messages; Gemini generateContent); the
first answers a ``get_weather(city=Paris)`` tool call, the second, sent with the tool's result,
answers with text. Each session sends its own API key with ``extra_headers`` (google-genai: a
per-request ``HttpOptions(headers=...)``), so one client serves every session; µs per call is a
sample's time over its model calls. Who answers:

- floor, in-process: an ``httpx2.MockTransport`` returning canned bytes (the SDK's own cost);
- floor, loopback: a canned starlette app on uvicorn (the SDK and an HTTP server's cost);
- the endpoint, in-process (``EndpointHandle.httpx2_client()``) and live on loopback
  (``EndpointHandle(live=True)``, uvicorn), serving ``scenarios/endpoint/weather.scenario.yaml``
  with every check on; each session's result is checked after its sample, untimed;
- peers (the ``bench`` extra): llm-mock (respx, in-process) and mockllm (a server, loopback).
  A peer that is not installed, or cannot serve the turn, is reported as skipped with the reason.

The canned bytes are the endpoint's own answers, captured once before timing. Every contender
takes turns sample by sample (a sample runs sessions back to back for at least 20 ms), so a spell
of machine load hits all of them alike; figures are medians.

    .venv/bin/python bench/endpoint.py                       # 7 samples of each
    .venv/bin/python bench/endpoint.py --quick               # a smoke run
    .venv/bin/python bench/endpoint.py --json bench/results/endpoint.json
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import _common as common
import _endpoint_peers as peers
from _endpoint_workload import (
    CALLS_PER_TURN,
    FINAL_TEXT,
    SCENARIO,
    SDKS,
    Captured,
    LoopbackServer,
    Sdk,
    WorkloadError,
    capture,
    floor_app,
    floor_http_client,
)

REPEATS = 7
QUICK_REPEATS = 1
WARM_UP = 3
TARGET_RATIO = 1.25
IN_PROCESS = "in-process"
LOOPBACK = "loopback"
MODES = (IN_PROCESS, LOOPBACK)
FLOOR = "floor"
ENDPOINT = "agentrig endpoint"


@dataclass
class Contender:
    """One way of answering one SDK's calls, with its samples (ns per model call)."""

    sdk: Sdk
    mode: str
    name: str
    detail: str
    client: Any
    context: Callable[[], contextlib.AbstractContextManager[Any]] = contextlib.nullcontext
    after: Callable[[list[str]], None] = lambda keys: None
    loops: int = 1
    samples: list[float] = field(default_factory=list)
    _keys: itertools.count[int] = field(default_factory=itertools.count)

    def sample(self, loops: int) -> float:
        """One checked sample of ``loops`` sessions back to back: ns per model call."""
        keys: list[str] = []

        def prepare() -> Callable[[], str]:
            key = f"endpoint-weather/{self.sdk.name}-{self.mode}-{next(self._keys)}"
            keys.append(key)
            client, turn = self.client, self.sdk.turn
            return lambda: turn(client, key)

        with self.context():
            elapsed, finals = common.timed_loops_ns(prepare, loops)
        for final in finals:
            self.sdk.check(final)
        self.after(keys)
        return elapsed / CALLS_PER_TURN


def endpoint_checker(handle: Any) -> Callable[[list[str]], None]:
    """Checks, untimed, that every session of a sample passed the scenario."""
    from agentrig.harness.reporting.terminal import format_scenario_failures

    def check(keys: list[str]) -> None:
        for key in keys:
            result = handle.endpoint.session(key).result()
            if not result.passed:
                raise WorkloadError(f"session {key}:\n{format_scenario_failures(result)}")

    return check


def contenders(
    stack: contextlib.ExitStack, folder: Path
) -> tuple[list[Contender], list[dict[str, str]]]:
    """Everything to measure, set up (servers started, canned bytes captured), and the peers
    skipped with their reasons."""
    from agentrig.harness.endpoint.handle import EndpointHandle

    captured: dict[str, Captured] = {sdk.name: capture(sdk) for sdk in SDKS}
    canned = {sdk.path: (sdk.second_marker, captured[sdk.name]) for sdk in SDKS}
    floor_server = LoopbackServer(floor_app(canned)).start()
    stack.callback(floor_server.stop)
    in_process = EndpointHandle(SCENARIO)
    live = stack.enter_context(EndpointHandle(SCENARIO, live=True))
    found: list[Contender] = []
    skipped: list[dict[str, str]] = []
    for sdk in SDKS:
        found += [
            Contender(
                sdk,
                IN_PROCESS,
                FLOOR,
                "httpx2.MockTransport, canned bytes",
                sdk.client(
                    "http://floor.invalid" + sdk.url_suffix,
                    floor_http_client(sdk, captured[sdk.name]),
                ),
            ),
            Contender(
                sdk,
                IN_PROCESS,
                ENDPOINT,
                "EndpointHandle.httpx2_client()",
                sdk.client(in_process.base_url + sdk.url_suffix, in_process.httpx2_client()),
                after=endpoint_checker(in_process),
            ),
        ]
        found += peer(
            sdk,
            IN_PROCESS,
            "llm-mock",
            skipped,
            stack,
            lambda s=sdk: peers.load_llm_mock(s, captured[s.name], folder),
        )
        found += [
            Contender(
                sdk,
                LOOPBACK,
                FLOOR,
                "uvicorn + starlette, canned bytes",
                sdk.client(floor_server.base_url + sdk.url_suffix, None),
            ),
            Contender(
                sdk,
                LOOPBACK,
                ENDPOINT,
                "EndpointHandle(live=True): uvicorn",
                sdk.client(live.base_url + sdk.url_suffix, None),
                after=endpoint_checker(live),
            ),
        ]
        found += peer(
            sdk,
            LOOPBACK,
            "mockllm",
            skipped,
            stack,
            lambda s=sdk: peers.load_mockllm(s, FINAL_TEXT, folder),
        )
    return found, skipped


def peer(
    sdk: Sdk,
    mode: str,
    name: str,
    skipped: list[dict[str, str]],
    stack: contextlib.ExitStack,
    load: Callable[[], peers.Peer],
) -> list[Contender]:
    """The peer as a contender, or nothing (and a line in ``skipped``) if it cannot run."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        client, context, cleanup = load()
        detail = f"{name} {version(name)}"
    except (ImportError, PackageNotFoundError):
        reason = f"{name} not installed (pip install -e '.[bench]')"
    except peers.CannotServe as error:
        reason = str(error)
    else:
        stack.callback(cleanup)
        return [Contender(sdk, mode, name, detail, client, context=context)]
    skipped.append({"sdk": sdk.name, "mode": mode, "peer": name, "reason": reason})
    return []


def calibrate(contender: Contender, quick: bool) -> None:
    """Warm the contender up, then set how many sessions one sample runs."""
    for _ in range(1 if quick else WARM_UP):
        contender.sample(1)
    if quick:
        contender.loops = 1
        return
    per_call = contender.sample(1)
    contender.loops = common.loops_for(per_call * CALLS_PER_TURN)


def measure(found: list[Contender], repeats: int, quick: bool) -> None:
    """Samples of every contender, taking turns round by round."""
    for contender in found:
        calibrate(contender, quick)
    for _ in range(repeats):
        for contender in found:
            contender.samples.append(contender.sample(contender.loops))


def rows(found: list[Contender]) -> list[dict[str, Any]]:
    """One result row per contender: median and best µs per call, and the ratio to the floor."""
    floors = {(c.sdk.name, c.mode): common.median(c.samples) for c in found if c.name == FLOOR}
    result = []
    for c in found:
        us = common.median(c.samples) / 1000
        result.append(
            {
                "sdk": c.sdk.name,
                "sdk_version": c.sdk.version(),
                "mode": c.mode,
                "contender": c.name,
                "detail": c.detail,
                "sessions_per_sample": c.loops,
                "samples": len(c.samples),
                "us_per_call": us,
                "us_per_call_min": min(c.samples) / 1000,
                "vs_floor": us * 1000 / floors[(c.sdk.name, c.mode)],
            }
        )
    return result


def targets(results: list[dict[str, Any]]) -> dict[str, Any]:
    """The endpoint against its targets: at most 1.25x the matching floor, faster than every peer."""
    by_key = {(r["sdk"], r["mode"], r["contender"]): r for r in results}
    checks: list[dict[str, Any]] = []
    lines = []
    for sdk in SDKS:
        for mode in MODES:
            endpoint = by_key[(sdk.name, mode, ENDPOINT)]
            ratio = endpoint["vs_floor"]
            met = ratio <= TARGET_RATIO
            checks.append(
                {"sdk": sdk.name, "mode": mode, "target": "floor", "ratio": ratio, "met": met}
            )
            lines.append(
                f"{sdk.name} {mode}: endpoint/floor {ratio:.2f}x (target <= {TARGET_RATIO}x) "
                f"-> {'met' if met else 'MISSED'}"
            )
            for r in results:
                if r["sdk"] != sdk.name or r["mode"] != mode or r["contender"] in (FLOOR, ENDPOINT):
                    continue
                faster = endpoint["us_per_call"] < r["us_per_call"]
                ratio = r["us_per_call"] / endpoint["us_per_call"]
                checks.append(
                    {
                        "sdk": sdk.name,
                        "mode": mode,
                        "target": r["contender"],
                        "ratio": ratio,
                        "met": faster,
                    }
                )
                lines.append(
                    f"{sdk.name} {mode}: {r['contender']} takes {ratio:.2f}x the endpoint's time "
                    f"(target: endpoint faster) -> {'met' if faster else 'MISSED'}"
                )
    return {"checks": checks, "all_met": all(c["met"] for c in checks), "lines": lines}


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one short sample each (a smoke run)")
    parser.add_argument("--repeats", type=int, default=None, help=f"samples of each ({REPEATS})")
    parser.add_argument("--json", type=Path, default=None, metavar="PATH", help="save results")
    return parser.parse_args()


def main() -> None:
    args = parse_args()
    repeats = args.repeats or (QUICK_REPEATS if args.quick else REPEATS)
    if repeats < 1:
        raise SystemExit("--repeats must be >= 1")
    info = common.machine()
    print("bench/endpoint.py: µs per model call, official SDKs, in-process and over loopback")
    print(common.machine_line(info))
    print(
        f"turn: 2 model calls (get_weather tool call, then text), own API key per session; "
        f"median of {repeats} samples (a sample: sessions back to back for at least "
        f"{common.MIN_SAMPLE_NS // 1_000_000} ms{'; --quick: one session' if args.quick else ''})\n"
    )
    with contextlib.ExitStack() as stack:
        folder = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-endpoint-")))
        found, skipped = contenders(stack, folder)
        measure(found, repeats, args.quick)
    results = rows(found)
    headers = ("sdk", "mode", "contender", "µs/call", "vs floor", "answered by")
    print(
        common.table(
            headers,
            [
                (
                    f"{r['sdk']} {r['sdk_version']}",
                    r["mode"],
                    r["contender"],
                    r["us_per_call"],
                    f"{r['vs_floor']:.2f}x",
                    r["detail"],
                )
                for r in results
            ],
        )
    )
    for skip in skipped:
        print(f"skipped: {skip['reason']} ({skip['sdk']}, {skip['mode']})")
    verdict = targets(results)
    print()
    for line in verdict["lines"]:
        print(line)
    common.save_json(
        args.json,
        {
            "benchmark": "endpoint",
            "command": common.command_line(),
            "machine": info,
            "repeats": repeats,
            "results": results,
            "skipped": skipped,
            "targets": {key: value for key, value in verdict.items() if key != "lines"},
        },
    )


if __name__ == "__main__":
    main()
