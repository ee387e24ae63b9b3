"""Scenario-suite throughput of ``agentrig run``, and the cost of a state serialization round trip.

Part 1 generates scenario files (1,000 by default; deterministic) of 3 to 12 steps each: one to
three turns, tools called one or two at a time, some tool errors, token and cost budgets that do
not trigger, separated and inline traces, and every invariant on. It runs them with
``agentrig run DIR --workers 1`` and ``--workers 2`` in subprocesses, times the wall clock (the
whole command: start-up, loading, running, reports) and requires exit code 0.

It also prints the suite-speed targets as ratios, each measured in this run: the in-run time
with every invariant on over the same scenarios with none (``invariants: {only: []}``: the loop plus the
harness's own work, so a flattering stand-in for the bare loop of ``bench/loop.py``), start-up plus loading every file (a fresh interpreter running ``load_suite``),
``pytest --agentrig-scenarios`` collecting them, 2 workers over 1, the workers ``agentrig run``
chooses by itself, and the peak resident memory of the largest process of each run.

Part 2 times ``AgentState.from_json(state.to_json())`` for states holding 10 to 10,000 messages.

    .venv/bin/python bench/suite.py                    # 1,000 scenarios; 10..10,000 messages
    .venv/bin/python bench/suite.py --quick            # a smoke run
    .venv/bin/python bench/suite.py --scenarios 200 --workers 1,2 --sizes 10,1000
"""

from __future__ import annotations

import json
import random
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import _common as common
import yaml

import agentrig as ar
from agentrig.messages import ToolResult

SCENARIOS = 1000
QUICK_SCENARIOS = 10
SIZES = (10, 100, 1000, 10_000)
QUICK_SIZES = (10, 100)
REPEATS = 7
QUICK_REPEATS = 2
SEED = 5

# --- scenario generation ----------------------------------------------------------------------

TOOLS: dict[str, Any] = {
    "add": {"params": {"a": "integer", "b": "integer"}, "replies": [{"return": 42}]},
    "lookup": {
        "params": {"key": "string"},
        "replies": [
            {"when": {"key": "missing"}, "raise": "not found: missing"},
            {"return": {"value": "ok", "hits": 3}},
        ],
    },
}
TICKET_ERROR = "ticket locked"


def _call(rng: random.Random, tickets: list[bool]) -> tuple[str, str | None]:
    """One tool call in shorthand, and the error it raises (or None)."""
    kind = rng.random()
    if kind < 0.45:
        return f"add(a={rng.randint(0, 99)}, b={rng.randint(0, 99)})", None
    if kind < 0.85:
        if rng.random() < 0.2:
            return "lookup(key=missing)", "not found: missing"
        return f"lookup(key=k{rng.randint(0, 999)})", None
    fails = rng.random() < 0.25
    tickets.append(fails)
    return f"ticket(id=t{len(tickets)})", TICKET_ERROR if fails else None


