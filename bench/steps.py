"""Cost of every invariant over one long execution: a scripted model calling a tool N times.

For each N (25, 50, 100 by default) it writes a scenario whose one turn calls a tool N times and
then answers, runs it in this process with ``run_scenario`` with every invariant on and with none
(``invariants: {only: []}``), and prints the median CPU seconds of each (CPU, not wall: the
machine may be shared) and their ratio. Checks that cost O(state) per step make the time per
step grow with N; O(change) keeps it flat.

    .venv/bin/python bench/steps.py                    # N = 25, 50, 100
    .venv/bin/python bench/steps.py --sizes 25,200 --repeats 3
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

import _common as common
import yaml

from agentrig.harness.runner import run_scenario
from agentrig.harness.scenarios.loader import load_scenario

SIZES = (25, 50, 100)
QUICK_SIZES = (10, 25)
REPEATS = 3
QUICK_REPEATS = 1


def scenario(steps: int, *, checks: bool) -> dict[str, Any]:
    """A one-turn scenario: ``steps`` tool calls, then a final answer."""
    model: list[dict[str, Any]] = [
        {"call": f"add(a={number}, b=1)", "usage": {"input": 50, "output": 5}}
        for number in range(steps)
    ]
    model.append({"say": "done", "usage": {"input": 50, "output": 5}})
    data: dict[str, Any] = {
        "name": f"steps-{steps}",
        "agent": {
            "system_prompt": "You add numbers.",
            "budget": {"max_steps": steps + 5},
            "tools": {
                "add": {"params": {"a": "integer", "b": "integer"}, "replies": [{"return": 1}]}
            },
        },
        "turns": [
            {
                "user": "Add them all.",
                "model": model,
                "expect": {"status": "completed", "steps": steps + 1, "final_response": "done"},
            }
        ],
    }
    if not checks:
        data["invariants"] = {"only": []}
    return data


def timed(folder: Path, steps: int, *, checks: bool, repeats: int) -> float:
    """Median CPU seconds of the scenario of ``steps`` steps; it must pass."""
    path = folder / f"steps-{steps}-{'on' if checks else 'off'}.scenario.yaml"
    path.write_text(yaml.safe_dump(scenario(steps, checks=checks), sort_keys=False), "utf-8")
    loaded = load_scenario(path)
    times = []
    for _ in range(repeats):
        started = time.process_time()
        result = run_scenario(loaded)
        times.append(time.process_time() - started)
        if not result.passed:
            raise SystemExit(f"the {steps}-step scenario failed: {result}")
    return common.median(times)


def main() -> None:
    parser = common.parser(__doc__.splitlines()[0])
    args = parser.parse_args()
    sizes, repeats = common.resolve(
        args, sizes=SIZES, quick_sizes=QUICK_SIZES, repeats=REPEATS, quick_repeats=QUICK_REPEATS
    )
    info = common.machine()
    print("bench/steps.py: every invariant over one execution of N tool-calling steps")
    print(common.machine_line(info))
    print(
        f"{'steps':>6} {'checked s':>10} {'unchecked s':>12} {'ratio':>7} {'checked ms/step':>16}"
    )
    rows = []
    with tempfile.TemporaryDirectory(prefix="agentrig-steps-") as temp:
        folder = Path(temp)
        for steps in sizes:
            on = timed(folder, steps, checks=True, repeats=repeats)
            off = timed(folder, steps, checks=False, repeats=repeats)
            per_step = on / (steps + 1) * 1000
            print(f"{steps:>6} {on:>10.3f} {off:>12.3f} {on / off:>6.1f}x {per_step:>16.2f}")
            rows.append({"steps": steps, "checked_cpu_s": on, "unchecked_cpu_s": off})
    common.save_json(
        args.json,
        {
            "benchmark": "steps",
            "command": common.command_line(),
            "machine": info,
            "repeats": repeats,
            "runs": rows,
        },
    )


if __name__ == "__main__":
    main()
