"""Examples per second of ``agentrig fuzz`` against one agent of each framework, in process.

Each agent is the correct weather agent of examples/fuzz/ (raw ``openai`` SDK, pydantic-ai, the
OpenAI Agents SDK, LangGraph). A sample fuzzes it with the default profile (LangGraph: valid
arguments only, see docs/fuzz-any-agent.md) for a fixed number of examples, derandomized, and
times the whole run: hypothesis drawing the scripts, each played as a fresh endpoint session,
the agent's run, the checks. The probe before the first example is not timed. The figures are
medians of the samples: examples per second of wall time, beside the target (≥ 50 examples/s
for the raw SDK, ≥ 10 for the frameworks); examples per second of this process's CPU time (what
the run costs whatever else the machine runs: on a loaded machine wall time stretches, CPU time
does not); and the share of the wall time the agent itself ran.

    .venv/bin/python bench/fuzz.py                 # 3 samples of 200 examples each
    .venv/bin/python bench/fuzz.py --quick         # a smoke run
    .venv/bin/python bench/fuzz.py --json bench/results/fuzz.json
"""

from __future__ import annotations

import importlib
import sys
import time
from pathlib import Path
from typing import Any

import _common as common
from hypothesis import settings

from agentrig.harness.fuzz import Behaviours, Fuzzer
from agentrig.harness.fuzz.target import FunctionTarget

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples" / "fuzz"))

PROMPT = "What is the weather in Paris?"
AGENTS: tuple[tuple[str, str, Behaviours | None, float], ...] = (
    ("raw openai SDK", "raw_openai:agent", None, 50.0),
    ("pydantic-ai", "pydantic_ai_agent:agent", None, 10.0),
    ("OpenAI Agents SDK", "openai_agents_agent:agent", None, 10.0),
    ("LangGraph", "langgraph_agent:agent", Behaviours(arguments={"valid"}), 10.0),
)
EXAMPLES = 200
QUICK_EXAMPLES = 20
REPEATS = 3
QUICK_REPEATS = 1


class TimedTarget(FunctionTarget):
    """A target that adds up the time its agent runs."""

    agent_ns: int = 0

    def run(self, ep: Any, prompt: str) -> tuple[object, Exception | None]:
        """Run and time the agent."""
        started = time.perf_counter_ns()
        try:
            return super().run(ep, prompt)
        finally:
            TimedTarget.agent_ns += time.perf_counter_ns() - started


def sample(
    reference: str, behaviours: Behaviours | None, examples: int
) -> tuple[float, float, float]:
    """One fuzzing run: examples per second of wall time and of CPU time, and the agent's share
    of the wall time."""
    module, _, name = reference.partition(":")
    function = getattr(importlib.import_module(module), name)
    with Fuzzer(TimedTarget(function, reference), PROMPT, behaviours=behaviours) as fuzzer:
        TimedTarget.agent_ns = 0
        started, cpu = time.perf_counter_ns(), time.process_time_ns()
        report = fuzzer.fuzz(
            max_examples=examples, settings=settings(database=None, derandomize=True)
        )
        elapsed, cpu = time.perf_counter_ns() - started, time.process_time_ns() - cpu
    return (
        report.examples / (elapsed / 1e9),
        report.examples / (cpu / 1e9),
        TimedTarget.agent_ns / elapsed,
    )


def main() -> None:
    """Measure and print the table."""
    parser = common.parser(__doc__.splitlines()[0])
    args = parser.parse_args()
    examples = QUICK_EXAMPLES if args.quick else EXAMPLES
    repeats = args.repeats or (QUICK_REPEATS if args.quick else REPEATS)
    info = common.machine()
    print(common.machine_line(info))
    rows, results = [], {}
    for label, reference, behaviours, target in AGENTS:
        samples = [sample(reference, behaviours, examples) for _ in range(repeats)]
        rate = common.median([rate for rate, _, _ in samples])
        per_cpu = common.median([per_cpu for _, per_cpu, _ in samples])
        share = common.median([share for _, _, share in samples])
        ratio = rate / target
        rows.append(
            [
                label,
                f"{rate:.1f}",
                f"≥ {target:g}",
                f"{ratio:.2f}",
                f"{per_cpu:.1f}",
                f"{share:.0%}",
            ]
        )
        results[label] = {
            "examples_per_s": rate,
            "examples_per_cpu_s": per_cpu,
            "target": target,
            "agent_share": share,
        }
    print(f"{examples} examples a sample, median of {repeats} sample(s)")
    print(
        common.table(
            [
                "agent",
                "examples/s",
                "target",
                "measured / target",
                "examples/CPU-s",
                "time in the agent",
            ],
            rows,
        )
    )
    common.save_json(
        args.json, {"machine": info, "command": common.command_line(), "results": results}
    )


if __name__ == "__main__":
    main()