def scenario(index: int) -> dict[str, Any]:
    """Scenario ``index``: the same every time."""
    rng = random.Random(SEED * 1_000_003 + index)
    total_steps = rng.randint(3, 12)
    turn_count = rng.randint(1, min(3, total_steps))
    tool_steps = [0] * turn_count
    for _ in range(total_steps - turn_count):
        tool_steps[rng.randrange(turn_count)] += 1
    inline = rng.random() < 0.2
    tickets: list[bool] = []
    turns = []
    conversation: list[str] = []
    for number, count in enumerate(tool_steps, start=1):
        model: list[dict[str, Any]] = []
        calls: list[str] = []
        errors: list[str] = []
        total_tokens = 0
        for _ in range(count):
            step_calls = [_call(rng, tickets) for _ in range(2 if rng.random() < 0.2 else 1)]
            usage = {"input": rng.randint(10, 200), "output": rng.randint(1, 40)}
            total_tokens += usage["input"] + usage["output"]
            reply: dict[str, Any] = {"usage": usage, "cost": 0.0005}
            if len(step_calls) == 1:
                reply["call"] = step_calls[0][0]
            else:
                reply["calls"] = [call for call, _ in step_calls]
            model.append(reply)
            calls.extend(call for call, _ in step_calls)
            errors.extend(error for _, error in step_calls if error is not None)
        final = f"Answer {index}.{number}: done."
        usage = {"input": rng.randint(10, 200), "output": rng.randint(1, 40)}
        total_tokens += usage["input"] + usage["output"]
        model.append({"say": final, "usage": usage})
        conversation += ["user", "assistant"]
        expect: dict[str, Any] = {
            "status": "failed" if errors else "completed",
            "stop_reason": "completed",
            "steps": count + 1,
            "final_response": final,
            "tool_calls": {"mode": "strict", "calls": calls},
            "usage": {"total": total_tokens},
        }
        if errors:
            expect["errors"] = sorted(set(errors))
        if not inline:
            expect["messages"] = list(conversation)
            expect["sections"] = {"execution_buffer": []}
        turns.append(
            {"user": f"Request {number} of scenario {index}.", "model": model, "expect": expect}
        )
    tools = dict(TOOLS)
    if tickets:
        tools["ticket"] = {
            "mode": "sequence",
            "params": {"id": "string"},
            "replies": [
                {"raise": TICKET_ERROR} if fails else {"return": "open"} for fails in tickets
            ],
        }
    agent: dict[str, Any] = {
        "system_prompt": "You are a generated benchmark agent.",
        "trace_mode": "inline" if inline else "separated",
        "budget": {"max_steps": 20, "max_tokens": 100_000, "max_cost": 1.0},
        "tools": tools,
    }
    return {
        "name": f"bench-{index:05d}",
        "description": f"Generated by bench/suite.py: {total_steps} steps over {turn_count} turn(s).",
        "tags": ["bench", "inline" if inline else "separated"],
        "agent": agent,
        "turns": turns,
    }


def write_scenarios(folder: Path, count: int, *, checks: bool = True) -> int:
    """Write ``count`` scenario files into ``folder`` (with no invariant on when not
    ``checks``); returns the total number of steps."""
    steps = 0
    for index in range(count):
        data = scenario(index)
        if not checks:
            data["invariants"] = {"only": []}
        steps += sum(turn["expect"]["steps"] for turn in data["turns"])
        text = yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=1000)
        (folder / f"bench-{index:05d}.scenario.yaml").write_text(text, encoding="utf-8")
    return steps


def agentrig_command(*args: str) -> list[str]:
    """``agentrig ARGS`` with this interpreter (the console script may not be on PATH)."""
    return [sys.executable, "-c", "from agentrig.harness.cli import main; main()", *args]


def run_suite(folder: Path, workers: int | None, reports: Path) -> dict[str, Any]:
    """Run the suite once with ``workers`` (None: as ``agentrig run`` chooses); wall time of
    the whole command, and the peak resident memory of its largest process."""
    chosen = () if workers is None else ("--workers", str(workers))
    command = agentrig_command("run", str(folder), *chosen, "--report-dir", str(reports), "--quiet")
    started = time.perf_counter_ns()
    done, peak_mib = measured_subprocess(command)
    wall = (time.perf_counter_ns() - started) / 1e9
    if done.returncode != 0:
        print(done.stdout[-4000:], done.stderr[-4000:], sep="\n", file=sys.stderr)
        raise SystemExit(f"agentrig run --workers {workers} exited {done.returncode}")
    match = re.search(r"(\d+) passed, (\d+) failed in ([0-9.]+)s", done.stdout)
    return {
        "workers": workers if workers is not None else "auto",
        "wall_s": wall,
        "run_s": float(match.group(3)) if match else None,
        "peak_mib": peak_mib,
        "summary": match.group(0) if match else done.stdout.strip(),
    }


def measured_subprocess(command: list[str], **options: Any) -> tuple[Any, float]:
    """Run ``command`` in a child process of its own; its completed process and the peak
    resident memory (MiB) of the largest process it started (its workers included), read from
    ``getrusage`` of the children of a one-off intermediate process."""
    probe = (
        "import ctypes, json, os, resource, subprocess, sys\n"
        # adopt the worker server, which the workers are forked from and which ends after the
        # command: only a process waited for counts, with the processes it waited for
        "if sys.platform == 'linux':\n"
        "    ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER\n"
        "done = subprocess.run(sys.argv[1:], capture_output=True, text=True, check=False)\n"
        "while True:\n"
        "    try:\n"
        "        os.wait()\n"
        "    except ChildProcessError:\n"
        "        break\n"
        "peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss\n"
        "print(json.dumps([done.returncode, done.stdout, done.stderr, peak]))\n"
    )
    wrapper = subprocess.run(
        [sys.executable, "-c", probe, *command],
        capture_output=True,
        text=True,
        check=True,
        **options,
    )
    code, stdout, stderr, peak_kib = json.loads(wrapper.stdout)
    return subprocess.CompletedProcess(command, code, stdout, stderr), peak_kib / 1024


def loading_s(folder: Path) -> float:
    """Wall seconds of a fresh interpreter importing the loader and loading every file of
    ``folder`` (start-up plus loading, as ``agentrig run`` pays them)."""
    code = (
        "import sys\n"
        "from agentrig.harness.scenarios.loader import load_suite\n"
        "suite = load_suite(sys.argv[1])\n"
        "assert not suite.broken, suite.broken[:1]\n"
    )
    started = time.perf_counter_ns()
    subprocess.run([sys.executable, "-c", code, str(folder)], check=True)
    return (time.perf_counter_ns() - started) / 1e9


def collecting_s(folder: Path, count: int) -> float:
    """Wall seconds of ``pytest --agentrig-scenarios FOLDER --collect-only`` (one process)."""
    command = [
        sys.executable,
        "-m",
        "pytest",
        "--agentrig-scenarios",
        str(folder),
        "--collect-only",
        "-q",
        "-p",
        "no:cacheprovider",
        "-p",
        "no:xdist",
        "-p",
        "no:randomly",
    ]
    started = time.perf_counter_ns()
    done = subprocess.run(command, cwd=folder.parent, capture_output=True, text=True, check=False)
    wall = (time.perf_counter_ns() - started) / 1e9
    if done.returncode != 0 or f"{count} tests collected" not in done.stdout:
        print(done.stdout[-4000:], done.stderr[-4000:], sep="\n", file=sys.stderr)
        raise SystemExit(f"pytest --collect-only exited {done.returncode}")
    return wall


# --- serialization ----------------------------------------------------------------------------


def state_with(count: int) -> ar.AgentState:
    """A state whose conversation holds ``count`` messages: user, assistant with a tool call,
    tool result, assistant text, repeated (inline traces)."""
    messages: list[ar.Message] = []
    for index in range(count):
        position = index % 4
        if position == 0:
            messages.append(ar.Message.user(f"Question {index}: what is {index} + 1?"))
        elif position == 1:
            call = ar.ToolCall(name="add", arguments={"a": index, "b": 1})
            messages.append(ar.Message.assistant(tool_calls=[call]))
        elif position == 2:
            previous = messages[-1].tool_calls[0]
            result = ToolResult(content=str(index), call_id=previous.id, tool_name="add")
            messages.append(ar.Message.tool(result))
        else:
            messages.append(ar.Message.assistant(f"The answer is {index}."))
    return ar.AgentState().with_messages(ar.Messages(messages))


def measure_serialization(count: int, repeats: int) -> dict[str, Any]:
    """Median µs of ``to_json``, ``from_json`` and the round trip for ``count`` messages."""
    state = state_with(count)
    text = state.to_json()
    restored = ar.AgentState.from_json(text)
    assert restored == state, "the round trip lost data"
    assert len(restored.messages()) == count
    to_json, from_json, round_trip = [], [], []
    for _ in range(repeats):
        to_json.append(common.timed_ns(lambda: state.to_json)[0])
        from_json.append(common.timed_ns(lambda: lambda: ar.AgentState.from_json(text))[0])
        elapsed, result = common.timed_ns(lambda: lambda: ar.AgentState.from_json(state.to_json()))
        round_trip.append(elapsed)
    assert result == state
    round_trip_us = common.median(round_trip) / 1000
    return {
        "messages": count,
        "json_kib": len(text.encode()) / 1024,
        "to_json_us": common.median(to_json) / 1000,
        "from_json_us": common.median(from_json) / 1000,
        "round_trip_us": round_trip_us,
        "us_per_message": round_trip_us / count,
    }


# --- main -------------------------------------------------------------------------------------


def _ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}x"


def main() -> None:
    parser = common.parser(__doc__.splitlines()[0])
    parser.add_argument(
        "--scenarios", type=int, default=None, help=f"scenario files (default {SCENARIOS})"
    )
    parser.add_argument(
        "--workers", type=common.sizes_option, default=(1, 2), help="worker counts (default 1,2)"
    )
    args = parser.parse_args()
    sizes, repeats = common.resolve(
        args, sizes=SIZES, quick_sizes=QUICK_SIZES, repeats=REPEATS, quick_repeats=QUICK_REPEATS
    )
    count = args.scenarios or (QUICK_SCENARIOS if args.quick else SCENARIOS)
    info = common.machine()
    print("bench/suite.py: scenario-suite throughput and serialization cost")
    print(common.machine_line(info))
    with tempfile.TemporaryDirectory(prefix="agentrig-bench-") as temp:
        folder = Path(temp) / "scenarios"
        folder.mkdir()
        steps = write_scenarios(folder, count)
        bare_folder = Path(temp) / "bare"
        bare_folder.mkdir()
        write_scenarios(bare_folder, count, checks=False)
        print(
            f"\n{count} generated scenarios, {steps} steps in all, every invariant on; wall s is "
            "the whole `agentrig run` command, in-run s what it reports (without start-up and "
            "loading), peak MiB the resident memory of its largest process\n"
        )
        suite = []
        for workers in (*args.workers, None):
            outcome = run_suite(folder, workers, Path(temp) / f"reports-{workers}")
            outcome["scenarios_per_s"] = count / outcome["wall_s"]
            outcome["steps_per_s"] = steps / outcome["wall_s"]
            suite.append(outcome)
        bare = run_suite(bare_folder, 1, Path(temp) / "reports-bare")
        load_s = loading_s(folder)
        collect_s = collecting_s(folder, count)
    base = suite[0]["wall_s"]
    print(
        common.table(
            (
                "workers",
                "scenarios",
                "wall s",
                "in-run s",
                "scenarios/s",
                "steps/s",
                "peak MiB",
                "speed-up",
            ),
            [
                (
                    row["workers"],
                    count,
                    row["wall_s"],
                    row["run_s"],
                    row["scenarios_per_s"],
                    row["steps_per_s"],
                    row["peak_mib"],
                    f"{base / row['wall_s']:.2f}x",
                )
                for row in suite
            ],
        )
    )
    one = suite[0]
    two = next((row for row in suite if row["workers"] == 2), None)
    ratios = {
        "checks_over_bare": one["run_s"] / bare["run_s"] if bare["run_s"] else None,
        "bare_run_s": bare["run_s"],
        "load_s": load_s,
        "collect_s": collect_s,
        "two_over_one": one["wall_s"] / two["wall_s"] if two else None,
        "peak_mib": max(row["peak_mib"] for row in suite),
    }
    print(
        f"\nthe suite-speed targets, measured in this run ({count} scenarios):\n"
        + common.table(
            ("measure", "value", "target"),
            [
                (
                    "in-run time, every invariant on / none (harness without checks)",
                    _ratio(ratios["checks_over_bare"]),
                    "<= 10x",
                ),
                ("start-up + loading every file, s", load_s, "<= 1 s"),
                ("pytest --agentrig-scenarios --collect-only, s", collect_s, "<= 2 s"),
                ("2 workers over 1 (wall)", _ratio(ratios["two_over_one"]), ">= 1.7x"),
                ("peak resident MiB of any process", ratios["peak_mib"], "<= 150"),
            ],
        )
    )
    print(f"\nserialization: AgentState.from_json(state.to_json()), median of {repeats} runs\n")
    serialization = [measure_serialization(size, repeats) for size in sizes]
    print(
        common.table(
            ("messages", "JSON KiB", "to_json us", "from_json us", "round trip us", "us/message"),
            [
                (
                    row["messages"],
                    row["json_kib"],
                    row["to_json_us"],
                    row["from_json_us"],
                    row["round_trip_us"],
                    row["us_per_message"],
                )
                for row in serialization
            ],
        )
    )
    common.save_json(
        args.json,
        {
            "benchmark": "suite",
            "command": common.command_line(),
            "machine": info,
            "scenarios": count,
            "steps": steps,
            "suite": suite,
            "bare": bare,
            "ratios": ratios,
            "serialization": serialization,
        },
    )


if __name__ == "__main__":
    main()
